package proc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// Node is a server process that can be paused, crashed and started again with the same
// Config (the same program, arguments and port): one node of a lock service.
type Node struct {
	cfg Config

	mu     sync.Mutex
	p      *Process // nil while crashed
	closed bool
}

// StartNode starts the process as Start does.
func StartNode(ctx context.Context, cfg Config) (*Node, error) {
	p, err := Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Node{cfg: cfg, p: p}, nil
}

func (n *Node) process() (*Process, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.p == nil {
		return nil, fmt.Errorf("%s is not running", n.cfg.Name)
	}
	return n.p, nil
}

// PID is the running process's id, 0 while the node is crashed.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.p == nil {
		return 0
	}
	return n.p.PID()
}

// Pause stops the node's process group with SIGSTOP.
func (n *Node) Pause() error {
	p, err := n.process()
	if err != nil {
		return err
	}
	return p.Pause()
}

// Resume continues it with SIGCONT.
func (n *Node) Resume() error {
	p, err := n.process()
	if err != nil {
		return err
	}
	return p.Resume()
}

// Crash kills the process group with SIGKILL and waits for it to exit.
func (n *Node) Crash() error {
	n.mu.Lock()
	p := n.p
	n.p = nil
	n.mu.Unlock()
	if p == nil {
		return fmt.Errorf("%s is not running", n.cfg.Name)
	}
	_ = p.Kill()
	return p.Close()
}

// Restart starts a crashed node again with the same Config. wipe, if not empty, is a
// directory whose contents are deleted first (a new disk).
func (n *Node) Restart(ctx context.Context, wipe string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return fmt.Errorf("%s is closed", n.cfg.Name)
	}
	if n.p != nil {
		return fmt.Errorf("%s is running", n.cfg.Name)
	}
	if wipe != "" {
		entries, err := os.ReadDir(wipe)
		if err != nil {
			return fmt.Errorf("%s: wipe data: %w", n.cfg.Name, err)
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(wipe, e.Name())); err != nil {
				return fmt.Errorf("%s: wipe data: %w", n.cfg.Name, err)
			}
		}
	}
	p, err := Start(ctx, n.cfg)
	if err != nil {
		return err
	}
	n.p = p
	return nil
}

// Close stops the node for good. Safe to call twice.
func (n *Node) Close() error {
	n.mu.Lock()
	n.closed = true
	p := n.p
	n.p = nil
	n.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Close()
}
