package execlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	execlock "github.com/fencecheck/fencecheck/backend/execlock"
	"github.com/fencecheck/fencecheck/backend/execlock/exectest"
	"github.com/fencecheck/fencecheck/backend/naive"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/harness/registry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ceiling bounds every wait for an event: generous, for a loaded 2-core machine.
const ceiling = 30 * time.Second

func script(name string) string {
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return "sh " + p
}

func template(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("examples", "naive_http.py"))
	require.NoError(t, err)
	return "python3 " + p
}

// startNaive starts the exec backend around a naive lock server.
func startNaive(t *testing.T, cfg execlock.Config) *execlock.Backend {
	t.Helper()
	inner, err := naive.New(naive.Config{TTL: cfg.TTL})
	require.NoError(t, err)
	cfg.Inner = inner
	b, err := execlock.Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// requireNoProcesses checks that no process but the test's own servers (keep) survives.
func requireNoProcesses(t *testing.T, keep ...int) {
	t.Helper()
	others := func() []int {
		var out []int
		for _, p := range proc.Descendants(os.Getpid()) {
			if !slices.Contains(keep, p) {
				out = append(out, p)
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(others()) == 0 }, ceiling, 10*time.Millisecond, "processes survive: %v", others())
}

// TestTemplateClient drives the Python template against the naive server: tokens grow,
// the lock excludes, a SIGSTOPped holder loses its lease and says so after SIGCONT.
func TestTemplateClient(t *testing.T) {
	proctest.Skip(t, exectest.Python)
	ctx := context.Background()
	ttl := time.Second // the renewals every TTL/3 must keep up on a loaded machine
	b := startNaive(t, execlock.Config{Command: template(t), TTL: ttl})
	l0, err := b.NewLocker(ctx, 0, b.Endpoints())
	require.NoError(t, err)
	l1, err := b.NewLocker(ctx, 1, b.Endpoints())
	require.NoError(t, err)

	le0, err := l0.Acquire(ctx)
	require.NoError(t, err)
	// Held and renewed: the other client does not get it in 2 TTLs.
	short, cancel := context.WithTimeout(ctx, 2*ttl)
	_, err = l1.Acquire(short)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, le0.Release(ctx))

	// The abandoned acquire is answered (and given back) before the next one is sent.
	le1, err := l1.Acquire(ctx)
	require.NoError(t, err)
	require.Greater(t, le1.Token(), le0.Token())

	// A stopped holder cannot renew: the lock passes on, and after SIGCONT the client
	// notices and reports it lost.
	pp := l1.(harness.PausableProcess)
	pid, err := pp.PauseProcess()
	require.NoError(t, err)
	require.Positive(t, pid)
	le2, err := l0.Acquire(ctx)
	require.NoError(t, err)
	require.Greater(t, le2.Token(), le1.Token())
	require.NoError(t, pp.ResumeProcess())
	select {
	case <-le1.Lost():
	case <-time.After(ceiling):
		t.Fatal("the resumed client never reported its lease lost")
	}
	err = le1.Release(ctx)
	require.ErrorIs(t, err, harness.ErrNoEffect, "releasing a lost lease is a definite refusal")
	require.NoError(t, le2.Release(ctx))

	require.NoError(t, l0.Close())
	require.NoError(t, l0.Close())
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
	require.NoError(t, b.Err())
	requireNoProcesses(t)
}

// TestBadClients: each broken client fails the backend with one line naming the client,
// what it sent and what was wrong, and leaves no process behind.
func TestBadClients(t *testing.T) {
	tests := []struct {
		name     string
		cmd      string
		protocol bool // else a crash
		want     []string
	}{
		{"command not found", "fencecheck-no-such-client --flag", true, []string{"exec client 0 (pid ", "its command cannot run (sh: exit status 127)", "not found"}},
		{"exits early", script("exit_early.sh"), false, []string{"its process exited during the run (exit status 4)", "giving up"}},
		{"not JSON", script("not_json.sh"), true, []string{`it sent "acquired the lock!": not a JSON object`}},
		{"unknown id", script("unknown_id.sh"), true, []string{`it sent "{\"id\":99,\"ok\":true,\"token\":7}": answers id 99, which is not a request awaiting an answer (fencecheck has sent ids 1 to 1)`}},
		{"string token", script("string_token.sh"), true, []string{`"token" must be a JSON integer`, `got "42"`}},
		{"zero token", script("zero_token.sh"), true, []string{`it sent "{\"id\":1,\"ok\":true,\"token\":0}": "token" must not be 0`}},
		{"never answers", script("silent.sh"), true, []string{`it did not answer {"id":1,"op":"acquire"} within 1s (the last line it sent: nothing)`}},
		{"token and no_token", script("both_tokens.sh"), true, []string{`"no_token\":\"none really\"}": a grant has either "token" or "no_token", not both`}},
		{"empty no_token", script("empty_no_token.sh"), true, []string{`"no_token" must be a string saying why the lock has no fencing token, got ""`}},
		{"lost reason not a string", script("bad_reason.sh"), true, []string{`it sent "{\"event\":\"lost\",\"reason\":5}": a lost event's "reason" must be a string`}},
		{"library not a string", script("bad_library.sh"), true, []string{`"library" must be a non-empty string naming the lock library and its version`, `got 2`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := startNaive(t, execlock.Config{Command: tt.cmd, TTL: 500 * time.Millisecond, ReplyTimeout: time.Second, StopGrace: 500 * time.Millisecond})
			l, err := b.NewLocker(context.Background(), 0, b.Endpoints())
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), ceiling)
			defer cancel()
			_, err = l.Acquire(ctx)
			require.Error(t, err)
			select {
			case <-b.Failed():
			case <-ctx.Done():
				t.Fatal("the backend never failed")
			}
			ferr := b.Err()
			require.Error(t, ferr)
			if tt.protocol {
				require.ErrorIs(t, ferr, execlock.ErrProtocol)
			} else {
				require.ErrorIs(t, ferr, execlock.ErrCrashed)
			}
			msg := ferr.Error()
			require.NotContains(t, msg, "\n", "one line")
			for _, w := range tt.want {
				require.Contains(t, msg, w)
			}
			_, err = l.Acquire(ctx)
			require.ErrorIs(t, err, harness.ErrNoEffect, "a broken client takes no more requests")
			require.NoError(t, b.Close())
			requireNoProcesses(t)
		})
	}
}

// TestIgnoresSIGTERM: Close kills a client that ignores its closed stdin and SIGTERM,
// and says so.
func TestIgnoresSIGTERM(t *testing.T) {
	b := startNaive(t, execlock.Config{Command: script("ignore_term.sh"), TTL: 500 * time.Millisecond, StopGrace: 300 * time.Millisecond})
	l, err := b.NewLocker(context.Background(), 0, b.Endpoints())
	require.NoError(t, err)
	le, err := l.Acquire(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(1), le.Token())
	err = b.Close()
	require.ErrorContains(t, err, "exec client 0 (pid ")
	require.ErrorContains(t, err, "killed with SIGKILL")
	requireNoProcesses(t)
}

// TestPauseDoesNotCountAsSilence: a client stopped by a pause with a request pending is
// not timed out for the time it was stopped.
func TestPauseDoesNotCountAsSilence(t *testing.T) {
	b := startNaive(t, execlock.Config{Command: "SLOW=0.5 " + script("fake.sh"), TTL: 500 * time.Millisecond, ReplyTimeout: 2 * time.Second})
	l, err := b.NewLocker(context.Background(), 0, b.Endpoints())
	require.NoError(t, err)
	pp := l.(harness.PausableProcess)
	_, err = pp.PauseProcess()
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		_, err := l.Acquire(context.Background())
		got <- err
	}()
	// Stopped for longer than the reply timeout: still no failure.
	select {
	case <-b.Failed():
		t.Fatalf("failed while stopped: %v", b.Err())
	case <-time.After(3 * time.Second):
	}
	require.NoError(t, pp.ResumeProcess())
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(ceiling):
		t.Fatal("no answer after SIGCONT")
	}
	require.NoError(t, b.Err())
	require.NoError(t, b.Close())
	requireNoProcesses(t)
}

func TestConfigErrors(t *testing.T) {
	inner, err := naive.New(naive.Config{TTL: time.Second})
	require.NoError(t, err)
	defer inner.Close()
	tests := []struct {
		name string
		cfg  execlock.Config
		want string
	}{
		{"no command", execlock.Config{Endpoints: []string{"127.0.0.1:1"}, TTL: time.Second}, "a client command is required"},
		{"no service", execlock.Config{Command: "true", TTL: time.Second}, "a lock service is required"},
		{"both", execlock.Config{Command: "true", Inner: inner, Endpoints: []string{"127.0.0.1:1"}, TTL: time.Second}, "not both"},
		{"no ttl", execlock.Config{Command: "true", Endpoints: []string{"127.0.0.1:1"}}, "TTL must be positive"},
		{"bad endpoint", execlock.Config{Command: "true", Endpoints: []string{"localhost"}, TTL: time.Second}, `lock endpoint "localhost" is not host:port`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorContains(t, tt.cfg.Validate(), tt.want)
		})
	}

	// An existing service that does not answer: one clear error at Start.
	addr := proctest.DeadAddr(t)
	_, err = execlock.Start(context.Background(), execlock.Config{Command: "true", Endpoints: []string{addr}, TTL: time.Second})
	require.ErrorContains(t, err, "lock endpoint "+addr+" does not answer")
	require.False(t, strings.Contains(err.Error(), "\n"))
}

// TestClientErrorIs keeps the two classes apart.
func TestClientErrorIs(t *testing.T) {
	p := &execlock.ClientError{Client: 2, PID: 7, Line: "x", Problem: "bad"}
	c := &execlock.ClientError{Client: 2, PID: 7, Problem: "died", Crash: true}
	require.True(t, errors.Is(p, execlock.ErrProtocol))
	require.False(t, errors.Is(p, execlock.ErrCrashed))
	require.True(t, errors.Is(c, execlock.ErrCrashed))
	require.Equal(t, `exec client 2 (pid 7): it sent "x": bad`, p.Error())
}

// TestCrashProcess: a crash kills the client's process group, loses its lease, and a
// fresh process serves the next requests; nothing fails and nothing survives.
func TestCrashProcess(t *testing.T) {
	b := startNaive(t, execlock.Config{Command: script("fake.sh"), TTL: 500 * time.Millisecond})
	ctx := context.Background()
	l, err := b.NewLocker(ctx, 0, b.Endpoints())
	require.NoError(t, err)
	le, err := l.Acquire(ctx)
	require.NoError(t, err)
	oldPID, newPID, err := l.(harness.CrashableProcess).CrashProcess(ctx)
	require.NoError(t, err)
	require.NotEqual(t, oldPID, newPID)
	select {
	case <-le.Lost():
	case <-time.After(ceiling):
		t.Fatal("the crashed process's lease is not lost")
	}
	require.NotContains(t, proc.Descendants(os.Getpid()), oldPID)
	require.Contains(t, proc.Descendants(os.Getpid()), newPID)
	le2, err := l.Acquire(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), le2.Token(), "the fresh process starts its own count")
	require.NoError(t, le2.Release(ctx))
	require.NoError(t, b.Err(), "a crash fencecheck caused is no failure")
	require.NoError(t, b.Close())
	requireNoProcesses(t)
}

// TestNoToken: a client whose lock has no fencing token says so in its grants; its
// leases carry the order fencecheck saw the grants in, and the backend is
// harness.Tokenless with the client's reason.
func TestNoToken(t *testing.T) {
	ctx := context.Background()
	b := startNaive(t, execlock.Config{Command: "NO_TOKEN='a lock of ours' " + script("fake.sh"), TTL: 500 * time.Millisecond})
	require.Empty(t, b.ReportedNoToken(), "nothing is known before a grant")
	l0, err := b.NewLocker(ctx, 0, b.Endpoints())
	require.NoError(t, err)
	l1, err := b.NewLocker(ctx, 1, b.Endpoints())
	require.NoError(t, err)
	var tokens []int64
	for _, l := range []harness.Locker{l0, l1, l0} {
		le, err := l.Acquire(ctx)
		require.NoError(t, err)
		tokens = append(tokens, le.Token())
		require.NoError(t, le.Release(ctx))
	}
	require.Equal(t, []int64{1, 2, 3}, tokens, "the order fencecheck saw the grants in, across clients")
	require.Equal(t, "a lock of ours", b.ReportedNoToken())
	require.NoError(t, b.Err())
	require.NoError(t, b.Close())
	requireNoProcesses(t)
}

// TestNoTokenAgainstAFence: in a run whose resource fences on tokens, the first grant
// without a token ends the run, as a tokenless backend's fenced run is refused.
func TestNoTokenAgainstAFence(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), ceiling)
	defer cancel()
	b := startNaive(t, execlock.Config{Command: "NO_TOKEN='a lock of ours' " + script("fake.sh"), TTL: 500 * time.Millisecond, TokenResource: "fenced"})
	l, err := b.NewLocker(ctx, 0, b.Endpoints())
	require.NoError(t, err)
	_, err = l.Acquire(ctx)
	require.Error(t, err)
	select {
	case <-b.Failed():
	case <-ctx.Done():
		t.Fatal("the backend never failed")
	}
	ferr := b.Err()
	require.ErrorIs(t, ferr, registry.ErrNoToken)
	require.ErrorIs(t, ferr, registry.ErrInput, "the user's input: exit 2")
	require.NotErrorIs(t, ferr, execlock.ErrCrashed)
	require.Regexp(t, `^no fencing token: cannot be made safe by fencing \(backend exec: client 0 \(pid [1-9][0-9]*\) granted with "no_token": a lock of ours; resource fenced fences on tokens\)$`, ferr.Error())
	require.NoError(t, b.Close())
	requireNoProcesses(t)
}

// TestGrantsAgree: a lock hands out tokens on every grant or on none; a client that
// changes its mind breaks the protocol, either way round.
func TestGrantsAgree(t *testing.T) {
	tests := []struct{ env, want string }{
		{"SWITCH_AFTER=1", `it sent "no_token" after grants with tokens`},
		{"NO_TOKEN=ours SWITCH_AFTER=1", `it reported a token after a grant with "no_token" (ours)`},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), ceiling)
			defer cancel()
			b := startNaive(t, execlock.Config{Command: tt.env + " " + script("fake.sh"), TTL: 500 * time.Millisecond})
			l, err := b.NewLocker(ctx, 0, b.Endpoints())
			require.NoError(t, err)
			le, err := l.Acquire(ctx)
			require.NoError(t, err)
			require.NoError(t, le.Release(ctx))
			_, err = l.Acquire(ctx)
			require.Error(t, err)
			<-b.Failed()
			require.ErrorIs(t, b.Err(), execlock.ErrProtocol)
			require.ErrorContains(t, b.Err(), tt.want)
			require.NoError(t, b.Close())
			requireNoProcesses(t)
		})
	}
}

// A program of fencecheck's own (Config.Program) with the extensions: the grant's
// validity and its renewal reach the lease (harness.Expiring), an acquire whose ctx ends is
// cancelled and its definite refusal stays definite, and the messages carry the label.
func TestProgramExtensions(t *testing.T) {
	p, err := filepath.Abs(filepath.Join("testdata", "extended.sh"))
	require.NoError(t, err)
	b := startNaive(t, execlock.Config{Program: "/bin/sh", Args: []string{p}, Label: "own client", Expiry: true, Cancel: true, TTL: time.Second})
	l, err := b.NewLocker(context.Background(), 0, b.Endpoints())
	require.NoError(t, err)
	le, err := l.Acquire(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 1, le.Token())
	e, ok := le.(harness.Expiring)
	require.True(t, ok, "the lease does not know its end")
	require.Eventually(t, func() bool { return time.Until(e.ValidUntil()) > 30*time.Second }, ceiling, 10*time.Millisecond,
		"the renewed event did not reach the lease (valid until %v)", e.ValidUntil())

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err = l.Acquire(ctx)
	require.ErrorIs(t, err, harness.ErrNoEffect, "the cancelled acquire's definite refusal")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "cancelled while the lock was held")
	require.Less(t, time.Since(began), ceiling/2)
	// The client answered the cancel: the next request needs no wait for it.
	require.NoError(t, le.Release(context.Background()))
	require.NoError(t, b.Err())
	require.NoError(t, b.Close())
	requireNoProcesses(t)
}

// A protocol error of fencecheck's own client is fencecheck's failure, not the user's input.
func TestProgramProtocolErrorIsNotInput(t *testing.T) {
	b := startNaive(t, execlock.Config{Program: "/bin/sh", Args: []string{"-c", "read -r line; echo garbage; cat >/dev/null"}, Label: "own client", TTL: time.Second})
	l, err := b.NewLocker(context.Background(), 0, b.Endpoints())
	require.NoError(t, err)
	_, err = l.Acquire(context.Background())
	require.ErrorIs(t, err, execlock.ErrProtocol)
	require.NotErrorIs(t, err, registry.ErrInput)
	require.ErrorContains(t, err, "own client 0 (pid ")
	require.NoError(t, b.Close())
	requireNoProcesses(t)
}

// TestClientLibrary: the clients' "library" reports, distinct ones in the order they came;
// a client that sends none (every client written before the field) says nothing.
func TestClientLibrary(t *testing.T) {
	for _, tc := range []struct {
		name string
		libs [2]string // client 0's and client 1's ("": it sends none)
		want string
	}{
		{"none said", [2]string{"", ""}, ""},
		{"all agree", [2]string{"fakelock 1.2.3", "fakelock 1.2.3"}, "fakelock 1.2.3"},
		{"one said", [2]string{"", "fakelock 1.2.3"}, "fakelock 1.2.3"},
		{"they differ", [2]string{"fakelock 1.2.3", "fakelock 2.0"}, "fakelock 1.2.3, fakelock 2.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			cmd := fmt.Sprintf(`if [ "$FENCECHECK_CLIENT" = 0 ]; then LIBRARY='%s'; else LIBRARY='%s'; fi; export LIBRARY; exec %s`, tc.libs[0], tc.libs[1], script("fake.sh"))
			b := startNaive(t, execlock.Config{Command: cmd, TTL: 500 * time.Millisecond})
			require.Empty(t, b.ClientLibrary(), "nothing is known before an answer")
			for id := range 2 {
				l, err := b.NewLocker(ctx, id, b.Endpoints())
				require.NoError(t, err)
				le, err := l.Acquire(ctx)
				require.NoError(t, err)
				require.NoError(t, le.Release(ctx))
			}
			require.NoError(t, b.Err())
			require.Equal(t, tc.want, b.ClientLibrary())
			require.NoError(t, b.Close())
			requireNoProcesses(t)
		})
	}
}
