package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/reports"
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8077", "loopback address to listen on (port 0: any free port)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fencecheck serve [--addr 127.0.0.1:PORT] [DIR]\n\nServes a results store (default ./fencecheck-results) on 127.0.0.1 for browsing: / is its\nindex, always fresh; every report, matrix and scorecard page is under it. Ctrl-C stops it.\n\nflags:")
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args); done {
		return code
	}
	dir := defaultOut
	switch fs.NArg() {
	case 0:
	case 1:
		dir = fs.Arg(0)
	default:
		fmt.Fprintf(stderr, "fencecheck serve: want one folder, got %q\n", fs.Args())
		return exitUsage
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if err == nil {
			err = fmt.Errorf("%s is not a folder", dir)
		}
		fmt.Fprintln(stderr, "fencecheck serve:", err)
		return exitUsage
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		fmt.Fprintf(stderr, "fencecheck serve: --addr %q: %v\n", *addr, err)
		return exitUsage
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(stderr, "fencecheck serve: --addr %q: serve only listens on a loopback address (127.0.0.1, ::1 or localhost)\n", *addr)
		return exitUsage
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck serve:", err)
		return exitUsage
	}
	defer root.Close()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "fencecheck serve:", err)
		return exitInternal
	}
	srv := &http.Server{Handler: storeHandler(dir, root), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "serving %s on http://%s/ (Ctrl-C to stop)\n", dir, ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		fmt.Fprintln(stderr, "fencecheck serve:", err)
		return exitInternal
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-done
	fmt.Fprintln(stdout, "stopped")
	return exitSafe
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
