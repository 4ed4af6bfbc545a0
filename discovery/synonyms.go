package discovery

import (
	_ "embed"
	"strconv"
	"strings"
	"sync"
)

// The general-language synonym table: for a stemmed English word, stemmed
// words of API vocabularies that may stand for it, each with a weight. It is
// distilled from WordNet by internal/wordnet (see synonyms.md for the
// provenance, licence and method) and embedded: no network, no model.
//
// Format: one word per line, "stem syn:weight syn:weight ...", weights in
// hundredths; lines starting with # are comments.
//
//go:embed synonyms.txt
var synonymsText string

// synonyms maps a stem to its weighted stand-ins. It is read-only once built.
type synonyms map[string][]weighted

func (s synonyms) lookup(stem string) []weighted { return s[stem] }

// embeddedSynonyms parses the embedded table once per process; the result
// is never written again, so indexes share it.
var embeddedSynonyms = sync.OnceValue(func() synonyms { return parseSynonyms(synonymsText) })

func parseSynonyms(text string) synonyms {
	out := synonyms{}
	for line := range strings.SplitSeq(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) < 2 {
			continue
		}
		list := make([]weighted, 0, len(fs)-1)
		for _, f := range fs[1:] {
			term, ws, ok := strings.Cut(f, ":")
			if !ok {
				continue
			}
			n, err := strconv.Atoi(ws)
			if err != nil || n <= 0 || n > 100 {
				continue
			}
			list = append(list, weighted{term, float32(n) / 100})
		}
		out[fs[0]] = list
	}
	return out
}
