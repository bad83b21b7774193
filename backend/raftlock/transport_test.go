package raftlock

import (
	"errors"
	"sync"
	"testing"
	"time"

	hraft "github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// transportPair is node 0's fault transport talking to node 1, whose consumer answers
// every AppendEntries with success and records when it received it.
type transportPair struct {
	nw       *network
	t0, t1   *faultTransport
	mu       sync.Mutex
	received []time.Time
	stop     chan struct{}
	done     chan struct{}
}

func newTransportPair(t *testing.T, rpcTimeout time.Duration) *transportPair {
	nw := newNetwork(2, rpcTimeout)
	p := &transportPair{nw: nw, t0: newFaultTransport(nw, 0), t1: newFaultTransport(nw, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	p.t0.inner.Connect(nodeAddr(1), p.t1.inner)
	p.t1.inner.Connect(nodeAddr(0), p.t0.inner)
	go func() {
		defer close(p.done)
		for {
			select {
			case rpc := <-p.t1.Consumer():
				p.mu.Lock()
				p.received = append(p.received, time.Now())
				p.mu.Unlock()
				rpc.Respond(&hraft.AppendEntriesResponse{Success: true, Term: 7}, nil)
			case <-p.stop:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(p.stop)
		<-p.done
		nw.close()
		_ = p.t0.Close()
		_ = p.t1.Close()
	})
	return p
}

func (p *transportPair) send() error {
	var resp hraft.AppendEntriesResponse
	err := p.t0.AppendEntries(nodeID(1), nodeAddr(1), &hraft.AppendEntriesRequest{Term: 7}, &resp)
	if err == nil && (!resp.Success || resp.Term != 7) {
		return errors.New("bad response")
	}
	return err
}

func (p *transportPair) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.received)
}

func TestFaultTransportModes(t *testing.T) {
	p := newTransportPair(t, patience)

	var _ hraft.WithPreVote = p.t0
	_, err := p.t0.AppendEntriesPipeline(nodeID(1), nodeAddr(1))
	require.ErrorIs(t, err, hraft.ErrPipelineReplicationNotSupported)

	require.NoError(t, p.send())
	require.Equal(t, 1, p.count())

	// Drop: the request never arrives.
	p.nw.setLink(0, 1, link{Kind: LinkDrop})
	require.ErrorIs(t, p.send(), ErrLinkDropped)
	require.Equal(t, 1, p.count())

	// Dropped response: the request arrives, the caller gets an error.
	p.nw.heal()
	p.nw.setLink(1, 0, link{Kind: LinkDrop})
	require.ErrorIs(t, p.send(), ErrLinkDropped)
	require.Equal(t, 2, p.count())

	// Delay.
	p.nw.heal()
	p.nw.setLink(0, 1, link{Kind: LinkDelay, Delay: 30 * time.Millisecond})
	begin := time.Now()
	require.NoError(t, p.send())
	require.GreaterOrEqual(t, time.Since(begin), 30*time.Millisecond)

	// Stall: held (not delivered) until healed, then delivered.
	p.nw.setNode(0, link{Kind: LinkStall})
	errc := make(chan error, 1)
	go func() { errc <- p.send() }()
	eventually(t, patience, "the message to be held", func() bool { return p.nw.held.Load() == 1 })
	require.Equal(t, 3, p.count())
	healed := time.Now()
	p.nw.heal()
	require.NoError(t, <-errc)
	require.Equal(t, 4, p.count())
	p.mu.Lock()
	require.False(t, p.received[3].Before(healed))
	p.mu.Unlock()

	// Stall aborted by closing the network (no deadlock on Close).
	p.nw.setNode(1, link{Kind: LinkStall})
	go func() { errc <- p.send() }()
	eventually(t, patience, "the message to be held", func() bool { return p.nw.held.Load() == 1 })
	p.nw.close()
	require.ErrorIs(t, <-errc, ErrNetworkClose)
	require.Equal(t, int64(0), p.nw.held.Load())
}

func TestFaultTransportStallTimesOut(t *testing.T) {
	p := newTransportPair(t, 50*time.Millisecond)
	p.nw.setLink(0, 1, link{Kind: LinkStall})
	begin := time.Now()
	require.ErrorIs(t, p.send(), ErrLinkStalled)
	require.GreaterOrEqual(t, time.Since(begin), 50*time.Millisecond)
	require.Equal(t, 0, p.count())

	// A down node fails fast whatever the link says.
	p.nw.setDown(1, true)
	require.ErrorIs(t, p.send(), ErrNodeDown)
}
