package spec_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/builtin"
	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/spec"
)

// A schedule file written from a spec reads back as the same spec, which resolves and
// runs the schedule as given.
func TestScheduleFileRoundTrip(t *testing.T) {
	reg := builtin.Registry()
	sched := nemesis.Schedule{Seed: 9, Items: []nemesis.Item{
		{At: 1500 * time.Millisecond, Kind: "pause", Client: 1, Hold: 700 * time.Millisecond},
		{At: 3 * time.Second, Kind: "delay", Client: 0, Hold: 250 * time.Millisecond},
		{At: 0, Kind: "stall", Client: 2, Hold: 5 * time.Second, Takeover: true},
	}}
	in := spec.Spec{Backend: "naive", Resource: "unfenced", Policy: "trusting", TTL: 500 * time.Millisecond, Duration: 4 * time.Second,
		Clients: 3, Members: 1, Seed: 9, Schedule: &sched, MaxOps: 24, Keys: 2}
	r, err := spec.Resolve(reg, in)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, spec.WriteScheduleFile(path, spec.NewScheduleFile(reg, r.Spec, sched)))
	out, err := spec.ReadScheduleFile(path)
	require.NoError(t, err)
	require.Equal(t, sched.Items, out.Schedule.Items)
	require.Equal(t, in.Backend, out.Backend)
	require.Equal(t, in.Resource, out.Resource)
	require.Equal(t, in.TTL, out.TTL)
	require.Equal(t, in.Clients, out.Clients)
	require.Equal(t, in.Seed, out.Seed)
	require.Equal(t, 24, out.MaxOps)
	require.Equal(t, 2, out.Keys)
	back, err := spec.Resolve(reg, out)
	require.NoError(t, err)
	got, ok := back.Schedule()
	require.True(t, ok)
	require.Equal(t, sched.Items, got.Items, "the run uses the schedule as given, not one drawn from the seed")
	require.Equal(t, []string{"delay", "pause", "stall"}, spec.ScheduleKinds(got))
}

// Every bad schedule is refused in one line that names the file (when read from one)
// and the item, as a spec error.
func TestScheduleFileErrors(t *testing.T) {
	const head = `"format": "fencecheck.schedule/v1", "backend": "naive", "resource": "unfenced", "ttl": "500ms", "clients": 2, "seed": 1`
	item := func(at, kind string, client int, hold string) string {
		return `{"at": "` + at + `", "kind": "` + kind + `", "client": ` + string(rune('0'+client)) + `, "hold": "` + hold + `"}`
	}
	for _, tc := range []struct {
		name, body, want string
	}{
		{"not JSON", `{"format": `, "not a schedule file"},
		{"unknown field", `{` + head + `, "itmes": []}`, `not a schedule file: json: unknown field "itmes"`},
		{"wrong format", `{"format": "v0", "ttl": "1s", "items": []}`, `format "v0" is not "fencecheck.schedule/v1"`},
		{"bad ttl", `{"format": "fencecheck.schedule/v1", "backend": "naive", "ttl": "soon", "items": []}`, `ttl "soon" is not a duration`},
		{"bad hold", `{` + head + `, "items": [` + item("1s", "pause", 0, "long") + `]}`, `schedule item 1 (pause at 1s): hold "long" is not a duration`},
		{"no items", `{` + head + `, "items": []}`, "the schedule has no item"},
		{"unknown fault", `{` + head + `, "items": [` + item("1s", "pause", 0, "1s") + `, ` + item("2s", "meteor", 0, "1s") + `]}`, `schedule item 2 (meteor at 2s): unknown fault "meteor"`},
		{"fault that does not apply", `{` + head + `, "items": [` + item("1s", "client-crash", 0, "1s") + `]}`, `schedule item 1 (client-crash at 1s): fault "client-crash" kills a lock client that is a process of its own`},
		{"client out of range", `{` + head + `, "items": [` + item("1s", "pause", 2, "1s") + `]}`, "schedule item 1 (pause at 1s): client 2 is not one of the run's 2 clients (0 to 1)"},
		{"negative at", `{` + head + `, "items": [` + item("-1s", "pause", 0, "1s") + `]}`, "schedule item 1 (pause at -1s): at must not be negative"},
		{"takeover of a service fault", `{` + head + `, "items": [{"at": "1s", "kind": "crash", "client": 0, "hold": "1s", "takeover": true}]}`, "schedule item 1 (crash at 1s): takeover applies to a fault on a client, and crash acts on the lock service"},
		{"negative ops", `{` + head + `, "ops": -3, "items": [` + item("1s", "pause", 0, "1s") + `]}`, "ops must not be negative, got -3"},
		{"negative hold", `{` + head + `, "items": [` + item("1s", "pause", 0, "-1s") + `]}`, "schedule item 1 (pause at 1s): hold must be positive"},
		{"unknown backend", `{"format": "fencecheck.schedule/v1", "backend": "chubby", "resource": "unfenced", "ttl": "1s", "clients": 2, "items": [` + item("1s", "pause", 0, "1s") + `]}`, `unknown backend "chubby"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.json")
			require.NoError(t, os.WriteFile(path, []byte(tc.body), 0o644))
			s, err := spec.ReadScheduleFile(path)
			if err == nil {
				_, err = spec.Resolve(builtin.Registry(), s)
				err = spec.InFile(path, err)
			}
			require.ErrorIs(t, err, spec.ErrSpec)
			require.ErrorContains(t, err, tc.want)
			require.True(t, strings.HasPrefix(err.Error(), path+": "), err.Error())
			require.NotContains(t, err.Error(), "\n")
		})
	}
	_, err := spec.ReadScheduleFile(filepath.Join(t.TempDir(), "missing.json"))
	require.ErrorIs(t, err, spec.ErrSpec)
	require.ErrorContains(t, err, "missing.json: no such file or directory")
}

// A given schedule excludes other faults, and makes the run last until it healed.
func TestScheduleSpec(t *testing.T) {
	reg := builtin.Registry()
	sched := &nemesis.Schedule{Items: []nemesis.Item{{At: 3 * time.Second, Kind: "pause", Client: 0, Hold: 2 * time.Second}}}
	_, err := spec.Resolve(reg, spec.Spec{Backend: "naive", Faults: []string{"pause"}, Schedule: sched})
	require.ErrorContains(t, err, "give either a schedule or faults")
	r, err := spec.Resolve(reg, spec.Spec{Backend: "naive", Schedule: sched, TTL: 500 * time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, 5500*time.Millisecond, r.Spec.Duration, "the last fault heals at 5 s, and a TTL")
	require.True(t, r.Target.Random, "the schedule decides when, whom and how long")
}

// Early arms a strike on the holder at once and heals it on the takeover, unless the
// strike carries a fault on the lock service; a takeover item of a schedule strikes
// as an early strike does.
func TestEarlyStrikes(t *testing.T) {
	reg := builtin.Registry()
	faults := func(s spec.Spec) []nemesis.ClientFault {
		r, err := spec.Resolve(reg, s)
		require.NoError(t, err)
		return r.ClientFaults(nil)
	}
	ttl := 500 * time.Millisecond
	late := faults(spec.Spec{Backend: "naive", Faults: []string{"pause"}, TTL: ttl})
	early := faults(spec.Spec{Backend: "naive", Faults: []string{"pause"}, TTL: ttl, Early: true})
	require.Len(t, early, 1)
	require.Equal(t, ttl, late[0].ArmAfter)
	require.Equal(t, 2*ttl, late[0].MinHold)
	require.Zero(t, early[0].ArmAfter)
	require.Equal(t, ttl/20, early[0].MinHold)
	require.Equal(t, late[0].MaxHold, early[0].MaxHold)
	require.True(t, early[0].Exclusive)
	crash := faults(spec.Spec{Backend: "naive", Faults: []string{"crash"}, TTL: ttl, Early: true})
	require.Equal(t, ttl, crash[0].ArmAfter, "a crash of the service keeps the usual arming")

	sched := &nemesis.Schedule{Items: []nemesis.Item{{At: 0, Kind: "pause", Client: 1, Hold: 2 * time.Second, Takeover: true}}}
	took := faults(spec.Spec{Backend: "naive", TTL: ttl, Clients: 2, Schedule: sched})
	require.Len(t, took, 1)
	require.Equal(t, early[0].Point, took[0].Point, "the pause's own point, not any")
	require.False(t, took[0].AnyPoint)
	require.Equal(t, ttl/20, took[0].MinHold)
	require.Equal(t, 2*time.Second, took[0].MaxHold)
	require.True(t, took[0].Targeted)
	require.Equal(t, 1, took[0].Client)
}
