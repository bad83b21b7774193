package etcd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// PrefixRoot is the root of every per-run prefix: a backend only ever deletes keys
// below it, so its cleanup cannot touch a user's own keys.
const PrefixRoot = "/fencecheck/"

// RunPrefix is the key prefix of one run: PrefixRoot + runID + "/".
func RunPrefix(runID string) string { return PrefixRoot + runID + "/" }

// validatePrefix refuses a prefix whose deletion could reach beyond one run's keys.
func validatePrefix(p string) error {
	if p == "" {
		return nil
	}
	rest, ok := strings.CutPrefix(p, PrefixRoot)
	if !ok || !strings.HasSuffix(rest, "/") || strings.Trim(rest, "/") == "" || strings.Contains(strings.TrimSuffix(rest, "/"), "/") {
		return fmt.Errorf("etcd: key prefix %q must be %s<run id>/ (the backend deletes everything under it when it closes)", p, PrefixRoot)
	}
	return nil
}

// TTLError says the cluster granted a lease TTL other than the one asked for (etcd
// raises a TTL below ceil(1.5 × its election timeout) to that minimum). A run must not
// time its faults or report figures from a TTL the server did not grant.
type TTLError struct {
	Asked, Granted time.Duration
}

func (e *TTLError) Error() string {
	if e.Granted > e.Asked {
		return fmt.Sprintf("this cluster grants at least %s leases; use --ttl %s", secs(e.Granted), secs(e.Granted))
	}
	return fmt.Sprintf("this cluster granted a %s lease when asked for %s; use --ttl %s", secs(e.Granted), secs(e.Asked), secs(e.Granted))
}

func secs(d time.Duration) string { return fmt.Sprintf("%ds", int64(d/time.Second)) }

// probeTTL grants a lease of ttl, revokes it at once, and returns the TTL the server
// granted: a TTLError when it differs from ttl.
func probeTTL(ctx context.Context, cli *clientv3.Client, ttl, timeout time.Duration) error {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	id := newLeaseID()
	granted, err := grant(pctx, cli, id, ttl)
	// A fresh context: the revoke must happen even if the grant used up the deadline,
	// and even if the grant's answer was lost (the lease may exist all the same).
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer rcancel()
	if _, rerr := cli.Revoke(rctx, id); rerr != nil && !errors.Is(rerr, rpctypes.ErrLeaseNotFound) && err == nil {
		return fmt.Errorf("etcd: revoke probe lease %x (it expires in %v): %w", int64(id), granted, rerr)
	}
	if err != nil {
		return fmt.Errorf("etcd: probe lease grant: %w", err)
	}
	if granted != ttl {
		return &TTLError{Asked: ttl, Granted: granted}
	}
	return nil
}

// newLeaseID picks a lease ID. fencecheck chooses its leases' IDs itself (etcd accepts a
// requested ID) so that it knows every lease it may have created, even one whose grant
// answer never arrived (the run stopped, or a fault held the link): Close revokes them.
// A clash with an existing lease (2^-63) fails the grant with "lease already exists".
func newLeaseID() clientv3.LeaseID {
	for {
		if id := clientv3.LeaseID(rand.Int64()); id > 0 {
			return id
		}
	}
}

// grant asks for lease id with ttl (whole seconds) and returns the TTL granted, with
// the call options clientv3's own Grant uses (wait for a ready connection).
func grant(ctx context.Context, cli *clientv3.Client, id clientv3.LeaseID, ttl time.Duration) (time.Duration, error) {
	resp, err := clientv3.RetryLeaseClient(cli).LeaseGrant(ctx,
		&pb.LeaseGrantRequest{ID: int64(id), TTL: int64(ttl / time.Second)}, grpc.WaitForReady(true))
	if err != nil {
		return 0, clientv3.ContextError(ctx, err)
	}
	if resp.Error != "" {
		return 0, errors.New(resp.Error)
	}
	return time.Duration(resp.TTL) * time.Second, nil
}

// leaseBook is the set of leases a backend's clients were granted and have not revoked,
// so that Close can revoke what a paused or closed client left behind.
type leaseBook struct {
	mu  sync.Mutex
	ids map[clientv3.LeaseID]struct{}
}

func newLeaseBook() *leaseBook { return &leaseBook{ids: map[clientv3.LeaseID]struct{}{}} }

func (b *leaseBook) add(id clientv3.LeaseID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ids[id] = struct{}{}
}

func (b *leaseBook) remove(id clientv3.LeaseID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.ids, id)
}

func (b *leaseBook) take() []clientv3.LeaseID {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]clientv3.LeaseID, 0, len(b.ids))
	for id := range b.ids {
		out = append(out, id)
	}
	clear(b.ids)
	return out
}

// probeTimeout bounds the TTL probe's grant and revoke. The server has already answered
// a read by then (an unreachable one fails within the dial timeout), so this is only a
// ceiling for a slow commit on a loaded machine.
const probeTimeout = 10 * time.Second

// cleanupTimeout bounds Close's cleanup of a run's keys and leases.
const cleanupTimeout = 15 * time.Second

// cleanup revokes every lease the backend's clients left and deletes every key under
// the prefix, through a client of its own that dials the endpoints directly (no fault
// proxy sits in its way). It runs after the run, so it has its own deadline.
func (b *Backend) cleanup() error {
	leases := b.leases.take()
	if b.cfg.Prefix == "" && len(leases) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	cli, err := DialKeepAlive(ctx, b.cfg.Endpoints, b.cfg.DialTimeout, b.cfg.KeepAlive)
	if err != nil {
		return fmt.Errorf("etcd: clean up %s: %w", b.cfg.Prefix, err)
	}
	defer cli.Close()
	var errs []error
	for _, id := range leases {
		if _, err := cli.Revoke(ctx, id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			errs = append(errs, fmt.Errorf("revoke lease %x: %w", int64(id), err))
		}
	}
	if b.cfg.Prefix != "" {
		if _, err := cli.Delete(ctx, b.cfg.Prefix, clientv3.WithPrefix()); err != nil {
			errs = append(errs, fmt.Errorf("delete %s*: %w", b.cfg.Prefix, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("etcd: clean up %s: %w", b.cfg.Prefix, err)
	}
	return nil
}
