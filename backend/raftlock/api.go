package raftlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	hraft "github.com/hashicorp/raft"
)

// Response statuses of the client API.
const (
	// StatusOK: the command took effect (granted, renewed, released) or the read is fresh.
	StatusOK = "ok"
	// StatusBusy: acquire refused, the lock is held (no effect).
	StatusBusy = "busy"
	// StatusRefused: renew or release refused: not the holder, wrong token, or (renew)
	// expired (no effect).
	StatusRefused = "refused"
	// StatusNotLeader: this node is not a confirmed leader; Leader is the node index it
	// believes leads, or -1 (no effect).
	StatusNotLeader = "not_leader"
	// StatusUnavailable: the leader could not take the request (enqueue timeout, barrier
	// failed) (no effect).
	StatusUnavailable = "unavailable"
	// StatusUnknown: the command was proposed and its outcome is unknown (leadership lost,
	// timeout, shutdown): it may or may not take effect.
	StatusUnknown = "unknown"
)

// request is the body of POST /acquire, /renew and /release.
type request struct {
	Owner string `json:"owner"`
	TTL   int64  `json:"ttl_ns,omitempty"` // acquire
	Token int64  `json:"token,omitempty"`  // renew, release
}

// response answers every client API request.
type response struct {
	Status string `json:"status"`
	Node   int    `json:"node"`   // the answering node
	Leader int    `json:"leader"` // not_leader: the leader's node index, or -1
	Token  int64  `json:"token,omitempty"`
	Holder string `json:"holder,omitempty"`
	Expiry int64  `json:"expiry,omitempty"` // FSM time (unix ns)
	Now    int64  `json:"now,omitempty"`    // FSM time the command applied at
	Error  string `json:"error,omitempty"`
	State  *state `json:"state,omitempty"` // GET /state
}

const maxRequestBody = 1 << 16

func (inc *incarnation) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /acquire", inc.command(OpAcquire))
	mux.HandleFunc("POST /renew", inc.command(OpRenew))
	mux.HandleFunc("POST /release", inc.command(OpRelease))
	mux.HandleFunc("GET /state", inc.handleState)
	return mux
}

func (inc *incarnation) reply(w http.ResponseWriter, resp response) {
	resp.Node = inc.idx
	if resp.Status == StatusUnavailable || resp.Status == StatusUnknown {
		resp.Leader = -1 // callers set Leader for every other status
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(resp)
}

func (inc *incarnation) notLeader(err error) response {
	resp := response{Status: StatusNotLeader, Leader: inc.svc.leaderHint(inc.idx, inc.raft)}
	if err != nil {
		resp.Error = err.Error()
	}
	return resp
}

func parseRequest(op string, r *http.Request, w http.ResponseWriter) (request, error) {
	var req request
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("bad %s request: %v", op, err)
	}
	if req.Owner == "" {
		return req, fmt.Errorf("bad %s request: empty owner", op)
	}
	switch op {
	case OpAcquire:
		if req.TTL < int64(MinTTL) || req.TTL > int64(MaxTTL) {
			return req, fmt.Errorf("bad acquire request: ttl_ns %d outside %s..%s", req.TTL, MinTTL, MaxTTL)
		}
	default:
		if req.Token <= 0 {
			return req, fmt.Errorf("bad %s request: token %d", op, req.Token)
		}
	}
	return req, nil
}

// command serves acquire, renew and release: only a leader that has confirmed its
// leadership proposes; the leader stamps the command with its clock.
func (inc *incarnation) command(op string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := parseRequest(op, r, w)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if !inc.enter() {
			inc.reply(w, response{Status: StatusUnavailable, Error: "node stopping"})
			return
		}
		defer inc.leave()
		ctx, cancel := context.WithTimeout(r.Context(), inc.svc.cfg.RequestTimeout)
		defer cancel()
		if resp, ok := inc.confirmLeader(ctx); !ok {
			inc.reply(w, resp)
			return
		}
		cmd := command{Op: op, Owner: req.Owner, TTL: req.TTL, Token: uint64(req.Token), Now: inc.clock().UnixNano()}
		data, err := json.Marshal(cmd)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		f := inc.raft.Apply(data, inc.svc.cfg.RequestTimeout/4)
		err = inc.await(ctx, f)
		if err != nil {
			inc.reply(w, inc.applyError(err))
			return
		}
		res, ok := f.Response().(result)
		if !ok {
			inc.reply(w, response{Status: StatusUnknown, Error: fmt.Sprintf("unexpected FSM response %T", f.Response())})
			return
		}
		resp := response{Leader: inc.idx, Token: int64(res.Token), Holder: res.Holder, Expiry: res.Expiry, Now: res.Now}
		switch res.Outcome {
		case OutcomeGranted, OutcomeRenewed, OutcomeReleased:
			resp.Status = StatusOK
		case OutcomeBusy:
			resp.Status = StatusBusy
		case OutcomeRefused, OutcomeNotHolder:
			resp.Status = StatusRefused
			resp.Error = res.Outcome
		default:
			// Invalid: the entry was committed but changed nothing.
			resp.Status = StatusRefused
			resp.Error = res.Error
		}
		inc.reply(w, resp)
	}
}

// applyError maps an Apply error to a response: ErrNotLeader and ErrEnqueueTimeout mean
// the entry was never appended (no effect); anything else (ErrLeadershipLost, shutdown,
// our own timeout) leaves the outcome unknown.
func (inc *incarnation) applyError(err error) response {
	switch {
	case errors.Is(err, hraft.ErrNotLeader):
		return inc.notLeader(err)
	case applyErrorDefinite(err):
		return response{Status: StatusUnavailable, Error: err.Error()}
	default:
		return response{Status: StatusUnknown, Error: err.Error()}
	}
}

// applyErrorDefinite reports whether an error from raft's Apply future means the command
// definitely was not applied.
func applyErrorDefinite(err error) bool {
	return errors.Is(err, hraft.ErrNotLeader) || errors.Is(err, hraft.ErrEnqueueTimeout) ||
		errors.Is(err, hraft.ErrLeadershipTransferInProgress)
}

// confirmLeader checks that this node leads: it is in the leader state, a Barrier has
// succeeded in its current term (so its FSM holds every earlier entry), and
// VerifyLeader has just confirmed it with a quorum. On failure the response says why;
// nothing was proposed, so it always has no effect.
func (inc *incarnation) confirmLeader(ctx context.Context) (response, bool) {
	r := inc.raft
	if r.State() != hraft.Leader {
		return inc.notLeader(nil), false
	}
	term := r.CurrentTerm()
	if inc.readyTerm.Load() != term {
		if err := inc.await(ctx, r.Barrier(inc.svc.cfg.RequestTimeout/4)); err != nil {
			if errors.Is(err, hraft.ErrNotLeader) || errors.Is(err, hraft.ErrLeadershipLost) {
				return inc.notLeader(err), false
			}
			return response{Status: StatusUnavailable, Error: "barrier: " + err.Error()}, false
		}
		if r.CurrentTerm() == term {
			inc.readyTerm.Store(term)
		}
	}
	if err := inc.await(ctx, r.VerifyLeader()); err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return response{Status: StatusUnavailable, Error: "verify leader: " + err.Error()}, false
		}
		return inc.notLeader(err), false
	}
	return response{}, true
}

// handleState serves GET /state: by default a leader-confirmed read; ?local=1 returns
// this node's FSM as is (possibly stale: the naive "I am leader" read path).
func (inc *incarnation) handleState(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("local") != "" {
		st := inc.fsm.State()
		inc.reply(w, response{Status: StatusOK, State: &st, Leader: inc.svc.leaderHint(inc.idx, inc.raft)})
		return
	}
	if !inc.enter() {
		inc.reply(w, response{Status: StatusUnavailable, Error: "node stopping"})
		return
	}
	defer inc.leave()
	ctx, cancel := context.WithTimeout(r.Context(), inc.svc.cfg.RequestTimeout)
	defer cancel()
	if resp, ok := inc.confirmLeader(ctx); !ok {
		inc.reply(w, resp)
		return
	}
	st := inc.fsm.State()
	inc.reply(w, response{Status: StatusOK, Leader: inc.idx, State: &st, Token: int64(st.Token), Holder: st.Holder, Expiry: st.Expiry})
}
