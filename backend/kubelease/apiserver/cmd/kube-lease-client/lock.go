package main

import (
	"context"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
)

// grant is what the write that won the lock wrote.
type grant struct {
	transitions     int
	resourceVersion string
	// durationSeconds is the Lease's leaseDurationSeconds as the server stored it (the
	// object its write returned); 0 when it did not say.
	durationSeconds int32
}

// recordingLock is client-go's LeaseLock, watched: it notes which of its writes were
// confirmed, and the resourceVersion each returned, without changing what it does.
type recordingLock struct {
	*rl.LeaseLock
	seen *versionSeen
	// renewed is called after each confirmed renewal (a write naming us after the
	// granting one), outside the lock.
	renewed func()

	mu       sync.Mutex
	sent     bool // a write naming us was sent
	won      *grant
	last     time.Time // start of the last confirmed write naming us
	released bool      // a write with no holder was confirmed
}

func newRecordingLock(c coordclient.LeasesGetter, namespace, name, identity string, renewed func()) *recordingLock {
	seen := &versionSeen{LeasesGetter: c}
	return &recordingLock{
		LeaseLock: &rl.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name},
			Client:     seen,
			LockConfig: rl.ResourceLockConfig{Identity: identity},
		},
		seen:    seen,
		renewed: renewed,
	}
}

// Create implements rl.Interface.
func (r *recordingLock) Create(ctx context.Context, ler rl.LeaderElectionRecord) error {
	return r.write(ctx, ler, r.LeaseLock.Create)
}

// Update implements rl.Interface.
func (r *recordingLock) Update(ctx context.Context, ler rl.LeaderElectionRecord) error {
	return r.write(ctx, ler, r.LeaseLock.Update)
}

func (r *recordingLock) write(ctx context.Context, ler rl.LeaderElectionRecord, f func(context.Context, rl.LeaderElectionRecord) error) error {
	start := time.Now()
	ours := ler.HolderIdentity == r.Identity()
	if ours {
		r.mu.Lock()
		r.sent = true
		r.mu.Unlock()
	}
	if err := f(ctx, ler); err != nil {
		return err
	}
	rv, dur := r.seen.last(), r.seen.duration()
	r.mu.Lock()
	renewal := false
	switch {
	case ours && r.won == nil:
		r.won, r.last = &grant{transitions: ler.LeaderTransitions, resourceVersion: rv, durationSeconds: dur}, start
	case ours:
		r.last, renewal = start, true
	case ler.HolderIdentity == "":
		r.released = true
	}
	r.mu.Unlock()
	if renewal && r.renewed != nil {
		r.renewed()
	}
	return nil
}

func (r *recordingLock) grant() (grant, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.won == nil {
		return grant{}, false
	}
	return *r.won, true
}

func (r *recordingLock) attempted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent
}

func (r *recordingLock) lastWrite() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

func (r *recordingLock) releasedOK() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.released
}

// versionSeen passes the LeaseLock's requests through and keeps the resourceVersion and
// the leaseDurationSeconds of the Lease its last Create or Update returned.
type versionSeen struct {
	coordclient.LeasesGetter
	mu  sync.Mutex
	rv  string
	dur int32
}

func (v *versionSeen) Leases(ns string) coordclient.LeaseInterface {
	return versionSeenLeases{LeaseInterface: v.LeasesGetter.Leases(ns), v: v}
}

func (v *versionSeen) last() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.rv
}

func (v *versionSeen) duration() int32 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.dur
}

func (v *versionSeen) note(l *coordinationv1.Lease, err error) (*coordinationv1.Lease, error) {
	if err == nil && l != nil {
		v.mu.Lock()
		v.rv = l.ResourceVersion
		if d := l.Spec.LeaseDurationSeconds; d != nil {
			v.dur = *d
		}
		v.mu.Unlock()
	}
	return l, err
}

type versionSeenLeases struct {
	coordclient.LeaseInterface
	v *versionSeen
}

func (s versionSeenLeases) Create(ctx context.Context, l *coordinationv1.Lease, o metav1.CreateOptions) (*coordinationv1.Lease, error) {
	return s.v.note(s.LeaseInterface.Create(ctx, l, o))
}

func (s versionSeenLeases) Update(ctx context.Context, l *coordinationv1.Lease, o metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	return s.v.note(s.LeaseInterface.Update(ctx, l, o))
}
