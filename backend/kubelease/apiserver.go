package kubelease

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness/proc"
)

// APIServerVersion is the kube-apiserver that apiserver/build.sh builds (the module in
// backend/kubelease/apiserver pins it; it is not in fencecheck's own go.mod).
const APIServerVersion = "v1.37.2"

// EnvAPIServer names a kube-apiserver binary to run instead of the cached build.
const EnvAPIServer = "FENCECHECK_KUBE_APISERVER"

// EnvClient names a kube-lease-client binary to run instead of the cached build.
const EnvClient = "FENCECHECK_KUBE_LEASE_CLIENT"

// ClientName is the lock-client program the module in ./apiserver builds: client-go's
// leaderelection, one process per harness client (cmd/kube-lease-client there).
const ClientName = "kube-lease-client"

// ClientProtocol is the version of kube-lease-client's command line and exec-protocol
// extensions fencecheck speaks; a build that speaks another refuses to run.
const ClientProtocol = "1"

// BuildScript builds kube-apiserver and kube-lease-client into CacheDir, from the
// repository's root.
const BuildScript = "backend/kubelease/apiserver/build.sh"

// CacheDir is where BuildScript puts its builds: $FENCECHECK_CACHE, else
// $XDG_CACHE_HOME/fencecheck, else ~/.cache/fencecheck, then
// kube-apiserver-<APIServerVersion>. CI keeps that folder between runs.
func CacheDir() string {
	root := os.Getenv("FENCECHECK_CACHE")
	if root == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				home = os.TempDir()
			}
			base = filepath.Join(home, ".cache")
		}
		root = filepath.Join(base, "fencecheck")
	}
	return filepath.Join(root, "kube-apiserver-"+APIServerVersion)
}

// CachePath is the cached kube-apiserver build.
func CachePath() string { return filepath.Join(CacheDir(), "kube-apiserver") }

// ClientCachePath is the cached kube-lease-client build.
func ClientCachePath() string { return filepath.Join(CacheDir(), ClientName) }

// APIServerNeed is the kube-apiserver build: the cache folder BuildScript fills, else
// kube-apiserver on PATH.
var APIServerNeed = buildNeed("kube-apiserver", CachePath)

// ClientNeed is the kube-lease-client build, found the same way.
var ClientNeed = buildNeed(ClientName, ClientCachePath)

func buildNeed(name string, cached func() string) proc.Need {
	return proc.Need{Program: name, Build: BuildScript, Lookup: func() string {
		if p := cached(); executable(p) == nil {
			return p
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		return ""
	}}
}

// FindAPIServer returns the kube-apiserver to run: explicit if set, else
// $FENCECHECK_KUBE_APISERVER, else the cached build, else kube-apiserver on PATH. When
// there is none the error wraps proc.ErrNotFound and says how to build one.
func FindAPIServer(explicit string) (string, error) {
	return find("kube-apiserver", explicit, EnvAPIServer, APIServerNeed)
}

// FindClient returns the kube-lease-client to run, found as FindAPIServer finds
// kube-apiserver: explicit, $FENCECHECK_KUBE_LEASE_CLIENT, the cached build, PATH.
func FindClient(explicit string) (string, error) {
	return find(ClientName, explicit, EnvClient, ClientNeed)
}

// FindBuild is the first error of FindAPIServer and FindClient with the default
// places (nil when both are there): the tests skip on one wrapping proc.ErrNotFound.
func FindBuild() error {
	if _, err := FindAPIServer(""); err != nil {
		return err
	}
	_, err := FindClient("")
	return err
}

func find(name, explicit, env string, need proc.Need) (string, error) {
	for _, p := range []string{explicit, os.Getenv(env)} {
		if p == "" {
			continue
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("%s %s: %w", name, p, err)
		}
		return p, nil
	}
	p, err := need.Find()
	if err == nil {
		return p, nil
	}
	missing := proc.ErrNotFound
	if errors.Is(err, proc.ErrHidden) {
		missing = proc.ErrHidden
	}
	return "", fmt.Errorf("%s %s is not built (%s, about 5 min from the Go module proxy, puts it in %s; or set %s): %w",
		name, APIServerVersion, BuildScript, CacheDir(), env, missing)
}

func executable(p string) error {
	st, err := os.Stat(p)
	switch {
	case err != nil:
		return err
	case st.IsDir() || st.Mode()&0o111 == 0:
		return errors.New("not an executable file")
	}
	return nil
}

// APIServerConfig says how to start one kube-apiserver.
type APIServerConfig struct {
	// Binary is the kube-apiserver program (required: FindAPIServer).
	Binary string
	// Dir holds its serving certificates, service-account key and token file (required).
	Dir string
	// Etcd are the client addresses (host:port) of the etcd it stores objects in.
	Etcd []string
	// Port is the secure port; 0 picks a free one.
	Port int
	// Log receives the server's output (nil: discarded).
	Log io.Writer
	// ReadyTimeout bounds the wait for /readyz (default 60 s: a loaded machine).
	ReadyTimeout time.Duration
}

// APIServer is a kube-apiserver process fencecheck started on 127.0.0.1: a proc.Node
// (PID, Pause = SIGSTOP, Resume = SIGCONT, Crash = SIGKILL, Close) with its address and
// the bearer token its clients present.
type APIServer struct {
	*proc.Node
	addr  string
	token string
	dir   string
}

// StartAPIServer writes the server's key and token file into cfg.Dir, starts
// kube-apiserver on loopback against cfg.Etcd and waits until /readyz answers ok and the
// "default" namespace exists.
func StartAPIServer(ctx context.Context, cfg APIServerConfig) (*APIServer, error) {
	switch {
	case cfg.Binary == "":
		return nil, errors.New("kube-lease: APIServerConfig.Binary is required")
	case cfg.Dir == "":
		return nil, errors.New("kube-lease: APIServerConfig.Dir is required")
	case len(cfg.Etcd) == 0:
		return nil, errors.New("kube-lease: APIServerConfig.Etcd is required")
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = 60 * time.Second
	}
	token, err := writeCredentials(cfg.Dir)
	if err != nil {
		return nil, err
	}
	etcd := make([]string, len(cfg.Etcd))
	for i, e := range cfg.Etcd {
		etcd[i] = "http://" + e
	}
	key := filepath.Join(cfg.Dir, "sa.key")
	// A picked port that another process took before kube-apiserver bound it is
	// replaced by another (proc.OnFreePort).
	var n *proc.Node
	_, addr, err := proc.OnFreePort(ctx, cfg.Port, func(port int, addr string) error {
		var err error
		n, err = startAPIServer(ctx, cfg, etcd, key, token, port, addr)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &APIServer{Node: n, addr: addr, token: token, dir: cfg.Dir}, nil
}

// startAPIServer starts kube-apiserver on port and waits until it is ready.
func startAPIServer(ctx context.Context, cfg APIServerConfig, etcd []string, key, token string, port int, addr string) (*proc.Node, error) {
	return proc.StartNode(ctx, proc.Config{
		Name: "kube-apiserver on " + addr, Path: cfg.Binary,
		Args: []string{
			"--etcd-servers=" + strings.Join(etcd, ","),
			"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			// A self-signed serving certificate, made on the first start and kept for
			// restarts.
			"--cert-dir=" + filepath.Join(cfg.Dir, "certs"),
			"--service-account-issuer=https://kubernetes.default.svc",
			"--service-account-key-file=" + key, "--service-account-signing-key-file=" + key,
			"--service-cluster-ip-range=127.0.100.0/24",
			"--authorization-mode=AlwaysAllow",
			"--token-auth-file=" + filepath.Join(cfg.Dir, "tokens.csv"),
			// Nothing but loopback: no Service endpoints to reconcile, no API priority
			// queues between the few clients of one run.
			"--endpoint-reconciler-type=none",
			"--enable-priority-and-fairness=false",
		},
		Dir: cfg.Dir, Log: cfg.Log, ReadyTimeout: cfg.ReadyTimeout,
		Ready: func(ctx context.Context) error { return ready(ctx, addr, token) },
	})
}

// writeCredentials writes the service-account signing key and a token file naming one
// bearer token in system:masters, and returns the token.
func writeCredentials(dir string) (string, error) {
	if err := os.MkdirAll(filepath.Join(dir, "certs"), 0o700); err != nil {
		return "", fmt.Errorf("kube-lease: %w", err)
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("kube-lease: service-account key: %w", err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), pemKey, 0o600); err != nil {
		return "", fmt.Errorf("kube-lease: %w", err)
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("kube-lease: token: %w", err)
	}
	token := hex.EncodeToString(b)
	line := token + `,fencecheck,fencecheck,"system:masters"` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(line), 0o600); err != nil {
		return "", fmt.Errorf("kube-lease: %w", err)
	}
	return token, nil
}

// ready asks /readyz, then for the default namespace (created by a post-start hook that
// /readyz does not wait for: a Lease in it is refused until then).
func ready(ctx context.Context, addr, token string) error {
	c := &http.Client{
		Timeout: 2 * time.Second,
		// The server's certificate is the self-signed one it made; the link is loopback.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}, //nolint:gosec
	}
	for _, path := range []string{"/readyz", "/api/v1/namespaces/default"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
		}
	}
	return nil
}

// Addr is the server's host:port.
func (s *APIServer) Addr() string { return s.addr }

// Token is the bearer token clients present.
func (s *APIServer) Token() string { return s.token }

// Restart starts a crashed server again on the same port with the same key and
// certificates. Its state is in etcd, which did not crash: keepData=false is refused,
// as there is no disk of its own to lose.
func (s *APIServer) Restart(ctx context.Context, keepData bool) error {
	if !keepData {
		return errors.New("kube-lease: kube-apiserver keeps nothing of its own; a restart without data would mean wiping etcd, which this backend does not do")
	}
	return s.Node.Restart(ctx, "")
}

// CABundle is the file with the server's self-signed certificate and the CA that signed
// it (kube-apiserver writes both when it makes them).
func (s *APIServer) CABundle() string { return filepath.Join(s.dir, "certs", "apiserver.crt") }

// WriteKubeconfig writes a kubeconfig for this server (its CA bundle and bearer token)
// to path: for kubectl, or for a run against it as an existing cluster.
func (s *APIServer) WriteKubeconfig(path string) error {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fencecheck
  cluster:
    server: https://%s
    certificate-authority: %s
users:
- name: fencecheck
  user:
    token: %s
contexts:
- name: fencecheck
  context: {cluster: fencecheck, user: fencecheck}
current-context: fencecheck
`, s.addr, s.CABundle(), s.token)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("kube-lease: %w", err)
	}
	return nil
}
