package lease

import (
	"errors"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/harness"
)

func TestParts(t *testing.T) {
	loss := NewLoss()
	g := NewGrant(7, time.Second, loss.Done())
	if g.Token() != 7 || g.TTL() != time.Second {
		t.Fatalf("grant: token %d, TTL %v", g.Token(), g.TTL())
	}
	select {
	case <-g.Lost():
		t.Fatal("lost before Mark")
	default:
	}
	if r := loss.LossReason(); r != "" {
		t.Fatalf("reason %q before the loss", r)
	}
	loss.MarkWhy("refused")
	loss.Mark() // a second Mark is fine, and keeps the first reason
	<-g.Lost()
	if r := loss.LossReason(); r != "refused" {
		t.Fatalf("reason %q, want the first mark's", r)
	}

	at := time.Unix(1, 0)
	if e := NewExpiry(func() time.Time { return at }); !e.ValidUntil().Equal(at) {
		t.Fatal("Expiry does not say its until")
	}

	var r Released
	if err := r.First("x"); err != nil {
		t.Fatalf("first release: %v", err)
	}
	if err := r.First("x"); !errors.Is(err, harness.ErrNoEffect) {
		t.Fatalf("a second release: %v, want harness.ErrNoEffect", err)
	}
}
