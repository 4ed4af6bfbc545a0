package discovery

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Doc is one tool as the index sees it. The gateway fills one per tool
// (see [FromTools]); the index never reads the OpenAPI document itself.
type Doc struct {
	// API names the API the tool belongs to; results carry it back.
	API string
	// Name is the tool name: unique within an index.
	Name        string
	Title       string
	Description string
	// Method and Path are the HTTP operation ("GET", "/repos/{owner}/{repo}").
	Method string
	Path   string
	// OperationID is the document's operationId, if any.
	OperationID string
	// Tags are the operation's tags; Schemas the names of its request and
	// response schemas. Both name the entities the operation is about.
	Tags    []string
	Schemas []string
	// Params are the tool's argument names; ParamText what the document
	// says about them (first sentences, bounded).
	Params    []string
	ParamText string
	// Actions are canonical actions the document implies beyond the
	// method and the verbs of the tool's name: "download" for a response
	// that is a file, "upload" for a request body that is one.
	Actions []string
}

// Result is one search hit, best first in a result list.
type Result struct {
	API         string  `json:"api,omitempty"`
	Name        string  `json:"name"`
	Title       string  `json:"title,omitempty"`
	Description string  `json:"description,omitempty"`
	Method      string  `json:"method"`
	Path        string  `json:"path"`
	Score       float64 `json:"score"`
}

// Query is one search.
type Query struct {
	// Text is what the caller is looking for, in its own words.
	Text string
	// Limit bounds the results: 0 means [DefaultLimit]; at most [MaxLimit].
	Limit int
	// API, when set, keeps only that API's tools.
	API string
	// Visible, when set, is asked before a tool enters the results: tools it
	// rejects never appear, and the results are the best visible ones.
	Visible func(name string) bool
}

// Search limits.
const (
	DefaultLimit = 10
	MaxLimit     = 50
	// MaxQueryBytes bounds a query's text; longer text is an error.
	MaxQueryBytes = 1000
)

// Ranking chooses how an index scores.
type Ranking int

const (
	// Ranked is mcpgate's ranking: field-weighted BM25 with stemming, the
	// action vocabulary, general and mined synonyms, and a path prior.
	Ranked Ranking = iota
	// PlainBM25 is the baseline: one bag of lower-cased words per tool
	// (name, title, description, path, tags), no stemming, no synonyms.
	// It exists to measure what Ranked buys.
	PlainBM25
)

// Options configure an index. The zero value is mcpgate's ranking with the
// embedded synonym table and no semantic re-ranking.
type Options struct {
	Ranking Ranking
	// NoSynonyms leaves out the general-language synonym table (measured
	// against; see the package doc).
	NoSynonyms bool
	// NoThesaurus leaves out the embedded domain thesaurus (domain.txt,
	// measured against; see the package doc).
	NoThesaurus bool
	// Thesaurus adds an operator's entries to the domain thesaurus (they
	// replace the embedded entries for the same phrase or word): the words
	// its users have for its API's operations.
	Thesaurus *Thesaurus
	// Embeddings, when set, re-ranks the best lexical candidates by the
	// cosine similarity of embeddings (see [Embedder]).
	Embeddings *Embedder

	// weights replaces the ranking's weights (tests that measure them).
	weights *weights
}

// Index answers searches over the tools of one or several APIs. It is built
// once by [New] and is safe for concurrent use.
type Index struct {
	docs   []Doc
	short  []string  // one-paragraph descriptions for results
	family []string  // near-duplicate key per tool (see diversify)
	scope  [][]int32 // per tool, the terms of its scope: its path's first literal segment past a version, and "self" for a tool on the caller
	byName map[string]int32
	prior  []float32

	terms    map[string]int32
	names    []string // term id → term (Ranked only)
	postings [][]posting
	idf      []float32
	fwd      [][]int32 // per tool, the terms of its naming fields (Ranked only)

	opts    Options
	w       *weights
	actions *actionIndex
	// abbrev maps a stem to the stems of its abbreviations or expansions.
	abbrev map[string][]string
	// nounishStems are the stems of the nounish action words.
	nounishStems map[string]bool
	syn          synonyms
	domain       *Thesaurus
	aliases      map[string][]weighted

	scratch    sync.Pool // *scratch
	embed      *embedState
	exactTable exactTable // built on the first query that may name a tool exactly
}

type posting struct {
	doc    int32
	impact float32 // idf · saturated field-weighted tf
}

type weighted struct {
	term string
	w    float32
}

// New builds an index over docs. Names must be unique and non-empty.
func New(docs []Doc, opts Options) (*Index, error) {
	ix := &Index{docs: docs, byName: make(map[string]int32, len(docs)), opts: opts, w: opts.weights}
	if ix.w == nil {
		ix.w = &defaultWeights
	}
	for i := range docs {
		d := &docs[i]
		if d.Name == "" {
			return nil, fmt.Errorf("discovery: tool %d (%s %s) has no name", i, d.Method, d.Path)
		}
		if _, dup := ix.byName[d.Name]; dup {
			return nil, fmt.Errorf("discovery: tool name %q appears twice", d.Name)
		}
		ix.byName[d.Name] = int32(i)
	}
	newBuilder(ix).build()
	if opts.Embeddings != nil {
		ix.embed = newEmbedState(ix, opts.Embeddings)
	}
	return ix, nil
}

// Len is the number of indexed tools.
func (ix *Index) Len() int { return len(ix.docs) }

// Lookup returns the indexed tool called name. A tool that visible rejects
// is reported exactly like an unknown one.
func (ix *Index) Lookup(name string, visible func(string) bool) (*Doc, bool) {
	i, ok := ix.byName[name]
	if !ok || (visible != nil && !visible(name)) {
		return nil, false
	}
	return &ix.docs[i], true
}

// ErrEmptyQuery is returned for a query without a single searchable word.
var ErrEmptyQuery = errors.New("discovery: the query has no searchable words")

// Search returns the best tools for q, best first. Only a query that is
// empty or too long is an error; when semantic re-ranking fails the lexical
// ranking is returned.
func (ix *Index) Search(ctx context.Context, q Query) ([]Result, error) {
	if len(q.Text) > MaxQueryBytes {
		return nil, fmt.Errorf("discovery: the query is %d bytes long, at most %d are allowed", len(q.Text), MaxQueryBytes)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	if !hasWords(q.Text) {
		return nil, ErrEmptyQuery
	}
	exact := ix.exact(q.Text, q)
	concepts := ix.compile(q.Text)
	if len(concepts) == 0 && ix.embed == nil && len(exact) == 0 {
		return []Result{}, nil
	}
	want := limit
	if ix.opts.Ranking == Ranked {
		want = max(limit*3, 30)
	}
	if ix.embed != nil {
		want = max(want, rerankCandidates)
	}
	hits := ix.rank(concepts, want, q)
	if ix.embed != nil {
		hits = ix.embed.rerank(ctx, q.Text, hits, q)
	}
	if ix.opts.Ranking == Ranked {
		ix.diversify(hits, queryTerms(concepts))
	}
	if len(exact) > 0 {
		hits = withExact(hits, exact)
	}
	if len(hits) > limit {
		hits = hits[:limit]
	}
	out := make([]Result, len(hits))
	for i, h := range hits {
		d := &ix.docs[h.doc]
		out[i] = Result{API: d.API, Name: d.Name, Title: d.Title, Description: ix.short[h.doc],
			Method: d.Method, Path: d.Path, Score: math.Round(float64(h.score)*1000) / 1000}
	}
	return out, nil
}

// hasWords reports whether text holds a word (a letter or digit).
func hasWords(text string) bool {
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// A concept is one thing the query asks for: a word and the variants that
// may stand for it, each with a weight. A tool earns a concept's score once,
// through its best variant.
type concept struct {
	w  float32
	vs []variant
	// bonus concepts add to the score but not to what coordination asks
	// for (feedback terms).
	bonus bool
}

type variant struct {
	term int32
	w    float32
}

type hit struct {
	doc   int32
	score float32
}

// scratch is one search's working memory, pooled.
type scratch struct {
	acc     []float32 // total score per doc
	matched []float32 // weight of the concepts a doc matched
	best    []float32 // the current concept's best variant score per doc
	bestW   []float32 // and that variant's weight
	touched []int32   // docs with acc > 0
	inBest  []int32   // docs with best > 0
	heap    []hit
}

func (ix *Index) getScratch() *scratch {
	if s, ok := ix.scratch.Get().(*scratch); ok {
		return s
	}
	n := len(ix.docs)
	return &scratch{acc: make([]float32, n), matched: make([]float32, n), best: make([]float32, n), bestW: make([]float32, n)}
}

// rank scores every tool a concept reaches and keeps the best limit tools
// that q lets through. With the Ranked ranking it then adds the feedback
// concept of those tools to the same scores and selects again.
func (ix *Index) rank(concepts []concept, limit int, q Query) []hit {
	s := ix.getScratch()
	defer ix.scratch.Put(s)
	var total float32
	for _, c := range concepts {
		if !c.bonus {
			total += c.w
		}
	}
	ix.accumulate(s, concepts)
	hits := ix.selectTop(s, total, limit, q)
	if ix.opts.Ranking == Ranked {
		if fb, ok := ix.feedback(concepts, hits); ok {
			ix.accumulate(s, []concept{fb})
			hits = ix.selectTop(s, total, limit, q)
		}
	}
	for _, d := range s.touched {
		s.acc[d], s.matched[d] = 0, 0
	}
	s.touched = s.touched[:0]
	return hits
}

// accumulate adds each concept's score, through its best variant, to the
// tools it reaches.
func (ix *Index) accumulate(s *scratch, concepts []concept) {
	for _, c := range concepts {
		for _, v := range c.vs {
			for _, p := range ix.postings[v.term] {
				sc := v.w * p.impact
				if s.best[p.doc] == 0 {
					s.inBest = append(s.inBest, p.doc)
				}
				if sc > s.best[p.doc] {
					s.best[p.doc], s.bestW[p.doc] = sc, v.w
				}
			}
		}
		for _, d := range s.inBest {
			if s.acc[d] == 0 {
				s.touched = append(s.touched, d)
			}
			s.acc[d] += c.w * s.best[d]
			// A weak stand-in counts as a partial match.
			if !c.bonus {
				s.matched[d] += c.w * min(s.bestW[d], 1)
			}
			s.best[d] = 0
		}
		s.inBest = s.inBest[:0]
	}
}

// selectTop keeps the best limit scored tools that q lets through.
func (ix *Index) selectTop(s *scratch, total float32, limit int, q Query) []hit {
	h := topK{items: s.heap[:0], k: limit}
	for _, d := range s.touched {
		score := s.acc[d] * ix.prior[d]
		if ix.opts.Ranking == Ranked {
			score *= coordination(s.matched[d], total)
		}
		if !h.wants(d, score) {
			continue
		}
		doc := &ix.docs[d]
		if q.API != "" && doc.API != q.API {
			continue
		}
		if q.Visible != nil && !q.Visible(doc.Name) {
			continue
		}
		h.push(hit{d, score})
	}
	out := h.sorted()
	s.heap = h.items[:0]
	return out
}

// Pseudo-relevance feedback: the words the best first-pass tools share
// (say "member" among the tools found for "which groups am I in") are added
// as one weak concept for a second pass, which lifts their near misses.
const (
	feedbackDocs  = 5   // best tools read
	feedbackMin   = 2   // a term must name at least this many of them
	feedbackTerms = 4   // at most this many terms are added
	feedbackIDF   = 1.5 // terms commoner than this are no evidence
)

func (ix *Index) feedback(concepts []concept, hits []hit) (concept, bool) {
	if len(hits) < feedbackDocs {
		return concept{}, false
	}
	inQuery := map[int32]bool{}
	for _, c := range concepts {
		for _, v := range c.vs {
			inQuery[v.term] = true
		}
	}
	count := map[int32]int{}
	for _, h := range hits[:feedbackDocs] {
		for _, t := range ix.fwd[h.doc] {
			if !inQuery[t] && ix.idf[t] >= feedbackIDF {
				count[t]++
			}
		}
	}
	type tc struct {
		t int32
		n int
	}
	var cands []tc
	for t, n := range count {
		if n >= feedbackMin {
			cands = append(cands, tc{t, n})
		}
	}
	if len(cands) == 0 {
		return concept{}, false
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.n != b.n {
			return a.n > b.n
		}
		if ix.idf[a.t] != ix.idf[b.t] {
			return ix.idf[a.t] > ix.idf[b.t]
		}
		return a.t < b.t
	})
	c := concept{w: ix.w.feedback, bonus: true}
	for _, x := range cands[:min(len(cands), feedbackTerms)] {
		c.vs = append(c.vs, variant{x.t, float32(x.n) / feedbackDocs})
	}
	return c, true
}

// diversify lets one member of each family of near-duplicates keep its
// score and demotes the others, so that ten copies of one operation
// reached through /me, /users/{id} and /groups/{id} do not push every other
// candidate out of the first results. The member kept is the best one
// whose scope (its path's first segment) the query names ("this
// repository's secret" keeps /repos/…, not the shorter /orgs/…), else the
// best; a member that is another operation after all (see distinct) keeps
// its score too. hits is re-sorted in place.
func (ix *Index) diversify(hits []hit, inQuery map[int32]bool) {
	kept := make(map[string]int32, len(hits))
	for _, h := range hits {
		f := ix.family[h.doc]
		if _, ok := kept[f]; !ok || (ix.scopeNamed(h.doc, inQuery) && !ix.scopeNamed(kept[f], inQuery)) {
			kept[f] = h.doc
		}
	}
	seen := make(map[string]int, len(hits))
	for i := range hits {
		f := ix.family[hits[i].doc]
		if k := kept[f]; k == hits[i].doc || ix.distinct(k, hits[i].doc) {
			continue
		}
		n := seen[f] + 1
		seen[f] = n
		for ; n > 0; n-- {
			hits[i].score *= ix.w.duplicate
		}
	}
	sortHits(hits)
}

// distinct reports whether two tools of one family are different
// operations after all: under one root, with titles that differ ("List
// pull requests" and "List pull requests associated with a commit" under
// /repos; not "List events" under /me and /me/calendar).
func (ix *Index) distinct(a, b int32) bool {
	da, db := &ix.docs[a], &ix.docs[b]
	return rootOf(da.Path) == rootOf(db.Path) && !strings.EqualFold(da.Title, db.Title)
}

// rootOf is a path's first literal segment past a version ("repos" of
// "/repos/{owner}/{repo}/pulls", "customers" of "/v1/customers/{id}").
func rootOf(path string) string {
	for seg := range strings.SplitSeq(path, "/") {
		if seg != "" && !strings.HasPrefix(seg, "{") && !versionSegment(seg) {
			return seg
		}
	}
	return ""
}

// scopeNamed reports whether the query names doc's scope.
func (ix *Index) scopeNamed(doc int32, inQuery map[int32]bool) bool {
	for _, t := range ix.scope[doc] {
		if inQuery[t] {
			return true
		}
	}
	return false
}

// queryTerms are the terms of a query's concepts, stand-ins included.
func queryTerms(concepts []concept) map[int32]bool {
	out := map[int32]bool{}
	for _, c := range concepts {
		for _, v := range c.vs {
			out[v.term] = true
		}
	}
	return out
}

// familyKey groups operations that do the same thing in different places:
// the method, the last literal path segment, and whether the path ends in
// a parameter ("POST microsoft.graph.accept" for every way to reach an
// event's accept action, "POST members" for every way to add a member).
func familyKey(d *Doc) string {
	// The last literal segment, and whether parameters follow it.
	path := strings.TrimRight(d.Path, "/")
	lit, item := "", false
	for rest := path; rest != ""; {
		i := strings.LastIndexByte(rest, '/')
		seg := rest[i+1:]
		rest = rest[:max(i, 0)]
		if strings.HasPrefix(seg, "{") {
			item = item || lit == ""
			continue
		}
		if seg != "" {
			lit = seg
			break
		}
	}
	key := d.Method + " " + lit
	if item {
		key += "/{}"
	}
	return key
}

// coordination favours tools that match more of the query's concepts over
// tools that match one of them very well.
func coordination(matched, total float32) float32 {
	if total == 0 {
		return 1
	}
	return matched / total
}

// topK keeps the k best hits in a min-heap; ties go to the earlier tool.
type topK struct {
	items []hit
	k     int
}

func better(a, b hit) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.doc < b.doc
}

// wants reports whether a hit with this score would enter the heap, before
// the (possibly costly) visibility check.
func (h *topK) wants(doc int32, score float32) bool {
	return len(h.items) < h.k || better(hit{doc, score}, h.items[0])
}

func (h *topK) push(x hit) {
	if len(h.items) < h.k {
		h.items = append(h.items, x)
		h.up(len(h.items) - 1)
		return
	}
	h.items[0] = x
	h.down(0)
}

func (h *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !better(h.items[p], h.items[i]) {
			return
		}
		h.items[p], h.items[i] = h.items[i], h.items[p]
		i = p
	}
}

func (h *topK) down(i int) {
	n := len(h.items)
	for {
		l, worst := 2*i+1, i
		if l < n && better(h.items[worst], h.items[l]) {
			worst = l
		}
		if r := l + 1; r < n && better(h.items[worst], h.items[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		h.items[i], h.items[worst] = h.items[worst], h.items[i]
		i = worst
	}
}

// sorted returns the hits best first (a copy: the heap's memory is reused).
func (h *topK) sorted() []hit {
	out := make([]hit, len(h.items))
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = h.items[0]
		last := len(h.items) - 1
		h.items[0] = h.items[last]
		h.items = h.items[:last]
		h.down(0)
	}
	return out
}

// shortDescription is the first paragraph of a description as plain text,
// cut at a sentence or word boundary near 240 bytes; the title when there is
// no description.
func shortDescription(plain, title string) string {
	const max = 240
	text := plain
	if i := strings.Index(text, "\n\n"); i >= 0 {
		text = text[:i]
	}
	text = collapseSpaces(text, max)
	if text == "" {
		return title
	}
	if len(text) <= max {
		return text
	}
	cut := text[:max]
	if i := strings.LastIndex(cut, ". "); i > max/2 {
		return cut[:i+1]
	}
	if i := strings.LastIndexByte(cut, ' '); i > 0 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, ",;:") + "…"
}

// collapseSpaces is strings.Join(strings.Fields(s), " ") up to its first
// rune past limit bytes: what a cut at limit needs of a long paragraph.
func collapseSpaces(s string, limit int) string {
	var b strings.Builder
	b.Grow(min(len(s), limit+utf8.UTFMax))
	space := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			i += size
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteString(s[i : i+size]) // as it is, an invalid byte too
		i += size
		if b.Len() > limit {
			break
		}
	}
	return b.String()
}

// plainText removes HTML tags and Markdown link targets and emphasis,
// keeping paragraph breaks.
func plainText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '<' && tagAt(s, i):
			j := skipTag(s, i)
			tag := strings.ToLower(s[i:j])
			if strings.HasPrefix(tag, "<p") || strings.HasPrefix(tag, "</p") || strings.HasPrefix(tag, "<br") {
				b.WriteString("\n\n")
			}
			i = j
		case c == '&':
			if j := entityEnd(s, i); j > i {
				b.WriteString(entityText(s[i:j]))
				i = j
			} else {
				b.WriteByte(c)
				i++
			}
		case c == ']' && i+1 < len(s) && s[i+1] == '(':
			if j := strings.IndexByte(s[i:], ')'); j > 0 {
				i += j + 1
			} else {
				i++
			}
		case c == '[' || c == '*' || c == '`':
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return strings.TrimSpace(b.String())
}

func entityText(e string) string {
	switch e {
	case "&amp;":
		return "&"
	case "&lt;":
		return "<"
	case "&gt;":
		return ">"
	case "&quot;":
		return `"`
	case "&#39;", "&apos;":
		return "'"
	}
	return " "
}
