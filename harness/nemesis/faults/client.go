package faults

import (
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// Strikes on the lock holder itself: it stops (a GC-like pause), or its lock client
// process dies.

type pause struct{}

func (pause) Name() string { return Pause }
func (pause) Meaning() string {
	return "GC-like pause of the lock holder's whole process inside its critical section (after its read, before its write; for toctou between check and write), longer than the TTL: its lock client's process group is stopped with SIGSTOP (a built-in client runs in a client host process for it)"
}
func (pause) Applies(registry.Target) error { return nil }
func (f pause) Strike(t registry.Target, riders []registry.ServiceFault) nemesis.ClientFault {
	s := strike(f.Name(), t)
	s.Point, s.StopWorker = harness.PauseAfterRead, true
	for _, r := range riders {
		if p, ok := r.(registry.PauseShaper); ok && p.ShapePause(t, &s) {
			return s
		}
	}
	switch {
	case t.Careful:
		s.Point = harness.PauseAfterLeaseCheck
	case t.Resource.ChecksThenWrites:
		s.Point = harness.PauseAfterCheck
	}
	return s
}

type pauseBeforeRead struct{}

func (pauseBeforeRead) Name() string { return PauseBeforeRead }
func (pauseBeforeRead) Meaning() string {
	return "GC-like pause of the lock holder's whole process right after acquiring, before its read, longer than the TTL (SIGSTOP of its lock client's process group, as for pause)"
}
func (pauseBeforeRead) Applies(registry.Target) error { return nil }
func (f pauseBeforeRead) Strike(t registry.Target, _ []registry.ServiceFault) nemesis.ClientFault {
	s := strike(f.Name(), t)
	s.Point, s.StopWorker = harness.PauseAfterAcquire, true
	return s
}

// stall blocks only the holder's worker goroutine where a pause would stop it: the lock
// library's goroutines, keep-alives, timers and loss watchers go on running, so a
// renewing client may notice its loss before it writes.
type stall struct{ pause }

func (stall) Name() string { return Stall }
func (stall) Meaning() string {
	return "the lock holder's worker goroutine is blocked inside its critical section (where pause strikes), longer than the TTL, while its lock library (renewals, keep-alives, loss watchers) keeps running"
}
func (f stall) Strike(t registry.Target, riders []registry.ServiceFault) nemesis.ClientFault {
	s := f.pause.Strike(t, riders)
	s.Kind, s.Stall = f.Name(), true
	return s
}

// clientCrash kills the holder's own lock-client process (its Locker is a
// harness.CrashableProcess) and starts a fresh one; the worker, stopped as in a pause,
// writes later with the token the dead process held.
type clientCrash struct{}

func (clientCrash) Name() string { return ClientCrash }
func (clientCrash) Meaning() string {
	return "the holder's lock client process is killed with SIGKILL inside its critical section and a fresh one started; the application (the worker) writes with the old token after 2x TTL (lockers that are a harness.CrashableProcess)"
}
func (f clientCrash) Applies(t registry.Target) error {
	if !t.Caps.ClientProcesses {
		return registry.Refuse("harness.CrashableProcess (its lockers)", "fault %q kills a lock client that is a process of its own, and backend %s's clients run inside fencecheck", f.Name(), t.Backend)
	}
	return nil
}
func (f clientCrash) Strike(t registry.Target, _ []registry.ServiceFault) nemesis.ClientFault {
	s := strike(f.Name(), t)
	s.Point, s.StopWorker, s.CrashProcess = harness.PauseAfterRead, true, true
	return s
}
