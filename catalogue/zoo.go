package catalogue

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
)

// The zoo: lock bugs and hazards that teams reported in the trackers of the lock
// services and libraries they use (or that fencecheck found itself), each reproduced on
// the real software at an affected version, beside a control that must hold. A backend
// package declares its entries (Zoo() next to Scenarios()); builtin assembles them.

// Bug is one entry of the zoo.
type Bug struct {
	// ID names the entry on the command line (fencecheck zoo --bug ID): lower case,
	// digits and dashes, such as "authentik-23876".
	ID string
	// Ref is the tracker reference ("goauthentik/authentik#23876"), URL its page.
	Ref, URL string
	// Pain says in one line what bit the team that reported it.
	Pain string
	// Software is what is run, with the version that shows the bug ("PgBouncer 1.18 in
	// transaction pooling"); Source says how this machine gets it ("Debian pgbouncer").
	Software, Source string
	// Affected says which versions or configurations have the bug.
	Affected string
	// ByOthers is true for a bug someone else reported; false for fencecheck's own
	// finding (documented in the backend's page).
	ByOthers bool
	// Property is what catches it: violated in every run of Spec, held in Control's.
	Property models.Property
	// Spec reproduces the bug; Control is the fixed version or the configuration that
	// avoids it, under the same faults; ControlIs says which, in a few words.
	Spec, Control spec.Spec
	ControlIs     string
	// Shows checks that a run of Spec failed for the reason the tracker describes: the
	// counterexample of Property (res) names the operations that show it in h. Nil:
	// only that the counterexample names operations of h.
	Shows func(h *history.History, res models.Result) error
}

// Untried is a candidate the zoo tried and could not reproduce here, or left out, with
// why (fixed in the installable version, software this machine cannot get, not a safety
// bug): docs/zoo.md lists them.
type Untried struct {
	Ref, URL, Pain, Why string
}

// Zoo is the zoo's entries, in a stable order.
type Zoo []Bug

var bugID = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// BugScenario names the run of an entry's Spec in the results store and a soak.
func (b Bug) BugScenario() string { return "zoo-" + b.ID }

// ControlScenario names the run of an entry's Control.
func (b Bug) ControlScenario() string { return "zoo-" + b.ID + "-control" }

// Scenarios returns the entry's two runs as scenarios: the bug, expected to violate
// Property, and the control, expected to hold it. Each asks its check for Property
// (an opt-in property such as heed is then checked).
func (b Bug) Scenarios() (bug, control Scenario) {
	ask := func(s spec.Spec) spec.Spec {
		if b.Property.OptIn() && !slices.Contains(s.Check, b.Property) {
			s.Check = append(slices.Clone(s.Check), b.Property)
		}
		return s
	}
	bug = Scenario{Spec: ask(b.Spec), About: b.Ref + ": " + b.Pain,
		Expect: Expect{Verdicts: map[models.Property]models.Verdict{b.Property: Violated}}}
	bug.Name = b.BugScenario()
	control = Scenario{Spec: ask(b.Control), About: b.Ref + " control: " + b.ControlIs,
		Expect: Expect{Verdicts: map[models.Property]models.Verdict{b.Property: Held}}}
	control.Name = b.ControlScenario()
	return bug, control
}

// Lookup finds an entry by ID.
func (z Zoo) Lookup(id string) (Bug, bool) {
	i := slices.IndexFunc(z, func(b Bug) bool { return b.ID == id })
	if i < 0 {
		return Bug{}, false
	}
	return z[i], true
}

// IDs lists the entries' IDs in order.
func (z Zoo) IDs() []string {
	out := make([]string, len(z))
	for i, b := range z {
		out[i] = b.ID
	}
	return out
}

// Check reports an entry that is badly formed: an ID named twice or not of the form,
// a missing reference, pain, software or control, a property fencecheck does not
// check, or a spec that does not resolve in reg.
func (z Zoo) Check(resolve func(spec.Spec) error) error {
	seen := map[string]bool{}
	for _, b := range z {
		switch {
		case !bugID.MatchString(b.ID):
			return fmt.Errorf("zoo: entry %q: an ID is lower-case words and digits joined by dashes", b.ID)
		case seen[b.ID]:
			return fmt.Errorf("zoo: entry %s is named twice", b.ID)
		case b.Ref == "" || b.URL == "" || b.Pain == "" || b.Software == "" || b.Source == "" || b.Affected == "" || b.ControlIs == "":
			return fmt.Errorf("zoo: entry %s lacks its reference, URL, pain, software, source, affected versions or what its control is", b.ID)
		case !slices.Contains(models.AllProperties, b.Property):
			return fmt.Errorf("zoo: entry %s: unknown property %q", b.ID, b.Property)
		}
		seen[b.ID] = true
		bug, control := b.Scenarios()
		for _, sc := range []Scenario{bug, control} {
			if err := resolve(sc.Spec); err != nil {
				return fmt.Errorf("zoo: entry %s, scenario %s: %w", b.ID, sc.Name, err)
			}
		}
	}
	return nil
}

// Shown checks that a bug run's report violated the entry's property for the reason
// the tracker describes (Bug.Shows), and that its counterexample names operations of h.
func (b Bug) Shown(h *history.History, rep *models.Report) error {
	res, ok := rep.Result(b.Property)
	if !ok {
		return fmt.Errorf("%s: the report has no %s verdict", b.ID, b.Property)
	}
	if res.Verdict != models.Violated {
		return fmt.Errorf("%s: %s is %s, want violated", b.ID, b.Property, res.Verdict)
	}
	if len(res.Counterexample) == 0 {
		return fmt.Errorf("%s: %s is violated but its counterexample names no operation", b.ID, b.Property)
	}
	for _, id := range res.Counterexample {
		if OpByID(h, id) == nil {
			return fmt.Errorf("%s: %s's counterexample names op %d, which the history does not have", b.ID, b.Property, id)
		}
	}
	if b.Shows != nil {
		if err := b.Shows(h, res); err != nil {
			return fmt.Errorf("%s: %w", b.ID, err)
		}
	}
	return nil
}

// OpByID returns h's op with that id, or nil.
func OpByID(h *history.History, id int) *history.Op {
	for i := range h.Ops {
		if h.Ops[i].ID == id {
			return &h.Ops[i]
		}
	}
	return nil
}

// Checks of what an entry's counterexample must show (Bug.Shows).

// StruckClient returns the client that h's first fault of kind targeted ("client-N"),
// and when it began.
func StruckClient(h *history.History, kind string) (client int, at int64, err error) {
	for _, f := range h.Faults {
		if f.Kind != kind {
			continue
		}
		if _, err := fmt.Sscanf(f.Target, "client-%d", &client); err != nil {
			return 0, 0, fmt.Errorf("fault %s targets %q, not a client", kind, f.Target)
		}
		return client, f.Start, nil
	}
	return 0, 0, fmt.Errorf("no %s fault in the history", kind)
}

// LateWriteOfStruck returns a check that the counterexample holds a write of the client
// the fault of kind struck, called after the fault began: the holder that stalled came
// back and wrote (a stale write that got through, or the update it lost).
func LateWriteOfStruck(kind string) func(*history.History, models.Result) error {
	return func(h *history.History, res models.Result) error {
		client, at, err := StruckClient(h, kind)
		if err != nil {
			return err
		}
		for _, id := range res.Counterexample {
			if op := OpByID(h, id); op != nil && op.Kind == history.Write && op.Client == client && op.Call > at {
				return nil
			}
		}
		return fmt.Errorf("%s's counterexample %v holds no write of client %d (struck by %s) after the fault began", res.Property, res.Counterexample, client, kind)
	}
}

// TwoHoldersWithoutFault checks that mutex's counterexample is two ok acquires of two
// different clients in a history with no fault at all: the lock excluded nobody.
func TwoHoldersWithoutFault(h *history.History, res models.Result) error {
	if len(h.Faults) > 0 {
		return fmt.Errorf("the history has %d faults; the bug needs none", len(h.Faults))
	}
	var clients []int
	for _, id := range res.Counterexample {
		if op := OpByID(h, id); op != nil && op.Kind == history.Acquire && op.Status == history.OK && !slices.Contains(clients, op.Client) {
			clients = append(clients, op.Client)
		}
	}
	if len(clients) < 2 {
		return fmt.Errorf("mutex's counterexample %v is not two granted acquires of two clients", res.Counterexample)
	}
	return nil
}

// TokenBackAcrossFault returns a check that tokens' counterexample is two granted
// acquires, one before the fault of kind began and one after it, the later granted a
// token no greater than the earlier: the fault made the service reuse or go back on a
// token.
func TokenBackAcrossFault(kind string) func(*history.History, models.Result) error {
	return func(h *history.History, res models.Result) error {
		var at int64 = -1
		for _, f := range h.Faults {
			if f.Kind == kind {
				at = f.Start
				break
			}
		}
		if at < 0 {
			return fmt.Errorf("no %s fault in the history", kind)
		}
		var acqs []*history.Op
		for _, id := range res.Counterexample {
			if op := OpByID(h, id); op != nil && op.Kind == history.Acquire && op.Status == history.OK && op.Return != nil {
				acqs = append(acqs, op)
			}
		}
		if len(acqs) != 2 {
			return fmt.Errorf("tokens' counterexample %v is not two granted acquires", res.Counterexample)
		}
		early, late := acqs[0], acqs[1]
		if late.Call < early.Call {
			early, late = late, early
		}
		if *early.Return > at || *late.Return < at || late.Token > early.Token {
			return fmt.Errorf("tokens' counterexample: acquire #%d (token %d, returned at %d) and #%d (token %d, returned at %d) do not go back across the %s fault at %d",
				early.ID, early.Token, *early.Return, late.ID, late.Token, *late.Return, kind, at)
		}
		return nil
	}
}

// WroteAfterToldLost checks that heed's counterexample is a write of a client that has a
// lost record for the counterexample's acquire, recorded before the write was called:
// the lock client told the holder, and the holder went on acting.
func WroteAfterToldLost(h *history.History, res models.Result) error {
	var w, acq *history.Op
	for _, id := range res.Counterexample {
		switch op := OpByID(h, id); {
		case op == nil:
		case op.Kind == history.Write:
			w = op
		case op.Kind == history.Acquire:
			acq = op
		}
	}
	if w == nil || acq == nil || w.Client != acq.Client {
		return fmt.Errorf("heed's counterexample %v is not a write and the acquire of the same client", res.Counterexample)
	}
	for _, l := range h.Lost {
		if l.Client == w.Client && l.AcquireID == acq.ID && l.At < w.Call {
			return nil
		}
	}
	return fmt.Errorf("no lost record of client %d for acquire #%d before its write #%d", w.Client, acq.ID, w.ID)
}

// TokenBackWithoutFault checks that tokens' counterexample is two granted acquires in
// a history with no fault, the later granted a token no greater than the earlier: the
// service's tokens went back on their own.
func TokenBackWithoutFault(h *history.History, res models.Result) error {
	if len(h.Faults) > 0 {
		return fmt.Errorf("the history has %d faults; the bug needs none", len(h.Faults))
	}
	var acqs []*history.Op
	for _, id := range res.Counterexample {
		if op := OpByID(h, id); op != nil && op.Kind == history.Acquire && op.Status == history.OK {
			acqs = append(acqs, op)
		}
	}
	if len(acqs) != 2 {
		return fmt.Errorf("tokens' counterexample %v is not two granted acquires", res.Counterexample)
	}
	early, late := acqs[0], acqs[1]
	if late.Call < early.Call {
		early, late = late, early
	}
	if late.Token > early.Token {
		return fmt.Errorf("tokens' counterexample: acquire #%d's token %d is above the earlier #%d's %d", late.ID, late.Token, early.ID, early.Token)
	}
	return nil
}

// ZooRow is one entry's record over a soak of its two scenarios: how often the bug was
// detected and how often its control cried wolf.
type ZooRow struct {
	ID       string          `json:"id"`
	Ref      string          `json:"ref"`
	URL      string          `json:"url"`
	Property models.Property `json:"property"`
	ByOthers bool            `json:"by_others"`
	// Runs counts the bug's runs that completed, Detected those that violated Property.
	Runs     int `json:"runs"`
	Detected int `json:"detected"`
	// ControlRuns counts the control's runs that completed; FalseAlarms those that
	// violated Property, ControlHeld those that held it (with its evidence).
	ControlRuns int `json:"control_runs"`
	FalseAlarms int `json:"false_alarms"`
	ControlHeld int `json:"control_held"`
	// Errors counts the runs of either that could not complete.
	Errors int `json:"errors"`
	// FirstDetection is, over the detected runs, when the run first showed the bug: the
	// latest call among the counterexample's operations (judge.Violations).
	FirstDetection judge.Percentiles `json:"first_detection"`
}

// Shown reports whether every run of the row went as the entry says: each bug run
// detected, each control run held, and at least one of each.
func (r ZooRow) Shown() bool {
	return r.Runs > 0 && r.ControlRuns > 0 && r.Detected == r.Runs && r.ControlHeld == r.ControlRuns && r.Errors == 0
}

// Rows judges each entry of z that res ran (by its scenarios' names); an entry none of
// whose runs is in res is left out.
func (z Zoo) Rows(res *judge.SoakResult) []ZooRow {
	byName := map[string]judge.SoakStats{}
	if res != nil {
		for _, s := range res.Scenarios {
			byName[s.Scenario] = s
		}
	}
	var out []ZooRow
	for _, b := range z {
		bug, okB := byName[b.BugScenario()]
		control, okC := byName[b.ControlScenario()]
		if !okB && !okC {
			continue
		}
		row := ZooRow{ID: b.ID, Ref: b.Ref, URL: b.URL, Property: b.Property, ByOthers: b.ByOthers}
		var first []int64
		for _, r := range bug.Detail {
			if r.Err != "" {
				row.Errors++
				continue
			}
			row.Runs++
			if r.Verdicts[b.Property] == models.Violated {
				row.Detected++
				if t, ok := r.Violations[b.Property]; ok {
					first = append(first, t)
				}
			}
		}
		for _, r := range control.Detail {
			if r.Err != "" {
				row.Errors++
				continue
			}
			row.ControlRuns++
			switch r.Verdicts[b.Property] {
			case models.Violated:
				row.FalseAlarms++
			case models.Held:
				row.ControlHeld++
			}
		}
		row.FirstDetection = judge.Summary(first)
		out = append(out, row)
	}
	return out
}
