package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/clienthost"
	"github.com/fencecheck/fencecheck/backend/etcd/etcdtest"
	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/models"
)

// TestMain checks that no goroutine and no server process outlives the tests. Embedded
// etcd members leave an idle peer connection behind for up to 5 s after Close, so it
// waits for them to drain.
// Two tests per CPU run at once (unless -parallel is given): most of them wait on the
// runs' faults and TTLs.
func TestMain(m *testing.M) {
	// Runs with a process pause host their lock clients in this test binary (newApp).
	clienthost.ServeIfHost(builtin.HostLockers)
	proctest.Parallel(2 * runtime.GOMAXPROCS(0))
	code := etcdtest.VerifyNoLeaks(m)
	removeCLI()
	os.Exit(code)
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = Main(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

// The acceptance path of the core issue: unfenced exits 1 naming the stale write,
// fenced exits 0 with a rejected stale write, and check on the saved history agrees.
func TestRunAndRecheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scenario string
		code     int
		want     []string
	}{
		{"naive-unfenced-pause", exitViolated, []string{"register  VIOLATED", "it was ACCEPTED: the stale write got through", "result: UNSAFE"}},
		{"naive-fenced-pause", exitSafe, []string{"register  held", "the fence rejected it", "result: safe"}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			out := t.TempDir()
			code, stdout, stderr := run(t, "run", "--out", out, tc.scenario)
			require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			for _, w := range tc.want {
				require.Contains(t, stdout, w)
			}
			files, err := filepath.Glob(filepath.Join(out, tc.scenario, "2*", "history.json")) // not latest/
			require.NoError(t, err)
			require.Len(t, files, 1)

			var runVerdict struct {
				Verdicts map[string]string `json:"verdicts"`
			}
			b, err := os.ReadFile(filepath.Join(filepath.Dir(files[0]), "verdict.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &runVerdict))

			code, stdout, _ = run(t, "check", "--json", files[0])
			require.Equal(t, tc.code, code)
			var checked struct {
				File     string            `json:"file"`
				Verdicts map[string]string `json:"verdicts"`
			}
			require.NoError(t, json.Unmarshal([]byte(stdout), &checked))
			require.Equal(t, files[0], checked.File)
			require.Equal(t, runVerdict.Verdicts, checked.Verdicts)
		})
	}
}

func TestCheckHandWritten(t *testing.T) {
	t.Parallel()
	code, stdout, _ := run(t, "check", "--json", "testdata/stale-accepted.json", "testdata/concurrent-legal.json")
	require.Equal(t, exitViolated, code)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 2)
	var stale, legal struct {
		Verdicts    map[string]string `json:"verdicts"`
		StaleWrites []struct {
			Write, Newer int
		} `json:"stale_writes"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &stale))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &legal))
	require.Equal(t, "violated", stale.Verdicts["register"])
	require.Len(t, stale.StaleWrites, 1)
	require.Equal(t, 6, stale.StaleWrites[0].Write)
	require.Equal(t, 5, stale.StaleWrites[0].Newer)
	require.Equal(t, "held", legal.Verdicts["register"])

	// The violation is certified, and porcupine's second opinion is reported as the
	// budget says.
	for _, tc := range []struct{ budget, opinion string }{{"1s", "agreed"}, {"-1", "agreed"}, {"0", "skipped"}} {
		code, stdout, _ = run(t, "check", "--json", "--porcupine-budget", tc.budget, "testdata/stale-accepted.json")
		require.Equal(t, exitViolated, code, tc.budget)
		var doc struct {
			Results []struct {
				Property, Verdict, Porcupine string
				Certified                    bool
				Witness                      []int
			} `json:"results"`
			Trouble string `json:"trouble"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
		require.Empty(t, doc.Trouble)
		require.Equal(t, "register", doc.Results[0].Property)
		require.Equal(t, "violated", doc.Results[0].Verdict)
		require.True(t, doc.Results[0].Certified)
		require.Subset(t, doc.Results[0].Witness, []int{5, 6})
		for _, r := range doc.Results {
			require.Equal(t, tc.opinion, r.Porcupine, "%s with budget %s", r.Property, tc.budget)
		}
	}

	// --fail-on chooses which violations fail the run.
	code, _, _ = run(t, "check", "--fail-on", "tokens", "testdata/stale-accepted.json")
	require.Equal(t, exitSafe, code)
	code, _, _ = run(t, "check", "--fail-on", "mutex", "testdata/stale-accepted.json")
	require.Equal(t, exitViolated, code)

	html := t.TempDir()
	code, _, _ = run(t, "check", "--html", html, "testdata/stale-accepted.json")
	require.Equal(t, exitViolated, code)
	require.FileExists(t, filepath.Join(html, "stale-accepted", "porcupine-register.html"))
}

// Bad input gets one clear line naming what is wrong, and exit 2.
func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "Usage:\n  fencecheck <command> [flags]"},
		{"unknown command", []string{"jepsen"}, `unknown command "jepsen"`},
		{"near command", []string{"rn"}, `unknown command "rn"; did you mean "run"?`},
		{"truncated json", []string{"check", "testdata/truncated.json"}, "testdata/truncated.json: malformed history: truncated JSON"},
		{"wrong type", []string{"check", "testdata/wrong-type.json"}, `field "ops.token": got JSON string, want int64`},
		{"bad read_id", []string{"check", "testdata/bad-read-id.json"}, `op 1 (ops[0]): field "read_id"`},
		{"misspelled field", []string{"check", "testdata/misspelled-token.json"}, `op 2 (ops[1]): field "tokn": unknown field (did you mean "token"?)`},
		{"missing file", []string{"check", "testdata/nope.json"}, "testdata/nope.json"},
		{"no files", []string{"check"}, "no history files"},
		{"unknown backend", []string{"run", "--backend", "chubby"}, `unknown backend "chubby" (see 'fencecheck list')`},
		{"abbreviated backend", []string{"run", "--backend", "zk"}, `unknown backend "zk"; did you mean "zookeeper"?`},
		{"near scenario", []string{"run", "naive-unfenced-paus"}, `unknown scenario "naive-unfenced-paus"; did you mean "naive-unfenced-pause"?`},
		{"near fault", []string{"run", "--fault", "pase"}, `unknown fault "pase"; did you mean "pause"?`},
		{"two scenarios", []string{"run", "naive-fenced-pause", "naive-unfenced-pause"}, "want at most one scenario name, got 2 arguments"},
		{"random without faults", []string{"run", "--random"}, "--random draws a schedule from the fault kinds"},
		{"zookeeper node fault on one server", []string{"run", "--backend", "zookeeper", "--fault", "node-pause"}, "needs a cluster of at least 3 zookeeper servers"},
		{"unknown resource", []string{"run", "--resource", "s3"}, `unknown resource "s3"`},
		{"unknown fault", []string{"run", "--fault", "meteor"}, `unknown fault "meteor"`},
		{"negative ttl", []string{"run", "--ttl", "-1s"}, "must not be negative"},
		{"unknown scenario", []string{"run", "no-such-scenario"}, `unknown scenario "no-such-scenario"`},
		{"bad flag", []string{"run", "--frobnicate"}, "fencecheck run: unknown flag --frobnicate\nsee 'fencecheck run -h'\n"},
		{"near flag", []string{"run", "--bakend", "naive"}, `unknown flag --bakend; did you mean "--backend"?`},
		{"bad duration", []string{"run", "--ttl", "banana"}, "fencecheck run: --ttl \"banana\": want a duration such as 500ms, 2s or 1m\nsee 'fencecheck run -h'\n"},
		{"bad duration after the name", []string{"run", "naive-fenced-pause", "--ttl", "banana"}, `--ttl "banana": want a duration`},
		{"flag without value", []string{"run", "--ttl"}, "--ttl needs a value"},
		{"bad int", []string{"run", "--clients", "many"}, `--clients "many": want a whole number`},
		{"bad fail-on", []string{"check", "--fail-on", "speed", "testdata/concurrent-legal.json"}, `unknown property "speed"`},
		{"near fail-on", []string{"check", "--fail-on", "registr", "testdata/concurrent-legal.json"}, `unknown property "registr"; did you mean "register"?`},
		{"bad porcupine budget", []string{"check", "--porcupine-budget", "-5s", "testdata/concurrent-legal.json"}, `0 (skip porcupine) or -1 (wait for it)`},
		{"list args", []string{"list", "x"}, "takes no arguments"},
		{"help of nothing", []string{"help", "jepsen"}, `unknown help topic`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args...)
			require.Equal(t, exitUsage, code, "stdout:\n%s", stdout)
			require.Contains(t, stderr, tc.want)
			require.NotContains(t, stderr, "panic")
			if tc.args != nil {
				// The error first, in one line; usage only as a pointer to -h.
				lines := strings.Split(strings.TrimSpace(stderr), "\n")
				require.LessOrEqual(t, len(lines), 2, stderr)
				require.True(t, strings.HasPrefix(lines[0], "fencecheck"), stderr)
				if len(lines) == 2 {
					require.Regexp(t, `^see 'fencecheck( [a-z]+)? -h'$`, lines[1])
				}
			}
		})
	}
}

func TestList(t *testing.T) {
	code, stdout, _ := run(t, "list")
	require.Equal(t, exitSafe, code)
	for _, w := range []string{"naive", "fenced", "unfenced", "toctou", "pause", "delay", "naive-fenced-pause", "register"} {
		require.Contains(t, stdout, w)
	}
}

// A disagreement between the checkers, or a witness porcupine did not confirm, is a
// checker bug: exit 3 whatever --fail-on says.
func TestExitForTrouble(t *testing.T) {
	held := models.Result{Property: models.Register, Verdict: models.Held, Porcupine: models.OpinionAgreed}
	for _, tc := range []struct {
		name string
		res  models.Result
		want int
	}{
		{"agreed", held, exitSafe},
		{"disagreed", models.Result{Property: models.Register, Verdict: models.Held, Porcupine: models.OpinionDisagreed}, exitInternal},
		{"certified", models.Result{Property: models.Register, Verdict: models.Violated, Certified: true}, exitViolated},
		{"not certified", models.Result{Property: models.Register, Verdict: models.Violated}, exitInternal},
		{"not certified, not failed on", models.Result{Property: models.Mutex, Verdict: models.Violated}, exitInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &models.Report{Verdicts: map[models.Property]models.Verdict{tc.res.Property: tc.res.Verdict}, Results: []models.Result{tc.res}}
			require.Equal(t, tc.want, exitFor(rep, []models.Property{models.Register, models.Updates}))
		})
	}
}

func TestOneLine(t *testing.T) {
	require.Equal(t, "cannot connect: a; b", oneLine("cannot connect:\n\ta\n\tb\n"))
	require.Equal(t, "x y", oneLine("x   y"))
}

// A misspelled field is bad input, not a verdict: read with token 0, the "tokn" write
// would be judged a violation. Spelled right, the same history is safe.
func TestCheckStrictHistory(t *testing.T) {
	code, stdout, stderr := run(t, "check", "testdata/misspelled-token.json")
	require.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Empty(t, stdout)
	require.Equal(t, "fencecheck check: testdata/misspelled-token.json: op 2 (ops[1]): field \"tokn\": unknown field (did you mean \"token\"?); "+
		"the fields of an op are id, client, kind, call, return, status, token, value, read_id, error, key, valid_until\n", stderr)

	b, err := os.ReadFile("testdata/misspelled-token.json")
	require.NoError(t, err)
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"spelled right", string(b), ""},
		{"missing", strings.Replace(string(b), `"tokn": 5, `, ``, 1), `op 2 (ops[1]): field "token": missing: a write carries the token it sent`},
		{"missing fault end", strings.Replace(string(b), `, "end": 9000`, ``, 1), `faults[0]: field "end": missing (null is allowed)`},
		{"unknown member", strings.Replace(string(b), `"faults":`, `"note": "x", "faults":`, 1), `field "note": unknown field`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "h.json")
			require.NoError(t, os.WriteFile(path, []byte(strings.Replace(tc.doc, `"tokn"`, `"token"`, 1)), 0o644))
			code, stdout, stderr := run(t, "check", path)
			if tc.want == "" {
				// Whatever the outcome says of the evidence, the register held.
				require.NotEqual(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
				require.Contains(t, stdout, "register  held")
				return
			}
			require.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			require.True(t, strings.HasPrefix(stderr, "fencecheck check: "+path+": "), stderr)
			require.Contains(t, stderr, tc.want)
		})
	}
}
