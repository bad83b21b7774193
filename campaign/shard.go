package campaign

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Shard is one of N parts of a plan, so that a campaign too long for one machine runs
// on N: every machine plans the same runs, and shard I of N runs those whose index in
// the plan is I-1 modulo N. The round robin balances by expected cost without knowing
// it: a soak's plan lists each scenario's seeds one after the other, a matrix's and an
// evaluation's list each fault against every resource in turn, so every shard gets
// about 1/N of every scenario (or fault), and the shards' run counts differ by at most
// one. The zero Shard is the whole plan.
type Shard struct {
	// I is the shard's number, 1 to N; N is how many shards the plan is split into.
	I int `json:"i"`
	N int `json:"n"`
}

// ErrShard marks a shard that is not I/N with 1 ≤ I ≤ N.
var ErrShard = errors.New("bad shard")

// shardError says what is wrong with a shard, and is ErrShard.
type shardError string

func (e shardError) Error() string        { return string(e) }
func (e shardError) Is(target error) bool { return target == ErrShard }

// ParseShard reads "I/N" (e.g. "2/4": the second of four shards). Its errors say what
// is wrong without repeating the value, and are ErrShard.
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, ierr := strconv.Atoi(is)
	n, nerr := strconv.Atoi(ns)
	switch {
	case !ok || ierr != nil || nerr != nil:
		return Shard{}, shardError("want I/N, e.g. 2/4 (the 2nd of 4 shards)")
	case n < 1:
		return Shard{}, shardError("N must be at least 1")
	case i < 1 || i > n:
		return Shard{}, shardError(fmt.Sprintf("I must be between 1 and %d", n))
	}
	return Shard{I: i, N: n}, nil
}

// Whole reports whether the shard is the whole plan (zero, or 1/1).
func (s Shard) Whole() bool { return s.N <= 1 }

// String is "I/N", or "" for the whole plan.
func (s Shard) String() string {
	if s.Whole() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Owns reports whether the run at index i of the plan is the shard's.
func (s Shard) Owns(i int) bool { return s.Whole() || i%s.N == s.I-1 }

// Select returns the indices, in order, of the shard's runs among a plan of n.
func (s Shard) Select(n int) []int {
	var out []int
	for i := range n {
		if s.Owns(i) {
			out = append(out, i)
		}
	}
	return out
}

// normal is the shard with the whole plan as 1/1, as the store records it.
func (s Shard) normal() Shard {
	if s.Whole() {
		return Shard{I: 1, N: 1}
	}
	return s
}
