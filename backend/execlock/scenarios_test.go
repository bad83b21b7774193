package execlock_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	execlock "github.com/fencecheck/fencecheck/backend/execlock"
	"github.com/fencecheck/fencecheck/backend/execlock/exectest"
	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/campaign"
	"github.com/fencecheck/fencecheck/catalogue"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/harnesstest"
	"github.com/fencecheck/fencecheck/judge"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// execFile is a file of the package, by absolute path.
func execFile(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(rel)
	require.NoError(t, err)
	return p
}

// requireSignalled checks that the pause stopped and continued a real process group.
func requireSignalled(t *testing.T, h *history.History) {
	t.Helper()
	for _, f := range h.Faults {
		if f.Kind == "pause" {
			require.Contains(t, f.Detail, "stopped with SIGSTOP")
			require.Contains(t, f.Detail, "continued with SIGCONT after")
			return
		}
	}
	t.Fatalf("no pause in %+v", h.Faults)
}

// TestRunExamples runs the shipped example clients: without fencing a paused client's
// stale write gets through, with fencing it is refused. The runs are not parallel: the
// leak check below counts processes.
func TestRunExamples(t *testing.T) {
	tests := []struct {
		name string
		ttl  time.Duration
		spec func(t *testing.T) (opts map[string]string, keep []int)
		// library is how the run's client_library starts ("": the client says none).
		library string
	}{
		{"python template, naive server", 0, func(t *testing.T) (map[string]string, []int) {
			proctest.Skip(t, execlock.ExampleNeeds("naive_http.py")...)
			return map[string]string{"client-cmd": "python3 " + execFile(t, "examples/naive_http.py"), "lock-service": "naive"}, nil
		}, ""},
		{"sh + curl template, naive server", 0, func(t *testing.T) (map[string]string, []int) {
			proctest.Skip(t, proc.Need{Program: "curl", Package: "curl"})
			return map[string]string{"client-cmd": "sh " + execFile(t, "examples/naive_http.sh")}, nil
		}, ""},
		{"redis-py Lock with an INCR token, redis-server", 0, func(t *testing.T) (map[string]string, []int) {
			exectest.RequirePythonModule(t, "redis", "python3-redis")
			addr, pid := exectest.StartRedis(t)
			return map[string]string{"client-cmd": exectest.SystemPython + " " + execFile(t, "examples/redis_lock.py") + " --token incr", "lock-endpoints": addr}, []int{pid}
		}, "redis-py "},
		// The session timeout is the TTL: 1 s, so kazoo's heartbeats (every third of it)
		// keep up on a loaded machine; the pause stops the client for 2 s.
		{"kazoo Lock, ZooKeeper", time.Second, func(t *testing.T) (map[string]string, []int) {
			exectest.RequirePythonModule(t, "kazoo", "python3-kazoo")
			addr, pid := exectest.StartZooKeeper(t)
			return map[string]string{"client-cmd": exectest.SystemPython + " " + execFile(t, "examples/kazoo_lock.py"), "lock-endpoints": addr}, []int{pid}
		}, "kazoo "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, keep := tt.spec(t)
			for _, resource := range []string{"unfenced", "fenced"} {
				o, err := trial.Run(context.Background(), builtin.Registry(), spec.Spec{Backend: "exec", Options: x, Resource: resource, Faults: []string{"pause"}, TTL: tt.ttl}, trial.Options{Dir: t.TempDir()})
				require.NoError(t, err)
				requireSignalled(t, o.History)
				// The history records the library the example said it is.
				if tt.library == "" {
					require.Empty(t, o.History.Run.ClientLibrary)
				} else {
					require.Regexp(t, `^`+tt.library+`\d+\.\d+`, o.History.Run.ClientLibrary)
				}
				// The catalogue's expectations for the same fault on a Go client.
				want := catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Violated, catalogue.Violated, catalogue.Held, catalogue.Violated), MinStaleAccepted: 1}
				if resource == "fenced" {
					want = catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Held, catalogue.Held, catalogue.Violated), MinStaleRejected: 1, NoStaleAccepted: true}
				}
				require.Empty(t, want.Diff(o.Report), "%s: faults %+v", resource, o.History.Faults)
			}
			requireNoProcesses(t, keep...)
		})
	}
}

// TestRunBrokenClient: a client that breaks mid-run ends it with one line, the history
// so far is kept, and no process survives. The run is bounded by that event, not by
// time: its Duration (a minute) is only a ceiling, and the client's break after its 20th
// request ends it (harness.Failing), however slow the machine.
func TestRunBrokenClient(t *testing.T) {
	tests := []struct {
		with     string
		protocol bool
		want     string
	}{
		{"garbage", true, `it sent "oops, not JSON": not a JSON object`},
		{"exit", false, "its process exited during the run (exit status 5)"},
	}
	for _, tt := range tests {
		t.Run(tt.with, func(t *testing.T) {
			dir := t.TempDir()
			cmd := "BREAK_AFTER=20 BREAK_WITH=" + tt.with + " sh " + execFile(t, "testdata/fake.sh")
			_, err := trial.Run(context.Background(), builtin.Registry(), spec.Spec{Backend: "exec", Options: map[string]string{"client-cmd": cmd}, Resource: "fenced", Faults: []string{"pause"}, Duration: time.Minute}, trial.Options{Dir: dir})
			require.Error(t, err)
			require.NotContains(t, err.Error(), "\n")
			require.Contains(t, err.Error(), tt.want)
			require.Contains(t, err.Error(), "the history so far")
			require.True(t, isSpec(err), "the user's client broke: the run could not be made as asked (exit 2), whether it sent garbage or died")
			if tt.protocol {
				require.ErrorIs(t, err, execlock.ErrProtocol)
			} else {
				require.ErrorIs(t, err, execlock.ErrCrashed)
			}
			h, err := history.ReadFile(filepath.Join(dir, "history.json"))
			require.NoError(t, err)
			require.NotEmpty(t, h.Ops)
			requireNoProcesses(t)
		})
	}
}

// TestRunInterrupted: a run cancelled mid-way (Ctrl-C) leaves no client process. It is
// cancelled once the workload has started (every client process is up: the runner says
// so in its log), not after a fixed wait.
func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	log := &syncBuffer{}
	go func() {
		deadline := time.Now().Add(ceiling)
		for !strings.Contains(log.String(), "workload started") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	_, err := trial.Run(ctx, builtin.Registry(), spec.Spec{Backend: "exec", Options: map[string]string{"client-cmd": "sh " + execFile(t, "testdata/fake.sh")}, Resource: "fenced", Faults: []string{"pause"}, Duration: time.Minute}, trial.Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(log, nil))})
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, log.String(), "workload started", "cancelled before the workload")
	require.FileExists(t, filepath.Join(dir, "history.json"))
	requireNoProcesses(t)
}

// syncBuffer is a log that the run writes and the test reads at once.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunSpecErrors(t *testing.T) {
	x := func(kv ...string) map[string]string {
		m := map[string]string{"client-cmd": "x"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		s    spec.Spec
		want string
	}{
		{spec.Spec{Backend: "exec"}, "backend exec needs --client-cmd"},
		{spec.Spec{Backend: "exec", Options: x("lock-service", "naive", "lock-endpoints", "127.0.0.1:1")}, "not both"},
		{spec.Spec{Backend: "exec", Options: x("lock-service", "exec")}, "the lock service must be a backend that holds locks itself"},
		{spec.Spec{Backend: "exec", Options: x("lock-service", "zoo")}, `unknown lock service "zoo"`},
		{spec.Spec{Backend: "exec", Options: x("lock-endpoints", "localhost")}, `"localhost" is not host:port`},
		{spec.Spec{Backend: "exec", Options: x("client-timeout", "soon")}, "--client-timeout must be a duration"},
		{spec.Spec{Backend: "exec", Options: x("lock-endpoints", "127.0.0.1:1"), Faults: []string{"crash"}}, "runs against servers given by --lock-endpoints, so it takes client-side faults only"},
		{spec.Spec{Backend: "exec", Options: x(), Faults: []string{"leader-isolation"}}, "fault \"leader-isolation\" needs a lock-service cluster"},
		{spec.Spec{Backend: "exec", Options: x("lock-service", "etcd"), TTL: 500 * time.Millisecond}, "lock service etcd: etcd leases are whole seconds"},
		{spec.Spec{Backend: "exec", Options: x(), Policy: "careful"}, "the careful policy needs a lease that knows its end"},
		{spec.Spec{Backend: "exec", Options: x(), Resource: "etcd-txn"}, "resource etcd-txn is native to the etcd backend"},
		{spec.Spec{Backend: "exec", Options: x(), Keys: 4}, "--keys"},
		{spec.Spec{Backend: "naive", Options: x()}, "--client-cmd is for the exec backend"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := spec.Normalize(builtin.Registry(), tt.s)
			require.ErrorIs(t, err, spec.ErrSpec)
			require.ErrorContains(t, err, tt.want)
		})
	}
	// Any registered backend can be the lock service; its own settings are the run's.
	n, err := spec.Normalize(builtin.Registry(), spec.Spec{Backend: "exec", Options: x("lock-service", "raft"), Members: 3, Faults: []string{"leader-isolation"}})
	require.NoError(t, err)
	require.Equal(t, 3, n.Members)
	_, err = spec.Normalize(builtin.Registry(), spec.Spec{Backend: "exec", Options: x("lock-service", "etcd"), TTL: time.Second, Faults: []string{"crash"}})
	require.NoError(t, err)
	// Without --ttl and --members, the lock service's defaults: etcd's 1 s, and its 3
	// members for a fault on the service in evaluate.
	n, err = spec.Normalize(builtin.Registry(), spec.Spec{Backend: "exec", Options: x("lock-service", "etcd")})
	require.NoError(t, err)
	require.Equal(t, time.Second, n.TTL)
	n, err = spec.Normalize(builtin.Registry(), spec.Spec{Backend: "exec", Options: x("lock-service", "naive")})
	require.NoError(t, err)
	require.Equal(t, spec.DefaultTTL, n.TTL)
	plan, err := campaign.PlanEvaluate(builtin.Registry(), builtin.Catalogue(), campaign.EvaluateConfig{Backend: "exec", Options: x("lock-service", "etcd"), Faults: []string{"leader-isolation"}})
	require.NoError(t, err)
	require.NotEmpty(t, plan.Jobs)
	for _, j := range plan.Jobs {
		require.Equal(t, 3, j.Spec.Members, "%s", j.Spec.Name)
	}
	// --client-cmd alone implies the exec backend.
	n, err = spec.Normalize(builtin.Registry(), spec.Spec{Options: x()})
	require.NoError(t, err)
	require.Equal(t, "exec", n.Backend)
}

func isSpec(err error) bool { return errors.Is(err, spec.ErrSpec) }

// TestRunClientCrash: the holder's lock client is killed with SIGKILL and replaced; the
// application's late write with the old token gets through without a fence, not with one.
func TestRunClientCrash(t *testing.T) {
	proctest.Skip(t, execlock.ExampleNeeds("naive_http.py")...)
	x := map[string]string{"client-cmd": "python3 " + execFile(t, "examples/naive_http.py")}
	for _, resource := range []string{"unfenced", "fenced"} {
		o, err := trial.Run(context.Background(), builtin.Registry(), spec.Spec{Backend: "exec", Options: x, Resource: resource, Faults: []string{"client-crash"}}, trial.Options{})
		require.NoError(t, err)
		require.Len(t, o.History.Faults, 1)
		require.Contains(t, o.History.Faults[0].Detail, "killed with SIGKILL (the lease it held died with it) and a fresh process")
		want := catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Violated, catalogue.Violated, catalogue.Held, catalogue.Violated), MinStaleAccepted: 1}
		if resource == "fenced" {
			want = catalogue.Expect{Verdicts: catalogue.Verdicts(catalogue.Held, catalogue.Held, catalogue.Held, catalogue.Violated), MinStaleRejected: 1, NoStaleAccepted: true}
		}
		require.Empty(t, want.Diff(o.Report), "%s: faults %+v", resource, o.History.Faults)
	}
	requireNoProcesses(t)
	_, err := spec.Normalize(builtin.Registry(), spec.Spec{Backend: "naive", Faults: []string{"client-crash"}})
	require.ErrorContains(t, err, "kills a lock client that is a process of its own")
}

// TestRunNoToken: redis-py's Lock as it is grants with "no_token". Unfenced, the run
// records the client's reason and the tokens verdict is violated by it; against a fenced
// resource the run ends at the first grant with ErrNoToken (exit 2), the history kept,
// no process left; evaluate's scorecard says "no fencing token" as for redis-notoken.
func TestRunNoToken(t *testing.T) {
	exectest.RequirePythonModule(t, "redis", "python3-redis")
	reg := builtin.Registry()
	opts := map[string]string{"client-cmd": exectest.SystemPython + " " + execFile(t, "examples/redis_lock.py"), "lock-service": "redis"}
	harnesstest.SkipUnavailable(t, reg, spec.Spec{Backend: "exec", Options: opts})
	o, err := trial.Run(context.Background(), reg, spec.Spec{Backend: "exec", Options: opts, Resource: "unfenced", Faults: []string{"pause"}}, trial.Options{})
	require.NoError(t, err)
	require.Contains(t, o.History.Run.NoToken, "redis-py's Lock is SET NX PX with a random value")
	require.Equal(t, models.Violated, o.Report.Verdicts[models.Tokens])
	res, ok := o.Report.Result(models.Tokens)
	require.True(t, ok)
	require.Contains(t, res.Explanation, "The backend says: redis-py's Lock")

	dir := t.TempDir()
	_, err = trial.Run(context.Background(), reg, spec.Spec{Backend: "exec", Options: opts, Resource: "fenced", Faults: []string{"pause"}}, trial.Options{Dir: dir})
	require.ErrorIs(t, err, spec.ErrNoToken)
	require.True(t, isSpec(err), "a usage error: exit 2")
	require.NotContains(t, err.Error(), "\n")
	require.Contains(t, err.Error(), `granted with "no_token": redis-py's Lock`)
	require.Contains(t, err.Error(), "resource fenced fences on tokens")
	h, err := history.ReadFile(filepath.Join(dir, "history.json"))
	require.NoError(t, err)
	require.Contains(t, h.Run.NoToken, "redis-py's Lock")
	for _, op := range h.Ops {
		require.NotEqual(t, history.Write, op.Kind, "no write reached the fenced resource")
	}
	requireNoProcesses(t)

	plan, err := campaign.PlanEvaluate(reg, nil, campaign.EvaluateConfig{Backend: "exec", Options: opts, Faults: []string{"pause"}})
	require.NoError(t, err)
	results, _ := campaign.Campaign{Registry: reg, Store: t.TempDir()}.Run(context.Background(), plan.Specs())
	sc := plan.Judge(results, t.TempDir(), time.Now())
	require.Contains(t, sc.NoToken, "redis-py's Lock")
	require.False(t, sc.Safe)
	require.Len(t, sc.Rows, 1)
	require.Equal(t, judge.CellNoToken, sc.Rows[0].Fenced)
	require.Equal(t, judge.Cell("stale writes got through"), sc.Rows[0].Unfenced)
	requireNoProcesses(t)
}

// TestRunRecordsLostEvents: a client's {"event":"lost"} lands in the history as a lost
// record of the grant it was about, with the client's reason, while the worker held it.
// The fake client reports every grant lost in the same write as the grant, so the event
// is in the pipe before a pause can SIGSTOP the client; the paused holder's worker
// surely still holds its grant when the event is read (it is stopped for two TTLs), the
// others may already have begun their release.
func TestRunRecordsLostEvents(t *testing.T) {
	cmd := "LOSE='fake lost it' sh " + execFile(t, "testdata/fake.sh")
	o, err := trial.Run(context.Background(), builtin.Registry(), spec.Spec{Backend: "exec", Options: map[string]string{"client-cmd": cmd}, Resource: "fenced", Faults: []string{"pause"}}, trial.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	h := o.History
	requireSignalled(t, h)
	byAcquire := map[int]history.Lost{}
	for _, l := range h.Lost {
		_, dup := byAcquire[l.AcquireID]
		require.False(t, dup, "one lost record per grant: %+v", l)
		byAcquire[l.AcquireID] = l
	}
	var pause history.Fault
	for _, f := range h.Faults {
		if f.Kind == "pause" {
			pause = f
		}
	}
	struck := -1 // the paused client's grant when the pause began
	for i, a := range h.Ops {
		if a.Kind != history.Acquire || a.Status != history.OK {
			continue
		}
		if fmt.Sprintf("client-%d", a.Client) == pause.Target && *a.Return <= pause.Start {
			struck = a.ID
		}
		l, ok := byAcquire[a.ID]
		if !ok {
			continue
		}
		delete(byAcquire, a.ID)
		require.Equal(t, a.Client, l.Client)
		require.Equal(t, a.Token, l.Token)
		require.Equal(t, "the client: fake lost it", l.Reason)
		require.GreaterOrEqual(t, l.At, *a.Return, "lost before it was granted")
		for _, r := range h.Ops[i+1:] {
			if r.Client == a.Client && r.Kind == history.Release {
				require.Less(t, l.At, r.Call, "grant #%d: lost recorded after its release began", a.ID)
				break
			}
		}
	}
	require.Empty(t, byAcquire, "lost records of no grant")
	require.Positive(t, struck, "no grant of the paused client before the pause: %+v", pause)
	require.True(t, slices.ContainsFunc(h.Lost, func(l history.Lost) bool { return l.AcquireID == struck }),
		"the paused holder's grant #%d has no lost record: %+v", struck, h.Lost)
	requireNoProcesses(t)
}
