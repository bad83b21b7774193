package outbox

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fencecheck/fencecheck/harness/jsonhttp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSink(t *testing.T) {
	s, err := StartSink()
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()); require.NoError(t, s.Close()) }()
	var hooked []Delivery
	s.OnDeliver(func(d Delivery) { hooked = append(hooked, d) })
	c := jsonhttp.New(s.Addr())
	defer c.Close()
	ctx := context.Background()
	require.NoError(t, c.Do(ctx, "POST", "/effects", Delivery{Value: "c0-1", Token: 4, Via: "direct"}, nil))
	require.NoError(t, c.Do(ctx, "POST", "/effects", Delivery{Value: "c1-1", Token: 5, Via: "outbox", OutboxID: 9}, nil))

	// A malformed delivery is refused (no effect) and not recorded.
	err = c.Do(ctx, "POST", "/effects", map[string]any{"value": ""}, nil)
	var se *jsonhttp.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusBadRequest, se.Code)
	err = c.Do(ctx, "POST", "/effects", map[string]any{"value": "x", "bogus": 1}, nil)
	require.ErrorAs(t, err, &se)

	want := []Delivery{{Value: "c0-1", Token: 4, Via: "direct"}, {Value: "c1-1", Token: 5, Via: "outbox", OutboxID: 9}}
	require.Equal(t, want, s.Deliveries())
	require.Equal(t, want, hooked)
	var listed []Delivery
	require.NoError(t, c.Do(ctx, "GET", "/effects", nil, &listed))
	require.Equal(t, want, listed)
}

// fakeSource is an outbox table in memory.
type fakeSource struct {
	mu        sync.Mutex
	rows      []Row
	delivered map[int64]bool
	failMark  int // fail this many MarkDelivered calls
}

func (f *fakeSource) Pending(_ context.Context, limit int) ([]Row, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Row
	for _, r := range f.rows {
		if !f.delivered[r.ID] && len(out) < limit {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *fakeSource) MarkDelivered(_ context.Context, id int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failMark > 0 {
		f.failMark--
		return errors.New("database went away")
	}
	f.delivered[id] = true
	return nil
}

func (f *fakeSource) add(r Row) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rows = append(f.rows, r)
}

func values(ds []Delivery) string {
	var s []string
	for _, d := range ds {
		s = append(s, d.Value)
	}
	return strings.Join(s, ",")
}

func TestRelayDeliversInOrderAtLeastOnce(t *testing.T) {
	s, err := StartSink()
	require.NoError(t, err)
	defer s.Close()
	src := &fakeSource{delivered: map[int64]bool{}, failMark: 1}
	for i, v := range []string{"a", "b", "c"} {
		src.add(Row{ID: int64(i + 1), Value: v, Token: int64(i + 1)})
	}
	r := StartRelay(src, s.Addr(), time.Hour) // only kicks and Drain move it
	defer func() { require.NoError(t, r.Close()); require.NoError(t, r.Close()) }()

	// The first mark fails: row a was delivered but stays pending, so it goes again.
	_, err = r.Drain(context.Background())
	require.ErrorContains(t, err, "mark row 1 delivered")
	n, err := r.Drain(context.Background())
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, "a,a,b,c", values(s.Deliveries()))
	for _, d := range s.Deliveries() {
		require.Equal(t, "outbox", d.Via)
	}

	src.add(Row{ID: 4, Value: "d", Token: 4})
	r.Kick()
	// The sink records a delivery before the relay has its answer: wait for both.
	require.Eventually(t, func() bool { return values(s.Deliveries()) == "a,a,b,c,d" && r.Delivered() == 5 }, patience, 5*time.Millisecond)
}

// patience is the ceiling of every wait for an event in these tests: generous, because
// a loaded 2-core machine can be many times slower than an idle one, and never spent on
// the passing path, which ends at the event.
const patience = 30 * time.Second

// A sink that is down: the row stays pending and the relay reports why.
func TestRelaySinkDown(t *testing.T) {
	s, err := StartSink()
	require.NoError(t, err)
	addr := s.Addr()
	require.NoError(t, s.Close())
	src := &fakeSource{delivered: map[int64]bool{}}
	src.add(Row{ID: 1, Value: "a", Token: 1})
	r := StartRelay(src, addr, 5*time.Millisecond)
	defer r.Close()
	require.Eventually(t, func() bool { return r.Err() != nil }, patience, 5*time.Millisecond)
	require.ErrorContains(t, r.Err(), "deliver row 1")
	require.Zero(t, r.Delivered())
}
