package history

import "fmt"

// Lost is one moment a client learned that it had lost its lease: the lock client told
// it (a renewal was refused, the session expired, the lease's Lost channel closed). It
// is the optional "lost" extension of the v1 format: a history whose run saw no lease
// lost has no "lost" field, and files written before the extension load unchanged.
//
//	"lost": [{"client": 0, "acquire_id": 17, "token": 42, "at": 123456789, "reason": "renewal refused"}]
//
// The checker's verdicts do not depend on it: it records what a client knew, for
// analyses of how long a client went on after it could have known.
type Lost struct {
	// Client is the client that lost its lease.
	Client int `json:"client"`
	// AcquireID is the op id of the acquire that granted the lease; it must be an
	// acquire of that client.
	AcquireID int `json:"acquire_id"`
	// Token is the lease's fencing token.
	Token int64 `json:"token"`
	// At is when the client learned it: ns since the run started, on the ops' clock.
	At int64 `json:"at"`
	// Reason is free text from the lock client, optional.
	Reason string `json:"reason,omitempty"`
}

// LostError is a validation error naming the lost record (by index) and the field.
type LostError struct {
	Index int
	Field string
	Msg   string
}

func (e *LostError) Error() string {
	return fmt.Sprintf("lost[%d]: field %q: %s", e.Index, e.Field, e.Msg)
}

// validateLost checks the lost records against the ops (ids finds an op by id).
func (h *History) validateLost(ids opIndex) error {
	if err := CheckLost(h.Lost); err != nil {
		return err
	}
	for i, l := range h.Lost {
		var a *Op
		if j, ok := ids.find(l.AcquireID); ok {
			a = &h.Ops[j]
		}
		if err := l.CheckAcquire(i, a); err != nil {
			return err
		}
	}
	return nil
}

// CheckLost validates what the lost records say on their own; the acquire_id of each
// is checked against the ops by CheckAcquire.
func CheckLost(lost []Lost) error {
	for i, l := range lost {
		if l.Client < 0 {
			return &LostError{i, "client", fmt.Sprintf("negative client %d", l.Client)}
		}
		if l.At < 0 {
			return &LostError{i, "at", fmt.Sprintf("negative time %d", l.At)}
		}
	}
	return nil
}

// CheckAcquire validates lost record l (lost[i]) against a, the op its acquire_id
// names (nil when no op has that id): it must be an acquire of l's client.
func (l Lost) CheckAcquire(i int, a *Op) error {
	if a == nil {
		return &LostError{i, "acquire_id", fmt.Sprintf("names op %d, which does not exist", l.AcquireID)}
	}
	if a.Kind != Acquire {
		return &LostError{i, "acquire_id", fmt.Sprintf("names op %d, a %s, not an acquire", a.ID, a.Kind)}
	}
	if a.Client != l.Client {
		return &LostError{i, "acquire_id", fmt.Sprintf("names op %d, an acquire of client %d, not of client %d", a.ID, a.Client, l.Client)}
	}
	return nil
}

// Lost records that client learned now that it lost the lease acquire op acquireID
// granted (token is that lease's token; reason is the lock client's words, optional).
// It is safe to call from any goroutine, also while ops are recorded.
func (r *Recorder) Lost(client, acquireID int, token int64, reason string) {
	now := r.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lost = append(r.lost, Lost{Client: client, AcquireID: acquireID, Token: token, At: now, Reason: reason})
}
