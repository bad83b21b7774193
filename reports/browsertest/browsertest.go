// Package browsertest drives a headless Chromium for tests of fencecheck's HTML pages:
// open a page, read the DOM with JavaScript, collect console errors and uncaught
// exceptions, click links, take screenshots. It speaks the Chrome DevTools protocol over
// --remote-debugging-pipe, so it needs nothing but the chromium binary (Debian's
// `chromium` package). Tests skip when it is absent.
package browsertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/harness/proc"
)

// ChromiumNeed is the browser the page tests drive: $FENCECHECK_CHROMIUM, else the first
// of chromium, chromium-browser, google-chrome on $PATH.
var ChromiumNeed = proc.Need{Program: "chromium", Package: "chromium", Lookup: func() string {
	if p := os.Getenv("FENCECHECK_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}}

// Path returns the Chromium binary to use (ChromiumNeed), "" when there is none.
func Path() string {
	p, _ := ChromiumNeed.Find()
	return p
}

// Timeout bounds every DevTools command and wait.
const Timeout = 45 * time.Second

// Browser is one headless Chromium process.
type Browser struct {
	cmd      *exec.Cmd
	toChrome io.WriteCloser
	writeMu  sync.Mutex // serializes writes to Chromium; never held with mu
	stderr   *bytes.Buffer

	mu      sync.Mutex
	nextID  int
	pending map[int]chan response
	waiters []*waiter
	pages   map[string]*Page // by session id
	closed  bool
	readErr error

	readerDone chan struct{}
	waitDone   chan struct{}
}

type response struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type message struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

type waiter struct {
	session, method string
	ch              chan json.RawMessage
}

// Start launches headless Chromium for t, or skips t with a clear message when it is
// not installed. The browser is closed, and its profile removed, when t ends.
func Start(t testing.TB) *Browser {
	t.Helper()
	path, err := ChromiumNeed.Find()
	if err != nil {
		t.Skip(err.Error() + " (or set FENCECHECK_CHROMIUM)")
	}
	b, err := Launch(path, t.TempDir())
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Logf("close chromium: %v", err)
		}
	})
	return b
}

// Launch starts Chromium at path with its profile in profileDir.
func Launch(path, profileDir string) (*Browser, error) {
	// fd 3: commands to Chromium; fd 4: its answers.
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		cmdR.Close()
		cmdW.Close()
		return nil, err
	}
	b := &Browser{
		toChrome:   cmdW,
		stderr:     &bytes.Buffer{},
		pending:    map[int]chan response{},
		pages:      map[string]*Page{},
		readerDone: make(chan struct{}),
		waitDone:   make(chan struct{}),
	}
	b.cmd = exec.Command(path,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars",
		"--user-data-dir="+profileDir, "--remote-debugging-pipe", "about:blank")
	b.cmd.ExtraFiles = []*os.File{cmdR, outW}
	b.cmd.Stderr = &lockedWriter{w: b.stderr, mu: &b.mu}
	if err := b.cmd.Start(); err != nil {
		cmdR.Close()
		cmdW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	// The child has its copies.
	cmdR.Close()
	outW.Close()
	go func() {
		defer close(b.waitDone)
		_ = b.cmd.Wait()
	}()
	go b.read(outR)
	return b, nil
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if buf, ok := l.w.(*bytes.Buffer); ok && buf.Len() > 1<<20 {
		return len(p), nil // enough
	}
	return l.w.Write(p)
}

func (b *Browser) read(r io.ReadCloser) {
	defer close(b.readerDone)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		raw, err := br.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			b.readErr = err
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		raw = raw[:len(raw)-1]
		var m message
		if err := json.Unmarshal(raw, &m); err != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch, ok := b.pending[m.ID]; ok {
				ch <- response{Result: m.Result, Error: m.Error}
				delete(b.pending, m.ID)
			}
			b.mu.Unlock()
			continue
		}
		if p := b.pages[m.SessionID]; p != nil {
			p.event(m.Method, m.Params)
		}
		kept := b.waiters[:0]
		for _, w := range b.waiters {
			if w.method == m.Method && w.session == m.SessionID {
				w.ch <- m.Params
				continue
			}
			kept = append(kept, w)
		}
		b.waiters = kept
		b.mu.Unlock()
	}
}

// call sends one DevTools command and waits for its answer.
func (b *Browser) call(session, method string, params any, result any) error {
	if params == nil {
		params = struct{}{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	ch := make(chan response, 1)
	b.mu.Lock()
	if b.closed || b.readErr != nil {
		b.mu.Unlock()
		return fmt.Errorf("%s: browser is gone", method)
	}
	b.nextID++
	id := b.nextID
	b.pending[id] = ch
	b.mu.Unlock()
	msg, err := json.Marshal(message{ID: id, Method: method, Params: p, SessionID: session})
	if err == nil {
		b.writeMu.Lock()
		_, err = b.toChrome.Write(append(msg, 0))
		b.writeMu.Unlock()
	}
	if err != nil {
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: browser exited: %s", method, b.stderrTail())
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, r.Error.Message, r.Error.Code)
		}
		if result != nil && len(r.Result) > 0 {
			return json.Unmarshal(r.Result, result)
		}
		return nil
	case <-time.After(Timeout):
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
		return fmt.Errorf("%s: no answer within %v", method, Timeout)
	}
}

// expect registers interest in the next event of method on session; call it before
// the command that causes the event.
func (b *Browser) expect(session, method string) *waiter {
	w := &waiter{session: session, method: method, ch: make(chan json.RawMessage, 1)}
	b.mu.Lock()
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	return w
}

func (b *Browser) wait(w *waiter) (json.RawMessage, error) {
	select {
	case p := <-w.ch:
		return p, nil
	case <-time.After(Timeout):
		b.mu.Lock()
		for i, x := range b.waiters {
			if x == w {
				b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
				break
			}
		}
		b.mu.Unlock()
		return nil, fmt.Errorf("no %s event within %v", w.method, Timeout)
	}
}

func (b *Browser) stderrTail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stderr.String()
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}

// Close ends the browser and waits for it.
func (b *Browser) Close() error {
	b.mu.Lock()
	already := b.closed
	b.mu.Unlock()
	if already {
		return nil
	}
	_ = b.call("", "Browser.close", nil, nil)
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.writeMu.Lock()
	b.toChrome.Close()
	b.writeMu.Unlock()
	select {
	case <-b.waitDone:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.waitDone
	}
	<-b.readerDone
	return nil
}

// Page is one tab.
type Page struct {
	b       *Browser
	target  string
	session string

	errs []string // guarded by b.mu
}

// NewPage opens a blank tab of the given size in CSS pixels.
func (b *Browser) NewPage(width, height int) (*Page, error) {
	var created struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &created); err != nil {
		return nil, err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached); err != nil {
		return nil, err
	}
	p := &Page{b: b, target: created.TargetID, session: attached.SessionID}
	b.mu.Lock()
	b.pages[p.session] = p
	b.mu.Unlock()
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		if err := b.call(p.session, m, nil, nil); err != nil {
			return nil, err
		}
	}
	if err := b.call(p.session, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false,
	}, nil); err != nil {
		return nil, err
	}
	return p, nil
}

// event records console errors, uncaught exceptions and error log entries. b.mu is held.
func (p *Page) event(method string, params json.RawMessage) {
	switch method {
	case "Runtime.consoleAPICalled":
		var e struct {
			Type string `json:"type"`
			Args []struct {
				Value       any    `json:"value"`
				Description string `json:"description"`
			} `json:"args"`
		}
		if json.Unmarshal(params, &e) == nil && (e.Type == "error" || e.Type == "assert") {
			var parts []string
			for _, a := range e.Args {
				if a.Description != "" {
					parts = append(parts, a.Description)
				} else {
					parts = append(parts, fmt.Sprint(a.Value))
				}
			}
			p.errs = append(p.errs, "console."+e.Type+": "+strings.Join(parts, " "))
		}
	case "Runtime.exceptionThrown":
		var e struct {
			Details struct {
				Text      string `json:"text"`
				Line      int    `json:"lineNumber"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
		}
		if json.Unmarshal(params, &e) == nil {
			p.errs = append(p.errs, fmt.Sprintf("uncaught exception at line %d: %s %s", e.Details.Line, e.Details.Text, e.Details.Exception.Description))
		}
	case "Log.entryAdded":
		var e struct {
			Entry struct {
				Level string `json:"level"`
				Text  string `json:"text"`
				URL   string `json:"url"`
			} `json:"entry"`
		}
		if json.Unmarshal(params, &e) == nil && e.Entry.Level == "error" {
			p.errs = append(p.errs, fmt.Sprintf("log error: %s (%s)", e.Entry.Text, e.Entry.URL))
		}
	}
}

// Errors returns the console errors, uncaught exceptions and error log entries seen so
// far.
func (p *Page) Errors() []string {
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	return append([]string(nil), p.errs...)
}

// Navigate loads url and waits for its load event.
func (p *Page) Navigate(url string) error {
	w := p.b.expect(p.session, "Page.loadEventFired")
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := p.b.call(p.session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("navigate %s: %s", url, nav.ErrorText)
	}
	_, err := p.b.wait(w)
	return err
}

// Eval evaluates a JavaScript expression (awaiting a promise) and decodes its value
// into out (which may be nil).
func (p *Page) Eval(expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := p.b.call(p.session, "Runtime.evaluate", map[string]any{
		"expression": expr, "returnByValue": true, "awaitPromise": true,
	}, &r); err != nil {
		return err
	}
	if r.Exception != nil {
		return fmt.Errorf("eval %q: %s %s", expr, r.Exception.Text, r.Exception.Exception.Description)
	}
	if out != nil && len(r.Result.Value) > 0 {
		return json.Unmarshal(r.Result.Value, out)
	}
	return nil
}

// WaitFor polls a JavaScript expression until it is truthy. It gives up at once when
// the page has thrown an exception or logged an error.
func (p *Page) WaitFor(ctx context.Context, expr string) error {
	deadline := time.Now().Add(Timeout)
	for {
		if errs := p.Errors(); len(errs) > 0 {
			return fmt.Errorf("waiting for %s: the page reported errors: %s", expr, strings.Join(errs, "; "))
		}
		var ok bool
		if err := p.Eval("!!("+expr+")", &ok); err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: still false after %v", expr, Timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Click clicks the element matching a CSS selector (element.click()) and waits for the
// page it navigates to to load.
func (p *Page) Click(selector string) error {
	w := p.b.expect(p.session, "Page.loadEventFired")
	var found bool
	sel, _ := json.Marshal(selector)
	if err := p.Eval(fmt.Sprintf("(function(){var e=document.querySelector(%s); if(!e) return false; e.click(); return true})()", sel), &found); err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("click: no element matches %s", selector)
	}
	_, err := p.b.wait(w)
	return err
}

// Screenshot saves a PNG of the whole page to path.
func (p *Page) Screenshot(path string) error { return p.screenshot(path, true) }

// ScreenshotViewport saves a PNG of what is in the viewport to path.
func (p *Page) ScreenshotViewport(path string) error { return p.screenshot(path, false) }

func (p *Page) screenshot(path string, whole bool) error {
	var r struct {
		Data string `json:"data"`
	}
	if err := p.b.call(p.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": whole}, &r); err != nil {
		return err
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return err
	}
	if len(png) == 0 {
		return errors.New("empty screenshot")
	}
	return os.WriteFile(path, png, 0o644)
}
