package raftlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	hraft "github.com/hashicorp/raft"
)

// The commands' operations.
const (
	OpAcquire = "acquire"
	OpRenew   = "renew"
	OpRelease = "release"
)

// Outcomes of an applied command.
const (
	OutcomeGranted   = "granted"    // acquire: the lock is the owner's, Token = this entry's index
	OutcomeBusy      = "busy"       // acquire: held by someone else and not expired
	OutcomeRenewed   = "renewed"    // renew: expiry extended to now+ttl
	OutcomeRefused   = "refused"    // renew: not the holder, wrong token, or expired
	OutcomeReleased  = "released"   // release: the lock is free
	OutcomeNotHolder = "not_holder" // release: not the holder or wrong token
	OutcomeInvalid   = "invalid"    // the entry could not be decoded or is malformed
)

// command is one replicated lock command. Now is the proposing leader's clock (unix
// nanoseconds); Apply never reads a clock.
type command struct {
	Op    string `json:"op"`
	Owner string `json:"owner"`
	TTL   int64  `json:"ttl_ns,omitempty"` // acquire only
	Token uint64 `json:"token,omitempty"`  // renew and release
	Now   int64  `json:"now"`
}

// state is the lock's replicated state. Times are FSM time: unix nanoseconds of the
// proposers' clocks, made monotonic by LastNow.
type state struct {
	Holder  string `json:"holder"`   // "" = free (released); a holder past Expiry is expired
	Token   uint64 `json:"token"`    // the current (or last) grant's token
	Expiry  int64  `json:"expiry"`   // the current grant's expiry
	TTL     int64  `json:"ttl_ns"`   // the current grant's TTL (renewals extend by it)
	LastNow int64  `json:"last_now"` // max of every applied command's Now
}

// Held reports whether the lock is held at FSM time now.
func (s state) Held(now int64) bool { return s.Holder != "" && now < s.Expiry }

// result is what Apply returns for a command (the ApplyFuture's Response).
type result struct {
	Outcome string `json:"outcome"`
	Index   uint64 `json:"index"`  // the entry's log index
	Now     int64  `json:"now"`    // FSM time the command was applied at
	Holder  string `json:"holder"` // holder after the command
	Token   uint64 `json:"token"`  // the grant's token after the command (granted: = Index)
	Expiry  int64  `json:"expiry"` // expiry after the command
	Error   string `json:"error,omitempty"`
}

// event is one applied command as the FSM saw it: the observer hook's argument and what
// checkEvents verifies. Equal indexes must carry equal events on every node.
type event struct {
	Index   uint64 `json:"index"`
	Op      string `json:"op"`
	Owner   string `json:"owner"`
	Token   uint64 `json:"token"` // granted: the new token; renew/release: the token sent
	Now     int64  `json:"now"`   // FSM time (after max with lastNow)
	Outcome string `json:"outcome"`
	Expiry  int64  `json:"expiry"` // the lock's expiry after the command
}

// fsm is the lock state machine. It is safe for concurrent use (Apply and Snapshot run on
// raft's fsm goroutine, State from API handlers).
type fsm struct {
	mu      sync.Mutex
	st      state
	observe func(event) // may be nil; called after every applied command, in index order
}

// newFSM returns an empty lock FSM. observe, if not nil, sees every applied command.
func newFSM(observe func(event)) *fsm { return &fsm{observe: observe} }

// State returns a copy of the current state.
func (f *fsm) State() state {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

// Apply implements raft.FSM.
func (f *fsm) Apply(l *hraft.Log) any {
	var c command
	if err := json.Unmarshal(l.Data, &c); err != nil {
		return result{Outcome: OutcomeInvalid, Index: l.Index, Error: err.Error()}
	}
	res, ev := f.apply(l.Index, c)
	if f.observe != nil && res.Outcome != OutcomeInvalid {
		f.observe(ev)
	}
	return res
}

func (f *fsm) apply(index uint64, c command) (result, event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := c.validate(); err != nil {
		return result{Outcome: OutcomeInvalid, Index: index, Error: err.Error()}, event{}
	}
	st := &f.st
	now := max(st.LastNow, c.Now)
	st.LastNow = now
	var out string
	switch c.Op {
	case OpAcquire:
		if st.Holder == "" || now >= st.Expiry {
			*st = state{Holder: c.Owner, Token: index, Expiry: now + c.TTL, TTL: c.TTL, LastNow: now}
			out = OutcomeGranted
		} else {
			out = OutcomeBusy
		}
	case OpRenew:
		if st.Holder == c.Owner && st.Token == c.Token && now < st.Expiry {
			st.Expiry = now + st.TTL
			out = OutcomeRenewed
		} else {
			out = OutcomeRefused
		}
	case OpRelease:
		if st.Holder == c.Owner && st.Token == c.Token {
			st.Holder = ""
			out = OutcomeReleased
		} else {
			out = OutcomeNotHolder
		}
	}
	res := result{Outcome: out, Index: index, Now: now, Holder: st.Holder, Token: st.Token, Expiry: st.Expiry}
	ev := event{Index: index, Op: c.Op, Owner: c.Owner, Token: c.Token, Now: now, Outcome: out, Expiry: st.Expiry}
	if out == OutcomeGranted {
		ev.Token = index
	}
	return res, ev
}

func (c command) validate() error {
	if c.Owner == "" {
		return errors.New("empty owner")
	}
	switch c.Op {
	case OpAcquire:
		if c.TTL <= 0 {
			return fmt.Errorf("acquire with TTL %d", c.TTL)
		}
	case OpRenew, OpRelease:
		if c.Token == 0 {
			return fmt.Errorf("%s without a token", c.Op)
		}
	default:
		return fmt.Errorf("unknown op %q", c.Op)
	}
	return nil
}

// Snapshot implements raft.FSM: it captures (holder, token, expiry, ttl, lastNow).
func (f *fsm) Snapshot() (hraft.FSMSnapshot, error) {
	return fsmSnapshot{st: f.State()}, nil
}

// Restore implements raft.FSM: it replaces the state with the snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var st state
	dec := json.NewDecoder(rc)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return fmt.Errorf("raft lock: restore snapshot: %w", err)
	}
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
	return nil
}

type fsmSnapshot struct{ st state }

func (s fsmSnapshot) Persist(sink hraft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(s.st); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("raft lock: persist snapshot: %w", err)
	}
	return sink.Close()
}

func (fsmSnapshot) Release() {}

// checkEvents verifies the lock's safety on the applied commands, given in index order
// with no duplicates (gaps are fine: no-ops, barriers, configuration entries):
//   - FSM time never goes backwards;
//   - every grant's token is its own index, so tokens are unique and strictly increasing;
//   - no two grants overlap in FSM time: a grant is made only after the previous one was
//     released or at/after its expiry (including every renewal applied before);
//   - a renewal is accepted only for the current grant's owner and token, before expiry;
//   - a release is accepted only for the current grant's owner and token.
//
// It returns every violation found, joined.
func checkEvents(events []event) error {
	var errs []error
	fail := func(ev event, format string, a ...any) {
		errs = append(errs, fmt.Errorf("index %d (%s by %s): %s", ev.Index, ev.Op, ev.Owner, fmt.Sprintf(format, a...)))
	}
	var (
		lastIndex uint64
		lastNow   int64
		cur       *event // the current grant
		expiry    int64  // its expiry, renewals included
		released  bool
		lastToken uint64
	)
	for i := range events {
		ev := events[i]
		if i > 0 && ev.Index <= lastIndex {
			fail(ev, "index not increasing (previous %d)", lastIndex)
		}
		lastIndex = ev.Index
		if ev.Now < lastNow {
			fail(ev, "FSM time went back from %d to %d", lastNow, ev.Now)
		}
		lastNow = max(lastNow, ev.Now)
		switch ev.Outcome {
		case OutcomeGranted:
			if ev.Token != ev.Index {
				fail(ev, "granted token %d is not the entry's index", ev.Token)
			}
			if ev.Token <= lastToken {
				fail(ev, "token %d not above previous token %d", ev.Token, lastToken)
			}
			if cur != nil && !released && ev.Now < expiry {
				fail(ev, "granted at %d while token %d (%s) held until %d and not released",
					ev.Now, cur.Token, cur.Owner, expiry)
			}
			c := ev
			cur, expiry, released, lastToken = &c, ev.Expiry, false, ev.Token
		case OutcomeBusy:
			if cur == nil || released || ev.Now >= expiry {
				fail(ev, "refused as busy although the lock was free at %d", ev.Now)
			}
		case OutcomeRenewed:
			if cur == nil || released || cur.Owner != ev.Owner || cur.Token != ev.Token || ev.Now >= expiry {
				fail(ev, "renewal of token %d accepted but it was not the live grant", ev.Token)
			} else {
				expiry = ev.Expiry
			}
		case OutcomeReleased:
			if cur == nil || released || cur.Owner != ev.Owner || cur.Token != ev.Token {
				fail(ev, "release of token %d accepted but it was not the current grant", ev.Token)
			} else {
				released = true
			}
		}
	}
	return errors.Join(errs...)
}
