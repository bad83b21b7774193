package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/term"
)

// progress shows how a matrix or an evaluation goes: on a terminal a bar with the
// current scenario and the elapsed time, redrawn in place; otherwise one plain line per
// scenario started and finished.
type progress struct {
	w       io.Writer
	tty     bool
	total   int
	started time.Time

	mu      sync.Mutex
	done    int
	current []string
	stop    chan struct{}
	wg      sync.WaitGroup
}

// isTerminal reports whether stderr (unmasked) is a terminal that draws a bar.
func (a *app) isTerminal() bool { return isTerminal(a.rawErr) && os.Getenv("TERM") != "dumb" }

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// newProgress draws on w (a bar when tty).
func newProgress(w io.Writer, tty bool, total int) *progress {
	p := &progress{w: w, tty: tty, total: total, started: time.Now(), stop: make(chan struct{})}
	if p.tty {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-p.stop:
					return
				case <-t.C:
					p.mu.Lock()
					p.draw()
					p.mu.Unlock()
				}
			}
		}()
	}
	return p
}

func elapsed(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// draw redraws the bar; p.mu is held.
func (p *progress) draw() {
	const width = 24
	n := width * p.done / max(p.total, 1)
	cur := strings.Join(p.current, ", ")
	if len(cur) > 60 {
		cur = cur[:57] + "..."
	}
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d  %s  %s", strings.Repeat("#", n), strings.Repeat(".", width-n), p.done, p.total, elapsed(time.Since(p.started)), cur)
}

// line prints a line above the bar (or alone).
func (p *progress) line(s string) {
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s\n", s)
		p.draw()
		return
	}
	fmt.Fprintln(p.w, s)
}

// Start says a scenario started.
func (p *progress) Start(name string) {
	name = term.Text(name) // the bar writes to the terminal unescaped (app.bar)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.current = append(p.current, name)
	if p.tty {
		p.draw()
		return
	}
	fmt.Fprintf(p.w, "[%d/%d %s] running %s\n", p.done+1, p.total, elapsed(time.Since(p.started)), name)
}

// Done says a scenario finished, with a one-line result.
func (p *progress) Done(name, result string) {
	name, result = term.Text(name), term.Text(result)
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, c := range p.current {
		if c == name {
			p.current = append(p.current[:i], p.current[i+1:]...)
			break
		}
	}
	p.done++
	p.line(fmt.Sprintf("[%d/%d %s] %s: %s", p.done, p.total, elapsed(time.Since(p.started)), name, result))
}

// Close stops the bar and clears its line.
func (p *progress) Close() {
	close(p.stop)
	p.wg.Wait()
	if p.tty {
		p.mu.Lock()
		fmt.Fprint(p.w, "\r\033[K")
		p.mu.Unlock()
	}
}
