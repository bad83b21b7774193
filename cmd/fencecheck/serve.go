package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/reports"
)

func (a *app) serveCmd() *cobra.Command {
	var addr string
	c := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:PORT] [DIR]",
		Short: "serve a results store on 127.0.0.1 for browsing",
		Long: `Serves a results store (default ./fencecheck-results) on a loopback address for
browsing: / is its index, always fresh; every report, matrix, scorecard and soak page is
under it. Ctrl-C (or SIGTERM, SIGHUP) stops it.`,
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
	srv := &http.Server{Handler: storeHandler(dir, root), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(a.stdout, "serving %s on http://%s/ (Ctrl-C to stop)\n", dir, ln.Addr())
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

// storeHandler serves the store: its index at /, generated on every request, and its
// files (through os.Root, so no path or symlink leads outside it) everywhere else.
func storeHandler(dir string, root *os.Root) http.Handler {
	files := http.FileServerFS(root.FS())
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
