package reports

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

	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
)

// The results store (`--out DIR`, default ./fencecheck-results):
//
//	DIR/<scenario>/<timestamp>/{history.json, verdict.json, report.html, porcupine-<property>.html, run.log}
//	DIR/<scenario>/latest -> <timestamp>   the newest run that left a history
//	DIR/<scenario>/<timestamp>/failed.txt  in a run that failed: why, in one line
//	DIR/matrix/<timestamp>/{index.html, matrix.json}         and DIR/matrix/latest
//	DIR/evaluate-<backend>/<timestamp>/{scorecard.html, scorecard.json}  and its latest
//	DIR/soak/<timestamp>/{index.html, soak.json}              and DIR/soak/latest
//	DIR/compare/<timestamp>/{compare.html, compare.json}     and DIR/compare/latest
//	DIR/explore/<timestamp>/finding-N/{original.json, shrunk.json, original-run/, shrunk-run/, finding.json}
//	DIR/index.html                                            the store's index (fencecheck report DIR)

// timestampLayout names a run's folder: sortable, and unique to the millisecond.
const timestampLayout = "20060102-150405.000"

// LatestLink is the name of the symlink to the newest run of a scenario.
const LatestLink = "latest"

// Files of a run, a matrix and a scorecard.
const (
	HistoryFile   = "history.json"
	VerdictJSON   = "verdict.json"
	RunLog        = "run.log"
	MatrixPage    = "index.html"
	MatrixJSON    = "matrix.json"
	ScorecardPage = "scorecard.html"
	ScorecardJSON = "scorecard.json"
	ComparePage   = "compare.html"
	CompareJSON   = "compare.json"
	StoreIndex    = "index.html"
	// FailedFile, in a run's folder, says why the run failed.
	FailedFile = "failed.txt"
)

// NewRunDir creates root/label/<timestamp>/ for a new run and returns its path. Two
// runs of the same label in the same millisecond get distinct folders.
func NewRunDir(root, label string, now time.Time) (string, error) {
	if label == "" || strings.ContainsAny(label, `/\`) || label == "." || label == ".." {
		return "", fmt.Errorf("results store: bad name %q", label)
	}
	parent := filepath.Join(root, label)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	base := now.Format(timestampLayout)
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		dir := filepath.Join(parent, name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) || i > 1000 {
			return "", err
		}
	}
}

// MarkLatest points the `latest` symlink beside dir at dir (replacing it atomically).
func MarkLatest(dir string) error {
	parent, name := filepath.Dir(dir), filepath.Base(dir)
	link := filepath.Join(parent, LatestLink)
	tmp := filepath.Join(parent, fmt.Sprintf(".%s.tmp-%d", LatestLink, time.Now().UnixNano()))
	if err := os.Symlink(name, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// EndRun records how the run in dir ended. A failed run (failure set: why, in one line,
// already free of secrets) says so in FailedFile. latest moves to dir only when the run
// left a history: a run that failed to start leaves it at the last run there is evidence
// of.
func EndRun(dir, failure string) error {
	if failure != "" {
		line := strings.Join(strings.Fields(failure), " ")
		if err := writeFileAtomic(filepath.Join(dir, FailedFile), []byte(line+"\n")); err != nil {
			return err
		}
	}
	if !exists(filepath.Join(dir, HistoryFile)) {
		return nil
	}
	return MarkLatest(dir)
}

// StoreEntry is one scenario, matrix or scorecard in the store's index.
type StoreEntry struct {
	Name string
	// Kind is "run", "matrix", "scorecard", "compare", "soak" or "explore" (an
	// exploration with findings: its page is the first finding's shrunk run).
	Kind string
	// Page is the path of its newest page, relative to the store's root.
	Page string
	// Runs counts its timestamped folders.
	Runs int
	// When is the newest folder's timestamp.
	When string
	// Outcome is the newest run's outcome (runs; OutcomeFailed for a run that failed),
	// a comparison's (Comparison.Outcome), or safe, inconclusive or unsafe (scorecards,
	// matrices and soaks).
	Outcome  judge.RunOutcome
	Verdicts map[models.Property]models.Verdict
	Summary  string
}

// ScanStore lists what the store holds, newest folder first within each name.
func ScanStore(root string) ([]StoreEntry, error) {
	des, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []StoreEntry
	for _, de := range des {
		if !de.IsDir() || strings.HasPrefix(de.Name(), ".") {
			continue
		}
		if de.Name() == "explore" {
			// Every exploration is listed: a merged store holds one per shard.
			for _, d := range runFolders(root, de.Name()) {
				dir := filepath.Join(root, de.Name(), d)
				if exists(filepath.Join(dir, "finding-1", FindingJSON)) || exists(filepath.Join(dir, ExploreJSON)) {
					rel := func(f string) string { return filepath.ToSlash(filepath.Join(de.Name(), d, f)) }
					out = append(out, exploreEntry(StoreEntry{Name: de.Name(), Runs: 1, When: d}, dir, rel))
				}
			}
			continue
		}
		e, ok := scanEntry(root, de.Name())
		if ok {
			out = append(out, e)
		}
	}
	kindOrder := map[string]int{"compare": 0, "scorecard": 1, "matrix": 2, "soak": 3, "explore": 4, "run": 5}
	slices.SortFunc(out, func(a, b StoreEntry) int {
		return cmp.Or(cmp.Compare(kindOrder[a.Kind], kindOrder[b.Kind]), cmp.Compare(a.Name, b.Name), cmp.Compare(b.When, a.When))
	})
	return out, nil
}

// runFolders lists the timestamped folders under root/name, newest first; the folder
// `latest` points at comes first when it exists.
func runFolders(root, name string) []string {
	des, err := os.ReadDir(filepath.Join(root, name))
	if err != nil {
		return nil
	}
	var dirs []string
	for _, de := range des {
		if de.IsDir() && len(de.Name()) >= len("20060102-150405") && de.Name()[0] >= '0' && de.Name()[0] <= '9' {
			dirs = append(dirs, de.Name())
		}
	}
	slices.Sort(dirs)
	slices.Reverse(dirs)
	if target, err := os.Readlink(filepath.Join(root, name, LatestLink)); err == nil {
		if i := slices.Index(dirs, filepath.Base(target)); i > 0 {
			dirs = append([]string{dirs[i]}, slices.Delete(dirs, i, i+1)...)
		}
	}
	return dirs
}

func scanEntry(root, name string) (StoreEntry, bool) {
	dirs := runFolders(root, name)
	for _, d := range dirs {
		dir := filepath.Join(root, name, d)
		rel := func(f string) string { return filepath.ToSlash(filepath.Join(name, d, f)) }
		e := StoreEntry{Name: name, Runs: len(dirs), When: d}
		switch {
		case exists(filepath.Join(dir, ScorecardJSON)):
			e.Kind, e.Page = "scorecard", rel(ScorecardPage)
			if sc, err := ReadScorecard(filepath.Join(dir, ScorecardJSON)); err == nil {
				switch {
				case sc.Safe:
					e.Outcome = OutcomeSafe
				case sc.Inconclusive != "":
					e.Outcome = OutcomeInconclusive
				default:
					e.Outcome = OutcomeUnsafe
				}
				e.Summary = sc.Verdict
			}
			return e, true
		case exists(filepath.Join(dir, CompareJSON)):
			e.Kind, e.Page = "compare", rel(ComparePage)
			if c, err := ReadComparison(filepath.Join(dir, CompareJSON)); err == nil {
				e.Outcome, e.Summary = c.Outcome(), c.SummaryLine()
			}
			return e, true
		case exists(filepath.Join(dir, MatrixJSON)):
			e.Kind, e.Page = "matrix", rel(MatrixPage)
			if m, err := ReadMatrix(filepath.Join(dir, MatrixJSON)); err == nil {
				e.Summary = m.SummaryLine()
				e.Outcome = OutcomeSafe
				if m.Mismatches() > 0 || m.Errors() > 0 {
					e.Outcome = OutcomeUnsafe
				}
			}
			return e, true
		case exists(filepath.Join(dir, SoakJSON)):
			e.Kind, e.Page = "soak", rel(SoakPage)
			if d, err := ReadSoak(filepath.Join(dir, SoakJSON)); err == nil {
				e.Summary = d.SummaryLine()
				e.Outcome = OutcomeSafe
				if d.Mismatches() > 0 || d.Errors() > 0 || d.Interrupted {
					e.Outcome = OutcomeUnsafe
				}
			}
			return e, true
		case exists(filepath.Join(dir, "finding-1", FindingJSON)), exists(filepath.Join(dir, ExploreJSON)):
			return exploreEntry(e, dir, rel), true
		case exists(filepath.Join(dir, FailedFile)):
			e.Kind, e.Page, e.Outcome = "run", rel(FailedFile), OutcomeFailed
			if exists(filepath.Join(dir, ReportFile)) {
				e.Page = rel(ReportFile)
			}
			if b, err := os.ReadFile(filepath.Join(dir, FailedFile)); err == nil {
				e.Summary = strings.TrimSpace(string(b))
			}
			return e, true
		case exists(filepath.Join(dir, HistoryFile)):
			e.Kind, e.Page = "run", rel(ReportFile)
			if rep, err := ReadVerdict(filepath.Join(dir, VerdictJSON)); err == nil {
				e.Outcome = Outcome(rep)
				e.Verdicts = rep.Verdicts
				e.Summary = fmt.Sprintf("%d stale write(s) accepted, %d rejected; validity gap %s",
					rep.Evidence.StaleAccepted, rep.Evidence.StaleRejected, Duration(rep.Evidence.ValidityGapNanos))
			} else {
				e.Outcome = OutcomeUnknown
				e.Summary = "not checked yet: run `fencecheck report` on it"
			}
			return e, true
		}
	}
	return StoreEntry{}, false
}

// exploreEntry is the index entry of the exploration in dir: its findings, or its
// record when it found nothing.
func exploreEntry(e StoreEntry, dir string, rel func(string) string) StoreEntry {
	e.Kind = "explore"
	if exists(filepath.Join(dir, "finding-1", FindingJSON)) {
		e.Outcome = OutcomeUnsafe
		e.Page = rel(filepath.Join("finding-1", "shrunk-run", ReportFile))
		if !exists(filepath.Join(dir, "finding-1", "shrunk-run", ReportFile)) {
			e.Page = rel(filepath.Join("finding-1", "original-run", ReportFile))
		}
		e.Summary = exploreSummary(dir)
	} else {
		// Nothing found: its record is its page.
		e.Outcome, e.Page, e.Summary = OutcomeSafe, rel(ExploreJSON), "nothing found"
	}
	var x struct {
		Tries  int    `json:"tries"`
		Errors int    `json:"errors"`
		Shard  string `json:"shard"`
	}
	if data, err := os.ReadFile(filepath.Join(dir, ExploreJSON)); err == nil && json.Unmarshal(data, &x) == nil {
		if e.Outcome == OutcomeSafe {
			e.Summary = fmt.Sprintf("nothing found in %d tries", x.Tries)
			if x.Errors > 0 {
				e.Outcome = OutcomeFailed
				e.Summary += fmt.Sprintf(" (%d failed to complete)", x.Errors)
			}
		}
		if x.Shard != "" {
			e.Summary += "; shard " + x.Shard
		}
	}
	return e
}

// FindingJSON is a finding's record in DIR/explore/<timestamp>/finding-N/; ExploreJSON
// the exploration's, in DIR/explore/<timestamp>/.
const (
	FindingJSON = "finding.json"
	ExploreJSON = "explore.json"
)

// exploreSummary says an exploration's findings in a line: how many, and each one's
// property and shrunk size (read from finding.json, as campaign.Finding writes it).
func exploreSummary(dir string) string {
	var parts []string
	for n := 1; ; n++ {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("finding-%d", n), FindingJSON))
		if err != nil {
			break
		}
		var f struct {
			Property     string `json:"property"`
			ShrunkFaults int    `json:"shrunk_faults"`
			Hits         int    `json:"hits"`
			Replays      int    `json:"replays"`
		}
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("finding-%d: %s, %d fault(s), %d/%d replays", n, f.Property, f.ShrunkFaults, f.Hits, f.Replays))
	}
	return fmt.Sprintf("%d finding(s): %s", len(parts), strings.Join(parts, "; "))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

type storeView struct {
	Root       string
	Entries    []StoreEntry
	Generated  string
	Properties []models.Property
}

// RenderStoreIndex writes the store's index page: every scorecard, matrix and scenario
// with its newest outcome, linked to its page.
func RenderStoreIndex(w io.Writer, root string) error {
	es, err := ScanStore(root)
	if err != nil {
		return err
	}
	return renderTo(w, "store.tmpl", storeView{Root: root, Entries: es, Generated: time.Now().Format("2006-01-02 15:04:05 MST"), Properties: models.Properties})
}

// WriteStoreIndex writes root/index.html.
func WriteStoreIndex(root string) error {
	es, err := ScanStore(root)
	if err != nil {
		return err
	}
	return render(filepath.Join(root, StoreIndex), "store.tmpl", storeView{Root: root, Entries: es, Generated: time.Now().Format("2006-01-02 15:04:05 MST"), Properties: models.Properties})
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'))
}
