package main

// No verdict without evidence: a history or run that tested nothing is never safe, and
// a PostgreSQL DSN that cannot connect says why.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/pgadvisory"
	"github.com/fencecheck/fencecheck/backend/sqlsession"
	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// check on a history that tested nothing exits 4 with the reason on its result line
// (and in --json), never 0; a fault-free baseline with grants and accepted writes is
// safe. The client's error text is quoted escaped, never raw.
func TestCheckInconclusive(t *testing.T) {
	t.Parallel()
	const head = `{"format": "fencecheck.history/v1", "run": {"backend": "lease-table", "resource": "fenced", "seed": 1, "ttl_ms": 500%s}, "faults": [], "ops": [%s]}`
	for _, tc := range []struct {
		name, run, ops string
		code           int
		reason         models.Reason
		line           string
	}{
		{"no ops", "", "", exitInconclusive, models.ReasonNoOps,
			"result: INCONCLUSIVE: the history has no operations, so it proves nothing (exit 4)"},
		{"no grant", `, "faults": ["pause"]`, `
			{"id": 1, "client": 0, "kind": "acquire", "call": 10, "return": 5000, "status": "fail", "token": 0, "error": "lease-table: connect: tls error: server refused TLS connection\u001b]0;pwned\u0007"},
			{"id": 2, "client": 1, "kind": "acquire", "call": 20, "return": null, "status": "unknown", "token": 0},
			{"id": 3, "client": 0, "kind": "read", "call": 6000, "return": 6100, "status": "ok", "token": 0}`, exitInconclusive, models.ReasonNoGrant,
			`result: INCONCLUSIVE: no lock was granted: all 2 acquire(s) failed, the first with "lease-table: connect: tls error: server refused TLS connection\x1b]0;pwned\a", so it proves nothing (exit 4)`},
		{"the fault never struck", `, "faults": ["pause"]`, `
			{"id": 1, "client": 0, "kind": "acquire", "call": 10, "return": 20, "status": "ok", "token": 1},
			{"id": 2, "client": 0, "kind": "write", "call": 30, "return": 40, "status": "ok", "token": 1, "value": "c0-1"}`, exitInconclusive, models.ReasonFaultNeverStruck,
			"result: INCONCLUSIVE: the run asked for pause, but no fault struck, so it proves nothing (exit 4)"},
		{"a fault-free baseline", "", `
			{"id": 1, "client": 0, "kind": "acquire", "call": 10, "return": 20, "status": "ok", "token": 1},
			{"id": 2, "client": 0, "kind": "write", "call": 30, "return": 40, "status": "ok", "token": 1, "value": "c0-1"}`, exitSafe, "",
			"result: safe: the protected data held (exit 0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.json")
			require.NoError(t, os.WriteFile(path, []byte(strings.Replace(strings.Replace(head, "%s", tc.run, 1), "%s", tc.ops, 1)), 0o644))
			code, stdout, stderr := run(t, "check", path)
			require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			require.Contains(t, stdout, tc.line+"\n")
			require.NotContains(t, stdout, "\x1b", "no control byte from the file reaches the terminal")
			require.NotContains(t, stdout, "\a")

			code, stdout, _ = run(t, "check", "--json", path)
			require.Equal(t, tc.code, code)
			var doc checkJSON
			require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
			require.Equal(t, tc.code, doc.Exit)
			require.Equal(t, tc.reason, doc.Reason)
			if tc.code == exitInconclusive {
				require.Equal(t, judge.OutcomeInconclusive, doc.Outcome)
				require.NotEmpty(t, doc.Why)
			} else {
				require.Equal(t, judge.OutcomeSafe, doc.Outcome)
			}
		})
	}
}

// A run in which no acquire was granted (an exec client that refuses every acquire, as
// one that cannot reach its service does) is a setup error: exit 2, one line naming the
// first error, the history kept; evaluate with such runs is not safe and not 0.
func TestRunNoGrant(t *testing.T) {
	t.Parallel()
	client := "sh " + execFile(t, "testdata/refuse.sh")
	t.Run("run", func(t *testing.T) {
		t.Parallel()
		out := t.TempDir()
		code, stdout, stderr := run(t, "run", "--out", out, "--backend", "exec", "--client-cmd", client, "--fault", "pause")
		require.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		require.Regexp(t, `^fencecheck run: setup error: no lock was granted in the run: all \d+ acquire\(s\) failed, the first with ".*connection refused" \(the history: .*history.json\)\n$`, stderr)
		require.NotContains(t, stdout, "result: safe")
		files, err := filepath.Glob(filepath.Join(out, "*", "2*", "history.json"))
		require.NoError(t, err)
		require.Len(t, files, 1)
		code, stdout, _ = run(t, "check", files[0])
		require.Equal(t, exitInconclusive, code, stdout)
		require.Contains(t, stdout, "result: INCONCLUSIVE: no lock was granted")
	})
	t.Run("evaluate", func(t *testing.T) {
		t.Parallel()
		code, stdout, stderr := run(t, "evaluate", "--out", t.TempDir(), "--backend", "exec", "--client-cmd", client, "--fault", "pause", "--json")
		require.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		var doc evaluateJSON
		require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
		require.False(t, doc.Safe)
		require.NotEqual(t, judge.RunOutcome("safe"), doc.Outcome)
		require.NotContains(t, doc.Verdict, "safe to adopt")
	})
}

// The exit codes of campaigns judged on their evidence: a scorecard or comparison whose
// every run was decided and showed nothing unsafe, but whose fenced runs had no stale
// write attempted, is 4, never 0; with one stale write rejected it is 0.
func TestCampaignExitNeedsEvidence(t *testing.T) {
	t.Parallel()
	verdicts := func(v models.Verdict) map[models.Property]models.Verdict {
		return map[models.Property]models.Verdict{models.Register: v, models.Updates: v, models.Tokens: models.Held}
	}
	untested := judge.ScoreRun{Resource: "fenced", Outcome: judge.OutcomeInconclusive, Verdicts: verdicts(models.Inconclusive), Reason: models.ReasonNoStaleWrite, Why: "no stale write was attempted"}
	tested := judge.ScoreRun{Resource: "fenced", Outcome: judge.OutcomeSafe, Verdicts: verdicts(models.Held), StaleRejected: 1}
	for _, tc := range []struct {
		name  string
		run   judge.ScoreRun
		code  int
		words string
	}{
		{"no stale write", untested, exitInconclusive, "verdict: INCONCLUSIVE: no stale write was attempted against the fenced resource under any fault (pause)"},
		{"a stale write rejected", tested, exitSafe, "verdict: SAFE with fencing"},
	} {
		t.Run("evaluate "+tc.name, func(t *testing.T) {
			sc := &reports.Scorecard{Backend: "b", Token: "t", Rows: []reports.ScoreRow{{Fault: "pause", Runs: []reports.ScoreRun{tc.run}}}}
			sc.Judge()
			require.Equal(t, tc.code, evaluateExit(sc, nil, false, false))
			var b strings.Builder
			reports.PrintScorecard(&b, sc)
			require.Contains(t, b.String(), tc.words)
			require.Equal(t, map[int]judge.RunOutcome{exitInconclusive: "inconclusive", exitSafe: "safe"}[tc.code], evaluateDoc(sc, tc.code, "").Outcome)
		})
		t.Run("compare "+tc.name, func(t *testing.T) {
			r := judge.CompareRun{Resource: tc.run.Resource, Outcome: tc.run.Outcome, Verdicts: tc.run.Verdicts, Reason: tc.run.Reason, Why: tc.run.Why, StaleRejected: tc.run.StaleRejected, Grants: 3}
			base := judge.CompareRun{Outcome: judge.OutcomeSafe, Verdicts: verdicts(models.Held), Grants: 3}
			c := &reports.Comparison{Services: []judge.ServiceRow{{Name: "svc", Facts: judge.Facts{Token: "t"}, Baseline: []judge.CompareRun{base},
				Faults: []judge.CompareFault{{Fault: "pause", Unfenced: []judge.CompareRun{base}, Fenced: []judge.CompareRun{r}}}}}}
			c.Judge()
			require.Equal(t, tc.code, compareExit(c, nil, false, false))
		})
	}
	t.Run("soak", func(t *testing.T) {
		untested := judge.SoakStats{Scenario: "s", Runs: 2, Untested: 1, UntestedWhy: "the run asked for pause, but no fault struck"}
		res := &campaign.SoakResult{Scenarios: []judge.SoakStats{untested}}
		require.Equal(t, exitInconclusive, soakExit(res, exitSafe))
		require.Equal(t, judge.OutcomeInconclusive, soakDoc(res, exitInconclusive, false).Outcome)
		require.Equal(t, exitUsage, soakExit(res, exitUsage), "a run that could not be made says more")
		res.Scenarios[0].Mismatches = 1
		require.Equal(t, exitViolated, soakExit(res, exitSafe))
		require.Equal(t, exitSafe, soakExit(&campaign.SoakResult{Scenarios: []judge.SoakStats{{Scenario: "s", Runs: 2}}}, exitSafe))
	})
	require.Equal(t, exitViolated, worst(exitInconclusive, exitViolated, exitUsage, exitInternal))
	require.Equal(t, exitInternal, worst(exitInconclusive, exitUsage, exitInternal))
	require.Equal(t, exitUsage, worst(exitInconclusive, exitUsage, exitSafe))
	require.Equal(t, exitInconclusive, worst(exitSafe, exitInconclusive))
}

// A DSN without sslmode against a plain (non-TLS) PostgreSQL works as psql's does
// (sslmode=prefer falls back to plaintext, through the fault proxy too): a fenced pause
// run is safe, exit 0. One that asks for TLS (sslmode=require) is a setup error, exit 2,
// in one line with the hint to add sslmode=disable, and the password is never printed.
func TestPlainPostgresDSN(t *testing.T) {
	needBackend(t, pgadvisory.Name)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := pgadvisory.StartServer(ctx, pgadvisory.ServerConfig{Dir: t.TempDir()})
	require.NoError(t, err)
	defer func() { require.NoError(t, srv.Close()) }()
	const password = "s3cret-PW"
	dsn := "postgres://postgres:" + password + "@" + srv.Addr() + "/postgres"
	for _, tc := range []struct {
		backend, option, sslmode string
		code                     int
		want                     string
	}{
		{pgadvisory.Name, "--postgres-lock-dsn", "", exitSafe, "result: safe"},
		{"lease-table", "--lease-table-dsn", "", exitSafe, "result: safe"},
		{pgadvisory.Name, "--postgres-lock-dsn", "?sslmode=require", exitUsage, sqlsession.TLSRefusedHint},
		{"lease-table", "--lease-table-dsn", "?sslmode=require", exitUsage, sqlsession.TLSRefusedHint},
	} {
		t.Run(tc.backend+tc.sslmode, func(t *testing.T) {
			code, stdout, stderr := run(t, "run", "--out", t.TempDir(), "--backend", tc.backend, "--resource", "fenced", "--fault", "pause", tc.option, dsn+tc.sslmode)
			require.Equal(t, tc.code, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			require.Contains(t, stdout+stderr, tc.want)
			require.NotContains(t, stdout+stderr, password)
			if code == exitUsage {
				require.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %q", stderr)
				return
			}
			require.Regexp(t, `stale writes attempted [1-9]\d*, rejected [1-9]\d*, accepted 0`, stdout, "the fence was tested")
		})
	}
}
