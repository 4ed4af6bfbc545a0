package discovery

import (
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
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
	hits := ix.rank(cs, explainN(), Query{})
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
	// What Search answers: the ranking above after diversity and exact names.
	res, err := ix.Search(t.Context(), Query{Text: query, Limit: explainN()})
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString("search:\n")
	for i, r := range res {
		fmt.Fprintf(&b, "%2d %.3f %s  %s %s\n", i+1, r.Score, r.Name, r.Method, r.Path)
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

// TestTune measures the ranking's weights on the dev halves only: TUNE=1
// prints, for the current weights and for each weight halved and doubled,
// the dev recall@5 and MRR@10 of every API. It never reads the held-out
// half.
func TestTune(t *testing.T) {
	if os.Getenv("TUNE") == "" {
		t.Skip("set TUNE=1")
	}
	type api struct {
		c  *corpusAPI
		qs []evalQuery
	}
	var apis []api
	for _, a := range evalAPIs {
		s := loadEvalSet(t, a)
		apis = append(apis, api{loadCorpusAPI(t, a, s.Doc), s.Dev})
	}
	score := func(w *weights) string {
		var out []string
		var r5, mrr float64
		for _, a := range apis {
			ix, err := New(a.c.docs, Options{weights: w})
			if err != nil {
				t.Fatal(err)
			}
			m := evaluate(t, ix, a.c, a.qs)
			out = append(out, fmt.Sprintf("%.2f/%.3f", m.r5, m.mrr10))
			r5 += m.r5
			mrr += m.mrr10
		}
		return fmt.Sprintf("R@5 %.3f MRR %.3f  %s", r5/3, mrr/3, strings.Join(out, " "))
	}
	base := defaultWeights
	t.Logf("%-14s %s", "base", score(&base))
	fieldNames := [nFields]string{"name", "title", "lead", "desc", "tags", "path", "leaf", "params", "action"}
	knobs := map[string]func(*weights) *float32{
		"detailDF":     func(w *weights) *float32 { return &w.detailDF },
		"leaf":         func(w *weights) *float32 { return &w.leaf },
		"depthPenalty": func(w *weights) *float32 { return &w.depthPenalty },
		"feedback":     func(w *weights) *float32 { return &w.feedback },
		"duplicate":    func(w *weights) *float32 { return &w.duplicate },
		"synKnown":     func(w *weights) *float32 { return &w.synKnown },
		"synRare":      func(w *weights) *float32 { return &w.synRare },
	}
	for f := range nFields {
		knobs["w."+fieldNames[f]] = func(w *weights) *float32 { return &w.field[f] }
		knobs["b."+fieldNames[f]] = func(w *weights) *float32 { return &w.b[f] }
	}
	// TUNE_BASE="leaf=0,w.desc=1" sets knobs before measuring.
	if set := os.Getenv("TUNE_BASE"); set != "" {
		for _, kv := range strings.Split(set, ",") {
			k, v, _ := strings.Cut(kv, "=")
			x, err := strconv.ParseFloat(v, 32)
			if knobs[k] == nil || err != nil {
				t.Fatalf("TUNE_BASE: bad %q", kv)
			}
			*knobs[k](&base) = float32(x)
		}
		t.Logf("%-14s %s", "TUNE_BASE", score(&base))
	}
	only := os.Getenv("TUNE_KNOBS") // comma-separated; empty: all
	for _, name := range slices.Sorted(maps.Keys(knobs)) {
		if only != "" && !slices.Contains(strings.Split(only, ","), name) {
			continue
		}
		for _, m := range []float32{0, 0.5, 2} {
			w := base
			p := knobs[name](&w)
			if *p == 0 && m != 0 {
				*p = 0.1 * m
			} else {
				*p *= m
			}
			if strings.HasPrefix(name, "b.") || name == "detailDF" || name == "duplicate" {
				*p = min(*p, 1)
			}
			t.Logf("%-14s %-5.3g %s", name, *p, score(&w))
		}
	}
}

// TestRanks prints the rank of every dev request, with the domain
// thesaurus and without it: RANKS_API=stripe.
func TestRanks(t *testing.T) {
	api := os.Getenv("RANKS_API")
	if api == "" {
		t.Skip("set RANKS_API")
	}
	s := loadEvalSet(t, api)
	c := loadCorpusAPI(t, api, s.Doc)
	ix, _ := New(c.docs, Options{})
	plain, _ := New(c.docs, Options{NoThesaurus: true})
	for _, q := range s.Dev {
		t.Logf("%2d %2d %s", rankOf(t, ix, c, q), rankOf(t, plain, c, q), q.Q)
	}
}

func explainN() int {
	if n, err := strconv.Atoi(os.Getenv("EXPLAIN_N")); err == nil && n > 0 {
		return n
	}
	return 15
}

// TestAblateThesaurus measures each line of the domain thesaurus by
// leaving it out: ABLATE=1 prints, per line whose absence changes a
// result, the requests each API gains and loses in the tuning sets (every
// set but the held-out half and the newest unseen set, which are never
// tuned on: evalSet.tuning). The thesaurus is read only by queries, so one index per API
// serves every line.
func TestAblateThesaurus(t *testing.T) {
	if os.Getenv("ABLATE") == "" {
		t.Skip("set ABLATE=1")
	}
	type tuning struct {
		name string
		ix   *Index
		c    *corpusAPI
		sets []namedSet
	}
	var apis []tuning
	for _, api := range evalAPIs {
		s := loadEvalSet(t, api)
		c := loadCorpusAPI(t, api, s.Doc)
		ix, err := New(c.docs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		apis = append(apis, tuning{api, ix, c, s.tuning()})
	}
	hits := func(a tuning) []int {
		out := make([]int, len(a.sets))
		for i, set := range a.sets {
			m := evaluate(t, a.ix, a.c, set.qs)
			out[i] = int(math.Round(m.r5 * float64(m.n)))
		}
		return out
	}
	base := make([][]int, len(apis))
	for i, a := range apis {
		base[i] = hits(a)
	}
	lines := strings.Split(domainText, "\n")
	var b strings.Builder
	for i, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		without, err := ParseThesaurus("domain.txt", strings.Join(slices.Delete(slices.Clone(lines), i, i+1), "\n"))
		if err != nil {
			t.Fatal(err)
		}
		var changed []string
		for k, a := range apis {
			kept := a.ix.domain
			a.ix.domain = without
			h := hits(a)
			a.ix.domain = kept
			gain, loss := 0, 0
			for j := range h {
				if d := h[j] - base[k][j]; d > 0 {
					gain += d
				} else {
					loss -= d
				}
			}
			if gain+loss > 0 {
				changed = append(changed, fmt.Sprintf("%s +%d -%d", a.name, gain, loss))
			}
		}
		if len(changed) > 0 {
			fmt.Fprintf(&b, "line %d %q left out: %s\n", i+1, line, strings.Join(changed, ", "))
		}
	}
	t.Log("\n" + b.String())
}
