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

// TestCompareSynonyms lists the dev requests whose first correct rank
// differs with and without the WordNet table: COMPARE_API=stripe.
func TestCompareSynonyms(t *testing.T) {
	api := os.Getenv("COMPARE_API")
	if api == "" {
		t.Skip("set COMPARE_API")
	}
	s := loadEvalSet(t, api)
	c := loadCorpusAPI(t, api, s.Doc)
	with, _ := New(c.docs, Options{})
	without, _ := New(c.docs, Options{NoSynonyms: true})
	for _, q := range s.Dev {
		a, b := rankOf(t, with, c, q), rankOf(t, without, c, q)
		if a != b {
			t.Logf("wordnet %2d, without %2d: %s", a, b, q.Q)
		}
	}
}

func rankOf(t *testing.T, ix *Index, c *corpusAPI, q evalQuery) int {
	limit := 10
	if os.Getenv("RANKS_DEEP") != "" {
		limit = 50
	}
	res, _ := ix.Search(t.Context(), Query{Text: q.Q, Limit: limit})
	for i, r := range res {
		for _, w := range q.Want {
			if c.ids[w] == r.Name {
				return i + 1
			}
		}
	}
	return 0
}

// TestTuneFields tries field weights on the dev halves: TUNE=1.
func TestTuneFields(t *testing.T) {
	if os.Getenv("TUNE") == "" {
		t.Skip("set TUNE=1")
	}
	saved := fieldWeight
	defer func() { fieldWeight = saved }()
	type api struct {
		c  *corpusAPI
		qs []evalQuery
	}
	var apis []api
	for _, a := range evalAPIs {
		s := loadEvalSet(t, a)
		apis = append(apis, api{loadCorpusAPI(t, a, s.Doc), s.Dev})
	}
	score := func() string {
		var out []string
		var sum float64
		for _, a := range apis {
			ix, _ := New(a.c.docs, Options{})
			m := evaluate(t, ix, a.c, a.qs)
			out = append(out, fmt.Sprintf("%.2f/%.3f", m.r5, m.mrr10))
			sum += m.r5 + m.mrr10
		}
		return fmt.Sprintf("%.3f %s", sum/3, strings.Join(out, " "))
	}
	t.Logf("base %v: %s", fieldWeight, score())
	fieldNames := []string{"name", "title", "lead", "desc", "tags", "path", "params", "action"}
	for f := 0; f < nFields; f++ {
		for _, m := range []float32{0.5, 2} {
			fieldWeight = saved
			fieldWeight[f] *= m
			t.Logf("%s x%.1f: %s", fieldNames[f], m, score())
		}
	}
}

// TestRanks prints the rank of every dev request: RANKS_API=stripe.
func TestRanks(t *testing.T) {
	api := os.Getenv("RANKS_API")
	if api == "" {
		t.Skip("set RANKS_API")
	}
	s := loadEvalSet(t, api)
	c := loadCorpusAPI(t, api, s.Doc)
	ix, _ := New(c.docs, Options{})
	for _, q := range s.Dev {
		t.Logf("%2d %s", rankOf(t, ix, c, q), q.Q)
	}
}
