package raftlock

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	hraft "github.com/hashicorp/raft"
)

// linkKind is what a directed link between two raft nodes does with messages.
type linkKind int

// Link kinds.
const (
	// LinkPass delivers messages.
	LinkPass linkKind = iota
	// LinkDrop fails every message at once (the RPC returns an error).
	LinkDrop
	// LinkDelay holds every message for Link.Delay, then delivers it.
	LinkDelay
	// LinkStall holds every message until the link changes or the RPC times out
	// (Config.RPCTimeout); a held message is delivered if the link heals in time.
	LinkStall
)

func (k linkKind) String() string {
	switch k {
	case LinkPass:
		return "pass"
	case LinkDrop:
		return "drop"
	case LinkDelay:
		return "delay"
	case LinkStall:
		return "stall"
	}
	return fmt.Sprintf("LinkKind(%d)", int(k))
}

// link is the mode of one directed link (src -> dst): it applies to requests from src to
// dst and to dst's responses to src's requests travelling the other way, i.e. responses
// are governed by the (dst -> src) link.
type link struct {
	Kind  linkKind
	Delay time.Duration // LinkDelay only
}

// Errors returned by faulted links.
var (
	ErrLinkDropped  = errors.New("raft lock transport: link dropped")
	ErrLinkStalled  = errors.New("raft lock transport: stalled link timed out")
	ErrNodeDown     = errors.New("raft lock transport: node is down")
	ErrNetworkClose = errors.New("raft lock transport: network closed")
)

// network is the fault table shared by every node's transport.
type network struct {
	n          int
	rpcTimeout time.Duration

	mu      sync.Mutex
	links   [][]link
	down    []bool
	changed chan struct{} // closed and replaced on every change
	closed  chan struct{}
	isClose bool
	addrs   map[hraft.ServerAddress]int

	held atomic.Int64 // messages currently held by stalled links
}

func newNetwork(n int, rpcTimeout time.Duration) *network {
	nw := &network{
		n:          n,
		rpcTimeout: rpcTimeout,
		links:      make([][]link, n),
		down:       make([]bool, n),
		changed:    make(chan struct{}),
		closed:     make(chan struct{}),
		addrs:      make(map[hraft.ServerAddress]int, n),
	}
	for i := range n {
		nw.links[i] = make([]link, n)
		nw.addrs[nodeAddr(i)] = i
	}
	return nw
}

// update applies fn to the table under the lock and wakes every held message.
func (nw *network) update(fn func()) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	fn()
	close(nw.changed)
	nw.changed = make(chan struct{})
}

func (nw *network) setLink(src, dst int, l link) {
	nw.update(func() { nw.links[src][dst] = l })
}

// setNode sets every link between i and the other nodes, both ways.
func (nw *network) setNode(i int, l link) {
	nw.update(func() {
		for j := range nw.n {
			if j != i {
				nw.links[i][j] = l
				nw.links[j][i] = l
			}
		}
	})
}

func (nw *network) heal() {
	nw.update(func() {
		for i := range nw.n {
			for j := range nw.n {
				nw.links[i][j] = link{}
			}
		}
	})
}

func (nw *network) setDown(i int, down bool) {
	nw.update(func() { nw.down[i] = down })
}

func (nw *network) close() {
	nw.update(func() {
		if !nw.isClose {
			nw.isClose = true
			close(nw.closed)
		}
	})
}

// snapshot returns a copy of the link table.
func (nw *network) snapshot() [][]link {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	out := make([][]link, nw.n)
	for i := range out {
		out[i] = append([]link(nil), nw.links[i]...)
	}
	return out
}

// pass lets one message travel src -> dst under the link's current mode. It returns nil
// when the message may be delivered, or why it was not. deadline bounds stalls (the RPC's
// own timeout).
func (nw *network) pass(src, dst int, deadline <-chan time.Time) error {
	for {
		nw.mu.Lock()
		l, ch := nw.links[src][dst], nw.changed
		downSrc, downDst, isClose := nw.down[src], nw.down[dst], nw.isClose
		nw.mu.Unlock()
		switch {
		case isClose:
			return ErrNetworkClose
		case downSrc || downDst:
			return fmt.Errorf("%w: %d -> %d", ErrNodeDown, src, dst)
		}
		switch l.Kind {
		case LinkPass:
			return nil
		case LinkDrop:
			return fmt.Errorf("%w: %d -> %d", ErrLinkDropped, src, dst)
		case LinkDelay:
			t := time.NewTimer(l.Delay)
			select {
			case <-t.C:
				return nil
			case <-nw.closed:
				t.Stop()
				return ErrNetworkClose
			}
		case LinkStall:
			nw.held.Add(1)
			select {
			case <-ch: // the table changed: look again
				nw.held.Add(-1)
			case <-deadline:
				nw.held.Add(-1)
				return fmt.Errorf("%w: %d -> %d", ErrLinkStalled, src, dst)
			case <-nw.closed:
				nw.held.Add(-1)
				return ErrNetworkClose
			}
		default:
			return nil
		}
	}
}

// faultTransport is node src's raft transport: an InmemTransport behind the fault table.
// It implements raft.WithPreVote (otherwise raft silently disables pre-vote) and refuses
// pipelining so that every AppendEntries passes through it.
type faultTransport struct {
	nw    *network
	src   int
	inner *hraft.InmemTransport
}

var (
	_ hraft.Transport   = (*faultTransport)(nil)
	_ hraft.WithPreVote = (*faultTransport)(nil)
	_ hraft.WithClose   = (*faultTransport)(nil)
)

func newFaultTransport(nw *network, src int) *faultTransport {
	_, inner := hraft.NewInmemTransportWithTimeout(nodeAddr(src), nw.rpcTimeout)
	return &faultTransport{nw: nw, src: src, inner: inner}
}

// rpc runs one RPC to target through the fault table: the request under (src -> dst),
// the response under (dst -> src). The RPC's own timeout bounds both stalls together.
func (t *faultTransport) rpc(target hraft.ServerAddress, timeout time.Duration, call func() error) error {
	dst, ok := t.nw.addrs[target]
	if !ok {
		return fmt.Errorf("raft lock transport: unknown peer %q", target)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	if err := t.nw.pass(t.src, dst, timer.C); err != nil {
		return err
	}
	if err := call(); err != nil {
		return err
	}
	return t.nw.pass(dst, t.src, timer.C)
}

func (t *faultTransport) Consumer() <-chan hraft.RPC             { return t.inner.Consumer() }
func (t *faultTransport) LocalAddr() hraft.ServerAddress         { return t.inner.LocalAddr() }
func (t *faultTransport) SetHeartbeatHandler(cb func(hraft.RPC)) { t.inner.SetHeartbeatHandler(cb) }

func (t *faultTransport) EncodePeer(id hraft.ServerID, addr hraft.ServerAddress) []byte {
	return t.inner.EncodePeer(id, addr)
}

func (t *faultTransport) DecodePeer(b []byte) hraft.ServerAddress { return t.inner.DecodePeer(b) }

// AppendEntriesPipeline is not supported, so raft sends every AppendEntries through
// AppendEntries, where faults apply.
func (t *faultTransport) AppendEntriesPipeline(hraft.ServerID, hraft.ServerAddress) (hraft.AppendPipeline, error) {
	return nil, hraft.ErrPipelineReplicationNotSupported
}

func (t *faultTransport) AppendEntries(id hraft.ServerID, target hraft.ServerAddress, args *hraft.AppendEntriesRequest, resp *hraft.AppendEntriesResponse) error {
	return t.rpc(target, t.nw.rpcTimeout, func() error { return t.inner.AppendEntries(id, target, args, resp) })
}

func (t *faultTransport) RequestVote(id hraft.ServerID, target hraft.ServerAddress, args *hraft.RequestVoteRequest, resp *hraft.RequestVoteResponse) error {
	return t.rpc(target, t.nw.rpcTimeout, func() error { return t.inner.RequestVote(id, target, args, resp) })
}

func (t *faultTransport) RequestPreVote(id hraft.ServerID, target hraft.ServerAddress, args *hraft.RequestPreVoteRequest, resp *hraft.RequestPreVoteResponse) error {
	return t.rpc(target, t.nw.rpcTimeout, func() error { return t.inner.RequestPreVote(id, target, args, resp) })
}

func (t *faultTransport) InstallSnapshot(id hraft.ServerID, target hraft.ServerAddress, args *hraft.InstallSnapshotRequest, resp *hraft.InstallSnapshotResponse, data io.Reader) error {
	return t.rpc(target, 10*t.nw.rpcTimeout, func() error { return t.inner.InstallSnapshot(id, target, args, resp, data) })
}

func (t *faultTransport) TimeoutNow(id hraft.ServerID, target hraft.ServerAddress, args *hraft.TimeoutNowRequest, resp *hraft.TimeoutNowResponse) error {
	return t.rpc(target, 10*t.nw.rpcTimeout, func() error { return t.inner.TimeoutNow(id, target, args, resp) })
}

// Close disconnects the inner transport from every peer (raft calls it on shutdown).
func (t *faultTransport) Close() error { return t.inner.Close() }
