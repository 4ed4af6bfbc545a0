package discovery

import (
	"slices"
	"strings"
)

// Entity synonyms mined from the document itself. A document often spells
// one entity two ways: its paths say "repos" where its summaries say
// "repository", its tags say "pulls" where the text says "pull request".
// When a word of the summaries almost always comes with a word of the paths
// that the summaries themselves never use (and the reverse), the two are
// aliases: a query for either finds both.
//
// Singular and plural need no mining: they share a stem.

const (
	minAliasDocs   = 3    // a pair must co-occur on at least this many tools
	minAliasShare  = 0.6  // share of the text word's tools that have the path word
	minAliasReturn = 0.25 // share of the path word's tools that have the text word
	maxCrossShare  = 0.2  // how often each word may appear on the other side
	minAliasLen    = 3    // shorter stems are too ambiguous
	wAlias         = 0.7  // weight of an alias beside the word itself
)

func mineAliases(pathTerms, titleTerms [][]int32, terms map[string]int32) map[string][]weighted {
	names := make([]string, len(terms))
	for t, id := range terms {
		names[id] = t
	}
	type pair struct{ p, t int32 }
	inPath := map[int32]int{} // tools whose path (or tags) have the term
	inText := map[int32]int{} // tools whose title has the term
	co := map[pair]int{}
	onPath := map[int32]bool{}
	for i := range pathTerms {
		clear(onPath)
		for _, p := range pathTerms[i] {
			onPath[p] = true
			inPath[p]++
		}
		for _, t := range titleTerms[i] {
			inText[t]++
		}
		for _, t := range titleTerms[i] {
			if onPath[t] {
				continue
			}
			for _, p := range pathTerms[i] {
				if !slices.Contains(titleTerms[i], p) {
					co[pair{p, t}]++
				}
			}
		}
	}
	out := map[string][]weighted{}
	for pt, n := range co {
		p, t := names[pt.p], names[pt.t]
		if n < minAliasDocs || len(p) < minAliasLen || len(t) < minAliasLen || p[0] == '@' || t[0] == '@' {
			continue
		}
		if float64(n) < minAliasShare*float64(inText[pt.t]) || float64(n) < minAliasReturn*float64(inPath[pt.p]) {
			continue
		}
		if float64(inText[pt.p]) > maxCrossShare*float64(inPath[pt.p]) || float64(inPath[pt.t]) > maxCrossShare*float64(inText[pt.t]) {
			continue
		}
		out[t] = append(out[t], weighted{p, wAlias})
		out[p] = append(out[p], weighted{t, wAlias})
	}
	for _, ws := range out {
		slices.SortFunc(ws, func(a, b weighted) int { return strings.Compare(a.term, b.term) })
	}
	return out
}
