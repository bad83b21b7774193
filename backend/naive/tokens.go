package naive

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Variant names a token source, as users type it after "naive".
type Variant string

// Token source variants.
const (
	// Memory: an in-memory counter, lost when the server restarts (tokens are reused).
	Memory Variant = "memory"
	// Persisted: a counter written to a file and fsynced before the grant is answered.
	Persisted Variant = "persisted"
	// WallClock: the server's wall clock in nanoseconds — not a linearizable source.
	WallClock Variant = "wallclock"
	// Narrow: a 32-bit counter started near its limit; it wraps to 1.
	Narrow Variant = "32bit"
)

// Variants lists every variant with one line of meaning.
func Variants() map[Variant]string {
	return map[Variant]string{
		Memory:    "token from an in-memory counter (lost on restart)",
		Persisted: "token from a counter persisted to a file with fsync before the grant is answered (survives restart)",
		WallClock: "token from the lock server's wall clock (regresses when the clock steps back)",
		Narrow:    "token from a 32-bit counter started near its limit (wraps)",
	}
}

// NarrowStart is where the 32-bit counter starts: a few grants before it wraps.
const NarrowStart = math.MaxUint32 - 8

// NewTokens returns a token source for the variant. dir holds the persisted counter's
// file; now is the server's wall clock.
func NewTokens(v Variant, dir string, now func() time.Time) (TokenSource, error) {
	switch v {
	case Memory, "":
		return &Counter{}, nil
	case Persisted:
		if dir == "" {
			return nil, fmt.Errorf("naive-persisted: a data directory is required")
		}
		return OpenFileCounter(filepath.Join(dir, "token"))
	case WallClock:
		return wallClock{now}, nil
	case Narrow:
		return &narrowCounter{next: NarrowStart}, nil
	}
	return nil, fmt.Errorf("unknown naive variant %q", v)
}

// FileCounter is a counter persisted to a file; every Next is written and fsynced
// before it returns, so a restarted server never hands out a token twice.
type FileCounter struct {
	mu   sync.Mutex
	path string
	last int64
}

// OpenFileCounter opens (or creates) the counter at path.
func OpenFileCounter(path string) (*FileCounter, error) {
	c := &FileCounter{path: path}
	b, err := os.ReadFile(path)
	switch {
	case os.IsNotExist(err):
	case err != nil:
		return nil, err
	default:
		c.last, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("token file %s: %w", path, err)
		}
	}
	return c, nil
}

// Next implements TokenSource.
func (c *FileCounter) Next(time.Time) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := c.last + 1
	// Write a new file and rename it over the old, so a crash mid-write keeps the old.
	tmp := c.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return 0, err
	}
	if _, err := f.WriteString(strconv.FormatInt(next, 10) + "\n"); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, c.path); err != nil {
		return 0, err
	}
	c.last = next
	return next, nil
}

type wallClock struct{ now func() time.Time }

func (w wallClock) Next(time.Time) (int64, error) { return w.now().UnixNano(), nil }

type narrowCounter struct {
	mu   sync.Mutex
	next uint32
}

func (c *narrowCounter) Next(time.Time) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.next
	c.next++
	if c.next == 0 { // 0 means "no token": a narrow counter that wraps skips it
		c.next = 1
	}
	return int64(t), nil
}
