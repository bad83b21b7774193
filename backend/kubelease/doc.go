// Package kubelease is the "kube-lease" lock backend: k8s.io/client-go's leaderelection
// with a LeaseLock, against a real kube-apiserver that fencecheck starts on loopback,
// storing its objects in an embedded etcd.
//
// There is no Debian package of kube-apiserver. The module in ./apiserver (not part of
// fencecheck's go.mod) pins k8s.io/kubernetes, and ./apiserver/build.sh builds the
// binary from the Go module proxy into a cache folder (CachePath) that CI keeps and
// the tests find; without it, the backend is unavailable and its tests skip.
//
// A grant is a LeaderElector that leads: Acquire starts one with an identity of its
// own, and returns at OnStartedLeading. Lost closes at OnStoppedLeading. The token is
// the Lease's spec.leaseTransitions as the granting update wrote it (kube-lease) or the
// resourceVersion that update returned (kube-lease-rv). The Lease itself is not a
// lock: a leader that stops hearing the apiserver keeps acting until its RenewDeadline
// passes, and one stopped for longer than LeaseDuration does not know it lost.
package kubelease
