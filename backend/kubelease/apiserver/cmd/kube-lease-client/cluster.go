package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// cluster is a kubeconfig's server: the rest.Config its current context gives, and the
// server's host:port (with the scheme's default port filled in).
type cluster struct {
	path   string
	rc     *rest.Config
	url    *url.URL
	target string
}

func loadCluster(path string) (*cluster, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kube-lease: kubeconfig %s: %w", path, err)
	}
	u, err := url.Parse(rc.Host)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("kube-lease: kubeconfig %s: server %q is not a URL", path, rc.Host)
	}
	if rc.Proxy != nil {
		// Each client's traffic must go through its own fault proxy and nothing else.
		return nil, fmt.Errorf("kube-lease: kubeconfig %s: a proxy-url is not supported (fencecheck's fault proxy must be the clients' only hop)", path)
	}
	host := u.Host
	if u.Port() == "" {
		port := "443"
		if u.Scheme == "http" {
			port = "80"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	return &cluster{path: path, rc: rc, url: u, target: host}, nil
}

// client is a coordination/v1 client of the server at addr (the server's own host:port,
// or a fault proxy in front of it) with an HTTP client of its own.
func (c *cluster) client(addr string, dialTimeout time.Duration) (*coordclient.CoordinationV1Client, *http.Client, error) {
	rc := rest.CopyConfig(c.rc)
	u := *c.url
	u.Host = addr
	rc.Host = u.String()
	if !rc.Insecure && rc.ServerName == "" {
		// A client dials 127.0.0.1:<proxy port>; the certificate is the server's.
		rc.ServerName = c.url.Hostname()
	}
	// A Dial of our own also keeps client-go from sharing one transport between
	// clients (it caches transports only without one).
	d := &net.Dialer{Timeout: dialTimeout}
	rc.Dial = d.DialContext
	// No client-side rate limit: a candidate polls every RetryPeriod.
	rc.QPS, rc.WarningHandler = -1, rest.NoWarnings{}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("kube-lease: client: %w", err)
	}
	cc, err := coordclient.NewForConfigAndClient(rc, hc)
	if err != nil {
		return nil, nil, fmt.Errorf("kube-lease: client: %w", err)
	}
	return cc, hc, nil
}

func direct(c common) (*cluster, *coordclient.CoordinationV1Client, func(), error) {
	cl, err := loadCluster(c.kubeconfig)
	if err != nil {
		return nil, nil, nil, err
	}
	cc, hc, err := cl.client(cl.target, 10*time.Second)
	if err != nil {
		return nil, nil, nil, err
	}
	return cl, cc, hc.CloseIdleConnections, nil
}

// createLease creates the Lease with no holder, so that the first grant is transition 1
// (a token above a fenced resource's initial 0).
func createLease(ctx context.Context, c common) error {
	cl, cc, done, err := direct(c)
	if err != nil {
		return err
	}
	defer done()
	none, one, zero := "", int32(1), int32(0)
	_, err = cc.Leases(c.namespace).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: c.lease, Namespace: c.namespace},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &none, LeaseDurationSeconds: &one, LeaseTransitions: &zero},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("kube-lease: create Lease %s/%s at %s: %w", c.namespace, c.lease, cl.target, err)
	}
	return nil
}

func deleteLease(ctx context.Context, c common) error {
	cl, cc, done, err := direct(c)
	if err != nil {
		return err
	}
	defer done()
	if err := cc.Leases(c.namespace).Delete(ctx, c.lease, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("kube-lease: delete Lease %s/%s at %s: %w", c.namespace, c.lease, cl.target, err)
	}
	return nil
}

func listLeases(ctx context.Context, c common, w io.Writer) error {
	cl, cc, done, err := direct(c)
	if err != nil {
		return err
	}
	defer done()
	l, err := cc.Leases(c.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("kube-lease: list Leases in %s at %s: %w", c.namespace, cl.target, err)
	}
	for _, it := range l.Items {
		if _, err := fmt.Fprintln(w, it.Name); err != nil {
			return err
		}
	}
	return nil
}

func printEndpoint(c common, w io.Writer) error {
	cl, err := loadCluster(c.kubeconfig)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, cl.target)
	return err
}

// printVersion asks the server for its version over its own API (GET /version, what
// kubectl version reads) and prints "kube-apiserver <gitVersion>".
func printVersion(ctx context.Context, c common, w io.Writer) error {
	cl, cc, done, err := direct(c)
	if err != nil {
		return err
	}
	defer done()
	raw, err := cc.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return fmt.Errorf("kube-lease: GET /version at %s: %w", cl.target, err)
	}
	var info struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.Unmarshal(raw, &info); err != nil || info.GitVersion == "" {
		return fmt.Errorf("kube-lease: GET /version at %s: no gitVersion in %.200q", cl.target, raw)
	}
	_, err = fmt.Fprintln(w, "kube-apiserver "+info.GitVersion)
	return err
}

// clientGoVersion is the client-go module this program was built with, "k8s.io/client-go
// v0.37.2" (its build information; the path alone when the build says no version).
func clientGoVersion() string {
	const path = "k8s.io/client-go"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return path
	}
	for _, m := range info.Deps {
		if m.Path != path {
			continue
		}
		if m.Replace != nil && m.Replace.Version != "" {
			m = m.Replace
		}
		if m.Version != "" && m.Version != "(devel)" {
			return path + " " + m.Version
		}
	}
	return path
}
