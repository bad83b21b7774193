package raftlock

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	hclog "github.com/hashicorp/go-hclog"
)

// logSetup routes the service's and raft's log output to Config.Logger or
// Config.LogWriter, never to the terminal unless the caller asked for it.
type logSetup struct {
	slog  *slog.Logger // the service's own logger (never nil)
	out   io.Writer    // where hclog text goes, nil = discard
	level hclog.Level
}

func newLogSetup(c config) *logSetup {
	lvl, _ := parseLevel(c.RaftLogLevel)
	ls := &logSetup{level: lvl}
	switch {
	case c.Logger != nil:
		ls.slog = c.Logger
		ls.out = &slogWriter{l: c.Logger}
	case c.LogWriter != nil:
		w := &lockedWriter{w: c.LogWriter}
		ls.slog = slog.New(slog.NewTextHandler(w, nil))
		ls.out = w
	default:
		ls.slog = slog.New(slog.DiscardHandler)
	}
	return ls
}

// raftLogger is node i's hclog logger.
func (ls *logSetup) raftLogger(i int) hclog.Logger {
	if ls.out == nil {
		return nullHCLogger()
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:   fmt.Sprintf("raft-node-%d", i),
		Output: ls.out,
		Level:  ls.level,
	})
}

func nullHCLogger() hclog.Logger { return hclog.NewNullLogger() }

func parseLevel(s string) (hclog.Level, error) {
	switch strings.ToLower(s) {
	case "trace", "debug", "info", "warn", "error", "off":
		return hclog.LevelFromString(s), nil
	}
	return hclog.NoLevel, fmt.Errorf("RaftLogLevel = %q, want trace|debug|info|warn|error|off", s)
}

// lockedWriter serialises writes from several hclog loggers onto one io.Writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// slogWriter turns hclog's text lines into slog records.
type slogWriter struct {
	l *slog.Logger
}

func (s *slogWriter) Write(p []byte) (int, error) {
	for line := range bytes.SplitSeq(bytes.TrimRight(p, "\n"), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		s.l.LogAttrs(context.Background(), slog.LevelInfo, "raft", slog.String("line", string(line)))
	}
	return len(p), nil
}
