package discovery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	yaml "go.yaml.in/yaml/v4"

	"github.com/mcpgate/mcpgate/internal/corpustest"
	"github.com/mcpgate/mcpgate/openapi"
)

// The evaluation: testdata/eval/*.yaml (see its README.md) against the
// corpus documents, plain BM25 and mcpgate's ranking side by side.

type evalSet struct {
	API     string      `yaml:"api"`
	Doc     string      `yaml:"doc"`
	Dev     []evalQuery `yaml:"dev"`
	Heldout []evalQuery `yaml:"heldout"`
	// Fresh requests were written after the last tuning decision, to
	// measure it on requests no decision has seen (see README.md).
	Fresh []evalQuery `yaml:"fresh"`
	// Unseen requests were written by someone who read only the document,
	// never the ranking or a result (see README.md).
	Unseen []evalQuery `yaml:"unseen"`
	// Unseen2 are a second helper's, written while the last decisions
	// were made on the others.
	Unseen2 []evalQuery `yaml:"unseen2"`
	// Unseen3 are a third helper's, written at the start of a session and
	// measured only before and after its decisions.
	Unseen3 []evalQuery `yaml:"unseen3"`
	// Unseen4 are a fourth helper's, written while the same session's
	// later decisions were made on the others, and measured once at its
	// end.
	Unseen4 []evalQuery `yaml:"unseen4"`
	// Unseen5 are a fifth helper's, written at the start of a later
	// session, measured on its starting code and once at its end.
	Unseen5 []evalQuery `yaml:"unseen5"`
	// Unseen6 are a sixth helper's, written in the same session after its
	// decisions, measured on its starting code and once at its end.
	Unseen6 []evalQuery `yaml:"unseen6"`
	// Unseen7 are a seventh helper's, written after unseen5 and unseen6
	// were read, measured on the session's starting code and once at its
	// end.
	Unseen7 []evalQuery `yaml:"unseen7"`
	// Unseen8 are an eighth helper's, written after unseen7 in a later
	// session, measured on the session's starting code and once at its
	// end.
	Unseen8 []evalQuery `yaml:"unseen8"`
	// Unseen9 are a ninth helper's, written after unseen8 in a later
	// session, measured on the session's starting code and once at its
	// end.
	Unseen9 []evalQuery `yaml:"unseen9"`
}

// namedSet is one set of an API's requests.
type namedSet struct {
	name string
	qs   []evalQuery
}

// sets are s's sets in the order they were written; the last is the
// newest, never tuned on (nor is "heldout").
func (s *evalSet) sets() []namedSet {
	return []namedSet{{"dev", s.Dev}, {"heldout", s.Heldout}, {"fresh", s.Fresh}, {"unseen", s.Unseen},
		{"unseen2", s.Unseen2}, {"unseen3", s.Unseen3}, {"unseen4", s.Unseen4}, {"unseen5", s.Unseen5},
		{"unseen6", s.Unseen6}, {"unseen7", s.Unseen7}, {"unseen8", s.Unseen8}, {"unseen9", s.Unseen9}}
}

// tuning are the sets decisions are made on: all but the held-out half and
// the newest.
func (s *evalSet) tuning() []namedSet {
	all := s.sets()
	return slices.DeleteFunc(all[:len(all)-1], func(n namedSet) bool { return n.name == "heldout" })
}

type evalQuery struct {
	Q    string   `yaml:"q"`
	Want []string `yaml:"want"`
}

var evalAPIs = []string{"github", "stripe", "graph"}

func loadEvalSet(t testing.TB, api string) *evalSet {
	t.Helper()
	file := filepath.Join("testdata", "eval", api+".yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var s evalSet
	if err := yaml.Unmarshal(data, &s); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if s.API != api || s.Doc == "" || len(s.Dev) == 0 || len(s.Heldout) == 0 {
		t.Fatalf("%s: want api %q, a doc and both halves", file, api)
	}
	return &s
}

// corpusAPI is one loaded corpus document and its index input.
type corpusAPI struct {
	doc   *openapi.Document
	res   *openapi.Result
	docs  []Doc
	ids   map[string]string // operationId and "METHOD /path" → tool name
	names map[string]bool
}

var corpusCache sync.Map // file → *corpusAPI (read-only once stored)

func loadCorpusAPI(t testing.TB, api, file string) *corpusAPI {
	t.Helper()
	path := filepath.Join(corpustest.Dir(t), file)
	if c, ok := corpusCache.Load(path); ok {
		return c.(*corpusAPI)
	}
	doc, err := openapi.Load(context.Background(), path, openapi.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := openapi.Generate(doc, openapi.GenerateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &corpusAPI{doc: doc, res: res, docs: FromTools(api, res.Tools, ReadOperations(doc)), ids: map[string]string{}, names: map[string]bool{}}
	for _, tool := range res.Tools {
		r := tool.Route
		if r.OperationID != "" {
			c.ids[r.OperationID] = tool.Name
		}
		c.ids[r.Method+" "+cmp0(r.DocPath, r.Path)] = tool.Name
		c.names[tool.Name] = true
	}
	corpusCache.Store(path, c)
	return c
}

// TestEvalSetResolves: every expected operation names an operation of its
// document, no request is repeated, and the halves are large enough.
func TestEvalSetResolves(t *testing.T) {
	total := 0
	for _, api := range evalAPIs {
		s := loadEvalSet(t, api)
		c := loadCorpusAPI(t, api, s.Doc)
		seen := map[string]bool{}
		var all []evalQuery
		for _, set := range s.sets() {
			all = append(all, set.qs...)
		}
		for _, q := range all {
			total++
			if seen[q.Q] {
				t.Errorf("%s: %q appears twice", api, q.Q)
			}
			seen[q.Q] = true
			if len(q.Want) == 0 {
				t.Errorf("%s: %q has no expected operation", api, q.Q)
			}
			for _, w := range q.Want {
				if _, ok := c.ids[w]; !ok {
					t.Errorf("%s: %q expects %q, which is no operation of %s", api, q.Q, w, s.Doc)
				}
			}
		}
		if len(s.Dev) < 25 || len(s.Heldout) < 25 {
			t.Errorf("%s: halves of %d and %d requests, want at least 25 each", api, len(s.Dev), len(s.Heldout))
		}
	}
	if total < 150 {
		t.Errorf("%d requests in all, want at least 150", total)
	}
}

// metrics are recall@1, recall@5 and MRR@10 over a set of requests.
type metrics struct {
	n             int
	r1, r5, mrr10 float64
	misses        []string
}

func evaluate(t testing.TB, ix *Index, c *corpusAPI, qs []evalQuery) metrics {
	t.Helper()
	m := metrics{n: len(qs)}
	for _, q := range qs {
		want := map[string]bool{}
		for _, w := range q.Want {
			want[c.ids[w]] = true
		}
		res, err := ix.Search(context.Background(), Query{Text: q.Q, Limit: 10})
		if err != nil {
			t.Fatalf("%q: %v", q.Q, err)
		}
		rank := 0
		for i, r := range res {
			if want[r.Name] {
				rank = i + 1
				break
			}
		}
		switch {
		case rank == 1:
			m.r1++
			fallthrough
		case rank >= 1 && rank <= 5:
			m.r5++
		}
		if rank > 0 {
			m.mrr10 += 1 / float64(rank)
		}
		if rank == 0 || rank > 5 {
			top := make([]string, 0, 3)
			for _, r := range res[:min(3, len(res))] {
				top = append(top, r.Name)
			}
			m.misses = append(m.misses, fmt.Sprintf("%q (rank %d; top: %s)", q.Q, rank, strings.Join(top, ", ")))
		}
	}
	n := float64(max(m.n, 1))
	m.r1, m.r5, m.mrr10 = m.r1/n, m.r5/n, m.mrr10/n
	return m
}

// evalFloors are the held-out recall@5 figures mcpgate's ranking must keep
// (a regression guard: the measured figures, rounded down; the target is
// 0.75 on every API, see the report in testdata/eval/README.md).
var evalFloors = map[string]float64{"github": 0.77, "stripe": 0.74, "graph": 0.62}

// TestEval prints the figures for every set of every API, plain BM25 and
// mcpgate's ranking (with and without the WordNet table) in one run, and
// fails when mcpgate's ranking does worse than plain BM25 (in recall@5 on
// the held-out half; in recall@5 or MRR@10 over all the sets measured,
// where one request of a 30-request set is not the whole verdict: on
// GitHub's unseen9 plain BM25 finds two requests more in its first five)
// or than its held-out floor. With -v and EVAL_MISSES=dev it lists the dev misses (the
// held-out misses only with EVAL_MISSES=heldout, for the final report).
// EVAL_HALF=dev measures the dev half only (for tuning). With EVAL_EMBED_URL
// it also measures mcpgate's ranking re-ranked by that embeddings endpoint
// (see evalEmbedRankings).
func TestEval(t *testing.T) {
	rankings := []evalRanking{
		{"plain BM25", Options{Ranking: PlainBM25}},
		{"mcpgate, no WordNet", Options{NoSynonyms: true}},
		{"mcpgate, no thesaurus", Options{NoThesaurus: true}},
		{"mcpgate", Options{}},
	}
	embedded, err := evalEmbedRankings()
	if err != nil {
		t.Fatal(err)
	}
	rankings = append(rankings, embedded...)
	var halves []string
	for _, set := range (&evalSet{}).sets() {
		halves = append(halves, set.name)
	}
	if only := os.Getenv("EVAL_HALF"); only != "" {
		if !slices.Contains(halves, only) {
			t.Fatalf("EVAL_HALF=%s: want one of %s", only, strings.Join(halves, ", "))
		}
		halves = []string{only}
	}
	show := os.Getenv("EVAL_MISSES")
	plain := map[string]metrics{}
	pooled := map[string]metrics{} // per API and ranking, every set measured
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-8s %-8s %-26s %5s %5s %6s\n", "api", "half", "ranking", "R@1", "R@5", "MRR@10")
	for _, api := range evalAPIs {
		s := loadEvalSet(t, api)
		c := loadCorpusAPI(t, api, s.Doc)
		for _, rk := range rankings {
			ix, err := New(c.docs, rk.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := ix.PrepareEmbeddings(context.Background()); err != nil {
				t.Fatalf("%s, %s: %v", api, rk.name, err)
			}
			for _, half := range s.sets() {
				if !slices.Contains(halves, half.name) {
					continue
				}
				m := evaluate(t, ix, c, half.qs)
				pooled[api+" "+rk.name] = pooled[api+" "+rk.name].add(m)
				fmt.Fprintf(&b, "%-8s %-8s %-26s %5.2f %5.2f %6.3f\n", api, half.name, rk.name, m.r1, m.r5, m.mrr10)
				key := api + " " + half.name
				switch rk.name {
				case "plain BM25":
					plain[key] = m
				case "mcpgate":
					if p := plain[key]; half.name == "heldout" && m.r5 < p.r5 {
						t.Errorf("%s: mcpgate's ranking (R@5 %.2f) is worse than plain BM25 (%.2f)", key, m.r5, p.r5)
					}
					if half.name == "heldout" && m.r5 < evalFloors[api] {
						t.Errorf("%s: R@5 %.2f fell below its floor %.2f", key, m.r5, evalFloors[api])
					}
				}
				if show == half.name && (rk.name == "mcpgate" || rk.opts.Embeddings != nil) {
					for _, miss := range m.misses {
						fmt.Fprintf(&b, "    miss: %s\n", miss)
					}
				}
			}
		}
	}
	for _, api := range evalAPIs {
		if m, p := pooled[api+" mcpgate"], pooled[api+" plain BM25"]; m.r5 < p.r5 || m.mrr10 < p.mrr10 {
			t.Errorf("%s, all sets measured: mcpgate's ranking (R@5 %.3f, MRR@10 %.3f over %d requests) is worse than plain BM25 (%.3f, %.3f)",
				api, m.r5, m.mrr10, m.n, p.r5, p.mrr10)
		}
	}
	t.Log(b.String())
}

// add pools two measurements: the means over both sets' requests.
func (m metrics) add(o metrics) metrics {
	n := m.n + o.n
	if n == 0 {
		return m
	}
	mean := func(a, b float64) float64 { return (a*float64(m.n) + b*float64(o.n)) / float64(n) }
	return metrics{n: n, r1: mean(m.r1, o.r1), r5: mean(m.r5, o.r5), mrr10: mean(m.mrr10, o.mrr10)}
}

type evalRanking struct {
	name string
	opts Options
}

// evalEmbedRankings are mcpgate's ranking re-ranked by the embeddings
// endpoint EVAL_EMBED_URL (an OpenAI-compatible API base such as
// http://127.0.0.1:11434/v1) with model EVAL_EMBED_MODEL (and bearer key
// EVAL_EMBED_KEY when set), one ranking per blend weight of
// EVAL_EMBED_WEIGHT (comma-separated, default 0.5; 1 ranks by the
// embeddings alone). Tool vectors are kept in EVAL_EMBED_CACHE
// (default mcpgate-eval-embeddings under the temporary directory) so that
// repeated runs embed only the queries. Without EVAL_EMBED_URL there are
// none.
func evalEmbedRankings() ([]evalRanking, error) {
	url := os.Getenv("EVAL_EMBED_URL")
	if url == "" {
		return nil, nil
	}
	cache := os.Getenv("EVAL_EMBED_CACHE")
	if cache == "" {
		cache = filepath.Join(os.TempDir(), "mcpgate-eval-embeddings")
	}
	weights := os.Getenv("EVAL_EMBED_WEIGHT")
	if weights == "" {
		weights = "0.5"
	}
	var out []evalRanking
	for _, w := range strings.Split(weights, ",") {
		weight, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
		if err != nil || weight <= 0 || weight > 1 {
			return nil, fmt.Errorf("EVAL_EMBED_WEIGHT=%s: want weights in (0, 1], comma-separated", weights)
		}
		e := &Embedder{URL: url, Model: os.Getenv("EVAL_EMBED_MODEL"), APIKey: os.Getenv("EVAL_EMBED_KEY"), CacheDir: cache, Weight: weight}
		out = append(out, evalRanking{fmt.Sprintf("mcpgate + embeddings %.2f", weight), Options{Embeddings: e}})
	}
	return out, nil
}
