package register

import (
	"context"
	"fmt"
	"net/url"
	"sync"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/jsonhttp"
)

// Kind selects how clients protect the register.
type Kind string

// Resource kinds, named as users type them.
const (
	// Fenced: one atomic conditional write on the server.
	Fenced Kind = "fenced"
	// Unfenced: every write is accepted; the token is stored but never checked.
	Unfenced Kind = "unfenced"
	// TOCTOU: the client reads the stored token, compares, then writes unconditionally
	// in a second request — the broken check-then-write pattern. The window between the
	// two requests is a real network round trip, and a pause point.
	TOCTOU Kind = "toctou"
)

// Resource is a register server plus the client behaviour of one Kind.
type Resource struct {
	kind  Kind
	fence string
	srv   *Server
}

// New starts a register server for the kind. fence is the rule the fenced kind enforces
// and the toctou kind checks ("strict" or "monotonic"); the unfenced kind stores every
// write but the checker still holds it to fence.
func New(kind Kind, fence string) (*Resource, error) {
	if fence == "" {
		fence = history.FenceStrict
	}
	if fence != history.FenceStrict && fence != history.FenceMonotonic {
		return nil, fmt.Errorf("unknown fence %q (want strict or monotonic)", fence)
	}
	rule := RuleNone
	switch kind {
	case Fenced:
		rule = Rule(fence)
	case Unfenced, TOCTOU:
	default:
		return nil, fmt.Errorf("unknown register resource %q (want fenced, unfenced or toctou)", kind)
	}
	srv, err := Start(rule)
	if err != nil {
		return nil, err
	}
	return &Resource{kind: kind, fence: fence, srv: srv}, nil
}

// Name implements harness.Resource.
func (r *Resource) Name() string { return string(r.kind) }

// Fence implements harness.Resource.
func (r *Resource) Fence() string { return r.fence }

// Endpoints implements harness.Resource.
func (r *Resource) Endpoints() []string { return []string{r.srv.Addr()} }

// Server is the register server (for tests and final-state inspection).
func (r *Resource) Server() *Server { return r.srv }

// Close implements harness.Resource.
func (r *Resource) Close() error { return r.srv.Close() }

// NewClient implements harness.Resource.
func (r *Resource) NewClient(_ context.Context, _ int, addrs []string, gate harness.Gate) (harness.ResourceClient, error) {
	if len(addrs) != 1 {
		return nil, fmt.Errorf("register: want 1 address, got %d", len(addrs))
	}
	return &client{kind: r.kind, fence: r.fence, http: jsonhttp.New(addrs[0]), gate: gate}, nil
}

type client struct {
	kind      Kind
	fence     string
	http      *jsonhttp.Client
	gate      harness.Gate
	closeOnce sync.Once
}

func (c *client) Read(ctx context.Context) (string, int64, error) { return c.ReadKey(ctx, "") }

// ReadKey implements harness.KeyedResourceClient.
func (c *client) ReadKey(ctx context.Context, key string) (string, int64, error) {
	path := "/register"
	if key != "" {
		path += "?key=" + url.QueryEscape(key)
	}
	var st State
	if err := c.http.Do(ctx, "GET", path, nil, &st); err != nil {
		return "", 0, err
	}
	return st.Value, st.Token, nil
}

func (c *client) Write(ctx context.Context, lease harness.Lease, value string) (bool, error) {
	return c.WriteKey(ctx, "", lease, value)
}

// WriteKey implements harness.KeyedResourceClient.
func (c *client) WriteKey(ctx context.Context, key string, lease harness.Lease, value string) (bool, error) {
	token := lease.Token()
	if c.kind == TOCTOU {
		_, stored, err := c.ReadKey(ctx, key)
		if err != nil {
			// Nothing was written yet: the check failed, so the write had no effect.
			return false, fmt.Errorf("%w: check: %v", harness.ErrNoEffect, err)
		}
		if !history.Passes(c.fence, token, stored) {
			return false, nil
		}
		if c.gate != nil {
			c.gate.Pause(ctx, harness.PauseAfterCheck)
		}
	}
	var resp WriteResponse
	if err := c.http.Do(ctx, "POST", "/write", WriteRequest{Token: token, Value: value, Key: key}, &resp); err != nil {
		return false, err
	}
	return resp.Accepted, nil
}

func (c *client) Close() error {
	c.closeOnce.Do(func() { _ = c.http.Close() })
	return nil
}
