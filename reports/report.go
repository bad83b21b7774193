package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
)

// ReportFile is the name of a run's HTML report in its folder.
const ReportFile = "report.html"

// Outcome words, from worst to best: what a run says about the protected data
// (judge's).
const (
	OutcomeUnsafe       = judge.OutcomeUnsafe
	OutcomeUnknown      = judge.OutcomeUnknown
	OutcomeInconclusive = judge.OutcomeInconclusive
	OutcomeSafe         = judge.OutcomeSafe
	// OutcomeError: the run failed (judge's).
	OutcomeError = judge.OutcomeError
	// OutcomeNA: a matrix cell whose combination cannot run.
	OutcomeNA judge.RunOutcome = "n/a"
	// OutcomeFailed: a stored run that failed before it was checked (store's index).
	OutcomeFailed judge.RunOutcome = "failed"
)

// Outcome classifies a report by what it says about the protected data (judge.Outcome).
func Outcome(rep *models.Report) judge.RunOutcome { return judge.Outcome(rep) }

// headline is the one thing a newcomer must read: what happened, in a title and a
// sentence.
type headline struct {
	Outcome judge.RunOutcome
	Title   string
	Text    string
	// Notes are further sentences (tokens, mutex) in the order they matter.
	Notes []string
}

// MakeHeadline says what a checked history shows.
func MakeHeadline(h *history.History, rep *models.Report) headline {
	ev := rep.Evidence
	hl := headline{Outcome: Outcome(rep)}
	firstStale := slices.IndexFunc(rep.StaleWrites, func(s models.StaleWrite) bool { return s.Status != "rejected" })
	switch hl.Outcome {
	case OutcomeUnsafe:
		switch {
		case firstStale >= 0:
			hl.Title = fmt.Sprintf("UNSAFE: %s got through", plural(ev.StaleAccepted, "stale write", "stale writes"))
			hl.Text = capitalize(staleSentence(rep.StaleWrites[firstStale])) + "."
		case len(rep.LostUpdates) > 0:
			hl.Title = fmt.Sprintf("UNSAFE: %s lost", plural(len(rep.LostUpdates), "update was", "updates were"))
			hl.Text = rep.LostUpdates[0].Explanation
		default:
			hl.Title = "UNSAFE: the resource did not behave as a fenced register"
			if r, ok := rep.Result(models.Register); ok && r.Verdict == models.Violated {
				hl.Text = r.Explanation
			} else if r, ok := rep.Result(models.Updates); ok {
				hl.Text = r.Explanation
			}
		}
	case OutcomeUnknown:
		hl.Title = "UNPROVEN: the checker timed out"
		hl.Text = "Porcupine gave no verdict within its time limit on the protected data's properties; the direct analysis's findings are shown below."
	case OutcomeInconclusive:
		if reason, why := judge.Why(rep); reason.Untested() {
			hl.Title = "INCONCLUSIVE: the run tested nothing"
			hl.Text = capitalize(why) + ", so this run proves nothing about the protected data."
		} else {
			hl.Title = "INCONCLUSIVE: the fault never produced a stale write"
			hl.Text = "Nothing went wrong, but no client attempted a stale write, so this run did not test the fence."
		}
	default:
		if ev.StaleRejected > 0 {
			hl.Title = fmt.Sprintf("SAFE: the fence rejected %s", plural(ev.StaleRejected, "stale write", "stale writes"))
			if i := slices.IndexFunc(rep.StaleWrites, func(s models.StaleWrite) bool { return s.Status == "rejected" }); i >= 0 {
				hl.Text = capitalize(staleSentence(rep.StaleWrites[i])) + "."
			}
		} else {
			hl.Title = "SAFE: the protected data held"
			hl.Text = "Every accepted write passed the fence and no update was lost."
		}
	}
	if v := rep.Verdicts[models.Tokens]; v == models.Violated {
		r, _ := rep.Result(models.Tokens)
		hl.Notes = append(hl.Notes, "Tokens went backwards or were reused, so fencing has nothing to stand on: "+r.Explanation)
	}
	if rep.Verdicts[models.Mutex] == models.Violated {
		n := fmt.Sprintf("As with any lease lock under a pause, two clients believed they held the lock at once: the validity gap was %s", Duration(ev.ValidityGapNanos))
		if h.Run.TTLms > 0 {
			n += fmt.Sprintf(" (TTL %s)", Duration(h.Run.TTLms*1e6))
		}
		hl.Notes = append(hl.Notes, n+".")
	}
	if tr := rep.Trouble(); tr != "" {
		hl.Notes = append(hl.Notes, "Internal error: "+tr+". The direct analysis's verdict is shown. Please report this history.")
	}
	return hl
}

func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// propertyMeaning says what each property is about, for the verdict cards; another
// property's card quotes its definition (models.Property.Doc).
var propertyMeaning = map[models.Property]string{
	models.Register: "The resource acts as one atomic register that accepts a write only if its token passes the fence. Violated: a stale write got through.",
	models.Updates:  "Every read-modify-write read the value accepted just before it. Violated: an update was lost.",
	models.Tokens:   "Grants carry strictly increasing tokens in real-time order. Violated: token reuse or regression.",
	models.Mutex:    "At most one client believes it holds the lock at a time. Any lease lock violates this under pauses; that is why fencing exists.",
	models.Effects:  "Every side effect delivered outside the resource belongs to an accepted write. Violated: a stale writer's side effect escaped the fence.",
}

type kv struct{ Key, Value, Hint string }

type resultView struct {
	models.Result
	Meaning   string
	Porcupine string
}

type runView struct {
	Title    string
	Name     string
	Headline headline
	Settings []kv
	Faults   []history.Fault
	Results  []resultView
	Stale    []models.StaleWrite
	Lost     []models.LostUpdate
	Evidence []kv
	Ops      int
	Data     timelineData
	// LostBase is the index of the first lost update among the timeline's pairs (the
	// stale writes come first).
	LostBase  int
	HasFocus  bool
	Generated string
}

func (v runView) FaultEnd(f history.Fault) string {
	if f.End == nil {
		return "never healed"
	}
	return Seconds(*f.End)
}

func newRunView(h *history.History, rep *models.Report) runView {
	r := h.Run
	name := r.Scenario
	if name == "" {
		name = "ad-hoc run"
		if r.Backend != "" {
			name = fmt.Sprintf("ad-hoc run: %s × %s", r.Backend, r.Resource)
			if faults := r.AskedFaults(); len(faults) > 0 {
				name += " × " + strings.Join(faults, "+")
			}
		}
	}
	v := runView{
		Title:     fmt.Sprintf("%s: %s", name, Outcome(rep)),
		Name:      name,
		Headline:  MakeHeadline(h, rep),
		Faults:    h.Faults,
		Stale:     rep.StaleWrites,
		Lost:      rep.LostUpdates,
		Ops:       len(h.Ops),
		Data:      buildTimeline(h, rep),
		LostBase:  len(rep.StaleWrites),
		Generated: time.Now().Format("2006-01-02 15:04:05 MST"),
	}
	v.HasFocus = v.Data.Focus >= 0
	v.Settings = []kv{
		{"backend", r.Backend, "the lock service"},
		{"resource", r.Resource, "the protected data"},
		{"fence", h.FenceRule(), "strict: accept iff token > stored; monotonic: iff token >= stored"},
		{"TTL", Duration(r.TTLms * 1e6), "lease time to live"},
		{"seed", fmt.Sprint(r.Seed), ""},
	}
	if r.GrantedTTLms > 0 {
		v.Settings = append(v.Settings, kv{"granted TTL", Duration(r.GrantedTTLms * 1e6), "the longest TTL the service granted a lease"})
	}
	if r.ServerVersion != "" {
		v.Settings = append(v.Settings, kv{"server", r.ServerVersion, "the service's version, as its server said"})
	}
	if r.ClientLibrary != "" {
		v.Settings = append(v.Settings, kv{"client library", r.ClientLibrary, "the lock client's library and version, as the clients said or fencecheck was built with"})
	}
	for _, n := range slices.Sorted(maps.Keys(r.SessionTimeouts)) {
		v.Settings = append(v.Settings, kv{n, r.SessionTimeouts[n], "a server setting that ends a lock's session"})
	}
	if len(r.Faults) > 0 {
		v.Settings = append(v.Settings, kv{"faults", strings.Join(r.Faults, ", "), "the faults the run asked for"})
	}
	if len(r.RandomFaults) > 0 {
		v.Settings = append(v.Settings, kv{"random faults", strings.Join(r.RandomFaults, ", "), "the kinds of its random schedule"})
	}
	keys := make([]string, 0, len(r.Extra))
	for k := range r.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b, err := json.Marshal(r.Extra[k])
		val := string(b)
		if err != nil {
			val = fmt.Sprint(r.Extra[k])
		}
		v.Settings = append(v.Settings, kv{Key: k, Value: val})
	}
	for _, res := range rep.Results {
		rv := resultView{Result: res, Meaning: propertyMeaning[res.Property]}
		if rv.Meaning == "" { // a property the cards have no words of their own for
			rv.Meaning = res.Property.Doc()
		}
		if slices.Contains(models.Properties, res.Property) { // effects has no porcupine model
			rv.Porcupine = "porcupine-" + string(res.Property) + ".html"
		}
		v.Results = append(v.Results, rv)
	}
	ev := rep.Evidence
	v.Evidence = []kv{
		{"stale writes attempted", fmt.Sprint(ev.StaleAttempted), "writes carrying a token older than one already accepted"},
		{"stale writes rejected by the fence", fmt.Sprint(ev.StaleRejected), "proof that the fence was tested and held"},
		{"stale writes accepted", fmt.Sprint(ev.StaleAccepted), "each one is a corrupted write"},
		{"lock validity gap", Duration(ev.ValidityGapNanos), "longest time a client still believed it held the lock after another client got it"},
		{"time with two believers", Duration(ev.ValidityGapTotalNanos), "total time at least two clients believed they held the lock"},
		{"writes", fmt.Sprintf("%d: %d accepted, %d refused, %d unknown, %d failed", ev.Writes, ev.WritesAccepted, ev.WritesRefused, ev.WritesUnknown, ev.WritesFailed), ""},
		{"grants", fmt.Sprintf("%d (%d acquires failed)", ev.Grants, ev.AcquireFailed), ""},
		{"longest stretch without an accepted write", Duration(ev.LongestNoAcceptedWriteNanos), "the availability cost"},
		{"notice delay", NoticeDelay(ev), "how long after another client was granted the lock a superseded holder recorded that it had lost it"},
		{"takeover", Takeover(ev), "longest time from a superseded holder's last accepted write (or its grant) to the next grant"},
		{"overshoot", overshoot(ev), "how long after the next grant a superseded holder's own validity estimate still said it held the lock"},
		{"acquire p50 / p99", Duration(ev.AcquireP50Nanos) + " / " + Duration(ev.AcquireP99Nanos), "latency of granted acquires, call to return"},
		{"grants/s", GrantRate(ev.GrantsPerSecond), "granted acquires over the history's span"},
	}
	return v
}

// WriteReport writes the self-contained HTML report of a checked history to
// dir/report.html. The porcupine visualizations it links to are the
// porcupine-<property>.html files beside it (WriteRun writes both).
func WriteReport(dir string, h *history.History, rep *models.Report) error {
	return render(filepath.Join(dir, ReportFile), "report.tmpl", newRunView(h, rep))
}

// RenderReport writes the HTML report of a checked history to w.
func RenderReport(w io.Writer, h *history.History, rep *models.Report) error {
	return renderTo(w, "report.tmpl", newRunView(h, rep))
}
