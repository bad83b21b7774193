package scenarios

// TEMPORARY WIRING (issue 14, branch redisnats): the real-server lock services redis,
// redis-volatile, redis-notoken, redlock and nats, until the backend registry (issue
// 13) replaces this file with one registration per backend package.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	natslock "github.com/fencecheck/fencecheck/harness/lease/nats"
	redislock "github.com/fencecheck/fencecheck/harness/lease/redis"
	"github.com/fencecheck/fencecheck/harness/lease/redlock"
	"github.com/fencecheck/fencecheck/nemesis"
)

// serviceBackendNames are the lock services fencecheck starts from Debian packages.
func serviceBackendNames() []Named {
	return []Named{
		{"redis", "one redis-server with the AOF (or --redis-addrs); SET NX PX + Lua renew/release; token = an INCR counter taken in the same script"},
		{"redis-volatile", "the redis backend without persistence (--save '', appendonly no): a crash forgets the lock and the counter"},
		{"redis-notoken", "the redis backend with no fencing token at all (the SET NX PX random value)"},
		{"nats", "one nats-server with JetStream (or --nats-url): KV Create/Update(revision) with the bucket's TTL; token = the key's revision at grant"},
		{"redlock", "go-redsync Redlock over --members 3 (default) or 5 independent redis-servers without persistence (or --redis-addrs); no fencing token"},
	}
}

// serviceProgram is the server program a service backend starts and its Debian
// package ("" for a backend that is not a service).
func serviceProgram(backend string) (prog, pkg string) {
	switch backend {
	case "redis", "redis-volatile", "redis-notoken", "redlock":
		return "redis-server", redislock.DebianPackage
	case "nats":
		return "nats-server", natslock.DebianPackage
	}
	return "", ""
}

// isService reports whether the backend is one of serviceBackendNames.
func isService(backend string) bool { return known(serviceBackendNames(), backend) }

// serviceTokenless is why a service backend hands out no usable fencing token ("" when
// it does). The backend's NoFencingToken says the same once it is started.
func serviceTokenless(backend string) string {
	switch backend {
	case "redis-notoken":
		return redislock.NoTokenReason
	case "redlock":
		return redlock.NoTokenReason
	}
	return ""
}

// TokenlessReason is why a backend hands out no usable fencing token, "" when it does.
func TokenlessReason(backend string) string { return serviceTokenless(backend) }

// ServiceSetup describes a service backend's servers for a scorecard ("" for another
// backend).
func ServiceSetup(backend string) string {
	switch backend {
	case "redis":
		return "one redis-server (Debian), appendonly yes"
	case "redis-volatile":
		return "one redis-server (Debian), no persistence (--save '')"
	case "redis-notoken":
		return "one redis-server (Debian), appendonly yes, no token"
	case "redlock":
		return "redsync over 3 independent redis-servers (Debian), no persistence"
	case "nats":
		return "one nats-server (Debian) with JetStream file storage, KV bucket TTL = lock TTL"
	}
	return ""
}

// serviceApplicable says why fault f cannot run against a service backend, or nil.
func (s Spec) serviceApplicable(f string) error {
	if !isService(s.Backend) {
		return nil
	}
	switch {
	case (len(s.RedisAddrs) > 0 || s.NatsURL != "") && isNodeFault(f):
		return fmt.Errorf("fault %q needs a server fencecheck started itself; an existing one (--redis-addrs, --nats-url) only takes client-side faults (pause, pause-before-read, delay, partition)", f)
	case f == "leader-isolation" || f == "cluster-crash":
		return fmt.Errorf("fault %q needs a lock service with a leader; %s has none", f, s.Backend)
	case f == "skew" || f == "clock-jump":
		return fmt.Errorf("fault %q: %s's clock cannot be moved here (redis-server hangs under libfaketime, libfaketime cannot reach a Go binary like nats-server, and fencecheck does not own their clocks)", f, s.Backend)
	}
	return nil
}

// buildService starts a service backend.
func buildService(ctx context.Context, s Spec, logFile func(string) (io.Writer, string, error), tempDir func() (string, error)) (harness.Backend, error) {
	switch s.Backend {
	case "redis", "redis-volatile", "redis-notoken":
		cfg := redislock.Config{TTL: s.TTL, Persist: s.Backend != "redis-volatile", Addrs: s.RedisAddrs}
		if s.Backend == "redis-notoken" {
			cfg.Token = redislock.TokenNone
		}
		if len(cfg.Addrs) == 0 {
			var err error
			if cfg.Dir, err = tempDir(); err != nil {
				return nil, err
			}
			if cfg.LogWriter, _, err = logFile("redis.log"); err != nil {
				return nil, err
			}
		}
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSpec, err)
		}
		b, err := redislock.Start(ctx, cfg)
		return serviceStarted(b, err, len(cfg.Addrs) > 0)
	case "redlock":
		cfg := redlock.Config{TTL: s.TTL, Servers: s.Members, Addrs: s.RedisAddrs}
		if len(cfg.Addrs) == 0 {
			var err error
			if cfg.Dir, err = tempDir(); err != nil {
				return nil, err
			}
			if cfg.LogWriter, _, err = logFile("redis.log"); err != nil {
				return nil, err
			}
		}
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSpec, err)
		}
		b, err := redlock.Start(ctx, cfg)
		return serviceStarted(b, err, len(cfg.Addrs) > 0)
	case "nats":
		cfg := natslock.Config{TTL: s.TTL, URL: s.NatsURL}
		if cfg.URL == "" {
			var err error
			if cfg.Dir, err = tempDir(); err != nil {
				return nil, err
			}
			if cfg.LogWriter, _, err = logFile("nats.log"); err != nil {
				return nil, err
			}
		}
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSpec, err)
		}
		b, err := natslock.Start(ctx, cfg)
		return serviceStarted(b, err, cfg.URL != "")
	}
	return nil, fmt.Errorf("%w: unknown backend %q", ErrSpec, s.Backend)
}

// serviceStarted turns a Start's result into build's: an external server that does not
// answer is the user's input (ErrSpec); a server fencecheck could not start is not.
func serviceStarted(b harness.Backend, err error, external bool) (harness.Backend, error) {
	switch {
	case err != nil && external:
		return nil, fmt.Errorf("%w: %w", ErrSpec, err)
	case err != nil:
		return nil, err
	}
	return b, nil
}

// faultNodes are the nodes a process fault strikes: the single server, or a majority
// of independent servers (Redlock), so that the lock is really forgotten or unreachable.
func faultNodes(pn harness.ProcessNodes) []int {
	n := pn.Nodes()
	if n <= 1 {
		return []int{0}
	}
	var out []int
	for i := range n/2 + 1 {
		out = append(out, i)
	}
	return out
}

func pidList(pn harness.ProcessNodes, nodes []int) string {
	parts := make([]string, len(nodes))
	for k, i := range nodes {
		parts[k] = fmt.Sprintf("node %d (pid %d)", i, pn.NodePID(i))
	}
	return strings.Join(parts, ", ")
}

// processAction is node-pause or crash on a backend whose nodes are real processes:
// real signals, with the PIDs in the fault's detail.
func processAction(name string, pn harness.ProcessNodes, crasher harness.Crasher, ttl time.Duration) (nemesis.Action, bool) {
	nodes := faultNodes(pn)
	target := "lock service"
	if len(nodes) == 1 {
		target = "node-0"
	}
	switch name {
	case "node-pause":
		// The servers stop for 2×TTL (SIGSTOP), then continue (SIGCONT) while the holder
		// is still paused: their keys' expiry is by the wall clock, which ran on.
		var (
			mu    sync.Mutex
			timer *time.Timer
		)
		resume := func(ctx context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			var errs []string
			for _, i := range nodes {
				if err := pn.ResumeNode(ctx, i); err != nil {
					errs = append(errs, err.Error())
				}
			}
			if len(errs) > 0 {
				return fmt.Errorf("%s", strings.Join(errs, "; "))
			}
			return nil
		}
		hold := 2 * ttl
		return nemesis.Action{
			Kind: name,
			Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
				pids := pidList(pn, nodes)
				for _, i := range nodes {
					if err := pn.PauseNode(ctx, i); err != nil {
						_ = resume(ctx)
						return target, "", err
					}
				}
				mu.Lock()
				timer = time.AfterFunc(hold, func() { _ = resume(context.Background()) })
				mu.Unlock()
				return target, fmt.Sprintf("SIGSTOP to %s for %v, then SIGCONT, while the holder is paused", pids, hold), nil
			},
			Heal: resume,
		}, true
	case "crash":
		return nemesis.Action{
			Kind: name,
			Start: func(ctx context.Context, _ *nemesis.Nemesis, _ int) (string, string, error) {
				if crasher == nil {
					return target, "", fmt.Errorf("the backend cannot be crashed by fencecheck")
				}
				before := pidList(pn, nodes)
				for _, i := range nodes {
					if err := crasher.Crash(ctx, i); err != nil {
						return target, "", err
					}
				}
				// Restart at once, so the lock is available again while the holder is
				// still paused — with whatever each server kept on disk.
				for _, i := range nodes {
					if err := crasher.Restart(ctx, i, true); err != nil {
						return target, "", err
					}
				}
				return target, fmt.Sprintf("SIGKILL to %s, restarted at once with its data dir as %s", before, pidList(pn, nodes)), nil
			},
		}, true
	}
	return nemesis.Action{}, false
}

// checkServiceSpec validates the service-specific fields of a spec (after defaults).
func (s Spec) checkServiceSpec() error {
	if len(s.RedisAddrs) > 0 && !slices.Contains([]string{"redis", "redis-volatile", "redis-notoken", "redlock"}, s.Backend) {
		return fmt.Errorf("--redis-addrs is for the redis and redlock backends (got %q)", s.Backend)
	}
	if s.NatsURL != "" && s.Backend != "nats" {
		return fmt.Errorf("--nats-url is for the nats backend (got %q)", s.Backend)
	}
	if s.Backend == "nats" && s.TTL < 100*time.Millisecond {
		return fmt.Errorf("nats: --ttl %v is below 100ms: JetStream refuses a bucket MaxAge that short", s.TTL)
	}
	if reason := serviceTokenless(s.Backend); reason != "" && s.Resource != "unfenced" {
		return fmt.Errorf("backend %s with resource %s: %s", s.Backend, s.Resource, reason)
	}
	return nil
}
