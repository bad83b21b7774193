package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/harness/nemesis/proxy"
	"github.com/fencecheck/fencecheck/harness/proc"
)

// node is one ZooKeeper server fencecheck started: a JVM running QuorumPeerMain on its
// own zoo.cfg.
type node struct {
	id                    int // ZooKeeper's myid: index+1
	dir                   string
	clientPort            int
	quorumPort, electPort int
	mu                    sync.Mutex
	p                     *proc.Process
	cfgPath               string
	standalone            bool
	startArgs             []string
	env                   []string
	log                   io.Writer
	readyTimeout          time.Duration
}

func (n *node) clientAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.clientPort)) }

// ensemble is the set of servers fencecheck started, and the proxies on the links
// between them (peer i reaches peer j only through peerLinks[i][j]: quorum, election).
type ensemble struct {
	cfg   Config
	nodes []*node
	// peerLinks[i][j] are server i's two links to server j (quorum, election); nil on
	// the diagonal and for a single server.
	peerLinks [][][]*proxy.Link

	closeOnce sync.Once
}

// freePort finds a free loopback port (below the ephemeral range: a leader binds its
// quorum port only when it is elected, possibly long after the start, and an outgoing
// connection must not hold the number by then) and keeps it bound until the caller
// closes the listener. Another process may still take it between the close and the
// server's bind; the server then fails to start and says so.
func freePort() (int, net.Listener, error) {
	l, err := proc.ListenFree()
	if err != nil {
		return 0, nil, err
	}
	return l.Addr().(*net.TCPAddr).Port, l, nil
}

// errExitedEarly marks a server that exited before it served. With ports fencecheck
// picked, the likely cause is a port taken by another process in the moment between
// releasing it and the JVM binding it (a loaded machine, many tests in parallel).
var errExitedEarly = errors.New("exited before it served")

// startAttempts bounds the starts with fresh ports when a server exits early.
const startAttempts = 3

// startEnsemble starts the servers, again on fresh ports (and empty data dirs) when one
// exits before it serves and fencecheck picked the ports; the last error otherwise.
func startEnsemble(ctx context.Context, cfg Config) (*ensemble, error) {
	for attempt := 1; ; attempt++ {
		e, err := startEnsembleOnce(ctx, cfg)
		if err == nil || attempt == startAttempts || len(cfg.ClientPorts) > 0 || ctx.Err() != nil || !errors.Is(err, errExitedEarly) {
			return e, err
		}
		for i := range cfg.Nodes {
			if rerr := os.RemoveAll(filepath.Join(cfg.Dir, fmt.Sprintf("node-%d", i))); rerr != nil {
				return nil, fmt.Errorf("zookeeper: %w (and clearing for a retry: %w)", err, rerr)
			}
		}
	}
}

// startEnsembleOnce writes each server's configuration, starts the JVMs and waits until
// every server serves (standalone, or leader/follower of one quorum).
func startEnsembleOnce(ctx context.Context, cfg Config) (_ *ensemble, err error) {
	for _, need := range ServerNeeds(cfg) {
		if _, err := need.Find(); err != nil {
			return nil, fmt.Errorf("zookeeper: %w", err)
		}
	}
	env := append([]string(nil), cfg.ExtraEnv...)
	if cfg.ClockRate > 0 {
		lib, err := proc.Libfaketime.Find()
		if err != nil {
			return nil, fmt.Errorf("zookeeper: %w, for a clock rate", err)
		}
		// LD_PRELOAD, not the faketime wrapper: the wrapper forks, and signals sent to
		// the server's process group must reach the JVM itself.
		env = append(env, "LD_PRELOAD="+lib, "FAKETIME=+0 x"+strconv.FormatFloat(cfg.ClockRate, 'g', -1, 64))
	}
	e := &ensemble{cfg: cfg}
	var held []net.Listener // picked ports, released just before the servers start
	release := func() {
		for _, l := range held {
			_ = l.Close()
		}
		held = nil
	}
	defer func() {
		release()
		if err != nil {
			_ = e.Close()
		}
	}()
	for i := range cfg.Nodes {
		n := &node{id: i + 1, dir: filepath.Join(cfg.Dir, fmt.Sprintf("node-%d", i)), standalone: cfg.Nodes == 1, log: cfg.LogWriter}
		if len(cfg.ClientPorts) > 0 {
			n.clientPort = cfg.ClientPorts[i]
		}
		for _, p := range []*int{&n.clientPort, &n.quorumPort, &n.electPort} {
			if *p == 0 {
				var l net.Listener
				if *p, l, err = freePort(); err != nil {
					return nil, fmt.Errorf("zookeeper: pick a port: %w", err)
				}
				held = append(held, l)
			}
		}
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			return nil, fmt.Errorf("zookeeper: %w", err)
		}
		e.nodes = append(e.nodes, n)
	}
	if cfg.Nodes > 1 {
		e.peerLinks = make([][][]*proxy.Link, cfg.Nodes)
		for i := range cfg.Nodes {
			e.peerLinks[i] = make([][]*proxy.Link, cfg.Nodes)
			for j, m := range e.nodes {
				if i == j {
					continue
				}
				for _, port := range []int{m.quorumPort, m.electPort} {
					l, err := proxy.New(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
					if err != nil {
						return nil, fmt.Errorf("zookeeper: peer proxy: %w", err)
					}
					e.peerLinks[i][j] = append(e.peerLinks[i][j], l)
				}
				// A follower connects to a new leader's quorum port the moment both
				// agree, and the leader binds it a moment later. ZooKeeper retries a
				// refused connect; through a proxy the connect succeeds and then closes,
				// which sends the follower back to an election: let the proxy wait.
				e.peerLinks[i][j][0].SetDialRetry(5 * time.Second)
			}
		}
	}
	for i, n := range e.nodes {
		if err := e.writeConfig(i); err != nil {
			return nil, err
		}
		n.readyTimeout = cfg.StartTimeout
		n.env = env
		n.startArgs = []string{
			// Small and quiet: a 2-core machine runs several of these beside the tests.
			"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
			"-Djava.io.tmpdir=" + n.dir,
			"-Dzookeeper.admin.enableServer=false",
			// Curator-style container parents are deleted once empty, this often.
			"-Dznode.container.checkIntervalMs=" + strconv.FormatInt(cfg.ContainerCheck.Milliseconds(), 10),
			"-cp", strings.Join([]string{n.dir, cfg.Jar, slf4jJar, log4jJar}, ":"),
			"org.apache.zookeeper.server.quorum.QuorumPeerMain", n.cfgPath,
		}
	}
	release()
	// A member of an ensemble serves only once a quorum is up: start them all, then wait.
	for _, n := range e.nodes {
		if err := n.start(ctx, cfg.Java, false); err != nil {
			return nil, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	for _, n := range e.nodes {
		if err := n.waitServing(wctx); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// writeConfig writes server i's zoo.cfg, myid and log4j.properties. In an ensemble the
// other servers' addresses are server i's own proxies to them, so every peer link
// passes through a link fencecheck can cut.
func (e *ensemble) writeConfig(i int) error {
	n, cfg := e.nodes[i], e.cfg
	tick := cfg.tickTime().Milliseconds()
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\n", tick)
	fmt.Fprintf(&b, "dataDir=%s\n", n.dir)
	fmt.Fprintf(&b, "clientPort=%d\nclientPortAddress=127.0.0.1\n", n.clientPort)
	b.WriteString("admin.enableServer=false\n4lw.commands.whitelist=ruok,srvr,stat\n")
	b.WriteString("maxClientCnxns=0\nautopurge.purgeInterval=0\n")
	if !n.standalone {
		// Ticks are short (TTL/10), so the limits are counted in ticks of real time: a
		// follower may take 10 s to sync, and is dropped after 2 s of silence.
		fmt.Fprintf(&b, "initLimit=%d\nsyncLimit=%d\n", ceilDiv(10_000, tick), ceilDiv(2_000, tick))
		b.WriteString("standaloneEnabled=false\nreconfigEnabled=false\n")
		b.WriteString("quorumListenOnAllIPs=false\n")
		for j, m := range e.nodes {
			q, el := m.quorumPort, m.electPort
			if j != i {
				q, el = linkPort(e.peerLinks[i][j][0]), linkPort(e.peerLinks[i][j][1])
			}
			fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", m.id, q, el)
		}
		if err := os.WriteFile(filepath.Join(n.dir, "myid"), []byte(strconv.Itoa(n.id)+"\n"), 0o644); err != nil {
			return fmt.Errorf("zookeeper: %w", err)
		}
	}
	n.cfgPath = filepath.Join(n.dir, "zoo.cfg")
	if err := os.WriteFile(n.cfgPath, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	// The classpath starts with n.dir, so this is the logging configuration it uses.
	const log4j = "log4j.rootLogger=INFO, CONSOLE\n" +
		"log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\n" +
		"log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n" +
		"log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1}: %m%n\n"
	if err := os.WriteFile(filepath.Join(n.dir, "log4j.properties"), []byte(log4j), 0o644); err != nil {
		return fmt.Errorf("zookeeper: %w", err)
	}
	return nil
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func linkPort(l *proxy.Link) int {
	_, p, _ := net.SplitHostPort(l.Addr())
	n, _ := strconv.Atoi(p)
	return n
}

// start starts the node's JVM. wait also waits until it serves.
func (n *node) start(ctx context.Context, java string, wait bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	name := fmt.Sprintf("zookeeper node %d on %s", n.id-1, n.clientAddr())
	pcfg := proc.Config{Name: name, Need: JavaNeed.Or(java), Args: n.startArgs, Env: n.env, Dir: n.dir, Log: n.log, StopGrace: 5 * time.Second}
	if n.standalone || wait {
		pcfg.ReadyTimeout = n.readyTimeout
		pcfg.Ready = func(ctx context.Context) error { _, err := serving(ctx, n.clientAddr()); return err }
	}
	p, err := proc.Start(ctx, pcfg)
	if err != nil {
		if strings.Contains(err.Error(), "exited before it was ready") { // proc's words for it
			return fmt.Errorf("zookeeper: %w: %w", errExitedEarly, err)
		}
		return fmt.Errorf("zookeeper: %w", err)
	}
	n.p = p
	return nil
}

// waitServing waits until the node serves clients, or its process exits.
func (n *node) waitServing(ctx context.Context) error {
	n.mu.Lock()
	p := n.p
	n.mu.Unlock()
	var last error
	for {
		if _, last = serving(ctx, n.clientAddr()); last == nil {
			return nil
		}
		select {
		case <-p.Done():
			_, werr := p.Exited()
			return fmt.Errorf("zookeeper: node %d on %s %w (%v); its output ends: %s", n.id-1, n.clientAddr(), errExitedEarly, werr, p.Output())
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return fmt.Errorf("zookeeper: interrupted while node %d on %s was starting: %w", n.id-1, n.clientAddr(), ctx.Err())
			}
			return fmt.Errorf("zookeeper: node %d on %s did not serve in time (last check: %v); its output ends: %s", n.id-1, n.clientAddr(), last, p.Output())
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func (n *node) process() *proc.Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.p
}

// Close stops every server and proxy. Safe to call twice.
func (e *ensemble) Close() error {
	e.closeOnce.Do(func() {
		var wg sync.WaitGroup
		for _, n := range e.nodes {
			if p := n.process(); p != nil {
				wg.Go(func() { _ = p.Close() })
			}
		}
		wg.Wait()
		for _, row := range e.peerLinks {
			for _, ls := range row {
				for _, l := range ls {
					_ = l.Close()
				}
			}
		}
	})
	return nil
}

// fourLetter sends a four-letter command to addr and returns the whole answer.
func fourLetter(ctx context.Context, addr, cmd string) (string, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	deadline := time.Now().Add(3 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = c.SetDeadline(deadline)
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// serving asks addr for its srvr report and returns its Mode (standalone, leader,
// follower, observer); an error while the server does not serve requests.
func serving(ctx context.Context, addr string) (string, error) {
	out, err := fourLetter(ctx, addr, "srvr")
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(out, "\n") {
		if mode, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(mode), nil
		}
	}
	return "", fmt.Errorf("srvr answer without a mode: %q", strings.TrimSpace(out))
}
