package discovery

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestExplain prints how a query is read and scored, for tuning on dev
// requests: EXPLAIN_API=github EXPLAIN_QUERY="..." go test -run TestExplain -v
func TestExplain(t *testing.T) {
	api, query := os.Getenv("EXPLAIN_API"), os.Getenv("EXPLAIN_QUERY")
	if query == "" {
		t.Skip("set EXPLAIN_API and EXPLAIN_QUERY")
	}
	s := loadEvalSet(t, api)
	c := loadCorpusAPI(t, api, s.Doc)
	ix, err := New(c.docs, Options{NoSynonyms: os.Getenv("EXPLAIN_NOWN") != ""})
	if err != nil {
		t.Fatal(err)
	}
	names := make(map[int32]string, len(ix.terms))
	for term, id := range ix.terms {
		names[id] = term
	}
	var b strings.Builder
	cs := ix.compile(query)
	for _, c := range cs {
		fmt.Fprintf(&b, "concept w=%.2f:", c.w)
		for _, v := range c.vs {
			fmt.Fprintf(&b, " %s(%.2f,df=%d)", names[v.term], v.w, len(ix.postings[v.term]))
		}
		b.WriteByte('\n')
	}
	hits := ix.rank(cs, 15, Query{})
	for i, h := range hits {
		d := &ix.docs[h.doc]
		fmt.Fprintf(&b, "%2d %.3f %s  %s %s | %s\n", i+1, h.score, d.Name, d.Method, d.Path, d.Title)
		for _, c := range cs {
			best, by := float32(0), ""
			for _, v := range c.vs {
				for _, p := range ix.postings[v.term] {
					if p.doc == h.doc && v.w*p.impact > best {
						best, by = v.w*p.impact, names[v.term]
					}
				}
			}
			if best > 0 {
				fmt.Fprintf(&b, "      %s=%.3f", by, best)
			}
		}
		b.WriteByte('\n')
	}
	t.Log("\n" + b.String())
}
