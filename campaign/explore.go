package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/harness/redact"
	"github.com/fencecheck/fencecheck/harness/registry"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// Explore runs random schedules drawn from one seed until one violates a property (or,
// with KeepGoing, until the budget is spent), and shrinks every finding's schedule to
// the least that still fails (docs/explore.md).

// ExploreConfig says what to explore.
type ExploreConfig struct {
	// Registry resolves the names; required.
	Registry *registry.Registry
	// Base is the spec every try starts from: backend, resource, policy, members,
	// options. Its faults, clients, TTL, duration, seed and schedule are drawn.
	Base spec.Spec
	// Kinds, if set, are the fault kinds tries draw from (default: every client fault
	// that applies to the backend); those that do not apply are left out.
	Kinds []string
	// Seed is the exploration's seed: every try draws its own from it.
	Seed int64
	// Budget is how long tries are started for; shrinking a finding found within it
	// goes on past it (it is bounded by its steps).
	Budget time.Duration
	// Parallel tries (and replays) at a time.
	Parallel int
	// FailOn are the properties whose violation is a finding.
	FailOn []models.Property
	// KeepGoing collects distinct findings (another property or another set of fault
	// kinds) until the budget is spent, instead of stopping at the first.
	KeepGoing bool
	// Replays is how many times a shrink candidate is replayed with other workload
	// seeds; it is kept if at least nine in ten of them (rounded up) still fail.
	Replays int
	// Store is the results store: every try goes to Store/<label>/<timestamp>/, the
	// exploration's findings to Store/explore/<timestamp>/finding-N/.
	Store        string
	CheckTimeout time.Duration
	Log          io.Writer
	Redact       *redact.Redactor
	Host         trial.LockerHost
	// Shard, if set, runs only the shard's tries of the exploration (try k, counted from
	// 0 in the order the seed draws them, is shard I/N's when k mod N = I-1): N machines
	// with the same seed and budget explore N times as many schedules, none twice, and
	// `fencecheck merge` lists every shard's findings in one store.
	Shard Shard
	// Progress, if set, is told of every try and every shrink step, one line each.
	Progress func(line string)
	// Failed, if set, is called with the error of every run that failed.
	Failed func(err error)
}

// Finding is a violation an exploration found, and its shrunk schedule.
type Finding struct {
	N        int             `json:"n"`
	Property models.Property `json:"property"`
	// Explanation is the property's explanation in the original run.
	Explanation string   `json:"explanation"`
	Kinds       []string `json:"kinds"`
	// Dir is the finding's folder; Original and Shrunk its schedule files; OriginalRun
	// and ShrunkRun copies of the run folders whose histories show the violation
	// (ShrunkRun is empty when no replay of the shrunk schedule was kept).
	Dir         string `json:"dir"`
	Original    string `json:"original"`
	Shrunk      string `json:"shrunk"`
	OriginalRun string `json:"original_run"`
	ShrunkRun   string `json:"shrunk_run,omitempty"`
	// OriginalFaults and ShrunkFaults count the schedules' items; ShrunkClients and
	// ShrunkOps are the shrunk run's clients and its history's ops.
	OriginalFaults int `json:"original_faults"`
	ShrunkFaults   int `json:"shrunk_faults"`
	ShrunkClients  int `json:"shrunk_clients"`
	ShrunkOps      int `json:"shrunk_ops,omitempty"`
	// Replays and Hits: the shrunk schedule's replay rate (of the original when it did
	// not reproduce often enough to shrink: Reproducible is then false).
	Replays      int  `json:"replays"`
	Hits         int  `json:"hits"`
	Reproducible bool `json:"reproducible"`
	// FoundSeconds is when the finding's run ended, from the start of the exploration;
	// ShrinkSeconds how long shrinking took.
	FoundSeconds  float64 `json:"found_seconds"`
	ShrinkSeconds float64 `json:"shrink_seconds"`
	// Note says what cut shrinking short, if anything did.
	Note string `json:"note,omitempty"`
}

// ExploreResult is an exploration: DIR/explore/<timestamp>/explore.json.
type ExploreResult struct {
	Dir string `json:"dir"`
	// Backend and Resource are the explored ones; Shard the shard run ("" for all).
	Backend  string    `json:"backend"`
	Resource string    `json:"resource"`
	Shard    string    `json:"shard,omitempty"`
	Seed     int64     `json:"seed"`
	Kinds    []string  `json:"kinds"`
	Tries    int       `json:"tries"`
	Errors   int       `json:"errors"`
	Findings []Finding `json:"findings"`
	Seconds  float64   `json:"seconds"`
}

// exploreRand is the salt of an exploration's random draws.
const exploreRand = 0x6578706c6f7265 // "explore"

// ExploreKinds are the faults that apply to base's backend and resource in a random
// schedule, on clients and on the lock service (spec.Resolve leaves the others out).
func ExploreKinds(reg *registry.Registry, base spec.Spec, asked []string) ([]string, error) {
	s := base
	s.Faults, s.Schedule = nil, nil
	s.RandomFaults = nil
	for _, f := range reg.FaultNames() {
		s.RandomFaults = append(s.RandomFaults, f.Name)
	}
	if len(asked) > 0 {
		s.RandomFaults = asked
	}
	ttl, err := defaultTTL(reg, base)
	if err != nil {
		return nil, err
	}
	s.TTL, s.Duration = ttl, 8*ttl // a try's

	r, err := spec.Resolve(reg, s)
	if err != nil {
		return nil, err
	}
	return r.Spec.RandomFaults, nil
}

// exploreTTLs are the TTLs a try draws from: half, once and twice base's TTL (the
// backend's default when base sets none), those that the backend takes.
func exploreTTLs(reg *registry.Registry, base spec.Spec, kinds []string) []time.Duration {
	s := base
	s.RandomFaults = kinds
	def, err := defaultTTL(reg, base)
	if err != nil {
		return nil
	}
	var out []time.Duration
	for _, ttl := range []time.Duration{def / 2, def, 2 * def} {
		s.TTL = ttl
		s.Duration = 8 * ttl
		if _, err := spec.Resolve(reg, s); err == nil {
			out = append(out, ttl)
		}
	}
	return out
}

// defaultTTL is base's TTL, or its backend's default when it sets none.
func defaultTTL(reg *registry.Registry, base spec.Spec) (time.Duration, error) {
	if base.TTL > 0 {
		return base.TTL, nil
	}
	s := base
	s.Faults, s.RandomFaults, s.Schedule = nil, nil, nil
	r, err := spec.Resolve(reg, s)
	if err != nil {
		return 0, err
	}
	return r.Spec.TTL, nil
}

// DrawTry is try's spec: its own seed, its faults (a non-empty subset of kinds), its
// TTL, 2 to 4 clients and its nemesis schedule, all drawn from seed. Half the items on
// a client (onClient says which kinds strike one) heal on the takeover rather than after
// their hold (nemesis.Item.Takeover), held up to four TTLs. When keyed (the backend and
// resource serve independent keys) and base sets none, the try runs 1, 2 or 3 keys.
func DrawTry(base spec.Spec, kinds []string, ttls []time.Duration, seed int64, onClient func(kind string) bool, keyed bool) (spec.Spec, error) {
	rng := rand.New(rand.NewPCG(uint64(seed), exploreRand))
	var pick []string
	for _, k := range kinds {
		if rng.IntN(2) == 0 {
			pick = append(pick, k)
		}
	}
	if len(pick) == 0 {
		pick = []string{kinds[rng.IntN(len(kinds))]}
	}
	s := base
	s.Faults, s.RandomFaults = nil, nil
	s.TTL = ttls[rng.IntN(len(ttls))]
	s.Clients = 2 + rng.IntN(3)
	s.Seed = seed
	// Eight TTLs: room for one or two faults of up to three TTLs each.
	s.Duration = max(8*s.TTL, spec.DefaultDuration)
	sched, err := nemesis.Generate(nemesis.ScheduleConfig{Seed: seed, Kinds: pick, Clients: s.Clients, Total: s.Duration, Interval: 2 * s.TTL, TTL: s.TTL})
	if err != nil {
		return s, err
	}
	// To the millisecond: the schedule file says what ran, in durations one can read.
	for i := range sched.Items {
		it := &sched.Items[i]
		if onClient != nil && onClient(it.Kind) && rng.IntN(2) == 0 {
			it.Takeover, it.Hold = true, max(it.Hold, TakeoverHolds*s.TTL)
		}
		it.At = it.At.Round(time.Millisecond)
		it.Hold = max(it.Hold.Round(time.Millisecond), time.Millisecond)
	}
	if keyed && base.Keys <= 1 {
		// Drawn last, so that a backend without keys draws the same tries as before.
		s.Keys = []int{1, 1, 2, 3}[rng.IntN(4)]
	}
	s.Schedule = &sched
	return s, nil
}

// TakeoverHolds is how many TTLs an item that heals on the takeover is held at the most:
// a lock that expires hands the lock over about one TTL after the strike.
const TakeoverHolds = 4

// Explore explores (see ExploreConfig). An invalid configuration is an ErrSpec error
// before anything runs; when ctx ends it returns the findings so far (each saved, its
// shrinking cut short) with ctx's cause.
func Explore(ctx context.Context, cfg ExploreConfig) (*ExploreResult, error) {
	reg := cfg.Registry
	switch {
	case reg == nil:
		return nil, fmt.Errorf("%w: explore needs a registry (ExploreConfig.Registry)", spec.ErrSpec)
	case cfg.Budget <= 0:
		return nil, fmt.Errorf("%w: the budget must be positive, got %v", spec.ErrSpec, cfg.Budget)
	case cfg.Replays < 1:
		return nil, fmt.Errorf("%w: replays must be at least 1, got %d", spec.ErrSpec, cfg.Replays)
	case len(cfg.FailOn) == 0:
		return nil, fmt.Errorf("%w: explore needs the properties whose violation is a finding", spec.ErrSpec)
	case cfg.Store == "":
		return nil, fmt.Errorf("%w: explore needs a results store", spec.ErrSpec)
	}
	kinds, err := ExploreKinds(reg, cfg.Base, cfg.Kinds)
	if err != nil {
		return nil, err
	}
	backend, resource := cfg.Base.Backend, cfg.Base.Resource
	if r, err := spec.Resolve(reg, cfg.Base); err == nil {
		if why := r.Unavailable(); why != "" {
			return nil, spec.Error{Err: errors.New(why)}
		}
		backend, resource = r.Spec.Backend, r.Spec.Resource
	}
	ttls := exploreTTLs(reg, cfg.Base, kinds)
	keyed := false
	if k := cfg.Base; k.Keys <= 1 {
		k.Keys = 2
		_, err := spec.Resolve(reg, k)
		keyed = err == nil
	}
	if len(ttls) == 0 {
		return nil, fmt.Errorf("%w: no TTL around the backend's default is one it takes", spec.ErrSpec)
	}
	started := time.Now()
	dir, err := reports.NewRunDir(cfg.Store, "explore", started)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrStore, cfg.Store, err)
	}
	e := &explorer{cfg: cfg, kinds: kinds, dir: dir, started: started, seen: map[string]bool{}}
	res := &ExploreResult{Dir: dir, Seed: cfg.Seed, Kinds: kinds, Backend: backend, Resource: resource}
	if !cfg.Shard.Whole() {
		res.Shard = cfg.Shard.String()
	}
	defer func() {
		res.Seconds = time.Since(started).Seconds()
		// The exploration's record, for the store's index and merge; a store that
		// cannot take it has already refused the findings.
		_ = writeJSONFile(filepath.Join(dir, reports.ExploreJSON), res)
	}()
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), exploreRand))
	c := e.campaign(cfg.Store)
	drawn := 0 // tries drawn, the other shards' too
	for time.Since(started) < cfg.Budget && ctx.Err() == nil {
		var batch []spec.Spec
		for len(batch) < max(cfg.Parallel, 1) {
			seed := rng.Int64N(1<<62) + 1
			drawn++
			if !cfg.Shard.Owns(drawn - 1) {
				continue
			}
			s, err := DrawTry(cfg.Base, kinds, ttls, seed, e.onClient, keyed)
			if err != nil {
				return res, err
			}
			batch = append(batch, s)
		}
		results, interrupted := c.Run(ctx, batch)
		var found []int
		for i, r := range results {
			if errors.Is(r.Err, ErrInterrupted) {
				continue
			}
			res.Tries++
			prop, ok := e.violated(r)
			status := "safe"
			switch {
			case r.Err != nil:
				res.Errors++
				status = "ERROR: " + r.Err.Error()
				if cfg.Failed != nil && !interrupted {
					cfg.Failed(r.Err)
				}
			case ok:
				status = string(prop) + " VIOLATED"
			}
			keys := ""
			if batch[i].Keys > 1 {
				keys = fmt.Sprintf(", %d keys", batch[i].Keys)
			}
			e.progress("try %d (seed %d, %s, %d clients%s, ttl %v, %d fault(s)): %s", res.Tries, batch[i].Seed,
				strings.Join(spec.ScheduleKinds(*batch[i].Schedule), "+"), batch[i].Clients, keys, batch[i].TTL, len(batch[i].Schedule.Items), status)
			if ok && !interrupted {
				found = append(found, i)
			}
		}
		for _, i := range found {
			prop, _ := e.violated(results[i])
			key := string(prop) + "/" + strings.Join(spec.ScheduleKinds(*batch[i].Schedule), "+")
			if e.seen[key] {
				continue
			}
			e.seen[key] = true
			f, err := e.finding(ctx, len(res.Findings)+1, prop, batch[i], results[i])
			if f != nil {
				res.Findings = append(res.Findings, *f)
			}
			if err != nil {
				return res, err
			}
			if !cfg.KeepGoing {
				return res, nil
			}
		}
		if interrupted {
			break
		}
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("explore interrupted: %w", context.Cause(ctx))
	}
	return res, nil
}

// onClient says whether kind strikes a client (it can heal on the takeover).
func (e *explorer) onClient(kind string) bool {
	f, ok := e.cfg.Registry.Fault(kind)
	if !ok {
		return false
	}
	_, client := f.(registry.ClientFault)
	return client
}

type explorer struct {
	cfg     ExploreConfig
	kinds   []string
	dir     string
	started time.Time
	seen    map[string]bool
	mu      sync.Mutex
}

func (e *explorer) progress(format string, a ...any) {
	if e.cfg.Progress != nil {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.cfg.Progress(fmt.Sprintf(format, a...))
	}
}

func (e *explorer) campaign(store string) Campaign {
	return Campaign{Registry: e.cfg.Registry, Store: store, Parallel: e.cfg.Parallel, Log: e.cfg.Log, CheckTimeout: e.cfg.CheckTimeout,
		Select: e.cfg.FailOn, Host: e.cfg.Host, Redact: e.cfg.Redact}
}

// violated is the first property of FailOn the run violated.
func (e *explorer) violated(r RunResult) (models.Property, bool) {
	if r.Err != nil || r.Outcome == nil || r.Outcome.Report == nil {
		return "", false
	}
	for _, p := range e.cfg.FailOn {
		if r.Outcome.Report.Verdicts[p] == models.Violated {
			return p, true
		}
	}
	return "", false
}

// need is the hits a candidate must have: nine in ten of the replays, rounded up.
func (e *explorer) need() int { return (9*e.cfg.Replays + 9) / 10 }

// finding saves the finding of run r (spec s, violating prop) and shrinks it.
func (e *explorer) finding(ctx context.Context, n int, prop models.Property, s spec.Spec, r RunResult) (*Finding, error) {
	fdir := filepath.Join(e.dir, fmt.Sprintf("finding-%d", n))
	if err := os.MkdirAll(fdir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	resolved := r.Outcome.Spec
	f := &Finding{N: n, Property: prop, Kinds: spec.ScheduleKinds(*s.Schedule), Dir: fdir,
		Original: filepath.Join(fdir, "original.json"), Shrunk: filepath.Join(fdir, "shrunk.json"),
		OriginalRun: filepath.Join(fdir, "original-run"), OriginalFaults: len(s.Schedule.Items),
		FoundSeconds: time.Since(e.started).Seconds()}
	if res, ok := r.Outcome.Report.Result(prop); ok {
		f.Explanation = res.Explanation
	}
	e.progress("finding %d after %.1f s: %s violated under %s; shrinking (%d replays per step, kept at %d)", n, f.FoundSeconds, prop, strings.Join(f.Kinds, "+"), e.cfg.Replays, e.need())
	if err := spec.WriteScheduleFile(f.Original, spec.NewScheduleFile(e.cfg.Registry, resolved, *s.Schedule)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	if err := os.CopyFS(f.OriginalRun, os.DirFS(r.Dir)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	began := time.Now()
	shrunk, rate, h, err := e.shrink(ctx, prop, resolved)
	f.ShrinkSeconds = time.Since(began).Seconds()
	if err != nil {
		f.Note = "shrinking cut short: " + err.Error()
	}
	f.Reproducible = rate.Hits >= e.need() && rate.Runs > 0
	f.Replays, f.Hits = rate.Runs, rate.Hits
	f.ShrunkFaults, f.ShrunkClients = len(shrunk.Schedule.Items), shrunk.Clients
	final := resolved
	final.Clients, final.Schedule, final.MaxOps, final.Keys = shrunk.Clients, &shrunk.Schedule, shrunk.Ops, shrunk.Keys
	final.Duration = scheduleDuration(final)
	if h.dir != "" {
		final.Seed = h.seed // the shrunk file replays the run kept beside it
	}
	if werr := spec.WriteScheduleFile(f.Shrunk, spec.NewScheduleFile(e.cfg.Registry, final, shrunk.Schedule)); werr != nil {
		return f, fmt.Errorf("%w: %w", ErrStore, werr)
	}
	if h.dir != "" {
		f.ShrunkRun = filepath.Join(fdir, "shrunk-run")
		if cerr := os.CopyFS(f.ShrunkRun, os.DirFS(h.dir)); cerr != nil {
			return f, fmt.Errorf("%w: %w", ErrStore, cerr)
		}
		if h, herr := history.ReadFile(filepath.Join(f.ShrunkRun, reports.HistoryFile)); herr == nil {
			f.ShrunkOps = len(h.Ops)
		}
	}
	if err := writeFinding(f); err != nil {
		return f, err
	}
	return f, err
}

// scheduleDuration is a replay's workload time: its schedule healed, and two TTLs. An
// item that heals on the takeover counts a TTL, not its longest hold: the runner waits
// for every fault to heal anyway, so a replay ends soon after its takeover.
func scheduleDuration(s spec.Spec) time.Duration {
	var end time.Duration
	for _, it := range s.Schedule.Items {
		hold := it.Hold
		if it.Takeover {
			hold = min(hold, s.TTL)
		}
		end = max(end, it.At+hold)
	}
	return max(end+2*s.TTL, spec.DefaultDuration).Round(time.Millisecond)
}

// shrink replays the original and shrinks it: the smallest candidate kept, its rate
// (the original's when it did not reproduce often enough to shrink) and the folder of
// one of its replays that violated prop.
func (e *explorer) shrink(ctx context.Context, prop models.Property, s spec.Spec) (Candidate, Rate, hit, error) {
	store := filepath.Join(e.dir, "replays-tmp")
	defer os.RemoveAll(store)
	hits := map[string]hit{} // candidate → a violating replay
	step := 0
	test := func(ctx context.Context, c Candidate) (Rate, error) {
		step++
		sp := s
		sp.Clients, sp.Schedule, sp.MaxOps, sp.Keys = c.Clients, &c.Schedule, c.Ops, c.Keys
		sp.Duration = scheduleDuration(sp)
		specs := make([]spec.Spec, e.cfg.Replays)
		for k := range specs {
			specs[k] = sp
			specs[k].Seed = s.Seed + int64(k) + 1
		}
		results, interrupted := e.campaign(store).Run(ctx, specs)
		if interrupted {
			return Rate{}, context.Cause(ctx)
		}
		rate := Rate{Runs: len(results)}
		for _, r := range results {
			if p, ok := e.violated(r); ok && p == prop {
				rate.Hits++
				if n := historyOps(r); n > 0 && (rate.Ops == 0 || n < rate.Ops) {
					rate.Ops = n
				}
				if _, ok := hits[candidateKey(c)]; !ok {
					hits[candidateKey(c)] = hit{dir: r.Dir, seed: r.Outcome.Spec.Seed}
				}
			}
		}
		limit := ""
		if c.Keys > 1 {
			limit = fmt.Sprintf(", %d keys", c.Keys)
		}
		if c.Ops > 0 {
			limit += fmt.Sprintf(", at most %d ops", c.Ops)
		}
		e.progress("  shrink step %d: %d fault(s) (%s), %d clients%s: %d/%d replays violate %s", step, len(c.Schedule.Items), itemsText(c.Schedule.Items), c.Clients, limit, rate.Hits, rate.Runs, prop)
		return rate, nil
	}
	start := Candidate{Schedule: *s.Schedule, Clients: s.Clients, Keys: s.Keys}
	best, bestRate, err := start, Rate{}, error(nil)
	rate, err := test(ctx, start)
	if err == nil && rate.Hits >= e.need() {
		best, bestRate, err = Shrink(ctx, start, ShrinkConfig{Need: e.need(), MinHold: spec.MinTTL, MinClients: 2,
			Takes: e.onClient, TakeoverHold: TakeoverHolds * s.TTL, StartOps: rate.Ops, MinOps: 4}, test)
	}
	if bestRate.Runs == 0 { // nothing smaller was kept: the original's rate
		bestRate = rate
	}
	h := hits[candidateKey(best)]
	if h.dir != "" {
		// Out of the temporary store before it is removed.
		keep := filepath.Join(e.dir, fmt.Sprintf(".hit-%d", step))
		if rerr := os.Rename(h.dir, keep); rerr == nil {
			h.dir = keep
		} else {
			h = hit{}
		}
	}
	return best, bestRate, h, err
}

// hit is a replay that violated the property: its folder and its workload seed.
type hit struct {
	dir  string
	seed int64
}

func candidateKey(c Candidate) string { return fmt.Sprint(c.Clients, c.Ops, c.Keys, c.Schedule.Items) }

// historyOps is the number of operations in r's history (0 when not in memory).
func historyOps(r RunResult) int {
	if r.Outcome == nil || r.Outcome.History == nil {
		return 0
	}
	return len(r.Outcome.History.Ops)
}

// itemsText says a schedule's items in a few words: "pause on client 0 at 1.2s for
// 800ms", "stall on client 1 from 0s until the takeover".
func itemsText(items []nemesis.Item) string {
	var parts []string
	for _, it := range items {
		if it.Takeover {
			parts = append(parts, fmt.Sprintf("%s on client %d from %v until the takeover", it.Kind, it.Client, it.At))
		} else {
			parts = append(parts, fmt.Sprintf("%s on client %d at %v for %v", it.Kind, it.Client, it.At, it.Hold))
		}
	}
	return strings.Join(parts, ", ")
}

// writeFinding writes finding.json in the finding's folder and removes the replay kept
// for it.
func writeFinding(f *Finding) error {
	if err := writeJSONFile(filepath.Join(f.Dir, reports.FindingJSON), f); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(f.Dir), ".hit-*"))
	for _, m := range matches {
		_ = os.RemoveAll(m)
	}
	return nil
}

func writeJSONFile(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
