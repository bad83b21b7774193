package models

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"

	"github.com/fencecheck/fencecheck/harness/history"
)

// keyedOps builds ops from a compact table: each row is one op on a key.
type keyedRow struct {
	key          string
	client       int
	kind         history.Kind
	call, ret    int64
	status       history.Status
	token        int64
	value        string
	readID       int
	unknownNoRet bool
}

func keyedHistory(rows []keyedRow) *history.History {
	h := &history.History{Format: history.Format, Faults: []history.Fault{}}
	for i, r := range rows {
		o := history.Op{ID: i + 1, Client: r.client, Kind: r.kind, Call: r.call, Status: r.status, Token: r.token, Value: r.value, Key: r.key}
		if r.status != history.Unknown {
			ret := r.ret
			o.Return = &ret
		}
		if r.readID != 0 {
			id := r.readID
			o.ReadID = &id
		}
		h.Ops = append(h.Ops, o)
	}
	return h
}

// Two keys, each fine on its own: merged into one register they would be a stale write
// (token 1 after token 2) and an overlapping hold, so the keys must be checked apart.
func TestKeysAreIndependent(t *testing.T) {
	ok, rej := history.OK, history.Rejected
	for _, tc := range []struct {
		name string
		rows []keyedRow
		want map[Property]Verdict
	}{
		{
			name: "each key held",
			rows: []keyedRow{
				{"a", 0, history.Acquire, 0, 10, ok, 1, "", 0, false},
				{"b", 1, history.Acquire, 1, 11, ok, 1, "", 0, false},
				{"a", 0, history.Read, 12, 13, ok, 0, "", 0, false},
				{"b", 1, history.Read, 12, 13, ok, 0, "", 0, false},
				{"a", 0, history.Write, 14, 15, ok, 1, "a1", 3, false},
				{"b", 1, history.Write, 16, 17, ok, 1, "b1", 4, false},
				{"a", 0, history.Release, 18, 19, ok, 1, "", 0, false},
				{"b", 1, history.Release, 18, 19, ok, 1, "", 0, false},
			},
			want: map[Property]Verdict{Register: Held, Updates: Held, Tokens: Held, Mutex: Held},
		},
		{
			name: "one key violated",
			rows: []keyedRow{
				{"a", 0, history.Write, 0, 1, ok, 2, "a2", 0, false},
				{"a", 1, history.Write, 2, 3, ok, 1, "a1", 0, false}, // stale, accepted
				{"b", 2, history.Write, 0, 1, ok, 2, "b2", 0, false},
				{"b", 2, history.Write, 2, 3, rej, 1, "b1", 0, false},
			},
			want: map[Property]Verdict{Register: Violated, Updates: Held},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := keyedHistory(tc.rows)
			require.NoError(t, h.Validate())
			rep, err := Check(context.Background(), h, Options{})
			require.NoError(t, err)
			require.True(t, rep.Agree, "porcupine and the direct analysis disagree: %+v", rep.Results)
			for p, v := range tc.want {
				require.Equal(t, v, rep.Verdicts[p], p)
			}
			if rep.Verdicts[Register] == Violated {
				res, _ := rep.Result(Register)
				require.Contains(t, res.Explanation, `Key "a"`)
				require.Equal(t, 1, rep.Evidence.StaleAccepted)
				require.Equal(t, 1, rep.Evidence.StaleRejected)
			}
		})
	}
}

// On simulated multi-key histories, porcupine (partitioned by key) and the direct
// analysis (run per key) agree, and a history with one key checks as before.
func TestKeyedAgreement(t *testing.T) {
	seeds := rand.New(rand.NewPCG(8, 16))
	for i := range 300 {
		seed := seeds.Uint64()
		r := rand.New(rand.NewPCG(seed, 1))
		cfg := randomConfig(r)
		cfg.cycles, cfg.keys = true, 2+r.IntN(3)
		cfg.ops *= 3
		h := simulate(cfg, r)
		require.NoError(t, h.Validate(), "seed %d", seed)
		d := Direct(h)
		for _, p := range Properties {
			ops := Operations(p, h)
			require.Len(t, Model(p, h).Partition(ops), len(Keys(partsWith(p, ops))), "seed %d %s", seed, p)
			res := porcupine.CheckOperationsTimeout(Model(p, h), ops, 10*time.Second)
			require.NotEqual(t, porcupine.Unknown, res)
			require.Equal(t, res == porcupine.Illegal, d.Violated(p), "history %d seed %d %s: %s", i, seed, p, d.Findings[p].Reason)
		}
	}
}

// partsWith is a history holding one op per model op's key, for counting keys.
func partsWith(_ Property, ops []porcupine.Operation) *history.History {
	h := &history.History{}
	for _, o := range ops {
		h.Ops = append(h.Ops, history.Op{Key: o.Metadata.(opMeta).Key})
	}
	return h
}

func TestSplitByKeySingleKeyIsUncopied(t *testing.T) {
	h := realisticHistory(200)
	parts := splitByKey(h)
	require.Len(t, parts, 1)
	require.Same(t, h, parts[0].h)
	require.Equal(t, []string{""}, Keys(h))
}
