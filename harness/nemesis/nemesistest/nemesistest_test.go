package nemesistest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
)

func ms(n int64) int64 { return n * 1e6 }

func op(id, client int, kind history.Kind, call, ret int64, st history.Status, value string) history.Op {
	r := ms(ret)
	o := history.Op{ID: id, Client: client, Kind: kind, Call: ms(call), Return: &r, Status: st, Token: int64(id), Value: value}
	if ret < 0 {
		o.Return = nil
	}
	return o
}

// The check accepts a detail that is true of the ops and names what is wrong with each
// kind of false one, including the issue's own: "no other client's write" while one was
// accepted, and a raw Go duration.
func TestCheck(t *testing.T) {
	const (
		start    = "client 0 stopped at after-acquire, all its links stalled"
		hold     = "healed after its 2.10 s hold"
		accepted = "2 writes by other clients were accepted during it, the first client 1's write #2 at 1.21 s"
	)
	base := []history.Op{
		op(1, 0, history.Acquire, 100, 110, history.OK, ""),
		op(2, 1, history.Write, 1200, 1210, history.OK, "c1-1"),
		op(3, 1, history.Write, 1300, 1310, history.OK, "c1-2"),
		op(4, 1, history.Write, 1400, 1410, history.Rejected, "c1-3"), // refused: not accepted
		op(5, 0, history.Write, 2700, 2720, history.Rejected, "c0-1"),
		op(6, 1, history.Write, 2800, 2810, history.OK, "c1-4"), // after the fault
	}
	for _, tc := range []struct {
		name   string
		detail string
		extra  []history.Op
		want   string // a problem contains it; "" = none
	}{
		{"true", start + "; " + hold + "; " + accepted, nil, ""},
		{"healed by a write", start + "; healed when client 1's write #3 was accepted at 1.31 s; " + accepted, nil, ""},
		{"exclusive", start + "; " + hold + "; " + accepted + "; the other clients were held until client 0's write #5 returned at 2.72 s", nil, ""},
		{"held for the cap", start + "; " + hold + "; " + accepted + "; the other clients were held for 2.00 s, the cap, waiting for client 0's next write", nil, ""},
		{"an older wording", start + "; no other client's write was accepted within 1.112752037s", nil, "not one this check understands"},
		{"none while two were", start + "; " + hold + "; no other client's write was accepted during it", nil, "but 2 writes by other clients were accepted"},
		{"wrong count", start + "; " + hold + "; 1 write by another client was accepted during it: client 1's write #2 at 1.21 s", nil, "but 2 writes"},
		{"not the first", start + "; " + hold + "; 2 writes by other clients were accepted during it, the first client 1's write #3 at 1.31 s", nil, "the first was op 2"},
		{"wrong time", start + "; " + hold + "; 2 writes by other clients were accepted during it, the first client 1's write #2 at 1.20 s", nil, "returned at 1.21 s"},
		{"no such op", start + "; " + hold + "; 2 writes by other clients were accepted during it, the first client 1's write #9 at 1.21 s", nil, "there is no op 9"},
		{"hold longer than the fault", start + "; healed after its 3.00 s hold; " + accepted, nil, "the fault lasted 2.10 s"},
		{"healed by a refused write", start + "; healed when client 1's write #4 was accepted at 1.41 s; " + accepted, nil, "op 4 is rejected"},
		{"healed by a refusal after an accepted write", start + "; healed when client 1's write #4 was refused at 1.41 s, after client 1's write #2 was accepted at 1.21 s; " + accepted, nil, ""},
		{"healed by a refusal said accepted", start + "; healed when client 1's write #3 was refused at 1.31 s, after client 1's write #2 was accepted at 1.21 s; " + accepted, nil, "op 3 is ok"},
		{"healed by a refusal after the second acceptance", start + "; healed when client 1's write #4 was refused at 1.41 s, after client 1's write #3 was accepted at 1.31 s; " + accepted, nil, ""},
		{"healed by a refusal of an acceptance after it", start + "; healed when client 1's write #4 was refused at 1.41 s, after client 1's write #6 was accepted at 2.81 s; " + accepted, nil, "not inside the fault"},
		{"healed by its own write", start + "; healed when client 0's write #5 was accepted at 2.72 s; " + accepted, nil, "own write"},
		{"wrong point", "client 0 stopped at after-read, all its links stalled; " + hold + "; " + accepted, nil, "last op before it was acquire"},
		{"stopped but busy", start + "; " + hold + "; " + accepted, []history.Op{op(7, 0, history.Read, 1000, 1001, history.OK, "")}, "called op 7"},
		{"other client named", "client 1 stopped at after-acquire, all its links stalled; " + hold + "; " + accepted, nil, "names client 1"},
		{"no heal clause", start + "; " + accepted, nil, "0 heal clauses"},
		{"process stopped and continued", start + "; its process group 42 stopped with SIGSTOP; " + hold + "; process group 42 continued with SIGCONT after 2.05 s stopped; " + accepted, nil, ""},
		{"process killed", start + "; its process group 42 killed with SIGKILL (the lease it held died with it) and a fresh process 43 started; " + hold + "; " + accepted, nil, ""},
		{"process never continued", start + "; its process group 42 stopped with SIGSTOP; " + hold + "; " + accepted, nil, "never continued"},
		{"another group continued", start + "; its process group 42 stopped with SIGSTOP; " + hold + "; process group 41 continued with SIGCONT after 1.00 s stopped; " + accepted, nil, "the group stopped was"},
		{"stopped longer than the fault", start + "; its process group 42 stopped with SIGSTOP; " + hold + "; process group 42 continued with SIGCONT after 3.00 s stopped; " + accepted, nil, "the fault lasted 2.10 s"},
		{"held by another's write", start + "; " + hold + "; " + accepted + "; the other clients were held until client 1's write #6 returned at 2.81 s", nil, "another client's write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			end := ms(2600)
			h := &history.History{
				Ops:    append(append([]history.Op(nil), base...), tc.extra...),
				Faults: []history.Fault{{Kind: "pause", Target: "client-0", Start: ms(500), End: &end, Detail: tc.detail}},
			}
			clauses, problems := Check(h)
			if tc.want == "" {
				require.Empty(t, problems)
				require.Positive(t, clauses)
				return
			}
			require.NotEmpty(t, problems)
			require.Contains(t, problems[0], tc.want)
		})
	}
}

// Faults on the lock service describe what was done to it and are not checked; a client
// fault that never healed is a problem.
func TestCheckScope(t *testing.T) {
	h := &history.History{Faults: []history.Fault{
		{Kind: "node-pause", Target: "node-1", Detail: "leader node 1 paused"},
		{Kind: "pause", Target: "client-0", Detail: "client 0 stopped at after-read, all its links stalled"},
	}}
	clauses, problems := Check(h)
	require.Zero(t, clauses)
	require.Len(t, problems, 1)
	require.Contains(t, problems[0], "never healed")
}

// An action on a client's clock is its one clause, and must be on that client.
func TestCheckClientClock(t *testing.T) {
	end := int64(2e9)
	detail := "client-2's clock runs 20x fast (its leases expire 20x early in real time)"
	h := &history.History{Faults: []history.Fault{
		{Kind: "skew", Target: "client-2", Start: 1e9, End: &end, Detail: detail},
	}}
	clauses, problems := Check(h)
	require.Equal(t, 1, clauses)
	require.Empty(t, problems)
	h.Faults[0].Target = "client-1"
	_, problems = Check(h)
	require.Len(t, problems, 1)
}
