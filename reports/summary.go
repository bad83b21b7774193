package reports

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/internal/term"
	"github.com/fencecheck/fencecheck/models"
)

// Seconds formats a history time (ns since the run started) as seconds; it is
// history.Seconds, which the nemesis uses too, so every figure prints alike.
func Seconds(ns int64) string { return history.Seconds(ns) }

// Summary writes the terminal summary of a checked history: settings, faults, the four
// verdicts, each stale write and lost update in one sentence, and the evidence. Every
// string in it, the history's own (scenario, fault details) above all, is escaped
// (term.Text): nothing in a file reaches the terminal raw.
func Summary(w io.Writer, h *history.History, rep *models.Report) {
	r := h.Run
	name := r.Scenario
	if name == "" {
		name = "(ad hoc)"
	}
	term.Fprintf(w, "scenario %s: backend=%s resource=%s fence=%s seed=%d ttl=%v\n",
		name, r.Backend, r.Resource, h.FenceRule(), r.Seed, time.Duration(r.TTLms)*time.Millisecond)
	if r.GrantedTTLms > 0 && r.GrantedTTLms != r.TTLms {
		term.Fprintf(w, "granted ttl=%v (asked %v): the service's own figure\n",
			time.Duration(r.GrantedTTLms)*time.Millisecond, time.Duration(r.TTLms)*time.Millisecond)
	}
	if r.ServerVersion != "" {
		term.Fprintf(w, "server: %s\n", r.ServerVersion)
	}
	if r.ClientLibrary != "" {
		term.Fprintf(w, "client library: %s\n", r.ClientLibrary)
	}
	if len(r.SessionTimeouts) > 0 {
		names := slices.Sorted(maps.Keys(r.SessionTimeouts))
		parts := make([]string, len(names))
		for i, n := range names {
			parts[i] = n + "=" + r.SessionTimeouts[n]
		}
		term.Fprintf(w, "session timeouts: %s\n", strings.Join(parts, " "))
	}
	ops := len(h.Ops)
	if rep.Ops > ops { // checked as a stream, which keeps no ops
		ops = rep.Ops
	}
	term.Fprintf(w, "history: %d ops, %d faults\n", ops, len(h.Faults))
	for _, f := range h.Faults {
		end := "never healed"
		if f.End != nil {
			end = Seconds(*f.End)
		}
		term.Fprintf(w, "  fault %s on %s from %s to %s: %s\n", f.Kind, f.Target, Seconds(f.Start), end, f.Detail)
	}
	fmt.Fprintln(w, "verdicts:")
	for _, res := range rep.Results {
		v := string(res.Verdict)
		if res.Verdict == models.Violated {
			v = strings.ToUpper(v)
		}
		term.Fprintf(w, "  %-9s %-13s %s%s\n", res.Property, v, res.Explanation, opinionText(res))
	}
	if len(rep.StaleWrites) > 0 {
		term.Fprintf(w, "stale writes (%d):\n", len(rep.StaleWrites))
		for _, s := range rep.StaleWrites {
			term.Fprintf(w, "  %s\n", staleSentence(s))
		}
	}
	if len(rep.LostUpdates) > 0 {
		term.Fprintf(w, "lost updates (%d):\n", len(rep.LostUpdates))
		for _, l := range rep.LostUpdates {
			term.Fprintf(w, "  %s\n", lostSentence(l))
		}
	}
	ev := rep.Evidence
	term.Fprintf(w, "evidence: stale writes attempted %d, rejected %d, accepted %d; validity gap %s (longest time a client still believed it held the lock after another client got it)\n",
		ev.StaleAttempted, ev.StaleRejected, ev.StaleAccepted, Seconds(ev.ValidityGapNanos))
	term.Fprintf(w, "availability: %d writes (%d accepted, %d refused, %d unknown); %d grants, %d acquires failed; longest stretch without an accepted write %s\n",
		ev.Writes, ev.WritesAccepted, ev.WritesRefused, ev.WritesUnknown, ev.Grants, ev.AcquireFailed, Seconds(ev.LongestNoAcceptedWriteNanos))
	term.Fprintf(w, "lock timing: notice delay %s; takeover %s; overshoot %s; acquire p50 %s, p99 %s; %s grants/s\n",
		NoticeDelay(ev), Takeover(ev), overshoot(ev), Duration(ev.AcquireP50Nanos), Duration(ev.AcquireP99Nanos), GrantRate(ev.GrantsPerSecond))
	if tr := rep.Trouble(); tr != "" {
		term.Fprintf(w, "INTERNAL ERROR (please report this history): %s; the direct analysis's verdict is shown\n", tr)
	}
}

// NoticeDelay says how long superseded holders took to notice they had lost the lock,
// after another client was granted it: "never" when one of them never did.
func NoticeDelay(ev models.Evidence) string {
	switch {
	case ev.Superseded == 0:
		return "none (no holder was superseded)"
	case ev.NeverNoticed > 0:
		s := fmt.Sprintf("never (%d of %s never noticed", ev.NeverNoticed, plural(ev.Superseded, "superseded holder", "superseded holders"))
		if ev.Noticed > 0 {
			s += fmt.Sprintf("; the others within %s, median %s", Duration(ev.NoticeDelayNanos), Duration(ev.NoticeDelayP50Nanos))
		}
		return s + ")"
	}
	return fmt.Sprintf("%s (median %s, over %s)", Duration(ev.NoticeDelayNanos), Duration(ev.NoticeDelayP50Nanos), plural(ev.Superseded, "superseded holder", "superseded holders"))
}

// Takeover is the longest time the lock sat with a holder that had stopped making
// progress before another client was granted it.
func Takeover(ev models.Evidence) string {
	if ev.Superseded == 0 {
		return "none"
	}
	return Duration(ev.TakeoverNanos)
}

// overshoot is how long after the next grant a superseded holder's own validity
// estimate still said it held the lock: "unknown" when no superseded holder recorded one.
func overshoot(ev models.Evidence) string {
	switch {
	case ev.Superseded == 0:
		return "none"
	case ev.Estimated == 0:
		return "unknown (no superseded holder recorded its valid-until)"
	}
	return fmt.Sprintf("%s (over %d of %s)", Duration(ev.OvershootNanos), ev.Estimated, plural(ev.Superseded, "superseded holder", "superseded holders"))
}

// GrantRate formats grants per second with three significant figures or so.
func GrantRate(perSecond float64) string {
	switch {
	case perSecond >= 100:
		return fmt.Sprintf("%.0f", perSecond)
	case perSecond >= 10:
		return fmt.Sprintf("%.1f", perSecond)
	}
	return fmt.Sprintf("%.2f", perSecond)
}

// opinionText is the certificate and porcupine's second opinion, in brackets.
func opinionText(r models.Result) string {
	var parts []string
	if r.Verdict == models.Violated && r.Property != models.Effects {
		if r.Certified {
			parts = append(parts, fmt.Sprintf("certified: %s", r.CertifyNote))
		} else {
			parts = append(parts, fmt.Sprintf("NOT certified: %s", r.CertifyNote))
		}
	}
	if r.Porcupine != "" {
		parts = append(parts, "second opinion: "+r.PorcupineNote)
	}
	if len(parts) == 0 {
		return ""
	}
	return " [" + strings.Join(parts, "; ") + "]"
}

// staleSentence explains one stale write in a sentence a person can read.
func staleSentence(s models.StaleWrite) string {
	what := "it was ACCEPTED: the stale write got through"
	if s.Status == "rejected" {
		what = "the fence rejected it"
	}
	seen := ""
	if s.SeenBy != 0 {
		seen = fmt.Sprintf(" (read op %d saw its value)", s.SeenBy)
	}
	// NewerAt is after the stale write's call only when the two raced (the newer write
	// was in flight when the stale one arrived); "after" would then be false.
	when := "after"
	if s.NewerAt > s.At {
		when = "while"
	}
	return fmt.Sprintf("client %d wrote with token %d at %s %s client %d's token-%d write was accepted (by %s); %s%s [ops %d, %d]",
		s.Client, s.Token, Seconds(s.At), when, s.NewerClient, s.NewerToken, Seconds(s.NewerAt), what, seen, s.Write, s.Newer)
}

// lostSentence explains one lost update in a sentence.
func lostSentence(l models.LostUpdate) string {
	return fmt.Sprintf("op %d (client %d): %s", l.Write, l.Client, l.Explanation)
}
