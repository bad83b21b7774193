// Package jsonhttp is the small JSON-over-HTTP client the harness's own servers (the
// register, the naive lock server) are reached with. It classifies failures the way the
// history needs them: definitely no effect, or unknown.
package jsonhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/fencecheck/fencecheck/harness"
)

// Client talks to one server address.
type Client struct {
	base string
	tr   *http.Transport
	hc   *http.Client
}

// New returns a client for the server at addr (host:port). It keeps at most one idle
// connection, so a client's traffic goes through one proxied TCP connection like a
// real process's would.
func New(addr string) *Client {
	tr := &http.Transport{
		Proxy:               nil,
		MaxIdleConnsPerHost: 1,
		DisableCompression:  true,
	}
	return &Client{base: "http://" + addr, tr: tr, hc: &http.Client{Transport: tr}}
}

// Close drops idle connections. Safe to call twice.
func (c *Client) Close() error {
	c.tr.CloseIdleConnections()
	return nil
}

// StatusError is a non-2xx answer. The server refused the request, so it had no effect.
type StatusError struct {
	Code int
	Body string
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body) }

// Unwrap lets errors.Is(err, harness.ErrNoEffect) see a refusal.
func (e *StatusError) Unwrap() error { return harness.ErrNoEffect }

// Do sends in as JSON (nil for no body) and decodes the answer into out. A refused
// connection and a non-2xx answer wrap harness.ErrNoEffect; anything else (a timeout, a
// connection cut mid-request) is ambiguous.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%w: encode request: %v", harness.ErrNoEffect, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("%w: %v", harness.ErrNoEffect, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if refused(err) {
			return fmt.Errorf("%w: %v", harness.ErrNoEffect, err)
		}
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return &StatusError{Code: resp.StatusCode, Body: string(bytes.TrimSpace(data))}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}

// refused reports whether the request never reached a server: the dial failed.
func refused(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
