package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/internal/term"
	"github.com/fencecheck/fencecheck/reports"
)

func (a *app) serveCmd() *cobra.Command {
	var addr string
	c := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:PORT] [DIR]",
		Short: "serve a results store on 127.0.0.1 for browsing",
		Long: `Serves a results store (default ./fencecheck-results) on a loopback address for
browsing: / is its index, always fresh; every report, matrix, scorecard and soak page is
under it, and nothing outside it (a symlink out of the store answers 404). It answers only
requests addressed to its loopback address (Host 127.0.0.1:PORT, localhost:PORT or
[::1]:PORT): a web page that points a name of its own at 127.0.0.1 gets 421. Ctrl-C (or
SIGTERM, SIGHUP) stops it.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError("want one folder, got %q", args)
			}
			return nil
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
		RunE: func(cmd *cobra.Command, args []string) error { return a.serve(cmd.Context(), addr, args) },
	}
	c.Flags().StringVar(&addr, "addr", "127.0.0.1:8077", "loopback address to listen on (port 0: any free port)")
	setExitCodes(c, exitCodes{
		exitSafe:     "stopped by Ctrl-C, SIGTERM or SIGHUP",
		exitUsage:    "bad usage, a missing folder or an address that is not loopback",
		exitInternal: "the server failed",
	})
	return c
}

func (a *app) serve(ctx context.Context, addr string, args []string) error {
	dir := defaultOut
	if len(args) == 1 {
		dir = args[0]
	}
	if dir == "" {
		return badInput("the folder to serve is empty: give a results store")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if err == nil {
			err = fmt.Errorf("%s is not a folder", dir)
		}
		return badInput("%v", err)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return badInput("--addr %q: %v", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return badInput("--addr %q: serve only listens on a loopback address (127.0.0.1, ::1 or localhost)", addr)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return badInput("%v", err)
	}
	defer root.Close()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return badInput("%v", err) // the address is taken: the user's to change
	}
	srv := &http.Server{Handler: hostOnly(ln.Addr().(*net.TCPAddr).Port, storeHandler(dir, root)), ReadHeaderTimeout: 10 * time.Second,
		// The server's own complaints (a bad TLS hello, a malformed request) quote what a
		// peer sent: through a.stderr, escaped, not the log package's raw os.Stderr.
		ErrorLog: log.New(a.stderr, "serve: ", 0)}
	term.Fprintf(a.stdout, "serving %s on http://%s/ (Ctrl-C to stop)\n", dir, ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return &exitError{code: exitInternal, msg: err.Error()}
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-done
	fmt.Fprintln(a.stdout, "stopped")
	return nil
}

// hostOnly answers only requests whose Host is the loopback address serve listens on
// (127.0.0.1, localhost or [::1], with its port): a web page whose name an attacker's
// DNS points at 127.0.0.1 (DNS rebinding) sends its own name, and gets 421.
func hostOnly(port int, next http.Handler) http.Handler {
	p := strconv.Itoa(port)
	ok := map[string]bool{}
	for _, h := range []string{"127.0.0.1", "localhost", "[::1]"} {
		ok[h+":"+p] = true
		if port == 80 { // a browser leaves the default port out
			ok[h] = true
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ok[strings.ToLower(r.Host)] {
			http.Error(w, fmt.Sprintf("misdirected request: this server answers only Host 127.0.0.1:%s, localhost:%s or [::1]:%s", p, p, p), http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// storeFS is the store's files as http.FileServerFS opens them: a path that cannot be
// opened inside the store (a symlink that leads out of it, a dangling one) is not in the
// store, so it answers 404 rather than the 500 of an unknown error.
type storeFS struct{ fs.FS }

func (s storeFS) Open(name string) (fs.File, error) {
	f, err := s.FS.Open(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return f, err
}

// storeHandler serves the store: its index at /, generated on every request, and its
// files (through os.Root, so no path or symlink leads outside it) everywhere else.
func storeHandler(dir string, root *os.Root) http.Handler {
	files := http.FileServerFS(storeFS{root.FS()})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path == "/" || r.URL.Path == "/index.html" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			if err := reports.RenderStoreIndex(w, dir); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
			}
			return
		}
		if strings.Contains(r.URL.Path, "..") {
			http.Error(w, "bad path", http.StatusBadRequest)
			return
		}
		files.ServeHTTP(w, r)
	})
}
