package clienthost_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/backend/clienthost"
	"github.com/fencecheck/fencecheck/backend/leasetable"
	"github.com/fencecheck/fencecheck/backend/mariadblock"
	natslock "github.com/fencecheck/fencecheck/backend/nats"
	"github.com/fencecheck/fencecheck/backend/pgadvisory"
	redislock "github.com/fencecheck/fencecheck/backend/redis"
	"github.com/fencecheck/fencecheck/backend/zookeeper"
	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/history"
	"github.com/fencecheck/fencecheck/harness/proc"
	"github.com/fencecheck/fencecheck/harness/proc/proctest"
	"github.com/fencecheck/fencecheck/spec"
	"github.com/fencecheck/fencecheck/trial"
)

// TestMain serves a client host when this test binary is started as one (the tests'
// runs host their lock clients in it), and checks that nothing outlives the tests.
func TestMain(m *testing.M) {
	clienthost.ServeIfHost(builtin.HostLockers)
	os.Exit(proctest.VerifyNoLeaks(m))
}

func host(t *testing.T) *clienthost.Host {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return &clienthost.Host{Exe: exe}
}

// hostable are the built-in backends whose lock clients run in a client host, and what
// each needs on this machine.
var hostable = []struct {
	backend string
	needs   []proc.Need
	options map[string]string
	// module is the lock client's Go module, which the host reports as its library
	// ("": the client is fencecheck's own).
	module string
}{
	{"naive", nil, nil, ""},
	{"etcd", nil, nil, "go.etcd.io/etcd/client/v3"},
	{"redis", []proc.Need{redislock.ServerNeed}, nil, "github.com/gomodule/redigo"},
	{"redlock", []proc.Need{redislock.ServerNeed}, nil, "github.com/go-redsync/redsync/v4"},
	{"nats", []proc.Need{natslock.ServerNeed}, nil, "github.com/nats-io/nats.go"},
	{"zookeeper", zookeeper.ServerNeeds(zookeeper.Config{}), nil, "github.com/go-zookeeper/zk"},
	{"postgres-advisory", []proc.Need{pgadvisory.ServerNeed}, nil, "github.com/jackc/pgx/v5"},
	{"mariadb-lock", []proc.Need{mariadblock.ServerNeed}, nil, "github.com/go-sql-driver/mysql"},
	{"raft", nil, nil, ""},
	{"lease-table", nil, nil, ""},
	{"lease-table-clienttime", nil, nil, ""},
	{"lease-table", []proc.Need{pgadvisory.ServerNeed}, map[string]string{leasetable.OptionStore: leasetable.StorePostgres}, "github.com/jackc/pgx/v5"},
}

var stoppedFor = regexp.MustCompile(`its process group (\d+) stopped with SIGSTOP.*process group (\d+) continued with SIGCONT after ([0-9.]+) s stopped`)

// A pause of a hosted client stops its whole process group: the fault detail says so,
// and no loss is recorded for the struck client while it is stopped — its lock library
// (renewals, keep-alives, loss watchers) is stopped with it. An in-process client's
// library would notice its stalled renewals and record the loss during the pause.
func TestPauseStopsTheWholeClient(t *testing.T) {
	for _, tc := range hostable {
		name := tc.backend
		if st := tc.options[leasetable.OptionStore]; st != "" {
			name += "-" + st
		}
		t.Run(name, func(t *testing.T) {
			proctest.Skip(t, tc.needs...)
			s := spec.Spec{Backend: tc.backend, Resource: "unfenced", Faults: []string{"pause"}, Duration: 2 * time.Second, TTL: time.Second, Seed: 1, Options: tc.options}
			o, err := trial.Run(context.Background(), builtin.Registry(), s, trial.Options{Host: host(t)})
			require.NoError(t, err)
			h := o.History
			require.Contains(t, h.Run.Extra["lock_clients"], "client host")
			// The host said its library: the Go module with the version it was built with.
			if tc.module == "" {
				require.Empty(t, h.Run.ClientLibrary)
			} else {
				// (A test binary's build information has no versions of its dependencies:
				// the path alone; cmd/fencecheck's TestClientLibraryOfABuild sees one.)
				require.Equal(t, harness.ModuleVersion(tc.module), h.Run.ClientLibrary)
			}
			var pause *history.Fault
			for i := range h.Faults {
				if h.Faults[i].Kind == "pause" {
					pause = &h.Faults[i]
				}
			}
			require.NotNil(t, pause, "the pause struck")
			m := stoppedFor.FindStringSubmatch(pause.Detail)
			require.NotNil(t, m, "the detail names the stopped process group: %s", pause.Detail)
			require.Equal(t, m[1], m[2])
			secs, err := strconv.ParseFloat(m[3], 64)
			require.NoError(t, err)
			// The detail rounds the time stopped to 10 ms, and the SIGSTOP lands after the
			// fault's start: up to Start + secs - 5 ms the process was surely still
			// stopped. A loss the library sends right after its SIGCONT is not in it.
			stoppedUntil := pause.Start + int64(secs*float64(time.Second)) - int64(5*time.Millisecond)
			var client int
			_, err = fmtSscan(pause.Target, &client)
			require.NoError(t, err)
			for _, l := range h.Lost {
				require.False(t, l.Client == client && l.At >= pause.Start && l.At < stoppedUntil,
					"client %d recorded a loss at %s while its process was stopped (%s to %s): its lock library ran on (%s)",
					client, history.Seconds(l.At), history.Seconds(pause.Start), history.Seconds(stoppedUntil), l.Reason)
			}
		})
	}
}

// A stall blocks only the holder's worker goroutine: its lock library keeps running,
// so a renewing client (naive renews every TTL/3 and gives the lease up when no
// renewal is confirmed for a TTL) records the loss while the worker is blocked — in a
// hosted run too, where the host process goes on.
func TestStallLetsTheLibraryRun(t *testing.T) {
	s := spec.Spec{Backend: "naive", Resource: "fenced", Faults: []string{"stall"}, Duration: 2 * time.Second, TTL: time.Second, Seed: 1}
	o, err := trial.Run(context.Background(), builtin.Registry(), s, trial.Options{Host: host(t)})
	require.NoError(t, err)
	h := o.History
	require.Nil(t, h.Run.Extra["lock_clients"], "a stall needs no client host")
	var stall *history.Fault
	for i := range h.Faults {
		if h.Faults[i].Kind == "stall" {
			stall = &h.Faults[i]
		}
	}
	require.NotNil(t, stall, "the stall struck")
	require.Contains(t, stall.Detail, "a stall: only its worker goroutine is blocked")
	require.NotContains(t, stall.Detail, "SIGSTOP")
	require.NotNil(t, stall.End)
	var client int
	_, err = fmtSscan(stall.Target, &client)
	require.NoError(t, err)
	noticed := false
	for _, l := range h.Lost {
		if l.Client == client && l.At >= stall.Start && l.At <= *stall.End {
			noticed = true
		}
	}
	require.True(t, noticed, "client %d's lock library noticed nothing during the stall: %+v", client, h.Lost)
}

func fmtSscan(target string, client *int) (int, error) {
	return fmt.Sscanf(target, "client-%d", client)
}

// A run whose faults need the harness's own clock of each client keeps its lock
// clients in-process and says so, in the run and in the pause's detail: a host would
// read its own clock, and the fault would silently act on nothing.
func TestClockFaultKeepsClientsInProcess(t *testing.T) {
	s := spec.Spec{Backend: "naive", Resource: "fenced", Faults: []string{"pause", "skew"}, Duration: 2 * time.Second, TTL: time.Second, Seed: 1}
	o, err := trial.Run(context.Background(), builtin.Registry(), s, trial.Options{Host: host(t)})
	require.NoError(t, err)
	require.Contains(t, o.History.Run.Extra["lock_clients"], "in-process: fault skew acts on the harness's clock of each client")
	var pause *history.Fault
	for i := range o.History.Faults {
		if o.History.Faults[i].Kind == "pause" {
			pause = &o.History.Faults[i]
		}
	}
	require.NotNil(t, pause, "the pause struck")
	require.Contains(t, pause.Detail, "its lock client runs inside fencecheck, so only its worker goroutine is blocked")
	require.NotContains(t, pause.Detail, "SIGSTOP")
}
