package register

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/fencecheck/fencecheck/harness"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type tokenLease int64

func (t tokenLease) Token() int64                    { return int64(t) }
func (tokenLease) TTL() time.Duration                { return time.Second }
func (tokenLease) Lost() <-chan struct{}             { return nil }
func (tokenLease) Release(ctx context.Context) error { return nil }

func TestWriteRules(t *testing.T) {
	type step struct {
		token    int64
		accepted bool
	}
	for _, tc := range []struct {
		kind  Kind
		fence string
		steps []step
	}{
		{Fenced, "strict", []step{{5, true}, {5, false}, {4, false}, {6, true}}},
		{Fenced, "monotonic", []step{{5, true}, {5, true}, {4, false}, {6, true}}},
		{Unfenced, "strict", []step{{5, true}, {5, true}, {4, true}, {1, true}}},
		{TOCTOU, "strict", []step{{5, true}, {5, false}, {4, false}, {6, true}}},
	} {
		t.Run(string(tc.kind)+"-"+tc.fence, func(t *testing.T) {
			r, err := New(tc.kind, tc.fence)
			require.NoError(t, err)
			defer r.Close()
			c, err := r.NewClient(context.Background(), 0, r.Endpoints(), nil)
			require.NoError(t, err)
			defer c.Close()
			ctx := context.Background()
			for i, s := range tc.steps {
				v := "v" + string(rune('a'+i))
				ok, err := c.Write(ctx, tokenLease(s.token), v)
				require.NoError(t, err)
				require.Equal(t, s.accepted, ok, "step %d token %d", i, s.token)
				if ok {
					got, tok, err := c.Read(ctx)
					require.NoError(t, err)
					require.Equal(t, v, got)
					require.Equal(t, s.token, tok)
				}
			}
		})
	}
}

// gateFunc runs f at the pause point, standing in for the nemesis.
type gateFunc func(p harness.PausePoint)

func (g gateFunc) Pause(_ context.Context, p harness.PausePoint) { g(p) }

// The check-then-write client loses to a newer writer that slips in between its check
// and its write: exactly the TOCTOU window, through real requests.
func TestTOCTOUWindow(t *testing.T) {
	r, err := New(TOCTOU, "strict")
	require.NoError(t, err)
	defer r.Close()
	ctx := context.Background()
	newer, err := r.NewClient(ctx, 1, r.Endpoints(), nil)
	require.NoError(t, err)
	defer newer.Close()
	var points []harness.PausePoint
	stale, err := r.NewClient(ctx, 0, r.Endpoints(), gateFunc(func(p harness.PausePoint) {
		points = append(points, p)
		ok, err := newer.Write(ctx, tokenLease(43), "new")
		require.NoError(t, err)
		require.True(t, ok)
	}))
	require.NoError(t, err)
	defer stale.Close()

	ok, err := stale.Write(ctx, tokenLease(42), "old")
	require.NoError(t, err)
	require.True(t, ok, "the unconditional second step accepts the stale write")
	require.Equal(t, []harness.PausePoint{harness.PauseAfterCheck}, points)
	v, tok, err := stale.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, "old", v)
	require.Equal(t, int64(42), tok, "the token went backwards")
}

func TestBadRequests(t *testing.T) {
	s, err := Start(RuleStrict)
	require.NoError(t, err)
	defer s.Close()
	for _, body := range []string{``, `{`, `{"token":"x","value":"v"}`, `{"token":1}`, `{"token":-1,"value":"v"}`, `{"token":1,"value":"v","extra":1}`, `{"token":1,"value":"v"}{}`} {
		resp, err := http.Post("http://"+s.Addr()+"/write", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	}
	require.Equal(t, State{}, s.Snapshot(), "a bad request changes nothing")
}

func TestCloseTwice(t *testing.T) {
	s, err := Start(RuleNone)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	_, err = New("fancy", "strict")
	require.Error(t, err)
	_, err = New(Fenced, "loose")
	require.Error(t, err)
}

func FuzzParseWriteRequest(f *testing.F) {
	for _, s := range []string{`{"token":1,"value":"v"}`, `{"token":-1,"value":"v"}`, `{`, `{"value":""}`, `[]`, `{"token":1e99,"value":"v"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := ParseWriteRequest(strings.NewReader(string(b)))
		if err == nil && (req.Value == "" || req.Token < 0) {
			t.Fatalf("accepted an invalid request %+v", req)
		}
	})
}
