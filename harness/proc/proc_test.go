package proc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// state is the process state letter from /proc/PID/stat (R, S, T for stopped, ...).
func state(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	require.NoError(t, err)
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

// waitState waits, with a generous ceiling, for the kernel to report the state.
func waitState(t *testing.T, pid int, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for state(t, pid) != want {
		require.True(t, time.Now().Before(deadline), "pid %d never reached state %s", pid, want)
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPauseResumeClose(t *testing.T) {
	// A shell with a child: the group signals must reach both.
	p, err := Start(context.Background(), Config{Name: "sleeper", Path: "sh", Args: []string{"-c", "sleep 300 & wait"}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(Descendants(os.Getpid())) >= 2 }, 20*time.Second, 5*time.Millisecond)
	kids := Descendants(p.PID())
	require.Len(t, kids, 1)

	require.NoError(t, p.Pause())
	waitState(t, p.PID(), "T")
	waitState(t, kids[0], "T")
	require.NoError(t, p.Resume())
	waitState(t, p.PID(), "S")
	waitState(t, kids[0], "S")

	require.NoError(t, p.Pause()) // Close must end a stopped group too
	require.NoError(t, p.Close())
	require.NoError(t, p.Close())
	require.False(t, p.Killed(), "sh dies of SIGTERM: no escalation")
	require.Empty(t, Descendants(os.Getpid()))
}

func TestKill(t *testing.T) {
	p, err := Start(context.Background(), Config{Path: "sleep", Args: []string{"300"}})
	require.NoError(t, err)
	require.NoError(t, p.Kill())
	exited, werr := p.Exited()
	require.True(t, exited)
	require.Error(t, werr) // killed by a signal
	require.Error(t, p.Pause(), "signalling an exited process says so")
	require.NoError(t, p.Close())
	require.Empty(t, Descendants(os.Getpid()))
}

func TestStartFailures(t *testing.T) {
	_, err := Start(context.Background(), Config{Name: "nosuch", Path: "fencecheck-no-such-program"})
	require.ErrorIs(t, err, ErrNotFound)

	_, err = Start(context.Background(), Config{Name: "quitter", Path: "sh", Args: []string{"-c", "echo port in use >&2; exit 1"},
		Ready: func(context.Context) error { return errors.New("not listening") }})
	require.ErrorContains(t, err, "quitter exited before it was ready")
	require.ErrorContains(t, err, "port in use")

	_, err = Start(context.Background(), Config{Name: "mute", Path: "sleep", Args: []string{"300"}, ReadyTimeout: 200 * time.Millisecond,
		Ready: func(context.Context) error { return errors.New("no answer") }})
	require.ErrorContains(t, err, "mute was not ready within 200ms (last check: no answer)")
	require.Empty(t, Descendants(os.Getpid()), "a server that never came up is killed")
}

func TestCloseEscalatesToKill(t *testing.T) {
	// Ready only once the trap is set, or SIGTERM could still end the shell.
	var out syncBuffer
	p, err := Start(context.Background(), Config{Path: "sh", Args: []string{"-c", "trap '' TERM; echo ready; while :; do sleep 1; done"},
		StopGrace: 100 * time.Millisecond, Log: &out,
		Ready: func(context.Context) error {
			if !strings.Contains(out.String(), "ready") {
				return errors.New("no trap yet")
			}
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	require.True(t, p.Killed(), "it ignored SIGTERM: Close escalated")
	require.Empty(t, Descendants(os.Getpid()))
}

// syncBuffer is a bytes.Buffer safe for the process's output goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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

func TestTreeSignals(t *testing.T) {
	// The child calls setsid, like a PostgreSQL backend: only TreeSignals reaches it.
	for _, tc := range []struct {
		name string
		end  func(p *Process) error
	}{
		{"kill", func(p *Process) error { return p.Kill() }},
		{"close", func(p *Process) error { return p.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(context.Background(), Config{Name: "tree", Path: "sh", Args: []string{"-c", "setsid sleep 300 & wait"}, TreeSignals: true})
			require.NoError(t, err)
			defer p.Close()
			require.Eventually(t, func() bool { return len(Descendants(p.PID())) == 1 }, 20*time.Second, 5*time.Millisecond)
			kid := Descendants(p.PID())[0]
			require.NoError(t, p.Pause())
			waitState(t, kid, "T")
			require.NoError(t, p.Resume())
			waitState(t, kid, "S")
			require.NoError(t, tc.end(p))
			require.Eventually(t, func() bool {
				_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(kid)))
				return err != nil || state(t, kid) == "Z"
			}, 20*time.Second, 5*time.Millisecond, "the child that left the group survived")
		})
	}
}
