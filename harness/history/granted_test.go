package history_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
)

// The run's granted TTL, server version and session timeouts round-trip; a misspelling
// of one is refused by the strict reader, naming the field it is likely of.
func TestGrantedFieldsRoundTrip(t *testing.T) {
	h := &history.History{Format: history.Format, Run: history.Run{
		Backend: "zookeeper", TTLms: 500, GrantedTTLms: 4000, ServerVersion: "zookeeper 3.8.0",
		SessionTimeouts: map[string]string{"idle_session_timeout": "0"}, ClientLibrary: "kazoo 2.10.0",
	}, Ops: []history.Op{}, Faults: []history.Fault{}}
	var buf bytes.Buffer
	require.NoError(t, history.Encode(&buf, h))
	got, err := history.Decode(bytes.NewReader(buf.Bytes()), "h.json")
	require.NoError(t, err)
	require.Equal(t, h.Run, got.Run)
	require.Empty(t, got.Run.Extra)

	bad := strings.Replace(buf.String(), `"granted_ttl_ms"`, `"granted_tll_ms"`, 1)
	_, err = history.Decode(strings.NewReader(bad), "h.json")
	var fe *history.FieldError
	require.True(t, errors.As(err, &fe), "%v", err)
	require.ErrorIs(t, err, history.ErrUnknownField)
	require.Equal(t, "granted_tll_ms", fe.Field)
	require.Contains(t, err.Error(), `did you mean "granted_ttl_ms"?`)

	bad = strings.Replace(buf.String(), `"client_library"`, `"client_librari"`, 1)
	_, err = history.Decode(strings.NewReader(bad), "h.json")
	require.ErrorContains(t, err, `did you mean "client_library"?`)

	neg := strings.Replace(buf.String(), `"granted_ttl_ms": 4000`, `"granted_ttl_ms": -1`, 1)
	_, err = history.Decode(strings.NewReader(neg), "h.json")
	require.ErrorContains(t, err, "run.granted_ttl_ms")
}

// The recorder notes the longest TTL granted into the run.
func TestRecorderGranted(t *testing.T) {
	rec := history.NewRecorder()
	rec.Granted(400e6)
	rec.Granted(4e9)
	require.EqualValues(t, 4000, rec.History(history.Run{}).Run.GrantedTTLms)
}

// A fault whose action took a while (a SIGKILL and a restart) is recorded as beginning
// when its action did, not when it was recorded.
func TestFaultStartAt(t *testing.T) {
	r := history.NewRecorder()
	at := r.Now()
	time.Sleep(5 * time.Millisecond) // the action's own time: a lower bound, not a wait for an event
	i := r.FaultStartAt(at, "crash", "node-0", "SIGKILL, restarted")
	f := r.Fault(i)
	require.Equal(t, at, f.Start)
	require.Less(t, f.Start, r.Now()-int64(4*time.Millisecond))
}
