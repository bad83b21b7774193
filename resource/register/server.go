// Package register is the fenced register: a real HTTP server on 127.0.0.1 holding one
// (value, token) pair, and the resources built on it.
//
// Protocol (JSON over HTTP/1.1):
//
//	GET  /register                          -> {"value": "...", "token": 42}
//	POST /write {"token": 42, "value": "v"} -> {"accepted": true, "stored_token": 42}
//
// A multi-key workload addresses independent cells: GET /register?key=k3 and "key" in
// the write request; no key is the default cell.
//
// The server's Rule decides what POST /write does: "strict" accepts iff token > stored,
// "monotonic" iff token >= stored, each as one atomic compare-and-set under a mutex;
// "none" accepts every write (the unfenced resource, and the second step of the
// check-then-write client).
package register

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Rule is the server's write rule.
type Rule string

// Write rules.
const (
	RuleStrict    Rule = history.FenceStrict
	RuleMonotonic Rule = history.FenceMonotonic
	RuleNone      Rule = "none"
)

// ParseRule parses a rule name.
func ParseRule(s string) (Rule, error) {
	switch r := Rule(s); r {
	case RuleStrict, RuleMonotonic, RuleNone:
		return r, nil
	}
	return "", fmt.Errorf("unknown register rule %q (want strict, monotonic or none)", s)
}

// State is the register's content.
type State struct {
	Value string `json:"value"`
	Token int64  `json:"token"`
}

// WriteRequest is the body of POST /write.
type WriteRequest struct {
	Token int64  `json:"token"`
	Value string `json:"value"`
	// Key names an independent cell; "" is the default one.
	Key string `json:"key,omitempty"`
}

// WriteResponse answers POST /write.
type WriteResponse struct {
	Accepted    bool  `json:"accepted"`
	StoredToken int64 `json:"stored_token"`
}

// maxBody bounds request bodies; a register value is small.
const maxBody = 1 << 20

// Server is a running register.
type Server struct {
	rule Rule
	ln   net.Listener
	srv  *http.Server
	done chan struct{}

	mu    sync.Mutex
	cells map[string]State // by key; "" is the default cell

	closeOnce sync.Once
	closeErr  error
}

// Start starts a register with the given rule on 127.0.0.1 on an ephemeral port.
func Start(rule Rule) (*Server, error) {
	if _, err := ParseRule(string(rule)); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("register: listen: %w", err)
	}
	s := &Server{rule: rule, ln: ln, done: make(chan struct{}), cells: map[string]State{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /register", s.handleRead)
	mux.HandleFunc("POST /write", s.handleWrite)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // returns ErrServerClosed on Close
	}()
	return s, nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Rule is the server's write rule.
func (s *Server) Rule() Rule { return s.rule }

// Close stops the server. Safe to call twice.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.srv.Close()
		<-s.done
	})
	return s.closeErr
}

// Apply performs one write under the server's rule, atomically.
func (s *Server) Apply(req WriteRequest) WriteResponse {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.cells[req.Key]; s.rule != RuleNone && !history.Passes(string(s.rule), req.Token, cur.Token) {
		return WriteResponse{Accepted: false, StoredToken: cur.Token}
	}
	s.cells[req.Key] = State{Value: req.Value, Token: req.Token}
	return WriteResponse{Accepted: true, StoredToken: req.Token}
}

// Snapshot returns the current state of the default cell.
func (s *Server) Snapshot() State { return s.SnapshotKey("") }

// SnapshotKey returns the current state of key's cell.
func (s *Server) SnapshotKey(key string) State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cells[key]
}

func (s *Server) handleRead(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.SnapshotKey(r.URL.Query().Get("key")))
}

func (s *Server) handleWrite(w http.ResponseWriter, r *http.Request) {
	req, err := ParseWriteRequest(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, http.StatusOK, s.Apply(req))
}

// ErrBadRequest marks a malformed write request.
var ErrBadRequest = errors.New("bad write request")

// ParseWriteRequest decodes and validates a write request body.
func ParseWriteRequest(r io.Reader) (WriteRequest, error) {
	var req WriteRequest
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return WriteRequest{}, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	if dec.More() {
		return WriteRequest{}, fmt.Errorf("%w: trailing data after the JSON object", ErrBadRequest)
	}
	if req.Value == "" {
		return WriteRequest{}, fmt.Errorf("%w: empty value", ErrBadRequest)
	}
	if req.Token < 0 {
		return WriteRequest{}, fmt.Errorf("%w: negative token %d", ErrBadRequest, req.Token)
	}
	return req, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // the client sees a short body as an error
}
