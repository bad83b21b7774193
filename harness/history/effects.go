package history

import "fmt"

// Effect is one side effect delivered outside the protected resource — a webhook call,
// an e-mail, a message to another system — as the receiving end (the side-effect sink)
// saw it. It is the optional "effects" extension of the v1 format: a history without
// side effects has no "effects" field, and files written before the extension load
// unchanged.
//
//	"effects": [{"id": 1, "value": "c0-3", "token": 42, "write_id": 17, "at": 123456789, "via": "outbox"}]
//
// An effect announces one write, named by the write's value (write values are unique in
// a history). The `effects` property holds when every delivered effect belongs to a
// write that took effect.
type Effect struct {
	// ID numbers the effects in delivery order, from 1.
	ID int `json:"id"`
	// Value is the value of the write the effect announces.
	Value string `json:"value"`
	// Token is the fencing token the effect carried.
	Token int64 `json:"token"`
	// WriteID is the op id of the write with that value; optional (the checker finds
	// the write by its value), and when present it must name that write.
	WriteID *int `json:"write_id,omitempty"`
	// At is when the sink received the effect: ns since the run started, on the same
	// monotonic clock as the ops.
	At int64 `json:"at"`
	// Via is how the effect was sent: "outbox" (a relay delivered a committed outbox
	// row) or "direct" (the client called the sink itself). Free text otherwise.
	Via string `json:"via,omitempty"`
}

// Effect ways.
const (
	ViaOutbox = "outbox"
	ViaDirect = "direct"
)

// EffectError is a validation error naming the effect (by index and id) and the field.
type EffectError struct {
	Index int
	ID    int
	Field string
	Msg   string
}

func (e *EffectError) Error() string {
	return fmt.Sprintf("effects[%d] (id %d): field %q: %s", e.Index, e.ID, e.Field, e.Msg)
}

// validateEffects checks the effects against the ops (ids finds an op by id).
func (h *History) validateEffects(ids opIndex) error {
	if err := CheckEffects(h.Effects); err != nil {
		return err
	}
	for i, e := range h.Effects {
		if e.WriteID == nil {
			continue
		}
		var w *Op
		if j, ok := ids.find(*e.WriteID); ok {
			w = &h.Ops[j]
		}
		if err := e.CheckWrite(i, w); err != nil {
			return err
		}
	}
	return nil
}

// CheckEffects validates what the effects say on their own (ids, values, times); the
// write_id of each is checked against the ops by CheckWrite.
func CheckEffects(effects []Effect) error {
	seen := make(map[int]bool, len(effects))
	for i, e := range effects {
		if e.ID <= 0 {
			return &EffectError{i, e.ID, "id", fmt.Sprintf("got %d, want a positive id", e.ID)}
		}
		if seen[e.ID] {
			return &EffectError{i, e.ID, "id", "duplicate id"}
		}
		seen[e.ID] = true
		if e.Value == "" {
			return &EffectError{i, e.ID, "value", "an effect must name the value of the write it announces"}
		}
		if e.At < 0 {
			return &EffectError{i, e.ID, "at", fmt.Sprintf("negative time %d", e.At)}
		}
	}
	return nil
}

// CheckWrite validates effect e (effects[i]) against w, the op its write_id names (nil
// when no op has that id).
func (e Effect) CheckWrite(i int, w *Op) error {
	if w == nil {
		return &EffectError{i, e.ID, "write_id", fmt.Sprintf("names op %d, which does not exist", *e.WriteID)}
	}
	if w.Kind != Write {
		return &EffectError{i, e.ID, "write_id", fmt.Sprintf("names op %d, a %s, not a write", w.ID, w.Kind)}
	}
	if w.Value != e.Value {
		return &EffectError{i, e.ID, "write_id", fmt.Sprintf("names op %d, which wrote %q, not %q", w.ID, w.Value, e.Value)}
	}
	return nil
}

// WriteFor returns the write op an effect announces (found by write_id, else by value),
// or nil if no write carries its value.
func (h *History) WriteFor(e Effect) *Op {
	if e.WriteID != nil {
		for i := range h.Ops {
			if h.Ops[i].ID == *e.WriteID {
				return &h.Ops[i]
			}
		}
	}
	for i := range h.Ops {
		if o := &h.Ops[i]; o.Kind == Write && o.Value == e.Value {
			return o
		}
	}
	return nil
}

// Effect records a side effect received now by a sink. It is safe to call from any
// goroutine, also while ops are recorded.
func (r *Recorder) Effect(value string, token int64, via string) {
	now := r.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	e := Effect{ID: len(r.effects) + 1, Value: value, Token: token, At: now, Via: via}
	if r.spill != nil && r.spill.w != nil {
		r.spill.effect(r, e)
		return
	}
	r.effects = append(r.effects, e)
}

// effectsLocked copies the recorded effects and links each to the write op with its
// value. r.mu must be held; ops are the ops of the history being built.
func (r *Recorder) effectsLocked(ops []Op) []Effect {
	if len(r.effects) == 0 {
		return nil
	}
	writes := make(map[string]int)
	for _, o := range ops {
		if o.Kind == Write {
			writes[o.Value] = o.ID
		}
	}
	out := append([]Effect(nil), r.effects...)
	for i := range out {
		if id, ok := writes[out[i].Value]; ok {
			out[i].WriteID = &id
		}
	}
	return out
}
