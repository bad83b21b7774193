package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/harness/nemesis"
	"github.com/fencecheck/fencecheck/harness/registry"
)

// ScheduleFormat names the schedule file's format (docs/explore.md, "The schedule
// file").
const ScheduleFormat = "fencecheck.schedule/v1"

// ScheduleFile is a replayable run: what `fencecheck explore` saves and `fencecheck run
// --schedule FILE` replays. Durations are Go duration strings ("1.5s", "300ms"), so that
// a maintainer can read and edit one.
type ScheduleFile struct {
	Format   string            `json:"format"`
	Backend  string            `json:"backend"`
	Resource string            `json:"resource"`
	Policy   string            `json:"policy,omitempty"`
	TTL      string            `json:"ttl"`
	Duration string            `json:"duration,omitempty"`
	Clients  int               `json:"clients"`
	Members  int               `json:"members,omitempty"`
	Seed     int64             `json:"seed"`
	Ops      int               `json:"ops,omitempty"`
	Keys     int               `json:"keys,omitempty"`
	Options  map[string]string `json:"options,omitempty"`
	Items    []ScheduleItem    `json:"items"`
}

// ScheduleItem is one fault of a schedule file: nemesis.Item with readable durations.
type ScheduleItem struct {
	At     string `json:"at"`
	Kind   string `json:"kind"`
	Client int    `json:"client"`
	Hold   string `json:"hold"`
	// Takeover: heal on the takeover, Hold at the latest (nemesis.Item.Takeover).
	Takeover bool `json:"takeover,omitempty"`
}

// NewScheduleFile is the schedule file of a resolved spec s with schedule sched. The
// options marked Secret in reg (a DSN with its password) are left out: a replay takes
// them from its flags or the environment.
func NewScheduleFile(reg *registry.Registry, s Spec, sched nemesis.Schedule) ScheduleFile {
	f := ScheduleFile{
		Format: ScheduleFormat, Backend: s.Backend, Resource: s.Resource, Policy: s.Policy,
		TTL: s.TTL.String(), Duration: s.Duration.String(), Clients: s.Clients, Members: s.Members, Seed: s.Seed, Ops: s.MaxOps,
	}
	if s.Keys > 1 {
		f.Keys = s.Keys
	}
	for k, v := range s.Options {
		if reg != nil && secretOption(reg, s, k) {
			continue
		}
		if f.Options == nil {
			f.Options = map[string]string{}
		}
		f.Options[k] = v
	}
	for _, it := range sched.Items {
		f.Items = append(f.Items, ScheduleItem{At: it.At.String(), Kind: it.Kind, Client: it.Client, Hold: it.Hold.String(), Takeover: it.Takeover})
	}
	return f
}

// secretOption reports whether option k of s's backend or resource carries credentials.
func secretOption(reg *registry.Registry, s Spec, k string) bool {
	var opts []registry.Option
	if b, ok := reg.Backend(s.Backend); ok {
		opts = append(opts, b.Options...)
	}
	if r, ok := reg.Resource(s.Resource); ok {
		opts = append(opts, r.Options...)
	}
	return slices.ContainsFunc(opts, func(o registry.Option) bool { return o.Name == k && o.Secret })
}

// Spec is the spec the file describes, with its schedule given (Spec.Schedule). Its
// errors name the field or the item (1-based) and wrap ErrSpec; Resolve checks the rest
// (kinds known and applicable, clients within the run's).
func (f ScheduleFile) Spec() (Spec, error) {
	bad := func(format string, a ...any) (Spec, error) {
		return Spec{}, Error{fmt.Errorf(format, a...)}
	}
	if f.Format != ScheduleFormat {
		return bad("format %q is not %q", f.Format, ScheduleFormat)
	}
	s := Spec{Backend: f.Backend, Resource: f.Resource, Policy: f.Policy, Clients: f.Clients, Members: f.Members, Seed: f.Seed, Options: f.Options, MaxOps: f.Ops, Keys: f.Keys}
	if f.Ops < 0 {
		return bad("ops must not be negative, got %d", f.Ops)
	}
	var err error
	if s.TTL, err = parseDuration("ttl", f.TTL); err != nil {
		return bad("%v", err)
	}
	if f.Duration != "" {
		if s.Duration, err = parseDuration("duration", f.Duration); err != nil {
			return bad("%v", err)
		}
	}
	sched := &nemesis.Schedule{Seed: f.Seed}
	for i, it := range f.Items {
		at, err := parseDuration("at", it.At)
		if err != nil {
			return bad("schedule item %d (%s): %v", i+1, it.Kind, err)
		}
		hold, err := parseDuration("hold", it.Hold)
		if err != nil {
			return bad("schedule item %d (%s at %v): %v", i+1, it.Kind, at, err)
		}
		sched.Items = append(sched.Items, nemesis.Item{At: at, Kind: it.Kind, Client: it.Client, Hold: hold, Takeover: it.Takeover})
	}
	s.Schedule = sched
	return s, nil
}

func parseDuration(field, v string) (time.Duration, error) {
	if v == "" {
		return 0, fmt.Errorf("%s is missing", field)
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a duration (e.g. 1.5s, 300ms)", field, v)
	}
	return d, nil
}

// ReadScheduleFile reads a schedule file: strictly (an unknown field is an error, a
// typo would otherwise be silently ignored). Errors wrap ErrSpec and name the file.
func ReadScheduleFile(path string) (Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Spec{}, Error{err}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f ScheduleFile
	if err := dec.Decode(&f); err != nil {
		return Spec{}, Error{fmt.Errorf("%s: not a schedule file: %v", path, err)}
	}
	s, err := f.Spec()
	if err != nil {
		return Spec{}, InFile(path, err)
	}
	return s, nil
}

// WriteScheduleFile writes f to path, indented.
func WriteScheduleFile(path string, f ScheduleFile) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// InFile says that err, a spec error, is about the file at path: "path: what is wrong".
// Any other error is returned as it is.
func InFile(path string, err error) error {
	if err == nil || !errors.Is(err, ErrSpec) {
		return err
	}
	return Error{fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), ErrSpec.Error()+": "))}
}
