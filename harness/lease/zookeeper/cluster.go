package zookeeper

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
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
		leaders, modes := []int{}, []string{}
		for i, n := range e.ens.nodes {
			mode, err := serving(ctx, n.clientAddr())
			if err != nil {
				mode = "down"
			}
			modes = append(modes, mode)
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

// StallNode implements harness.Cluster: every link between server i and the others
// holds its bytes (nothing is lost).
func (e *Ensemble) StallNode(_ context.Context, i int) error {
	if i < 0 || i >= len(e.ens.nodes) {
		return fmt.Errorf("zookeeper: no node %d", i)
	}
	for j := range e.ens.nodes {
		if j == i {
			continue
		}
		for _, l := range e.ens.peerLinks[i][j] {
			l.Stall()
		}
		for _, l := range e.ens.peerLinks[j][i] {
			l.Stall()
		}
	}
	return nil
}

// Heal implements harness.Cluster: every link between servers passes again.
func (e *Ensemble) Heal(context.Context) error {
	for _, row := range e.ens.peerLinks {
		for _, ls := range row {
			for _, l := range ls {
				l.Pass()
			}
		}
	}
	return nil
}
