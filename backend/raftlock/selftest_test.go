package raftlock

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness"
)

// clientGrant is an acquire a client saw succeed, with its real-time interval.
type clientGrant struct {
	client     int
	owner      string
	token      int64
	call, back time.Time
}

// TestSelfTestRandomPartitions runs 6 clients acquiring and releasing for ~3s under a
// seeded random schedule of isolations, partitions, stalls and delays between nodes,
// then checks every grant the FSM made and every grant a client saw.
// RAFTLOCK_SEED=N replays a schedule (the execution itself is not deterministic).
func TestSelfTestRandomPartitions(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("RAFTLOCK_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("seed %d (RAFTLOCK_SEED=%d to replay the schedule)", seed, seed)

	cfg := testConfig(t)
	cfg.TTL = 200 * time.Millisecond
	s := startService(t, cfg)

	const clients = 6
	var (
		mu       sync.Mutex
		grants   []clientGrant
		unknowns int
		noEffect int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for id := range clients {
		l := newTestLocker(t, s, id, nil)
		rng := rand.New(rand.NewPCG(seed, uint64(id)+1))
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
				call := time.Now()
				ls, err := l.AcquireLease(ctx)
				back := time.Now()
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					grants = append(grants, clientGrant{client: id, owner: l.Owner(), token: ls.Token(), call: call, back: back})
				case errors.Is(err, harness.ErrNoEffect):
					noEffect++
				default:
					unknowns++
				}
				mu.Unlock()
				if err != nil {
					continue
				}
				// Hold the lock for a while (workload, not synchronisation).
				select {
				case <-time.After(time.Duration(rng.Int64N(int64(cfg.TTL / 2)))):
				case <-ls.Lost():
				case <-stop:
				}
				rctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
				_ = ls.Release(rctx)
				cancel()
			}
		})
	}

	// The nemesis: a seeded schedule of link faults between nodes.
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()
	n := s.Nodes()
	end := time.Now().Add(3 * time.Second)
	var faults []string
	for time.Now().Before(end) {
		node := rng.IntN(n)
		switch k := rng.IntN(7); k {
		case 0:
			require.NoError(t, s.Heal(ctx))
			faults = append(faults, "heal")
		case 1:
			lctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			if l, err := s.Leader(lctx); err == nil {
				node = l
			}
			cancel()
			require.NoError(t, s.Heal(ctx))
			require.NoError(t, s.Isolate(ctx, node))
			faults = append(faults, "isolate-leader "+strconv.Itoa(node))
		case 2:
			require.NoError(t, s.Isolate(ctx, node))
			faults = append(faults, "isolate "+strconv.Itoa(node))
		case 3:
			require.NoError(t, s.StallNode(ctx, node))
			faults = append(faults, "stall "+strconv.Itoa(node))
		case 4:
			other := (node + 1 + rng.IntN(n-1)) % n
			var rest []int
			for i := range n {
				if i != node && i != other {
					rest = append(rest, i)
				}
			}
			require.NoError(t, s.Partition([]int{node}, append([]int{other}, rest...)))
			faults = append(faults, "partition "+strconv.Itoa(node))
		case 5:
			d := time.Duration(5+rng.IntN(40)) * time.Millisecond
			for j := range n {
				if j != node {
					require.NoError(t, s.SetLink(node, j, link{Kind: LinkDelay, Delay: d}))
					require.NoError(t, s.SetLink(j, node, link{Kind: LinkDelay, Delay: d}))
				}
			}
			faults = append(faults, "delay "+strconv.Itoa(node)+" "+d.String())
		case 6:
			// One-way: node hears nobody but can still send.
			for j := range n {
				if j != node {
					require.NoError(t, s.SetLink(j, node, link{Kind: LinkDrop}))
				}
			}
			faults = append(faults, "deafen "+strconv.Itoa(node))
		}
		time.Sleep(time.Duration(80+rng.IntN(170)) * time.Millisecond) // schedule pacing
	}
	require.NoError(t, s.Heal(ctx))
	// A starved machine can spend the whole schedule without a grant; the healed
	// cluster must then still grant one.
	eventually(t, patience, "a grant", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(grants) > 0
	})
	close(stop)
	wg.Wait()
	waitConverged(t, s, patience)

	events := s.Events()
	fsmGrants := s.Grants()
	t.Logf("faults: %v", faults)
	t.Logf("client grants %d, no-effect errors %d, unknown outcomes %d; FSM events %d, FSM grants %d",
		len(grants), noEffect, unknowns, len(events), len(fsmGrants))
	require.NotEmpty(t, grants)

	// The FSM's own record: nodes agree, tokens unique and increasing, no overlap in FSM
	// time unless released first.
	require.NoError(t, s.CheckSafety())

	// Every grant a client saw is an FSM grant to that client, and no token twice.
	byToken := make(map[int64]event, len(fsmGrants))
	for _, ev := range fsmGrants {
		byToken[int64(ev.Token)] = ev
	}
	seen := make(map[int64]bool)
	for _, g := range grants {
		ev, ok := byToken[g.token]
		require.True(t, ok, "client %d got token %d that the FSM never granted", g.client, g.token)
		require.Equal(t, g.owner, ev.Owner)
		require.False(t, seen[g.token], "token %d seen twice", g.token)
		seen[g.token] = true
	}

	// Tokens increase in real-time order: a grant that returned before another was
	// requested has the smaller token.
	sorted := slices.Clone(grants)
	slices.SortFunc(sorted, func(a, b clientGrant) int { return a.back.Compare(b.back) })
	for i, a := range sorted {
		for _, b := range sorted[i+1:] {
			if a.back.Before(b.call) {
				require.Less(t, a.token, b.token, "grant %d returned before grant %d was asked for", a.token, b.token)
			}
		}
	}
}
