package pgadvisory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/pgadvisory"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harnesstest"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// silentGrant is what a silent-partition run's history shows of the struck holder's
// lock: the fault, and the first grant to another client after it struck.
type silentGrant struct {
	fault   history.Fault
	struck  int
	next    *history.Op // nil: nobody else was granted the lock after the strike
	grantAt int64       // next's return, ns of run time
}

func silentOutcome(t *testing.T, h *history.History) silentGrant {
	t.Helper()
	var g silentGrant
	found := false
	for _, f := range h.Faults {
		if f.Kind == "silent-partition" {
			g.fault, found = f, true
			break
		}
	}
	require.True(t, found, "the run has no silent-partition fault")
	require.NotNil(t, g.fault.End, "the fault never healed")
	_, err := fmt.Sscanf(g.fault.Target, "client-%d", &g.struck)
	require.NoError(t, err, "fault target %q", g.fault.Target)
	for i := range h.Ops {
		o := &h.Ops[i]
		if o.Kind != history.Acquire || o.Status != history.OK || o.Client == g.struck || o.Return == nil || *o.Return <= g.fault.Start {
			continue
		}
		if g.next == nil || *o.Return < g.grantAt {
			g.next, g.grantAt = o, *o.Return
		}
	}
	return g
}

// TestSilentPartition: under silent-partition the struck holder's connections stay
// open, so its session, and the advisory lock with it, stays until something at the
// application level ends it. With PostgreSQL's default (no idle_session_timeout) that is
// nothing: nobody else is granted the lock while the fault lasts (its 10 s limit, 20 TTLs),
// only after the heal. With the backend's idle_session_timeout = TTL the server ends the
// silent session and another client is granted the lock while the fault still holds.
func TestSilentPartition(t *testing.T) {
	if err := pgadvisory.Available(); err != nil {
		t.Skip(err)
	}
	const ttl = 500 * time.Millisecond
	run := func(t *testing.T, idle string) silentGrant {
		s := spec.Spec{Backend: pgadvisory.Name, Resource: "unfenced", TTL: ttl, Faults: []string{"silent-partition"}}
		if idle != "" {
			s.Options = map[string]string{pgadvisory.OptionIdle: idle}
		}
		reg := newReg(t)
		harnesstest.SkipUnavailable(t, reg, s)
		ctx, cancel := context.WithTimeout(context.Background(), 3*harnesstest.Ceiling)
		defer cancel()
		out, err := trial.Run(ctx, reg, s, trial.Options{Dir: t.TempDir()})
		require.NoError(t, err)
		return silentOutcome(t, out.History)
	}
	t.Run("server default: stranded until the heal", func(t *testing.T) {
		t.Parallel()
		g := run(t, "off")
		end := *g.fault.End
		t.Logf("no idle_session_timeout: fault on client %d lasted %s (%s); next grant to another client %s after it struck, %s after the heal",
			g.struck, history.Seconds(end-g.fault.Start), g.fault.Detail, history.Seconds(g.grantAt-g.fault.Start), history.Seconds(g.grantAt-end))
		require.NotNil(t, g.next, "nobody was granted the lock after the fault")
		// Ordering, not timing: the fault ends at its limit only when no other write was
		// accepted, and its minimum hold is already 2 × TTL.
		require.Greater(t, g.grantAt, end, "another client was granted the lock while the silent holder's session was open")
		require.Greater(t, end-g.fault.Start, int64(ttl), "the fault lasted no longer than a TTL")
	})
	t.Run("idle_session_timeout = TTL: freed while silent", func(t *testing.T) {
		t.Parallel()
		g := run(t, "")
		end := *g.fault.End
		require.NotNil(t, g.next, "nobody was granted the lock after the fault")
		t.Logf("idle_session_timeout = %v: fault on client %d lasted %s; client %d granted the lock %s after the strike, %s before the heal",
			ttl, g.struck, history.Seconds(end-g.fault.Start), g.next.Client, history.Seconds(g.grantAt-g.fault.Start), history.Seconds(end-g.grantAt))
		require.Less(t, g.grantAt, end, "the lock passed on only after the heal: the server did not end the silent session")
	})
}
