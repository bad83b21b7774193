package models

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
)

// Under an owner guard (etcd-txn) a refusal needs no explanation: a writer whose lock
// expired is refused even though no newer token is stored. Under strict the same
// refusal is a fence that is not atomic. (Owner: not violated, and inconclusive, as no
// write was accepted: the history shows the fence nothing to keep out.)
func TestOwnerFenceRefusals(t *testing.T) {
	ret := func(n int64) *int64 { return &n }
	rid := 2
	h := &history.History{Format: history.Format, Ops: []history.Op{
		{ID: 1, Client: 0, Kind: history.Acquire, Call: 1, Return: ret(2), Status: history.OK, Token: 5},
		{ID: 2, Client: 0, Kind: history.Read, Call: 3, Return: ret(4), Status: history.OK},
		{ID: 3, Client: 0, Kind: history.Write, Call: 5, Return: ret(6), Status: history.Rejected, Token: 5, Value: "c0-1", ReadID: &rid},
		{ID: 4, Client: 1, Kind: history.Read, Call: 7, Return: ret(8), Status: history.OK},
	}}
	for fence, want := range map[string]Verdict{history.FenceOwner: Inconclusive, history.FenceStrict: Violated} {
		h.Run.Fence = fence
		rep, err := Check(context.Background(), h, Options{})
		require.NoError(t, err)
		require.Equal(t, want, rep.Verdicts[Register], fence)
		require.True(t, rep.Agree, fence)
		if want == Inconclusive {
			res, _ := rep.Result(Register)
			require.Equal(t, ReasonNoAcceptedWrite, res.Reason)
		}
	}
}
