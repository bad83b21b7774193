package zookeeper

import (
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness/proc"
)

// TokenSource chooses what a Lease hands out as its fencing token.
type TokenSource string

const (
	// TokenCzxid is the lock znode's czxid, the zxid of the transaction that created it
	// (the default): assigned by the leader in the one total order of committed
	// transactions, with the leader's epoch in the high 32 bits, so it grows across
	// leader changes and restarts that keep the data.
	TokenCzxid TokenSource = "czxid"
	// TokenSequence is the sequential suffix ZooKeeper appended to the lock znode's
	// name, plus one (a token of 0 means "no token" to the harness). It is the lock
	// parent's child counter: it restarts at 0 whenever the parent is deleted and
	// created again (a container parent is, once it is empty).
	TokenSequence TokenSource = "sequence"
)

// DefaultLockPath is the parent znode of the lock's children when Config.LockPath is
// empty.
const DefaultLockPath = "/fencecheck/lock"

// Debian's ZooKeeper: the server jar and the logging jars it needs, and the package
// that ships them.
const (
	DebianPackage = "zookeeper"
	defaultJar    = "/usr/share/java/zookeeper.jar"
	slf4jJar      = "/usr/share/java/slf4j-log4j12.jar"
	log4jJar      = "/usr/share/java/log4j-1.2.jar"
)

// Config configures the zookeeper backend.
type Config struct {
	// TTL is the session timeout each lock session asks for: whole milliseconds, at
	// least 20ms. The servers fencecheck starts get a tickTime of TTL/10 so that the
	// TTL lies in ZooKeeper's allowed range (2 to 20 ticks); every session checks that
	// the server granted exactly TTL and refuses to hold a lock otherwise.
	TTL time.Duration
	// Token is the token source (default TokenCzxid).
	Token TokenSource
	// LockPath is the lock's parent znode (default DefaultLockPath). It is created as a
	// container node, as Curator does: the server deletes it once it is empty.
	LockPath string
	// Nodes is how many servers to start: 1 (default, standalone) or an ensemble of 3
	// or 5. Ignored with Servers.
	Nodes int
	// Servers are the client addresses (host:port) of an existing ensemble: then no
	// server is started and node faults do not apply.
	Servers []string
	// Dir holds each started server's data (Dir/node-i). Required unless Servers is set.
	Dir string
	// LogWriter receives the servers' output (nil: discarded).
	LogWriter io.Writer
	// ClientPorts, if set, are the started servers' client ports (one per node; 0 picks
	// a free one). Mostly for tests of a port already in use.
	ClientPorts []int
	// Java is the java binary (default: JavaNeed's, from PATH); Jar is ZooKeeper's server jar (default
	// Debian's /usr/share/java/zookeeper.jar).
	Java string
	Jar  string
	// StartTimeout bounds the wait for the servers to serve (default 60s: a JVM on a
	// loaded machine, and an ensemble electing its first leader).
	StartTimeout time.Duration
	// ContainerCheck is how often the started servers delete empty container nodes
	// (default: TTL). ZooKeeper's own default is one minute.
	ContainerCheck time.Duration
	// ClockRate, if above 0, runs every started server's clock (wall and monotonic) that
	// many times fast, by preloading Debian's libfaketime into its JVM: a skewed server
	// clock. Above 3 it expires every session, busy or not (a client pings every third
	// of the timeout).
	ClockRate float64
	// ExtraEnv is added to the started servers' environment.
	ExtraEnv []string
}

// JavaNeed is the JVM the servers run on (Debian's zookeeper package brings one).
var JavaNeed = proc.Need{Program: "java", Package: DebianPackage}

// ServerNeeds is what the servers fencecheck starts need with cfg.
func ServerNeeds(cfg Config) []proc.Need {
	needs := []proc.Need{JavaNeed.Or(cfg.Java)}
	for _, jar := range []string{cfg.Jar, slf4jJar, log4jJar} {
		if jar == "" {
			jar = defaultJar
		}
		needs = append(needs, proc.Need{File: jar, Package: DebianPackage})
	}
	if cfg.ClockRate > 0 {
		needs = append(needs, proc.Libfaketime)
	}
	return needs
}

func (c Config) withDefaults() Config {
	if c.Token == "" {
		c.Token = TokenCzxid
	}
	if c.LockPath == "" {
		c.LockPath = DefaultLockPath
	}
	if c.Nodes == 0 {
		c.Nodes = 1
	}
	if len(c.Servers) > 0 {
		c.Nodes = len(c.Servers)
	}
	if c.Jar == "" {
		c.Jar = defaultJar
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 60 * time.Second
	}
	if c.ContainerCheck <= 0 {
		c.ContainerCheck = c.TTL
	}
	return c
}

// External reports whether the config names an existing ensemble.
func (c Config) External() bool { return len(c.Servers) > 0 }

// Validate checks the configuration (after defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.TTL < 20*time.Millisecond {
		return fmt.Errorf("zookeeper: TTL %v is below 20ms: the server's tick would be under 2ms", c.TTL)
	}
	if c.TTL%time.Millisecond != 0 {
		return fmt.Errorf("zookeeper: TTL %v is not whole milliseconds: session timeouts are negotiated in ms", c.TTL)
	}
	if c.Token != TokenCzxid && c.Token != TokenSequence {
		return fmt.Errorf("zookeeper: token source must be %q or %q, got %q", TokenCzxid, TokenSequence, c.Token)
	}
	if !strings.HasPrefix(c.LockPath, "/") || path.Clean(c.LockPath) != c.LockPath || c.LockPath == "/" {
		return fmt.Errorf("zookeeper: lock path %q must be an absolute znode path below /", c.LockPath)
	}
	if c.External() {
		if c.ClockRate != 0 {
			return errors.New("zookeeper: a clock rate needs servers fencecheck starts (libfaketime is preloaded at start), not an existing ensemble")
		}
		for _, s := range c.Servers {
			host, port, err := net.SplitHostPort(s)
			if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 || host == "" {
				return fmt.Errorf("zookeeper: server %q is not host:port", s)
			}
		}
		return nil
	}
	if c.Nodes != 1 && c.Nodes != 3 && c.Nodes != 5 {
		return fmt.Errorf("zookeeper: nodes must be 1, 3 or 5, got %d", c.Nodes)
	}
	if c.Dir == "" {
		return errors.New("zookeeper: Dir (where the started servers keep their data) is required")
	}
	if c.ClockRate < 0 || c.ClockRate > 100 {
		return fmt.Errorf("zookeeper: clock rate must be between 0 (real time) and 100, got %g", c.ClockRate)
	}
	if len(c.ClientPorts) > 0 && len(c.ClientPorts) != c.Nodes {
		return fmt.Errorf("zookeeper: %d client ports for %d nodes", len(c.ClientPorts), c.Nodes)
	}
	return nil
}

// tickTime is the started servers' tick: TTL/10, so that the TTL is 10 ticks, well
// inside the 2..20 ticks ZooKeeper grants by default; sessions expire on tick
// boundaries, so a server forgets a silent session between TTL and TTL+tick.
func (c Config) tickTime() time.Duration {
	return max(time.Millisecond, (c.TTL / 10).Truncate(time.Millisecond))
}
