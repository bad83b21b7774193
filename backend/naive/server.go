// Package naive is the naive TTL lock: one HTTP server on 127.0.0.1 that grants a lease
// measured on its own clock and a token from a TokenSource, and the backend whose clients
// hold it. It is the simplest lock a team might write, and the one every hazard in
// docs/expected-verdicts.md can be shown on.
//
// Protocol (JSON over HTTP/1.1):
//
//	POST /acquire {"owner": "c0", "ttl_ms": 500}   -> {"granted": true, "token": 7, "ttl_ms": 500}
//	POST /renew   {"owner": "c0", "token": 7}      -> {"ok": true}
//	POST /release {"owner": "c0", "token": 7}      -> {"ok": true}
//
// Every request may carry "key": the server keeps one independent lease per key (a
// multi-key workload's locks), all drawing tokens from the same source; no key is the
// default lock.
package naive

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// TokenSource hands out fencing tokens.
type TokenSource interface {
	// Next returns the token for a new grant made at now (the server's clock).
	Next(now time.Time) (int64, error)
}

// Counter is an in-memory counter: strictly increasing while the server lives, lost
// when it restarts.
type Counter struct {
	mu   sync.Mutex
	last int64
}

// Next implements TokenSource.
func (c *Counter) Next(time.Time) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last++
	return c.last, nil
}

// ServerConfig configures a naive lock server.
type ServerConfig struct {
	// Addr to listen on; default "127.0.0.1:0".
	Addr string
	// Listener, if set, is used instead of listening on Addr: a port picked and held
	// until the server takes it, so that no other process can take it in between.
	Listener net.Listener
	// Tokens is the token source; default a fresh in-memory Counter.
	Tokens TokenSource
	// Now is the server's wall clock (wall-clock tokens read it); default time.Now.
	Now func() time.Time
	// Mono is the server's monotonic clock: lease expiry is measured on it, as a Go
	// server measures it with time.Since. Default time.Now. A clock that runs fast moves
	// both; a step of the wall clock moves only Now.
	Mono func() time.Time
}

// Server is a running naive lock server.
type Server struct {
	cfg  ServerConfig
	ln   net.Listener
	srv  *http.Server
	done chan struct{}

	mu     sync.Mutex
	leases map[string]*leaseState // by key; "" is the default lock

	closeOnce sync.Once
	closeErr  error
}

// StartServer starts a naive lock server.
func StartServer(cfg ServerConfig) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Tokens == nil {
		cfg.Tokens = &Counter{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Mono == nil {
		cfg.Mono = time.Now
	}
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			return nil, fmt.Errorf("naive lock server: listen: %w", err)
		}
	}
	s := &Server{cfg: cfg, ln: ln, done: make(chan struct{}), leases: map[string]*leaseState{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /acquire", s.handleAcquire)
	mux.HandleFunc("POST /renew", s.handleRenew)
	mux.HandleFunc("POST /release", s.handleRelease)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server. Safe to call twice.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.srv.Close()
		<-s.done
	})
	return s.closeErr
}

// leaseState is one key's lease.
type leaseState struct {
	holder string
	token  int64
	expiry time.Time
}

// lease returns key's lease, creating a free one. s.mu must be held.
func (s *Server) lease(key string) *leaseState {
	l, ok := s.leases[key]
	if !ok {
		l = &leaseState{}
		s.leases[key] = l
	}
	return l
}

// AcquireRequest is the body of POST /acquire.
type AcquireRequest struct {
	Owner string `json:"owner"`
	TTLms int64  `json:"ttl_ms"`
	// Key names an independent lock; "" is the default one.
	Key string `json:"key,omitempty"`
}

// AcquireResponse answers POST /acquire.
type AcquireResponse struct {
	Granted bool   `json:"granted"`
	Token   int64  `json:"token,omitempty"`
	TTLms   int64  `json:"ttl_ms,omitempty"`
	Holder  string `json:"holder,omitempty"`
}

// LeaseRequest is the body of POST /renew and POST /release.
type LeaseRequest struct {
	Owner string `json:"owner"`
	Token int64  `json:"token"`
	Key   string `json:"key,omitempty"`
}

// LeaseResponse answers POST /renew and POST /release.
type LeaseResponse struct {
	OK bool `json:"ok"`
}

// Acquire grants the lock to owner if it is free or its lease has expired.
func (s *Server) Acquire(req AcquireRequest) (AcquireResponse, error) {
	if req.Owner == "" || req.TTLms <= 0 {
		return AcquireResponse{}, errors.New("owner and a positive ttl_ms are required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Mono()
	l := s.lease(req.Key)
	if l.holder != "" && now.Before(l.expiry) {
		return AcquireResponse{Granted: false, Holder: l.holder}, nil
	}
	tok, err := s.cfg.Tokens.Next(s.cfg.Now())
	if err != nil {
		return AcquireResponse{}, fmt.Errorf("token source: %w", err)
	}
	ttl := time.Duration(req.TTLms) * time.Millisecond
	l.holder, l.token, l.expiry = req.Owner, tok, now.Add(ttl)
	return AcquireResponse{Granted: true, Token: tok, TTLms: req.TTLms}, nil
}

// Renew extends owner's lease by its TTL if it still holds it.
func (s *Server) Renew(req LeaseRequest, ttl time.Duration) LeaseResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Mono()
	l := s.lease(req.Key)
	if l.holder != req.Owner || l.token != req.Token || !now.Before(l.expiry) {
		return LeaseResponse{OK: false}
	}
	l.expiry = now.Add(ttl)
	return LeaseResponse{OK: true}
}

// Release frees the lock if owner holds it with this token.
func (s *Server) Release(req LeaseRequest) LeaseResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lease(req.Key)
	if l.holder != req.Owner || l.token != req.Token {
		return LeaseResponse{OK: false}
	}
	*l = leaseState{}
	return LeaseResponse{OK: true}
}

func (s *Server) handleAcquire(w http.ResponseWriter, r *http.Request) {
	var req AcquireRequest
	if !decode(w, r, &req) {
		return
	}
	resp, err := s.Acquire(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, resp)
}

// renewRequest carries the TTL to renew for; the naive server trusts the client's TTL.
type renewRequest struct {
	LeaseRequest
	TTLms int64 `json:"ttl_ms"`
}

func (s *Server) handleRenew(w http.ResponseWriter, r *http.Request) {
	var req renewRequest
	if !decode(w, r, &req) {
		return
	}
	if req.TTLms <= 0 {
		http.Error(w, "a positive ttl_ms is required", http.StatusBadRequest)
		return
	}
	writeJSON(w, s.Renew(req.LeaseRequest, time.Duration(req.TTLms)*time.Millisecond))
}

func (s *Server) handleRelease(w http.ResponseWriter, r *http.Request) {
	var req LeaseRequest
	if !decode(w, r, &req) {
		return
	}
	writeJSON(w, s.Release(req))
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
