package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/editdist"
)

// suggest returns the known name a mistyped one most likely meant ("" when none is
// close): a name a few edits away (naive-unfenced-paus), one it begins (zoo), or one it
// abbreviates (zk: zookeeper).
func suggest(input string, known []string) string {
	type cand struct {
		name       string
		kind, dist int
	}
	var cs []cand
	in := strings.ToLower(input)
	for _, k := range known {
		lk := strings.ToLower(k)
		d := editdist.Levenshtein(in, lk)
		switch {
		case in == lk:
			return k
		case d <= max(2, len(in)/4):
			cs = append(cs, cand{k, 0, d})
		case len(in) >= 2 && strings.HasPrefix(lk, in):
			cs = append(cs, cand{k, 1, d})
		case len(in) >= 2 && in[0] == lk[0] && subsequence(in, lk):
			cs = append(cs, cand{k, 2, d})
		}
	}
	if len(cs) == 0 {
		return ""
	}
	best := slices.MinFunc(cs, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.dist, b.dist), cmp.Compare(len(a.name), len(b.name)), strings.Compare(a.name, b.name))
	})
	return best.name
}

// didYouMean is `; did you mean "x"?` for the suggestion, or "".
func didYouMean(input string, known []string) string {
	if s := suggest(input, known); s != "" && s != input {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return ""
}

// subsequence reports whether every byte of a appears in b in order.
func subsequence(a, b string) bool {
	i := 0
	for j := 0; j < len(b) && i < len(a); j++ {
		if a[i] == b[j] {
			i++
		}
	}
	return i == len(a)
}
