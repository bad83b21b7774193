package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Worker is one harness client: it loops acquire → read → write → release, recording
// every operation, until told to stop.
type Worker struct {
	ID       int
	Locker   Locker
	Resource ResourceClient
	Gate     Gate
	Rec      *history.Recorder
	// OpTimeout bounds every call but Acquire; a call that runs out is recorded unknown.
	OpTimeout time.Duration
	// AcquireTimeout bounds one Acquire (it also ends when the run stops), unless the
	// Locker bounds its acquires itself (SelfBoundedAcquirer).
	AcquireTimeout time.Duration
	// Think is the longest pause between critical sections (drawn from Rand).
	Think time.Duration
	Rand  *rand.Rand
	// Careful makes the client check, by its own clock (Now), that its lease is still
	// valid with Margin to spare right before writing, and skip the write if not — the
	// common mitigation fencing exists to replace. The lease must implement Expiring.
	Careful bool
	Margin  time.Duration
	Now     func() time.Time
	// Heeding makes the client skip its write once its lock client has told it that the
	// lease was lost (Lease.Lost closed), checked right before the write: the demoted
	// leader's fix. A lease whose Lost is nil never tells, so it is not heeded.
	Heeding bool
	// Keys > 1 makes each critical section pick one of Keys independent keys (from
	// Rand) and use that key's lock and register cell; Locker and Resource must then be
	// a KeyedLocker and a KeyedResourceClient (keys.go). 0 or 1: the single default key.
	Keys int
	// ValueTag, if set, is appended to every written value ("c1-32@TAG"): a run against
	// a store that outlives it tags its values with its run id, so no read can mistake
	// another run's value for one of its own writes.
	ValueTag string
	// Done, if set, ends the loop as stop does, asked between critical sections: the
	// run's own end by events (an operations cap), so that no client starts another
	// critical section once it is reached.
	Done func() bool

	writes int
}

// Run loops until stop is closed (checked between critical sections) or ctx ends. An
// Acquire in progress when stop closes is abandoned; a critical section already holding
// the lock finishes, so a paused client's late write is always recorded.
func (w *Worker) Run(ctx context.Context, stop <-chan struct{}) {
	acqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-acqCtx.Done():
		}
	}()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		if w.Done != nil && w.Done() {
			return
		}
		w.criticalSection(ctx, acqCtx)
		if w.Think > 0 && w.Rand != nil {
			d := time.Duration(w.Rand.Int64N(int64(w.Think)))
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-stop:
				t.Stop()
			}
		}
	}
}

func (w *Worker) criticalSection(ctx, acqCtx context.Context) {
	key := ""
	if w.Keys > 1 {
		i := 0
		if w.Rand != nil {
			i = w.Rand.IntN(w.Keys)
		}
		key = KeyName(i)
	}
	acq := w.Rec.BeginKey(key, w.ID, history.Acquire, 0, "", nil)
	actx, cancel := context.WithCancel(acqCtx)
	if sb, ok := w.Locker.(SelfBoundedAcquirer); !ok || !sb.AcquireBoundsItself() {
		cancel()
		actx, cancel = context.WithTimeout(acqCtx, w.AcquireTimeout)
	}
	lease, err := w.acquire(actx, key)
	cancel()
	if err != nil {
		acq.Done(Outcome(err), 0, "", err.Error())
		if acqCtx.Err() == nil {
			// Back off a little so a refusing backend is not hammered.
			sleep(acqCtx, 10*time.Millisecond)
		}
		return
	}
	w.noteValidity(acq, lease)
	acq.Done(history.OK, lease.Token(), "", "")
	w.Rec.Granted(lease.TTL())
	unwatch := w.watchLoss(acq.ID(), lease)
	defer w.release(ctx, key, lease, unwatch)

	w.Gate.Pause(ctx, PauseAfterAcquire)
	rd := w.Rec.BeginKey(key, w.ID, history.Read, 0, "", nil)
	value, token, err := w.read(ctx, key)
	if err != nil {
		rd.Done(readOutcome(err), 0, "", err.Error())
		return
	}
	rd.Done(history.OK, token, value, "")
	readID := rd.ID()

	w.Gate.Pause(ctx, PauseAfterRead)
	if w.Careful {
		if !w.leaseValid(lease) {
			return
		}
		w.Gate.Pause(ctx, PauseAfterLeaseCheck)
	}
	w.Gate.Pause(ctx, PauseInWrite)
	if w.Heeding && lost(lease) {
		return
	}
	w.writes++
	v := fmt.Sprintf("c%d-%d", w.ID, w.writes)
	if w.ValueTag != "" {
		v += "@" + w.ValueTag
	}
	wr := w.Rec.BeginKey(key, w.ID, history.Write, lease.Token(), v, &readID)
	w.noteValidity(wr, lease)
	wctx, cancel := context.WithTimeout(ctx, w.OpTimeout)
	accepted, err := w.write(wctx, key, lease, v)
	cancel()
	switch {
	case err != nil:
		wr.Done(Outcome(err), lease.Token(), v, err.Error())
	case accepted:
		wr.Done(history.OK, lease.Token(), v, "")
	default:
		wr.Done(history.Rejected, lease.Token(), v, "refused by the fence")
	}
}

// noteValidity records on op the lease's own estimate of its end, when it keeps one
// (the overshoot figure: how long after the next grant that estimate still said the
// lock was held).
func (w *Worker) noteValidity(op *history.Pending, lease Lease) {
	if e, ok := lease.(Expiring); ok {
		if until := e.ValidUntil(); !until.IsZero() {
			op.ValidUntil(until)
		}
	}
}

// lost is a heeding client's check: has its lock client told it that the lease is lost?
func lost(lease Lease) bool {
	ch := lease.Lost()
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// leaseValid is a careful client's check: is the lease still valid by its own clock,
// with the margin to spare?
func (w *Worker) leaseValid(lease Lease) bool {
	e, ok := lease.(Expiring)
	if !ok {
		return false // cannot tell: a careful client does not write
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	return now().Add(w.Margin).Before(e.ValidUntil())
}

func (w *Worker) acquire(ctx context.Context, key string) (Lease, error) {
	if key == "" {
		return w.Locker.Acquire(ctx)
	}
	kl, ok := w.Locker.(KeyedLocker)
	if !ok {
		return nil, fmt.Errorf("%w: the lock client does not support keys", ErrNoEffect)
	}
	return kl.AcquireKey(ctx, key)
}

func (w *Worker) read(ctx context.Context, key string) (string, int64, error) {
	rctx, cancel := context.WithTimeout(ctx, w.OpTimeout)
	defer cancel()
	if key == "" {
		return w.Resource.Read(rctx)
	}
	kr, ok := w.Resource.(KeyedResourceClient)
	if !ok {
		return "", 0, fmt.Errorf("%w: the resource client does not support keys", ErrNoEffect)
	}
	return kr.ReadKey(rctx, key)
}

func (w *Worker) write(ctx context.Context, key string, lease Lease, value string) (bool, error) {
	if key == "" {
		return w.Resource.Write(ctx, lease, value)
	}
	kr, ok := w.Resource.(KeyedResourceClient)
	if !ok {
		return false, fmt.Errorf("%w: the resource client does not support keys", ErrNoEffect)
	}
	return kr.WriteKey(ctx, key, lease, value)
}

// watchLoss records a lost record the moment lease's Lost channel closes while the
// client holds it. The returned stop ends the watch and waits for it, so a loss is
// recorded before the release's call or not at all (once the client gives the lock back
// itself, the channel closing says nothing about what it knew).
func (w *Worker) watchLoss(acquireID int, lease Lease) (stop func()) {
	lost := lease.Lost()
	if lost == nil {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	record := func() {
		reason := ""
		if r, ok := lease.(LossReasoner); ok {
			reason = r.LossReason()
		}
		w.Rec.Lost(w.ID, acquireID, lease.Token(), reason)
	}
	go func() {
		defer close(done)
		select {
		case <-lost:
			record()
		case <-quit:
			// Both may be ready at once: a loss that came before the release still
			// happened while the lock was held.
			select {
			case <-lost:
				record()
			default:
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

func (w *Worker) release(ctx context.Context, key string, lease Lease, unwatch func()) {
	unwatch()
	rel := w.Rec.BeginKey(key, w.ID, history.Release, lease.Token(), "", nil)
	rctx, cancel := context.WithTimeout(ctx, w.OpTimeout)
	err := lease.Release(rctx)
	cancel()
	if err != nil {
		rel.Done(Outcome(err), lease.Token(), "", err.Error())
		return
	}
	rel.Done(history.OK, lease.Token(), "", "")
}

// FinalRead records one read by the client after the faults have healed, so a late stale
// write is seen: of every key, with Keys > 1.
func (w *Worker) FinalRead(ctx context.Context) {
	if w.Keys <= 1 {
		w.finalRead(ctx, "")
		return
	}
	for i := range w.Keys {
		w.finalRead(ctx, KeyName(i))
	}
}

func (w *Worker) finalRead(ctx context.Context, key string) {
	rd := w.Rec.BeginKey(key, w.ID, history.Read, 0, "", nil)
	value, token, err := w.read(ctx, key)
	if err != nil {
		rd.Done(readOutcome(err), 0, "", err.Error())
		return
	}
	rd.Done(history.OK, token, value, "")
}

// Outcome maps a call's error to a history status: fail when the error says the call
// definitely had no effect, unknown otherwise.
func Outcome(err error) history.Status {
	if errors.Is(err, ErrNoEffect) {
		return history.Fail
	}
	return history.Unknown
}

// readOutcome: a read has no effect either way; a failed read is recorded as fail so
// it is not mistaken for an observation.
func readOutcome(error) history.Status { return history.Fail }

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
