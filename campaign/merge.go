package campaign

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// Merging the results stores of a plan's shards into one: the run folders are copied
// (hard-linked where the file system allows), and every campaign page is recomputed
// from the runs' own files (verdict.json, history.json, failed.txt) and the plan record
// — never from the shards' pages.

// ErrMerge marks stores that cannot be merged as given (a usage error).
var ErrMerge = errors.New("cannot merge")

// MergeConfig says what to merge.
type MergeConfig struct {
	// Stores are the shards' results stores.
	Stores []string
	// Out is the merged store (created if missing; it may already hold runs).
	Out string
	// Partial merges the shards there are when some are missing; the pages say so.
	Partial bool
}

// Merged is one campaign of a merged store.
type Merged struct {
	Plan *Plan
	// Dir is its folder in the merged store; Page its page there.
	Dir, Page string
	// One of, by Plan.Kind:
	Soak      *reports.SoakDoc
	Matrix    *reports.Matrix
	Scorecard *judge.Scorecard
	Compare   *judge.Comparison
	// Failed lists the runs that failed, with whether each could not be made as asked
	// (spec.ErrSpec); NotRun counts the runs of the plan that did not run (a missing
	// shard's, or interrupted).
	Failed []RunResult
	NotRun int
}

// shardOf is one store's shard of a campaign.
type shardOf struct {
	store string
	plan  *Plan
}

// Merge checks that the stores are the shards of the same plans — one plan per
// campaign folder (soak, matrix, evaluate-<backend>, compare), each shard once, none missing
// unless cfg.Partial — then copies their runs into cfg.Out and writes each campaign's
// page, plan record and the store's index there. Errors of the stores as given wrap
// ErrMerge; nothing is written then.
func Merge(cfg MergeConfig) ([]Merged, error) {
	if len(cfg.Stores) == 0 {
		return nil, fmt.Errorf("%w: no store given", ErrMerge)
	}
	if cfg.Out == "" {
		return nil, fmt.Errorf("%w: no output store given", ErrMerge)
	}
	outAbs, err := filepath.Abs(cfg.Out)
	if err != nil {
		return nil, err
	}
	byName := map[string][]shardOf{}
	seen := map[string]string{}
	explorations := map[string]struct{ store, dir string }{} // an exploration (and shard) → where
	for _, st := range cfg.Stores {
		abs, err := filepath.Abs(st)
		if err != nil {
			return nil, err
		}
		if abs == outAbs {
			return nil, fmt.Errorf("%w: %s is both a store to merge and the output (--store)", ErrMerge, st)
		}
		if prev, ok := seen[abs]; ok {
			return nil, fmt.Errorf("%w: %s and %s are the same store", ErrMerge, prev, st)
		}
		seen[abs] = st
		plans, err := storePlans(st)
		if err != nil {
			return nil, err
		}
		explored, err := storeExplorations(st)
		if err != nil {
			return nil, err
		}
		if len(plans) == 0 && len(explored) == 0 {
			return nil, fmt.Errorf("%w: %s holds no plan of a matrix, evaluate, compare or soak (%s), nor an exploration (explore/<timestamp>/%s)", ErrMerge, st, PlanFile, reports.ExploreJSON)
		}
		for dir, x := range explored {
			// The same shard of the same exploration twice would list its findings twice.
			key := fmt.Sprintf("%s/%s seed %d", x.Backend, x.Resource, x.Seed)
			if x.Shard != "" {
				key += " shard " + x.Shard
			}
			if prev, ok := explorations[key]; ok && prev.store != st {
				return nil, fmt.Errorf("%w: %s and %s are the same exploration (%s): give each machine its own --shard I/N, or its own --seed", ErrMerge, prev.dir, dir, key)
			}
			explorations[key] = struct{ store, dir string }{st, dir}
		}
		for _, p := range plans {
			byName[p.Name] = append(byName[p.Name], shardOf{store: st, plan: p})
		}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range byName {
			if !yield(n) {
				return
			}
		}
	})
	missing := map[string][]int{}
	for _, n := range names {
		m, err := checkShards(n, byName[n], cfg.Partial)
		if err != nil {
			return nil, err
		}
		missing[n] = m
	}

	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	moved := map[string]map[string]string{} // store → its run folder → the merged one
	for _, st := range cfg.Stores {
		m, err := copyRuns(st, cfg.Out)
		if err != nil {
			return nil, fmt.Errorf("merge %s: %w", st, err)
		}
		moved[st] = m
	}
	if err := markLatestRuns(cfg.Out); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	var out []Merged
	for _, n := range names {
		m, err := mergeCampaign(cfg.Out, byName[n], missing[n], moved)
		if err != nil {
			return out, fmt.Errorf("merge %s: %w", n, err)
		}
		out = append(out, m)
	}
	if err := reports.WriteStoreIndex(cfg.Out); err != nil {
		return out, fmt.Errorf("store index: %w", err)
	}
	return out, nil
}

// storePlans reads the plan record of every campaign in a store: each campaign
// folder's newest (latest) one.
func storePlans(store string) ([]*Plan, error) {
	des, err := os.ReadDir(store)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMerge, err)
	}
	var plans []*Plan
	for _, de := range des {
		if !de.IsDir() || strings.HasPrefix(de.Name(), ".") {
			continue
		}
		dir := filepath.Join(store, de.Name())
		for _, d := range campaignFolders(dir) {
			p, err := ReadPlan(filepath.Join(dir, d, PlanFile))
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrMerge, err)
			}
			if p.Name != de.Name() {
				return nil, fmt.Errorf("%w: %s: plan of %q in folder %q", ErrMerge, filepath.Join(dir, d, PlanFile), p.Name, de.Name())
			}
			plans = append(plans, p)
			break // the newest
		}
	}
	return plans, nil
}

// exploration is what merge needs of an exploration's record (explore.json).
type exploration struct {
	Backend  string `json:"backend"`
	Resource string `json:"resource"`
	Seed     int64  `json:"seed"`
	Shard    string `json:"shard"`
}

// storeExplorations reads the record of every exploration in a store
// (explore/<timestamp>/explore.json), by folder.
func storeExplorations(store string) (map[string]exploration, error) {
	out := map[string]exploration{}
	dir := filepath.Join(store, "explore")
	for _, d := range timestamped(dir) {
		path := filepath.Join(dir, d, reports.ExploreJSON)
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		var x exploration
		if err == nil {
			err = json.Unmarshal(data, &x)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrMerge, path, err)
		}
		out[filepath.Join(dir, d)] = x
	}
	return out, nil
}

// campaignFolders lists the timestamped folders under dir that hold a plan record,
// the one latest points at first, then newest first.
func campaignFolders(dir string) []string {
	var out []string
	for _, d := range timestamped(dir) {
		if fileExists(filepath.Join(dir, d, PlanFile)) {
			out = append(out, d)
		}
	}
	slices.Reverse(out)
	if target, err := os.Readlink(filepath.Join(dir, reports.LatestLink)); err == nil {
		if i := slices.Index(out, filepath.Base(target)); i > 0 {
			out = append([]string{out[i]}, slices.Delete(out, i, i+1)...)
		}
	}
	return out
}

// timestamped lists the timestamped folders under dir, oldest first.
func timestamped(dir string) []string {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, de := range des {
		if n := de.Name(); de.IsDir() && len(n) >= len("20060102-150405") && n[0] >= '0' && n[0] <= '9' {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// checkShards refuses shards that are not of one plan, of one split, each once; it
// returns the shards missing (an error unless partial).
func checkShards(name string, shards []shardOf, partial bool) ([]int, error) {
	first := shards[0]
	n := first.plan.Shard.N
	have := map[int]string{}
	for _, s := range shards {
		switch {
		case s.plan.ID != first.plan.ID:
			return nil, fmt.Errorf("%w: %s and %s hold %s campaigns of different plans (%s and %s): only shards of one plan merge", ErrMerge,
				first.store, s.store, name, first.plan.ShortID(), s.plan.ShortID())
		case s.plan.Shard.N != n:
			return nil, fmt.Errorf("%w: %s holds shard %d/%d and %s shard %d/%d of the %s plan: shards of different splits", ErrMerge,
				first.store, first.plan.Shard.I, n, s.store, s.plan.Shard.I, s.plan.Shard.N, name)
		}
		if prev, ok := have[s.plan.Shard.I]; ok {
			return nil, fmt.Errorf("%w: %s and %s both hold shard %d/%d of the %s plan", ErrMerge, prev, s.store, s.plan.Shard.I, n, name)
		}
		have[s.plan.Shard.I] = s.store
	}
	var missing []int
	for i := 1; i <= n; i++ {
		if _, ok := have[i]; !ok {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 && !partial {
		var shown []string
		for _, i := range missing {
			shown = append(shown, fmt.Sprintf("%d/%d", i, n))
		}
		return nil, fmt.Errorf("%w: shard %s of the %s plan %s is missing (given: %d of %d); --partial merges the shards there are", ErrMerge,
			strings.Join(shown, ", "), name, first.plan.ShortID(), len(shards), n)
	}
	return missing, nil
}

// isCampaignFolder reports whether a timestamped folder is a campaign's page rather
// than a run.
func isCampaignFolder(dir string) bool {
	for _, f := range []string{PlanFile, reports.SoakJSON, reports.MatrixJSON, reports.ScorecardJSON, reports.CompareJSON} {
		if fileExists(filepath.Join(dir, f)) {
			return true
		}
	}
	return false
}

// copyRuns copies every run folder of store (<label>/<timestamp>/) into out, renaming
// one whose name is taken, and returns the new folders by the old, relative to their
// stores' roots with forward slashes.
func copyRuns(store, out string) (map[string]string, error) {
	moved := map[string]string{}
	des, err := os.ReadDir(store)
	if err != nil {
		return nil, err
	}
	for _, de := range des {
		if !de.IsDir() || strings.HasPrefix(de.Name(), ".") {
			continue
		}
		label := de.Name()
		for _, ts := range timestamped(filepath.Join(store, label)) {
			src := filepath.Join(store, label, ts)
			if isCampaignFolder(src) {
				continue
			}
			if err := os.MkdirAll(filepath.Join(out, label), 0o755); err != nil {
				return nil, err
			}
			name := ts
			for k := 2; fileExists(filepath.Join(out, label, name)); k++ {
				name = fmt.Sprintf("%s-%d", ts, k)
			}
			if err := copyTree(src, filepath.Join(out, label, name)); err != nil {
				return nil, err
			}
			moved[label+"/"+ts] = label + "/" + name
		}
	}
	return moved, nil
}

// copyTree copies the folder src to dst (which must not exist): files are hard-linked
// where possible, else copied. A run writes no symbolic link, so one found in a run's
// folder is left out rather than followed or recreated (it could point anywhere).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.Mkdir(to, 0o755)
		case !d.Type().IsRegular():
			return nil // a symbolic link or a device: nothing a run writes
		}
		if os.Link(path, to) == nil {
			return nil
		}
		return copyFile(path, to)
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// markLatestRuns points every label's latest link in the store at its newest run
// that left a history.
func markLatestRuns(store string) error {
	des, err := os.ReadDir(store)
	if err != nil {
		return err
	}
	for _, de := range des {
		if !de.IsDir() || strings.HasPrefix(de.Name(), ".") {
			continue
		}
		dirs := timestamped(filepath.Join(store, de.Name()))
		for i := len(dirs) - 1; i >= 0; i-- {
			dir := filepath.Join(store, de.Name(), dirs[i])
			if isCampaignFolder(dir) {
				break // a campaign's folder: its latest is its newest page
			}
			if fileExists(filepath.Join(dir, reports.HistoryFile)) {
				if err := reports.MarkLatest(dir); err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

// mergeCampaign combines the shards of one campaign into out: the plan's runs, each
// from the shard that owns it with its folder as copied, and the page recomputed.
func mergeCampaign(out string, shards []shardOf, missing []int, moved map[string]map[string]string) (Merged, error) {
	slices.SortFunc(shards, func(a, b shardOf) int { return cmp.Compare(a.plan.Shard.I, b.plan.Shard.I) })
	base := shards[0].plan
	p := *base
	p.Runs = slices.Clone(base.Runs)
	p.Shard, p.Missing, p.Merged = Shard{I: 1, N: 1}, missing, nil
	byI := map[int]shardOf{}
	var start, end time.Time
	for _, s := range shards {
		byI[s.plan.Shard.I] = s
		p.Merged = append(p.Merged, MergedShard{Shard: s.plan.Shard, Store: s.store})
		st, en := s.plan.Started, s.plan.Started.Add(time.Duration(s.plan.Seconds*float64(time.Second)))
		if start.IsZero() || st.Before(start) {
			start = st
		}
		if en.After(end) {
			end = en
		}
	}
	n := base.Shard.N
	var results []RunResult
	m := Merged{Plan: &p}
	for i := range p.Runs {
		pr := &p.Runs[i]
		owner, ok := byI[i%n+1]
		if ok && len(owner.plan.Runs) == len(p.Runs) {
			*pr = owner.plan.Runs[i]
			if pr.Dir != "" {
				to, ok := moved[owner.store][pr.Dir]
				if !ok && pr.Error == "" {
					pr.Error = fmt.Sprintf("its folder %s is not in %s", pr.Dir, owner.store)
				}
				pr.Dir = to
			}
		} else {
			keep := PlanRun{Label: pr.Label, Seed: pr.Seed, Backend: pr.Backend, Resource: pr.Resource, Faults: pr.Faults, Scenario: pr.Scenario, Fault: pr.Fault, Cell: pr.Cell, Expect: pr.Expect}
			*pr = keep
		}
		res := loadRun(out, *pr)
		if !pr.Ran {
			m.NotRun++
		} else if res.Err != nil {
			m.Failed = append(m.Failed, res)
		}
		results = append(results, res)
	}
	p.Started, p.Seconds = start, end.Sub(start).Seconds()
	sharding := &judge.Sharding{Plan: p.ID, Merged: len(shards), Missing: missing, Of: n}
	dir, err := reports.NewRunDir(out, p.Name, time.Now())
	if err != nil {
		return m, err
	}
	m.Dir = dir
	switch p.Kind {
	case KindSoak:
		m.Soak, m.Page, err = writeMergedSoak(dir, &p, results, sharding)
	case KindMatrix:
		m.Matrix, m.Page, err = writeMergedMatrix(dir, out, &p, results, sharding)
	case KindEvaluate:
		m.Scorecard, m.Page, err = writeMergedScorecard(dir, out, &p, results, sharding)
	case KindCompare:
		m.Compare, m.Page, err = writeMergedComparison(dir, out, &p, results, sharding)
	}
	if err != nil {
		return m, err
	}
	if err := WritePlan(dir, &p); err != nil {
		return m, err
	}
	return m, reports.MarkLatest(dir)
}

// loadRun is a run of a merged plan as the campaign runner returned it, read from its
// folder in the merged store: its report (verdict.json), its history, its failure
// (failed.txt, else the plan's record of it) and its measurements. A run that did not
// run carries ErrNotInShard.
func loadRun(root string, pr PlanRun) RunResult {
	res := RunResult{Label: pr.Label, Took: time.Duration(pr.TookNanos)}
	if !pr.Ran {
		res.Err = ErrNotInShard
		return res
	}
	dir := ""
	if pr.Dir != "" {
		dir = filepath.Join(root, filepath.FromSlash(pr.Dir))
		res.Dir = dir
	}
	failure := pr.Error
	if dir != "" {
		if b, err := os.ReadFile(filepath.Join(dir, reports.FailedFile)); err == nil {
			failure = strings.TrimSpace(string(b))
		}
	}
	if failure != "" || dir == "" {
		err := recordedError{msg: cmp.Or(failure, "no folder recorded for the run")}
		if pr.NoToken {
			err.is = append(err.is, spec.ErrNoToken)
		}
		if pr.SpecError {
			err.is = append(err.is, spec.ErrSpec)
		}
		res.Err = err
		return res
	}
	rep, err := reports.ReadVerdict(filepath.Join(dir, reports.VerdictJSON))
	if err != nil {
		res.Err = fmt.Errorf("run %s: %w", pr.Dir, err)
		return res
	}
	var h *history.History
	if rep.Ops > 0 {
		// Checked as a stream (a long run): as the runner had it, the history's
		// header without its ops.
		sc, err := history.OpenScanner(filepath.Join(dir, reports.HistoryFile))
		if err == nil {
			h = sc.Header()
			_ = sc.Close()
		}
	} else {
		h, err = history.ReadFile(filepath.Join(dir, reports.HistoryFile))
	}
	if err != nil || h == nil {
		res.Err = fmt.Errorf("run %s: history: %w", pr.Dir, cmp.Or(err, errors.New("unreadable")))
		return res
	}
	// The spec as far as the plan and the history tell it (a comparison reads the TTL).
	s := spec.Spec{Backend: pr.Backend, Resource: pr.Resource, Faults: pr.Faults, Seed: pr.Seed, TTL: time.Duration(h.Run.TTLms) * time.Millisecond}
	res.Outcome = &trial.Outcome{Spec: s, History: h, Report: rep, Workload: time.Duration(pr.WorkloadNanos), Check: time.Duration(pr.CheckNanos)}
	return res
}

// recordedError is a run's failure as its folder or the plan recorded it: the message
// as the run gave it (already naming its cause), matched with errors.Is against the
// causes the plan noted.
type recordedError struct {
	msg string
	is  []error
}

func (e recordedError) Error() string        { return e.msg }
func (e recordedError) Is(target error) bool { return slices.Contains(e.is, target) }

func writeMergedSoak(dir string, p *Plan, results []RunResult, sharding *judge.Sharding) (*reports.SoakDoc, string, error) {
	sp := p.Soak
	if sp.Runs < 1 || len(p.Runs) != sp.Runs*len(sp.Scenarios) {
		return nil, "", fmt.Errorf("%w: the soak plan lists %d runs, not %d scenario(s) × %d", ErrMerge, len(p.Runs), len(sp.Scenarios), sp.Runs)
	}
	runs := make([]*SoakRun, len(results))
	interrupted := false
	for i, res := range results {
		if errors.Is(res.Err, ErrNotInShard) {
			// Of a shard that was merged: interrupted before it ran.
			interrupted = interrupted || !slices.Contains(sharding.Missing, i%sharding.Of+1)
			continue
		}
		r := soakRun(sp.Scenarios[i/sp.Runs].Expect, p.Runs[i].Seed, res, sp.Random)
		r.Evidence = p.Runs[i].Dir
		runs[i] = &r
	}
	doc := &reports.SoakDoc{Started: p.Started, Seconds: p.Seconds, Interrupted: interrupted, Sharding: sharding, SoakResult: *summariseSoak(sp, runs)}
	if err := reports.WriteSoak(dir, doc); err != nil {
		return nil, "", err
	}
	return doc, filepath.Join(dir, reports.SoakPage), nil
}

func writeMergedMatrix(dir, store string, p *Plan, results []RunResult, sharding *judge.Sharding) (*reports.Matrix, string, error) {
	m := *p.Matrix
	m.Cells = slices.Clone(p.Matrix.Cells)
	m.Started, m.Seconds, m.Sharding = p.Started, p.Seconds, sharding
	isRun := make([]bool, len(m.Cells))
	for i, res := range results {
		pr := p.Runs[i]
		isRun[pr.Cell] = true
		if errors.Is(res.Err, ErrNotInShard) {
			continue
		}
		var exp catalogue.Expect
		if pr.Expect != nil {
			exp = *pr.Expect
		}
		FillCell(&m.Cells[pr.Cell], exp, store, res)
	}
	// The cells no shard ran (another's, in a partial merge) are left out of the page,
	// which shows them as not run; the n/a cells stay.
	var cells []reports.MatrixCell
	for i, c := range m.Cells {
		if !isRun[i] || c.Outcome != judge.OutcomeNone {
			cells = append(cells, c)
		}
	}
	m.Cells = cells
	if err := reports.WriteMatrix(dir, &m); err != nil {
		return nil, "", err
	}
	return &m, filepath.Join(dir, reports.MatrixPage), nil
}

func writeMergedScorecard(dir, store string, p *Plan, results []RunResult, sharding *judge.Sharding) (*judge.Scorecard, string, error) {
	sc := *p.Scorecard
	sc.Rows = slices.Clone(p.Scorecard.Rows)
	ep := &EvaluatePlan{Name: p.Name, Scorecard: &sc}
	for _, pr := range p.Runs {
		ep.Jobs = append(ep.Jobs, EvaluateJob{Fault: pr.Fault, Resource: pr.Resource})
	}
	out := ep.Judge(results, store, p.Started)
	out.Seconds, out.Sharding = p.Seconds, sharding
	if err := reports.WriteScorecard(dir, out); err != nil {
		return nil, "", err
	}
	return out, filepath.Join(dir, reports.ScorecardPage), nil
}

func writeMergedComparison(dir, store string, p *Plan, results []RunResult, sharding *judge.Sharding) (*judge.Comparison, string, error) {
	cp := &ComparePlan{Name: p.Name, Comparison: planned(p.Compare)}
	for _, pr := range p.Runs {
		cp.Jobs = append(cp.Jobs, CompareJob{Row: pr.Row, Fault: pr.Fault, Resource: pr.Resource, Run: pr.Repeat})
	}
	out := cp.Judge(results, store, p.Started)
	RedactComparison(nil, out)
	out.Seconds, out.Sharding = p.Seconds, sharding
	if err := reports.WriteComparison(dir, out); err != nil {
		return nil, "", err
	}
	return out, filepath.Join(dir, reports.ComparePage), nil
}
