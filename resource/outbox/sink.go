// Package outbox holds the two ends of a side effect that leaves the fenced resource:
// the side-effect sink — a small HTTP server on 127.0.0.1 standing for a webhook
// receiver, a mailer or another service, which records everything it receives — and
// the outbox relay, which delivers rows of a database's outbox table to the sink after
// the transaction that wrote them committed.
//
// Sink protocol (JSON over HTTP/1.1):
//
//	POST /effects {"value": "c0-3", "token": 42, "via": "direct"} -> 204
//	GET  /effects                                                 -> [{"value": ..., ...}, ...]
package outbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Delivery is one side effect as the sink received it.
type Delivery struct {
	// Value is the value of the write the effect announces; Token the token it carries.
	Value string `json:"value"`
	Token int64  `json:"token"`
	// Via is "outbox" (delivered by the relay) or "direct" (sent by the client).
	Via string `json:"via"`
	// OutboxID is the outbox row delivered (relay deliveries only).
	OutboxID int64 `json:"outbox_id,omitempty"`
}

// Sink is a running side-effect sink.
type Sink struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}

	mu         sync.Mutex
	deliveries []Delivery
	hook       func(Delivery)

	closeOnce sync.Once
	closeErr  error
}

// StartSink starts a sink on 127.0.0.1 on an ephemeral port.
func StartSink() (*Sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("side-effect sink: listen: %w", err)
	}
	s := &Sink{ln: ln, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /effects", s.handlePost)
	mux.HandleFunc("GET /effects", s.handleList)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // ErrServerClosed on Close
	}()
	return s, nil
}

// Addr is the sink's host:port.
func (s *Sink) Addr() string { return s.ln.Addr().String() }

// OnDeliver sets f to be called with every delivery as it is received (before the
// sender gets its answer). The run's recorder hooks in here.
func (s *Sink) OnDeliver(f func(Delivery)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = f
}

// Deliveries returns a copy of everything received so far, in order.
func (s *Sink) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.deliveries...)
}

// Close stops the sink. Safe to call twice.
func (s *Sink) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.srv.Close()
		<-s.done
	})
	return s.closeErr
}

// ErrBadDelivery marks a malformed delivery.
var ErrBadDelivery = errors.New("bad delivery")

func (s *Sink) handlePost(w http.ResponseWriter, r *http.Request) {
	var d Delivery
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		http.Error(w, fmt.Sprintf("%v: %v", ErrBadDelivery, err), http.StatusBadRequest)
		return
	}
	if d.Value == "" {
		http.Error(w, fmt.Sprintf("%v: empty value", ErrBadDelivery), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.deliveries = append(s.deliveries, d)
	hook := s.hook
	// The hook runs under the lock, so the recorder sees deliveries in the sink's order.
	if hook != nil {
		hook(d)
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Sink) handleList(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.Deliveries())
}
