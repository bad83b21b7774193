package harnesstest

import (
	"context"
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
	le, err := l.Acquire(ctx)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return le
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
