package zookeeper

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/harness"
)

// Ensemble is a Backend whose servers are an ensemble fencecheck started: it has a
// leader, and every link between two servers passes through a proxy of fencecheck's,
// so it also implements harness.Cluster.
type Ensemble struct {
	*Backend
}

var (
	_ harness.Cluster      = (*Ensemble)(nil)
	_ harness.ProcessNodes = (*Ensemble)(nil)
	_ harness.Crasher      = (*Ensemble)(nil)
)

// Ensemble returns b as an Ensemble when b started an ensemble of several servers.
func (b *Backend) Ensemble() (*Ensemble, bool) {
	if b.ens == nil || len(b.ens.nodes) < 2 {
		return nil, false
	}
	return &Ensemble{b}, true
}

// Leader implements harness.Cluster: the server whose srvr report says "Mode: leader",
// waiting (until ctx ends) for there to be exactly one.
func (e *Ensemble) Leader(ctx context.Context) (int, error) {
	var last string
	for {
		// In parallel, a second each: a stopped server accepts the connection and
		// answers nothing.
		modes := make([]string, len(e.ens.nodes))
		var wg sync.WaitGroup
		for i, n := range e.ens.nodes {
			wg.Go(func() {
				pctx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				mode, err := serving(pctx, n.clientAddr())
				if err != nil {
					mode = "down"
				}
				modes[i] = mode
			})
		}
		wg.Wait()
		var leaders []int
		for i, mode := range modes {
			if mode == "leader" {
				leaders = append(leaders, i)
			}
		}
		if len(leaders) == 1 {
			return leaders[0], nil
		}
		last = fmt.Sprint(modes)
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("zookeeper: no single leader (modes %s): %w", last, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Isolate implements harness.Cluster: every link between server i and the others is
// cut, both ways (open connections close, new ones are refused).
//
// One kind of peer connection does not pass a proxy: a server that receives an
// election connection from a lower id drops it and connects back to the address the
// caller sent in its first message, its real one. Isolate therefore also aborts every
// established connection to an election port (ss -K, which needs root); the ones that
// come back can only pass the proxies, which now refuse server i.
func (e *Ensemble) Isolate(ctx context.Context, i int) error {
	if i < 0 || i >= len(e.ens.nodes) {
		return fmt.Errorf("zookeeper: no node %d", i)
	}
	for j := range e.ens.nodes {
		if j == i {
			continue
		}
		for _, l := range e.ens.peerLinks[i][j] {
			l.Blackhole()
		}
		for _, l := range e.ens.peerLinks[j][i] {
			l.Blackhole()
		}
	}
	return e.abortElectionConns(ctx)
}

// abortElectionConns aborts every established TCP connection to or from a server's
// real election port.
func (e *Ensemble) abortElectionConns(ctx context.Context) error {
	var ports []string
	for _, n := range e.ens.nodes {
		ports = append(ports, fmt.Sprintf("dport = :%d or sport = :%d", n.electPort, n.electPort))
	}
	filter := "( " + strings.Join(ports, " or ") + " )"
	out, err := exec.CommandContext(ctx, "ss", "-K", "-t", "-n", "state", "established", filter).CombinedOutput()
	if err != nil {
		return fmt.Errorf("zookeeper: leader isolation must abort the servers' direct election connections with ss -K (iproute2, as root): %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// StallNode implements harness.Cluster with the real thing: SIGSTOP to server i's JVM
// (PauseNode), so its peers and clients see silence and nothing is lost; Heal sends
// SIGCONT. (Holding its peer links in the proxies instead left the ensemble without a
// leader for up to a minute: the stalled leader kept answering "leader" on its client
// port.)
func (e *Ensemble) StallNode(ctx context.Context, i int) error {
	if err := e.PauseNode(ctx, i); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stalled == nil {
		e.stalled = map[int]bool{}
	}
	e.stalled[i] = true
	return nil
}

// Heal implements harness.Cluster: every link between servers passes again, and every
// server StallNode stopped continues.
func (e *Ensemble) Heal(ctx context.Context) error {
	e.mu.Lock()
	stalled := e.stalled
	e.stalled = nil
	e.mu.Unlock()
	for i := range stalled {
		if err := e.ResumeNode(ctx, i); err != nil {
			return err
		}
	}
	for _, row := range e.ens.peerLinks {
		for _, ls := range row {
			for _, l := range ls {
				l.Pass()
			}
		}
	}
	return nil
}
