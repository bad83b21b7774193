package raftlock

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/proc/proctest"

	"github.com/fencecheck/fencecheck/harness"
)

// fakeNode is a scripted client API node.
type fakeNode struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls map[string]int
	reply func(path string, req request) response
}

func newFakeNode(t *testing.T, reply func(path string, req request) response) *fakeNode {
	f := &fakeNode{calls: make(map[string]int), reply: reply}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req request
		_ = json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		f.calls[r.URL.Path]++
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(f.reply(r.URL.Path, req))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeNode) addr() string { return f.srv.Listener.Addr().String() }

func (f *fakeNode) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[path]
}

func fakeLocker(t *testing.T, cfg config, addrs ...string) *locker {
	l, err := NewLocker(cfg, 3, addrs)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l
}

func TestClientFollowsLeaderHintsByIndex(t *testing.T) {
	n0 := newFakeNode(t, func(string, request) response { return response{Status: StatusNotLeader, Leader: 2} })
	n1 := newFakeNode(t, func(string, request) response { return response{Status: StatusNotLeader, Leader: -1} })
	n2 := newFakeNode(t, func(path string, req request) response {
		return response{Status: StatusOK, Leader: 2, Token: 42, Holder: req.Owner}
	})
	l := fakeLocker(t, config{TTL: 3 * time.Second}, n0.addr(), n1.addr(), n2.addr())
	ls, err := l.AcquireLease(ctxTimeout(t, patience))
	require.NoError(t, err)
	require.Equal(t, int64(42), ls.Token())
	require.Equal(t, 1, n0.count("/acquire"))
	require.Equal(t, 0, n1.count("/acquire"), "the hint names node 2 by index")
	require.NoError(t, ls.Release(ctxTimeout(t, patience)))
	require.Equal(t, 1, n2.count("/release"), "the client remembers the leader")
	require.Equal(t, 1, n0.count("/acquire")+n0.count("/release"))
}

func TestClientSkipsRefusedNodes(t *testing.T) {
	n1 := newFakeNode(t, func(string, request) response { return response{Status: StatusOK, Token: 7} })
	l := fakeLocker(t, config{TTL: 3 * time.Second}, proctest.DeadAddr(t), n1.addr())
	ls, err := l.AcquireLease(ctxTimeout(t, patience))
	require.NoError(t, err)
	require.Equal(t, int64(7), ls.Token())

	// Nobody reachable: the error says no effect.
	l2 := fakeLocker(t, config{TTL: 3 * time.Second}, proctest.DeadAddr(t), proctest.DeadAddr(t))
	_, err = l2.Acquire(ctxTimeout(t, 100*time.Millisecond))
	require.ErrorIs(t, err, harness.ErrNoEffect)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestClientOutcomeClasses(t *testing.T) {
	unknown := newFakeNode(t, func(string, request) response {
		return response{Status: StatusUnknown, Error: "leadership lost while committing command"}
	})
	l := fakeLocker(t, config{}, unknown.addr())
	_, err := l.Acquire(ctxTimeout(t, patience))
	require.Error(t, err)
	require.NotErrorIs(t, err, harness.ErrNoEffect, "an unknown outcome must not claim no effect")
	require.ErrorContains(t, err, "outcome unknown")

	// A server that never answers: the caller's deadline makes the outcome unknown.
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(hang)
	l2 := fakeLocker(t, config{}, slow.Listener.Addr().String())
	_, err = l2.Acquire(ctxTimeout(t, 100*time.Millisecond))
	require.Error(t, err)
	require.NotErrorIs(t, err, harness.ErrNoEffect)

	// Busy until ctx ends (between polls): no effect.
	busy := newFakeNode(t, func(string, request) response { return response{Status: StatusBusy, Holder: "other", Token: 9} })
	l3 := fakeLocker(t, config{TTL: 100 * time.Millisecond}, busy.addr())
	ctx, cancel := context.WithCancel(context.Background())
	answers := 0
	l3.busyHook = func(response) {
		if answers++; answers == 3 {
			cancel()
		}
	}
	_, err = l3.Acquire(ctx)
	require.ErrorIs(t, err, harness.ErrNoEffect)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 3, busy.count("/acquire"), "busy is retried")
}

func TestClientRenewRefusedLosesLease(t *testing.T) {
	var refuse atomic.Bool
	node := newFakeNode(t, func(path string, req request) response {
		switch path {
		case "/acquire":
			return response{Status: StatusOK, Token: 11}
		case "/renew":
			if refuse.Load() {
				return response{Status: StatusRefused, Error: OutcomeRefused}
			}
			return response{Status: StatusOK, Token: 11}
		default:
			return response{Status: StatusRefused, Error: OutcomeNotHolder}
		}
	})
	l := fakeLocker(t, config{TTL: 300 * time.Millisecond}, node.addr())
	ls, err := l.AcquireLease(ctxTimeout(t, patience))
	require.NoError(t, err)
	eventually(t, patience, "renewals", func() bool { return node.count("/renew") >= 3 })
	select {
	case <-ls.Lost():
		t.Fatalf("lost while renewals succeed: %v", ls.Err())
	default:
	}
	require.Empty(t, ls.LossReason(), "no reason while held")
	refuse.Store(true)
	<-ls.Lost()
	require.ErrorIs(t, ls.Err(), ErrLeaseRefused)
	require.Equal(t, ls.Err().Error(), ls.LossReason(), "the history's lost record says why")
	err = ls.Release(ctxTimeout(t, patience))
	require.ErrorIs(t, err, harness.ErrNoEffect)
}

func TestClientClockExpiresLease(t *testing.T) {
	var offset atomic.Int64
	cfg := config{TTL: time.Second, ClientClock: func(int) func() time.Time {
		return func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	}}
	block := make(chan struct{})
	node := newFakeNode(t, func(path string, req request) response {
		if path == "/renew" {
			<-block // renewals hang
		}
		return response{Status: StatusOK, Token: 5}
	})
	defer close(block)
	l := fakeLocker(t, cfg, node.addr())
	ls, err := l.AcquireLease(ctxTimeout(t, patience))
	require.NoError(t, err)
	offset.Store(int64(2 * time.Second)) // the client's clock jumps past the TTL
	select {
	case <-ls.Lost():
	case <-time.After(patience):
		t.Fatal("lease not lost by the client's clock")
	}
	require.ErrorIs(t, ls.Err(), ErrLeaseExpired)
}

func TestNodeClockStampsFSMTime(t *testing.T) {
	var fake atomic.Int64
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	fake.Store(t0.UnixNano())
	cfg := testConfig(t)
	cfg.TTL = time.Second
	cfg.NodeClock = func(int) func() time.Time {
		return func() time.Time { return time.Unix(0, fake.Load()) }
	}
	s := startService(t, cfg)
	a := newTestLocker(t, s, 0, nil)
	b := newTestLocker(t, s, 1, nil)

	la := acquire(t, a, patience)
	g := s.Grants()
	require.Len(t, g, 1)
	require.Equal(t, t0.UnixNano(), g[0].Now, "FSM time is the leader's stamp")
	require.Equal(t, t0.Add(time.Second).UnixNano(), g[0].Expiry)

	// The leader's clock steps back: FSM time does not.
	fake.Store(t0.Add(-time.Hour).UnixNano())
	ctx, cancel := context.WithCancel(context.Background())
	b.busyHook = func(response) { cancel() }
	_, err := b.Acquire(ctx)
	b.busyHook = nil
	require.ErrorIs(t, err, harness.ErrNoEffect)
	var busy int
	for _, ev := range s.Events() {
		require.Equal(t, t0.UnixNano(), ev.Now, "FSM time stays at the latest stamp")
		if ev.Outcome == OutcomeBusy && ev.Owner == b.Owner() {
			busy++
		}
	}
	require.Equal(t, 1, busy)

	// The leader's clock jumps past the expiry: the lease ends in FSM time although the
	// holder kept renewing (the skew hazard fencing must catch); the holder learns it from
	// its refused renewal.
	fake.Store(t0.Add(time.Second).UnixNano())
	lb := acquire(t, b, patience)
	require.Greater(t, lb.Token(), la.Token())
	select {
	case <-la.Lost():
	case <-time.After(patience):
		t.Fatal("holder never noticed")
	}
	require.ErrorIs(t, la.Err(), ErrLeaseRefused)
	release(t, lb)
	require.NoError(t, s.CheckSafety())
}
