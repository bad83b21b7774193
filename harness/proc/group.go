package proc

import (
	"context"
	"errors"
	"fmt"
)

// Server is one node of a Group: a server process that pauses, crashes and restarts
// (redis.Server and nats.Server wrap a Node this way).
type Server interface {
	PID() int
	Pause() error
	Resume() error
	Crash() error
	Restart(ctx context.Context, keepData bool) error
	Close() error
}

// Group is the server processes of one lock service, node i at index i. It implements
// harness.ProcessNodes and harness.Crasher for a backend that embeds it. An empty Group
// (an external service) refuses every node fault with Name in the message.
type Group[S Server] struct {
	Name    string
	Servers []S
}

// Nodes is the number of servers fencecheck started.
func (g *Group[S]) Nodes() int { return len(g.Servers) }

func (g *Group[S]) node(i int) (S, error) {
	var zero S
	if len(g.Servers) == 0 {
		return zero, fmt.Errorf("%s: the service is external: fencecheck did not start it and cannot signal it", g.Name)
	}
	if i < 0 || i >= len(g.Servers) {
		return zero, fmt.Errorf("%s: no node %d (%d servers)", g.Name, i, len(g.Servers))
	}
	return g.Servers[i], nil
}

// NodePID is node i's process id (0 while it is crashed, or for no such node).
func (g *Group[S]) NodePID(i int) int {
	s, err := g.node(i)
	if err != nil {
		return 0
	}
	return s.PID()
}

// PauseNode stops node i with SIGSTOP.
func (g *Group[S]) PauseNode(_ context.Context, i int) error {
	s, err := g.node(i)
	if err != nil {
		return err
	}
	return s.Pause()
}

// ResumeNode continues node i with SIGCONT.
func (g *Group[S]) ResumeNode(_ context.Context, i int) error {
	s, err := g.node(i)
	if err != nil {
		return err
	}
	return s.Resume()
}

// Crash kills node i with SIGKILL.
func (g *Group[S]) Crash(_ context.Context, i int) error {
	s, err := g.node(i)
	if err != nil {
		return err
	}
	return s.Crash()
}

// Restart starts crashed node i again on the same port, with its data or without.
func (g *Group[S]) Restart(ctx context.Context, i int, keepData bool) error {
	s, err := g.node(i)
	if err != nil {
		return err
	}
	return s.Restart(ctx, keepData)
}

// Close stops every server. Safe to call twice.
func (g *Group[S]) Close() error {
	var errs []error
	for _, s := range g.Servers {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
