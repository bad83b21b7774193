package reports_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/reports/reporttest"
)

// The summary says the granted TTL only when it differs from the asked one, and the
// server's version and session timeouts when the run recorded them.
func TestSummaryGranted(t *testing.T) {
	h, rep := checked(t, reporttest.Options{Ops: 50})
	h.Run.TTLms, h.Run.GrantedTTLms = 500, 500
	var sum bytes.Buffer
	reports.Summary(&sum, h, rep)
	require.NotContains(t, sum.String(), "granted ttl")
	require.NotContains(t, sum.String(), "client library")

	h.Run.GrantedTTLms, h.Run.ServerVersion = 2000, "etcd 3.4.23"
	h.Run.SessionTimeouts = map[string]string{"wait_timeout": "28800"}
	h.Run.ClientLibrary = "go.etcd.io/etcd/client/v3 v3.7.3"
	sum.Reset()
	reports.Summary(&sum, h, rep)
	require.Contains(t, sum.String(), "granted ttl=2s (asked 500ms): the service's own figure\n")
	require.Contains(t, sum.String(), "server: etcd 3.4.23\n")
	require.Contains(t, sum.String(), "session timeouts: wait_timeout=28800\n")
	require.Contains(t, sum.String(), "client library: go.etcd.io/etcd/client/v3 v3.7.3\n")
}
