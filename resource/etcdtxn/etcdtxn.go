// Package etcdtxn is the "etcd-txn" resource: etcd itself is the protected store, and
// every write is one transaction fenced by the writer's lock, the way etcd recommends:
//
//	Txn(If(CreateRevision(lockKey) == lease.CreateRevision()).
//	    Then(Put(DataKey, value), Put(TokenKey, token)))
//
// The write takes effect only while the writer's own lock key still exists with the
// revision it was created at, i.e. only while the writer still owns the lock; once its
// lease expired (or it released) the key is gone, and a re-created key would have a new
// revision, so the comparison fails and the write is rejected with no effect.
//
// # Why Fence is "owner"
//
// The owner's CreateRevision only increases from holder to holder (see package
// github.com/fencecheck/fencecheck/backend/etcd), and a write is accepted only while its writer owns
// the lock, so every earlier accepted write came from an earlier holder with a smaller
// token: an accepted write's token is > the stored token, as long as each grant writes
// once (the harness worker's critical section does; a second write under the same
// grant would carry the same token, which only "monotonic" allows). The fence is
// stronger than the rule, not weaker: it also rejects a stale holder whose lease
// expired before anyone newer wrote, although its token is still > the stored one.
// A checker must therefore read "rejected" as "no effect", never as "token <= stored":
// that is the "owner" fence rule (accepted writes as under strict; any refusal legal).
//
// The lease must come from the etcd backend (it must have Key() and CreateRevision()),
// and the resource must be the same etcd cluster as the lock.
package etcdtxn

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencecheck/fencecheck/backend/etcd"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
)

// The keys holding the protected data when the resource has no Prefix.
const (
	DataKey  = "/fencecheck/data"
	TokenKey = "/fencecheck/data-token"
)

// The names of the data keys under a Prefix.
const (
	dataName  = "data"
	tokenName = "data-token"
)

// DefaultDialTimeout bounds connecting a client unless Resource.DialTimeout is set.
const DefaultDialTimeout = 2 * time.Second

// Lease is what a write needs from the lease: the etcd backend's *etcd.Lease has it.
type Lease interface {
	harness.Lease
	// Key is the writer's lock key.
	Key() string
	// CreateRevision is the revision the lock key was created at.
	CreateRevision() int64
}

var _ Lease = (*etcd.Lease)(nil)

// Resource is the etcd-txn resource over the etcd servers at its endpoints. It owns no
// server.
type Resource struct {
	endpoints []string
	// DialTimeout bounds connecting each client (0 means DefaultDialTimeout).
	DialTimeout time.Duration
	// Prefix, if set, is the run's key prefix (the etcd backend's Config.Prefix): the
	// data lives at Prefix+"data" and Prefix+"data-token", so runs against one cluster
	// never share a register, and the backend's Close deletes it. Empty: DataKey and
	// TokenKey.
	Prefix string
}

var _ harness.Resource = (*Resource)(nil)

// New returns the resource for the etcd servers at endpoints (host:port), the same
// cluster the etcd lock backend uses.
func New(endpoints []string) *Resource {
	return &Resource{endpoints: append([]string(nil), endpoints...)}
}

// Name implements harness.Resource.
func (r *Resource) Name() string { return "etcd-txn" }

// ReadsLease implements harness.LeaseReader.
func (r *Resource) ReadsLease() string {
	return "resource etcd-txn's writes compare the lease's own lock key and its revision in etcd"
}

// Fence implements harness.Resource: owner (see the package comment).
func (r *Resource) Fence() string { return history.FenceOwner }

// Endpoints implements harness.Resource.
func (r *Resource) Endpoints() []string { return append([]string(nil), r.endpoints...) }

// Close implements harness.Resource: nothing to stop.
func (r *Resource) Close() error { return nil }

// NewClient implements harness.Resource: a client dialling only addrs. The write is
// one atomic transaction, so the gate is never used.
func (r *Resource) NewClient(ctx context.Context, _ int, addrs []string, _ harness.Gate) (harness.ResourceClient, error) {
	if len(addrs) != len(r.endpoints) {
		return nil, fmt.Errorf("%w: etcd-txn: want %d addresses (one per endpoint), got %d", harness.ErrNoEffect, len(r.endpoints), len(addrs))
	}
	timeout := r.DialTimeout
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	cli, err := dialPatiently(ctx, addrs, timeout)
	if err != nil {
		return nil, err
	}
	c := &Client{cli: cli, dataKey: DataKey, tokenKey: TokenKey}
	if r.Prefix != "" {
		c.dataKey, c.tokenKey = r.Prefix+dataName, r.Prefix+tokenName
	}
	return c, nil
}

// setupCeiling bounds the retries of a resource client's first connection: it is made
// before any fault, so a probe that times out is a slow (loaded) machine, not a fault,
// and is tried again rather than failing the run.
const setupCeiling = 30 * time.Second

// dialPatiently dials addrs, trying again while the probe only timed out, for up to
// setupCeiling.
func dialPatiently(ctx context.Context, addrs []string, timeout time.Duration) (*clientv3.Client, error) {
	end := time.Now().Add(setupCeiling)
	for {
		cli, err := etcd.Dial(ctx, addrs, timeout)
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || time.Now().After(end) {
			return cli, err
		}
	}
}

// Client reads and writes the protected data.
type Client struct {
	cli               *clientv3.Client
	dataKey, tokenKey string
	closeOnce         sync.Once
}

var _ harness.ResourceClient = (*Client)(nil)

// Read implements harness.ResourceClient: a linearizable read of the value and its
// token, from one snapshot ("" and 0 before the first write).
func (c *Client) Read(ctx context.Context) (string, int64, error) {
	resp, err := c.cli.Txn(ctx).Then(clientv3.OpGet(c.dataKey), clientv3.OpGet(c.tokenKey)).Commit()
	if err != nil {
		return "", 0, fmt.Errorf("etcd-txn: read: %w", err)
	}
	var value string
	var token int64
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		value = string(kvs[0].Value)
	}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		token, err = strconv.ParseInt(string(kvs[0].Value), 10, 64)
		if err != nil {
			return "", 0, fmt.Errorf("etcd-txn: stored token %q: %w", kvs[0].Value, err)
		}
	}
	return value, token, nil
}

// Write implements harness.ResourceClient: one transaction that stores value and the
// lease's token iff the lease's lock key still has its CreateRevision. accepted=false
// (nil error) means the writer no longer owns the lock: no effect. A transport error
// leaves the outcome unknown.
func (c *Client) Write(ctx context.Context, lease harness.Lease, value string) (bool, error) {
	l, ok := lease.(Lease)
	if !ok {
		return false, fmt.Errorf("%w: etcd-txn: lease %T has no Key()/CreateRevision(): it must come from the etcd backend", harness.ErrNoEffect, lease)
	}
	key, rev := l.Key(), l.CreateRevision()
	if key == "" || rev <= 0 {
		return false, fmt.Errorf("%w: etcd-txn: lease has no lock key (key %q, create revision %d)", harness.ErrNoEffect, key, rev)
	}
	resp, err := c.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).
		Then(clientv3.OpPut(c.dataKey, value), clientv3.OpPut(c.tokenKey, strconv.FormatInt(l.Token(), 10))).
		Commit()
	if err != nil {
		return false, fmt.Errorf("etcd-txn: write: %w", err)
	}
	return resp.Succeeded, nil
}

// Close implements harness.ResourceClient. Safe to call twice.
func (c *Client) Close() error {
	c.closeOnce.Do(func() { _ = c.cli.Close() })
	return nil
}
