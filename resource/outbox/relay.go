package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/jsonhttp"
)

// Row is one undelivered outbox row.
type Row struct {
	ID    int64
	Value string
	Token int64
}

// Source is the outbox table the relay drains. Pending returns undelivered rows in id
// order — only rows of committed transactions are visible to it, which is the whole
// point of an outbox — and MarkDelivered records that one was delivered.
type Source interface {
	Pending(ctx context.Context, limit int) ([]Row, error)
	MarkDelivered(ctx context.Context, id int64) error
}

// Relay delivers outbox rows to a sink, in id order, at least once: a row is marked
// delivered only after the sink acknowledged it, so a crash between the two repeats it.
// It stands for a separate process: it reaches the database and the sink directly, not
// through any client's faulty links.
type Relay struct {
	src      Source
	sink     *jsonhttp.Client
	interval time.Duration
	kick     chan struct{}
	cancel   context.CancelFunc
	done     chan struct{}

	delivered atomic.Int64
	mu        sync.Mutex
	lastErr   error

	closeOnce sync.Once
}

// StartRelay starts a relay polling src every interval (and whenever Kick is called)
// and posting to the sink at sinkAddr.
func StartRelay(src Source, sinkAddr string, interval time.Duration) *Relay {
	if interval <= 0 {
		interval = 20 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Relay{src: src, sink: jsonhttp.New(sinkAddr), interval: interval,
		kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go r.loop(ctx)
	return r
}

// Kick wakes the relay now (a client just committed a row), without waiting for the
// next poll. It never blocks.
func (r *Relay) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Delivered is the number of rows delivered so far.
func (r *Relay) Delivered() int64 { return r.delivered.Load() }

// Err is the last delivery error, if the last pass failed.
func (r *Relay) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

// Close stops the relay and waits for it. Safe to call twice.
func (r *Relay) Close() error {
	r.closeOnce.Do(func() {
		r.cancel()
		<-r.done
		_ = r.sink.Close()
	})
	return nil
}

func (r *Relay) loop(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.kick:
		}
		_, err := r.pass(ctx)
		r.mu.Lock()
		r.lastErr = err
		r.mu.Unlock()
	}
}

// Drain delivers everything pending now and returns how many rows it delivered. Tests
// and final checks call it; the relay's own loop may deliver concurrently, so together
// they may deliver a row twice (at least once).
func (r *Relay) Drain(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := r.pass(ctx)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

// pass delivers one batch of pending rows.
func (r *Relay) pass(ctx context.Context) (int, error) {
	rows, err := r.src.Pending(ctx, 64)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return 0, nil
		}
		return 0, fmt.Errorf("outbox relay: read pending rows: %w", err)
	}
	for i, row := range rows {
		d := Delivery{Value: row.Value, Token: row.Token, Via: history.ViaOutbox, OutboxID: row.ID}
		if err := r.sink.Do(ctx, "POST", "/effects", d, nil); err != nil {
			return i, fmt.Errorf("outbox relay: deliver row %d: %w", row.ID, err)
		}
		r.delivered.Add(1)
		if err := r.src.MarkDelivered(ctx, row.ID); err != nil {
			return i + 1, fmt.Errorf("outbox relay: mark row %d delivered: %w", row.ID, err)
		}
	}
	return len(rows), nil
}
