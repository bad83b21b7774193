package harnesstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/harness"
)

// Ceiling is how long the helpers wait for an event before they fail the test: long
// enough for a loaded machine, and only ever paid when something is wrong.
const Ceiling = 30 * time.Second

// NewLocker returns client id's Locker of b, dialling addrs; it is closed (and the close
// checked) when the test ends.
func NewLocker(t testing.TB, b harness.Backend, id int, addrs ...string) harness.Locker {
	t.Helper()
	l, err := b.NewLocker(context.Background(), id, addrs)
	if err != nil {
		t.Fatalf("NewLocker(%d, %v): %v", id, addrs, err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Locker.Close: %v", err)
		}
	})
	return l
}

// Acquire takes the lock, failing the test if it is not granted within Ceiling.
func Acquire(t testing.TB, l harness.Locker) harness.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Ceiling)
	defer cancel()
	le, err := AcquireRetrying(ctx, t, l)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return le
}

// AcquireRetrying acquires as a run's client does: an attempt that definitely had no
// effect (harness.ErrNoEffect: a session lost while waiting on a loaded machine, say) is
// tried again, until ctx ends; any other error is returned at once.
func AcquireRetrying(ctx context.Context, t testing.TB, l harness.Locker) (harness.Lease, error) {
	t.Helper()
	for {
		le, err := l.Acquire(ctx)
		if err == nil || !errors.Is(err, harness.ErrNoEffect) || ctx.Err() != nil {
			return le, err
		}
		t.Logf("acquire had no effect, trying again: %v", err)
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// WaitClosed fails the test unless ch closes within Ceiling; what names it.
func WaitClosed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(Ceiling):
		t.Fatalf("%s: not closed within %v", what, Ceiling)
	}
}

// WaitRenewed waits until a renewal of le was confirmed after the call: its end by the
// client's clock (harness.Expiring) moves past what it was. A test that needs a renewal
// waits for it rather than for a while that a loaded machine may not renew in. It fails
// the test if le does not know its end, is lost first, or is not renewed within Ceiling.
func WaitRenewed(t testing.TB, le harness.Lease) {
	t.Helper()
	e, ok := le.(harness.Expiring)
	if !ok {
		t.Fatalf("lease %d does not know its end (harness.Expiring): no renewal to wait for", le.Token())
	}
	was := e.ValidUntil()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	ceiling := time.After(Ceiling)
	for !e.ValidUntil().After(was) {
		select {
		case <-le.Lost():
			t.Fatalf("lease %d lost before a renewal was confirmed", le.Token())
		case <-ceiling:
			t.Fatalf("lease %d: no renewal confirmed within %v", le.Token(), Ceiling)
		case <-tick.C:
		}
	}
}

// HeldAgainst checks that other cannot take the lock within wait while le holds it (a
// wait past the TTL shows that renewals keep it), and that le was not lost meanwhile.
func HeldAgainst(t testing.TB, le harness.Lease, other harness.Locker, wait time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if got, err := other.Acquire(ctx); err == nil {
		_ = got.Release(context.Background())
		t.Fatalf("another client got the lock (token %d) while token %d held it", got.Token(), le.Token())
	} else if !errors.Is(err, harness.ErrNoEffect) {
		t.Fatalf("the refused Acquire's error %v does not wrap harness.ErrNoEffect", err)
	}
	select {
	case <-le.Lost():
		t.Fatalf("lease %d lost while renewed", le.Token())
	default:
	}
}

// ReleaseOnce releases le and checks that a second Release has no effect
// (harness.ErrNoEffect).
func ReleaseOnce(t testing.TB, le harness.Lease) {
	t.Helper()
	if err := le.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := le.Release(context.Background()); !errors.Is(err, harness.ErrNoEffect) {
		t.Fatalf("a second Release returned %v, not an error wrapping harness.ErrNoEffect", err)
	}
}
