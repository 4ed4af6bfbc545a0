package discovery

import "strings"

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

func mineAliases(docs []Doc, stems stemmer) map[string][]weighted {
	type pair struct{ p, t string }
	inPath := map[string]int{} // tools whose path (or tags) have the word
	inText := map[string]int{} // tools whose title or name has the word
	co := map[pair]int{}
	pathSet, textSet := map[string]bool{}, map[string]bool{}
	for i := range docs {
		d := &docs[i]
		clear(pathSet)
		clear(textSet)
		addTo := func(set map[string]bool) func(string) {
			return func(w string) {
				if !stopWords[w] {
					set[stems.stem(w)] = true
				}
			}
		}
		for _, seg := range strings.Split(d.Path, "/") {
			words(stripParams(seg), addTo(pathSet))
		}
		for _, t := range d.Tags {
			words(t, addTo(pathSet))
		}
		words(d.Title, addTo(textSet))
		for p := range pathSet {
			inPath[p]++
		}
		for t := range textSet {
			inText[t]++
			for p := range pathSet {
				if p != t && !textSet[p] && !pathSet[t] {
					co[pair{p, t}]++
				}
			}
		}
	}
	out := map[string][]weighted{}
	for pt, n := range co {
		if n < minAliasDocs {
			continue
		}
		if len(pt.p) < minAliasLen || len(pt.t) < minAliasLen {
			continue
		}
		if float64(n) < minAliasShare*float64(inText[pt.t]) || float64(n) < minAliasReturn*float64(inPath[pt.p]) {
			continue
		}
		if float64(inText[pt.p]) > maxCrossShare*float64(inPath[pt.p]) || float64(inPath[pt.t]) > maxCrossShare*float64(inText[pt.t]) {
			continue
		}
		out[pt.t] = append(out[pt.t], weighted{pt.p, wAlias})
		out[pt.p] = append(out[pt.p], weighted{pt.t, wAlias})
	}
	return out
}
