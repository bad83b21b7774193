package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// On a terminal the bar is redrawn in place, with the finished scenarios printed above it.
func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, tty: true, total: 2, started: time.Now(), stop: make(chan struct{})}
	p.Start("naive-fenced-pause")
	require.Contains(t, buf.String(), "\r\033[K[")
	require.Contains(t, buf.String(), "0/2")
	require.Contains(t, buf.String(), "naive-fenced-pause")
	p.Done("naive-fenced-pause", "safe")
	p.Close()
	out := buf.String()
	require.Contains(t, out, "[1/2 0:00] naive-fenced-pause: safe\n")
	require.Contains(t, out, "[############............] 1/2")
	require.True(t, strings.HasSuffix(out, "\r\033[K"), "the bar is cleared at the end")
}

func TestProgressPlain(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, false, 1)
	p.Start("a")
	p.Done("a", "held")
	p.Close()
	require.Equal(t, "[1/1 0:00] running a\n[1/1 0:00] a: held\n", buf.String())
}
