package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe to read while Main writes to it.
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

// startServe runs `fencecheck serve` on a free loopback port until the test ends and
// returns its base URL.
func startServe(t *testing.T, dir string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- Main(ctx, []string{"serve", "--addr", "127.0.0.1:0", dir}, &stdout, &stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			require.Equal(t, exitSafe, code, stderr.String())
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	re := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if u := re.FindString(stdout.String()); u != "" {
			return u
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d: %s", code, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve printed no URL: %s %s", stdout.String(), stderr.String())
	return ""
}

func get(t *testing.T, c *http.Client, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestServe(t *testing.T) {
	root := t.TempDir()
	dir := copyHistory(t, "testdata/stale-accepted.json", root, "hand-written")
	code, _, stderr := run(t, "report", root)
	require.Equal(t, exitSafe, code, stderr)
	// A symlink out of the store must not lead out of it.
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "escape")))

	base := startServe(t, root)
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}

	status, body := get(t, c, "GET", base)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `href="hand-written/`)
	require.Contains(t, body, "fencecheck results")

	status, body = get(t, c, "GET", base+"hand-written/latest/report.html")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "UNSAFE: 1 stale write got through")
	status, _ = get(t, c, "GET", base+"hand-written/"+filepath.Base(dir)+"/history.json")
	require.Equal(t, http.StatusOK, status)

	for _, p := range []string{"escape/secret.txt", "../../../etc/passwd", "%2e%2e/%2e%2e/etc/passwd", "no-such-thing"} {
		status, body = get(t, c, "GET", base+p)
		require.NotEqual(t, http.StatusOK, status, p)
		require.NotContains(t, body, "secret")
	}
	// What resolves outside the store is not in it: 404, as a missing file.
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "escape.txt")))
	require.NoError(t, os.Symlink(filepath.Join(root, "gone"), filepath.Join(root, "dangling")))
	for _, p := range []string{"escape/secret.txt", "escape/", "escape.txt", "dangling", "no-such-thing"} {
		status, body = get(t, c, "GET", base+p)
		require.Equal(t, http.StatusNotFound, status, p)
		require.NotContains(t, body, "secret")
	}
	status, _ = get(t, c, "POST", base)
	require.Equal(t, http.StatusMethodNotAllowed, status)

	// The Host a browser sends must be the address serve listens on, by any of its
	// loopback names: another name pointed at 127.0.0.1 (DNS rebinding) is refused.
	port := strings.TrimSuffix(strings.TrimPrefix(base, "http://127.0.0.1:"), "/")
	for host, want := range map[string]int{
		"127.0.0.1:" + port:        http.StatusOK,
		"localhost:" + port:        http.StatusOK,
		"LocalHost:" + port:        http.StatusOK,
		"[::1]:" + port:            http.StatusOK,
		"attacker.example:" + port: http.StatusMisdirectedRequest,
		"attacker.example":         http.StatusMisdirectedRequest,
		"127.0.0.1":                http.StatusMisdirectedRequest,
		"127.0.0.1:1":              http.StatusMisdirectedRequest,
		"127.0.0.2:" + port:        http.StatusMisdirectedRequest,
	} {
		for _, p := range []string{"", "hand-written/latest/report.html"} {
			req, err := http.NewRequest("GET", base+p, nil)
			require.NoError(t, err)
			req.Host = host
			resp, err := c.Do(req)
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, want, resp.StatusCode, "Host %s, /%s", host, p)
			if want != http.StatusOK {
				require.NotContains(t, string(b), "hand-written", "Host %s", host)
			}
		}
	}

	// The index is generated on every request: a new run shows up at once.
	copyHistory(t, "testdata/concurrent-legal.json", root, "added-later")
	_, body = get(t, c, "GET", base)
	require.True(t, strings.Contains(body, `href="added-later/`), body)
}
