package discovery

import (
	"math"
	"slices"
	"strings"
	"unicode"
)

// The fields of a tool that the ranking weighs apart (BM25F: each field's
// term frequency is length-normalized on its own, weighted, summed, and only
// then saturated).
const (
	fName   = iota // operationId or tool name
	fTitle         // summary
	fLead          // the description's first sentence
	fDesc          // the rest of the description
	fTags          // tags and schema names
	fPath          // literal path segments
	fLeaf          // the last literal path segment: the resource acted on
	fParams        // argument names and what is said about them
	fAction        // canonical actions (method and verbs)
	fItem          // the words of the path's parameters: the things it takes one of
	nFields
)

const (
	k1 = 1.2
	// maxDescWords bounds the words of a description that are indexed: the
	// first paragraphs say what an operation does, the rest is detail.
	maxDescWords = 400
)

// builder holds what New needs only while it builds.
type builder struct {
	ix    *Index
	stems stemmer
	// wordTerm maps a lower-case word to the term of its stem (-1: a stop
	// word), so each word of the text costs one map lookup.
	wordTerm map[string]int32
	// verbTerms maps a word's term to its verb token's (see verbTerm).
	verbTerms map[int32]int32
	// itemTerms maps a path parameter ("{issue_number}") to its words'
	// item tokens (see itemToken): APIs repeat a few parameters on every
	// path.
	itemTerms map[string][]int32
	// texts and plains hold what was read of each distinct text (ids) and
	// description (plainText): tools repeat them (Graph's 11,422 tools
	// have 3,970 distinct descriptions and 77 distinct argument texts).
	texts  map[string][]int32
	plains map[string]string
	names  []string // term id → term
	// slot[t] is 1 + the position of term t in the current tool's entries.
	slot []int32
	// buf spells the current word (words); counted the current tool's
	// entries (count): both reused from tool to tool.
	buf     []byte
	counted []termTF
	// per doc, its terms with their frequency per field
	entries [][]termTF
	lengths [][nFields]float32
	// per doc, the terms of its path and tags, and of its title (mining)
	pathTerms, titleTerms [][]int32
}

type termTF struct {
	term int32
	tf   [nFields]uint16
}

func newBuilder(ix *Index) *builder {
	ix.terms = map[string]int32{}
	if ix.opts.Ranking == Ranked {
		ix.actions = newActionIndex()
		ix.abbrev = map[string][]string{}
		for _, p := range commonAbbreviations {
			a, b := stem(p[0]), stem(p[1])
			ix.abbrev[a] = appendUnique(ix.abbrev[a], b)
			ix.abbrev[b] = appendUnique(ix.abbrev[b], a)
		}
		ix.nounishStems = map[string]bool{}
		for w := range nounish {
			ix.nounishStems[stem(w)] = true
		}
		if !ix.opts.NoSynonyms {
			ix.syn = embeddedSynonyms()
		}
		switch {
		case !ix.opts.NoThesaurus:
			ix.domain = embeddedThesaurus().with(ix.opts.Thesaurus)
		case ix.opts.Thesaurus != nil:
			ix.domain = ix.opts.Thesaurus
		}
	}
	return &builder{ix: ix, stems: stemmer{}, wordTerm: map[string]int32{}, verbTerms: map[int32]int32{}, itemTerms: map[string][]int32{},
		texts: make(map[string][]int32, len(ix.docs)), plains: make(map[string]string, len(ix.docs)/2)}
}

// term returns the id of term t, adding it when new.
func (b *builder) term(t string) int32 {
	id, ok := b.ix.terms[t]
	if !ok {
		id = int32(len(b.ix.terms))
		b.ix.terms[t] = id
		b.names = append(b.names, t)
	}
	return id
}

// wordID is the term of a word's stem; -1 for a stop word ("me" and the
// other self words are kept: paths such as /me name the caller).
func (b *builder) wordID(w []byte) int32 {
	if id, ok := b.wordTerm[string(w)]; ok {
		return id
	}
	ws := string(w)
	id := int32(-1)
	if !stopWords[ws] || selfWords[ws] {
		id = b.term(b.stems.stem(ws))
	}
	b.wordTerm[ws] = id
	return id
}

func (b *builder) build() {
	ix := b.ix
	n := len(ix.docs)
	b.entries = make([][]termTF, n)
	ix.fwd = make([][]int32, n)
	b.lengths = make([][nFields]float32, n)
	b.pathTerms, b.titleTerms = make([][]int32, n), make([][]int32, n)
	ix.scope = make([][]int32, n)
	ix.short, ix.family = make([]string, n), make([]string, n)
	fields := make([][]int32, nFields)
	for i := range ix.docs {
		for f := range fields {
			fields[f] = fields[f][:0]
		}
		d := &ix.docs[i]
		plain := b.plainText(d.Description) // for the fields and the results
		if ix.opts.Ranking == PlainBM25 {
			b.plainFields(d, fields)
		} else {
			ix.scope[i] = b.fields(d, plain, fields)
		}
		ix.short[i], ix.family[i] = shortDescription(plain, d.Title), familyKey(d)
		b.entries[i], b.lengths[i] = b.count(fields)
		if ix.opts.Ranking == Ranked {
			ix.fwd[i] = b.forward(b.entries[i])
			b.pathTerms[i], b.titleTerms[i] = b.sides(b.entries[i])
		}
	}
	if ix.opts.Ranking == Ranked {
		ix.aliases = mineAliases(b.pathTerms, b.titleTerms, ix.terms)
	}
	b.pathTerms, b.titleTerms = nil, nil
	b.impacts()
	if ix.opts.Ranking == Ranked {
		ix.names = b.names
	}
	b.priors()
}

// sides are a tool's terms on the path side (path and tags) and the text
// side (title) of alias mining.
func (b *builder) sides(es []termTF) (path, title []int32) {
	for _, e := range es {
		if e.tf[fPath]+e.tf[fTags] > 0 {
			path = append(path, e.term)
		}
		if e.tf[fTitle] > 0 {
			title = append(title, e.term)
		}
	}
	return path, title
}

// words splits s into words for the index, with the builder's buffer.
func (b *builder) words(s string, emit func(w []byte)) { b.buf = splitWords(b.buf, s, emit) }

// ids are the terms of the words of text in order, -1 for a stop word
// (wordID), read once per distinct text. Terms are numbered as they are
// first met, so reading a text again changes no term's number.
func (b *builder) ids(text string) []int32 {
	if ids, ok := b.texts[text]; ok {
		return ids
	}
	var ids []int32
	b.words(text, func(w []byte) { ids = append(ids, b.wordID(w)) })
	b.texts[text] = ids
	return ids
}

// plainText is plainText(desc), read once per distinct description.
func (b *builder) plainText(desc string) string {
	p, ok := b.plains[desc]
	if !ok {
		p = plainText(desc)
		b.plains[desc] = p
	}
	return p
}

// fields fills the terms of each field of d, whose description reads plain
// as plain text, and returns its scope's terms (see Index.scope).
func (b *builder) fields(d *Doc, plain string, fields [][]int32) (scope []int32) {
	add := func(f int) func([]byte) {
		return func(w []byte) {
			if id := b.wordID(w); id >= 0 {
				fields[f] = append(fields[f], id)
			}
		}
	}
	addIDs := func(f int, ids []int32) {
		for _, id := range ids {
			if id >= 0 {
				fields[f] = append(fields[f], id)
			}
		}
	}
	name := d.OperationID
	if name == "" {
		name = d.Name
	}
	b.words(name, add(fName))
	// The verb a title starts with ("Star a repository") is a term of its
	// own, matched by a request's first word (see compile).
	title := b.ids(statusless(d.Title))
	addIDs(fTitle, title)
	if len(title) > 0 && title[0] >= 0 {
		fields[fAction] = append(fields[fAction], b.verbTerm(title[0]))
	}
	lead, rest := leadSentence(plain)
	addIDs(fLead, b.ids(lead))
	rids := b.ids(rest)
	addIDs(fDesc, rids[:min(len(rids), maxDescWords)])
	for _, t := range d.Tags {
		addIDs(fTags, b.ids(t))
	}
	for _, s := range d.Schemas {
		addIDs(fTags, b.ids(s))
	}
	item := false
	leaf, system := "", ""
	scoped := false
	for _, seg := range strings.Split(d.Path, "/") {
		if seg == "" {
			continue
		}
		if odataSystem[seg] { // "/members/$ref": the leaf is still "members"
			system = seg
			continue
		}
		item = strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}")
		if item {
			fields[fItem] = append(fields[fItem], b.itemTermsOf(seg)...)
		}
		if lit := stripParams(seg); strings.TrimSpace(lit) != "" {
			ids := b.ids(lit)
			addIDs(fPath, ids)
			leaf = lit
			if !scoped && !versionSegment(seg) {
				scoped = true
				for _, id := range ids {
					if id >= 0 && !slices.Contains(scope, id) {
						scope = append(scope, id)
					}
				}
			}
		}
	}
	// The leaf's words are terms of their own ("^commit"): a query word
	// that names the resource earns them beside its other matches (see
	// leafConcept), instead of saturating with the path's.
	b.words(leafResource(leaf), func(w []byte) {
		if id := b.wordID(w); id >= 0 {
			fields[fLeaf] = append(fields[fLeaf], b.term(leafToken(b.names[id])))
		}
	})
	// An OData reference ("POST /groups/{id}/members/$ref") links an
	// existing object to the collection: its verb is to add it there, or
	// to remove it, whatever its generated title says.
	if system == "$ref" {
		if v, ok := refVerbs[d.Method]; ok {
			if id := b.wordID([]byte(v)); id >= 0 {
				fields[fAction] = append(fields[fAction], b.verbTerm(id))
			}
		}
	}
	for _, p := range d.Params {
		addIDs(fParams, b.ids(p))
	}
	addIDs(fParams, b.ids(d.ParamText))
	for _, a := range appendAllUnique(b.docActions(d, item), d.Actions) {
		fields[fAction] = append(fields[fAction], b.term(actionToken(a)))
	}
	if isSelf(d) {
		self := b.term(actionToken("self"))
		fields[fAction] = append(fields[fAction], self)
		scope = append(scope, self)
	}
	return scope
}

// odataSystem are the OData segments that follow the resource they act on.
var odataSystem = map[string]bool{"$ref": true, "$value": true, "$count": true}

// statusless is a title without a status said before it ("Closing down -
// Get a classroom", "Deprecated: List pets"): its verb is the one after.
func statusless(title string) string {
	for _, sep := range []string{" - ", ": "} {
		status, rest, ok := strings.Cut(title, sep)
		if ok && statusWords[strings.ToLower(status)] {
			return rest
		}
	}
	return title
}

// statusWords are the statuses titles start with.
var statusWords = map[string]bool{"closing down": true, "deprecated": true, "deprecation notice": true,
	"sunset": true, "sunsetting": true, "legacy": true, "beta": true, "preview": true, "experimental": true}

// refVerbs are the verbs of an OData reference's methods.
var refVerbs = map[string]string{"POST": "add", "PUT": "add", "DELETE": "remove"}

// verbTerm is the term of the verb token of the word term id (computed
// once per word).
func (b *builder) verbTerm(id int32) int32 {
	if t, ok := b.verbTerms[id]; ok {
		return t
	}
	t := b.term(verbToken(b.names[id]))
	b.verbTerms[id] = t
	return t
}

// itemTermsOf returns the item tokens of a path parameter's words:
// "{issue_number}" says the tool takes one issue ("%issu").
func (b *builder) itemTermsOf(param string) []int32 {
	if ts, ok := b.itemTerms[param]; ok {
		return ts
	}
	var ts []int32
	b.words(param, func(w []byte) {
		if id := b.wordID(w); id >= 0 {
			ts = append(ts, b.term(itemToken(b.names[id])))
		}
	})
	b.itemTerms[param] = ts
	return ts
}

// isSelf reports whether a tool acts on the caller itself: a path through
// "/me" or "/self" (Graph, Spotify), GitHub's "/user/…", or a title that
// says "the authenticated user" or "the current user".
func isSelf(d *Doc) bool {
	rest, first := strings.Trim(d.Path, "/"), ""
	for i := 0; rest != ""; i++ {
		seg, after, _ := strings.Cut(rest, "/")
		if i == 0 {
			first = seg
		}
		switch {
		case strings.EqualFold(seg, "me"), strings.EqualFold(seg, "self"), strings.EqualFold(seg, "current"),
			strings.EqualFold(seg, "mine"), strings.EqualFold(seg, "@me"):
			return true
		case strings.EqualFold(seg, "user"):
			if i == 0 || i == 1 && strings.HasPrefix(first, "v") {
				return true
			}
		}
		rest = after
	}
	return containsFold(d.Title, "authenticated user") || containsFold(d.Title, "current user")
}

// containsFold reports whether s contains the lower-case ASCII sub, in any
// case, without lower-casing s.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if (s[i]|0x20) == sub[0] && strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// docActions are the canonical actions of a tool: those of its method, and
// those of the verbs its name and title start with ("Remove a label",
// "repos/create-fork", "me.events.event.accept", "PostCustomers").
func (b *builder) docActions(d *Doc, itemPath bool) []string {
	acts := methodActions(d.Method, itemPath)
	verb := func(s string, plurals bool) {
		first := ""
		b.words(s, func(w []byte) {
			if first == "" && !stopWords[string(w)] {
				first = string(w)
			}
		})
		st := b.stems.stem(first)
		if b.ix.nounishStems[st] || !plurals && strings.HasSuffix(first, "s") {
			return
		}
		for _, a := range b.ix.actions.of(st) {
			acts = appendUnique(acts, a)
		}
		// "Create a fork", "Create a workflow dispatch event": an action
		// named as the thing created (the object's words, up to a stop
		// word other than an article) is the tool's action too.
		if !slices.Contains(b.ix.actions.of(st), "create") {
			return
		}
		verbSeen, stopped := false, false
		b.words(s, func(w []byte) {
			switch stop := stopWords[string(w)]; {
			case stopped:
			case !verbSeen:
				verbSeen = !stop
			case stop:
				stopped = !articles[string(w)]
			case w[len(w)-1] != 's':
				if ost := b.stems.stem(string(w)); !b.ix.nounishStems[ost] {
					for _, a := range b.ix.actions.of(ost) {
						acts = appendUnique(acts, a)
					}
				}
			}
		})
	}
	verb(d.Title, true)
	// RPC-style sub-resources name their action: /payouts/{id}/cancel,
	// /pulls/{n}/merge, /events/{id}/microsoft.graph.accept.
	if i := strings.LastIndexByte(d.Path, '/'); i >= 0 && !strings.Contains(d.Path[i:], "{") {
		last := d.Path[i+1:]
		if j := strings.LastIndexByte(last, '.'); j >= 0 {
			last = last[j+1:]
		}
		verb(last, false) // "/invitations" is no verb, "/cancel" is
	}
	name := cmp0(d.OperationID, d.Name)
	// The verb of "repos/create-fork" or "me.events.event.accept" is in the
	// last part.
	if i := strings.LastIndexAny(name, "/."); i >= 0 {
		name = name[i+1:]
	}
	verb(name, true)
	return acts
}

// versionSegment reports whether a path segment is an API version ("v1",
// "v2beta1", "api").
func versionSegment(seg string) bool {
	if seg == "api" {
		return true
	}
	return len(seg) >= 2 && seg[0] == 'v' && seg[1] >= '0' && seg[1] <= '9'
}

// articles may stand between a verb and its object ("Create a fork").
var articles = map[string]bool{"a": true, "an": true, "the": true}

// leafResource is what the last literal segment of a path names: the
// resource itself, or, for an OData action or function
// ("microsoft.graph.reply"), the part after the namespace.
func leafResource(seg string) string {
	if i := strings.LastIndexByte(seg, '.'); i >= 0 {
		seg = seg[i+1:]
	}
	// A function named for what it reports ("getOneDriveUsageFileCounts")
	// acts on its head noun, the last word, not on every word of it.
	if p := strings.IndexByte(seg, '('); p >= 0 {
		name := seg[:p]
		last := 0
		for i, r := range name {
			if unicode.IsUpper(r) {
				last = i
			}
		}
		if last > 0 {
			return name[last:]
		}
	}
	return seg
}

// leadSentence splits plain text after its first sentence.
func leadSentence(text string) (lead, rest string) {
	for i := 0; i+1 < len(text); i++ {
		if c := text[i]; (c == '.' || c == '\n') && (text[i+1] == ' ' || text[i+1] == '\n') {
			return text[:i+1], text[i+1:]
		}
	}
	return text, ""
}

func cmp0(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// stripParams removes {param} templates from a path segment: they name the
// caller's values, not the operation.
func stripParams(seg string) string {
	if !strings.ContainsRune(seg, '{') {
		return seg
	}
	var sb strings.Builder
	depth := 0
	for i := 0; i < len(seg); i++ {
		switch c := seg[i]; {
		case c == '{':
			depth++
			sb.WriteByte(' ')
		case c == '}':
			if depth > 0 {
				depth--
			}
		case depth == 0:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// plainFields is the baseline's single bag of words.
func (b *builder) plainFields(d *Doc, fields [][]int32) {
	add := func(w string) {
		if !stopWords[w] {
			fields[fDesc] = append(fields[fDesc], b.term(w))
		}
	}
	for _, s := range []string{d.Name, d.Title, d.Description, d.Path} {
		plainWords(s, add)
	}
	for _, t := range d.Tags {
		plainWords(t, add)
	}
}

// plainWords splits on everything but letters and digits and lower-cases:
// the tokenizer of a plain keyword search.
func plainWords(s string, emit func(string)) {
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
	}) {
		emit(w)
	}
}

func (b *builder) count(fields [][]int32) ([]termTF, [nFields]float32) {
	var lens [nFields]float32
	out := b.counted[:0]
	if n := len(b.ix.terms); len(b.slot) < n {
		b.slot = append(b.slot, make([]int32, n-len(b.slot)+n/2)...)
	}
	for f, ts := range fields {
		lens[f] = float32(len(ts))
		for _, id := range ts {
			j := b.slot[id] - 1
			if j < 0 {
				j = int32(len(out))
				b.slot[id] = j + 1
				out = append(out, termTF{term: id})
			}
			if out[j].tf[f] < math.MaxUint16 {
				out[j].tf[f]++
			}
		}
	}
	for _, e := range out {
		b.slot[e.term] = 0
	}
	b.counted = out
	return slices.Clone(out), lens
}

// forward lists the terms of a tool's naming fields (name, title, lead
// sentence, tags, path): what feedback reads back from the best tools.
func (b *builder) forward(es []termTF) []int32 {
	var out []int32
	for _, e := range es {
		if e.tf[fName]+e.tf[fTitle]+e.tf[fLead]+e.tf[fTags]+e.tf[fPath] > 0 {
			out = append(out, e.term)
		}
	}
	return out
}

// impacts turns the counts into postings whose impact is the tool's whole
// BM25F contribution for the term: idf · tf~/(k1 + tf~).
func (b *builder) impacts() {
	ix := b.ix
	n := len(ix.docs)
	var avg [nFields]float32
	for i := range b.lengths {
		for f := range avg {
			avg[f] += b.lengths[i][f]
		}
	}
	for f := range avg {
		avg[f] = max(avg[f]/float32(max(n, 1)), 1)
	}
	// A tool counts fully in a term's document frequency when the term
	// names it (any field but the detail fields), and only a little when the
	// term is only in its detail: a word that every long description
	// mentions can still tell the tools it names apart.
	df := make([]float32, len(ix.terms))
	postingsLen := make([]int32, len(ix.terms))
	for _, es := range b.entries {
		for _, e := range es {
			postingsLen[e.term]++
			if ix.opts.Ranking == Ranked && e.tf[fName]+e.tf[fTitle]+e.tf[fLead]+e.tf[fTags]+e.tf[fPath]+e.tf[fLeaf]+e.tf[fAction] == 0 {
				df[e.term] += ix.w.detailDF
			} else {
				df[e.term]++
			}
		}
	}
	ix.postings = make([][]posting, len(ix.terms))
	ix.idf = make([]float32, len(ix.terms))
	for t := range ix.postings {
		ix.postings[t] = make([]posting, 0, postingsLen[t])
		ix.idf[t] = float32(math.Log(1 + (float64(n)-float64(df[t])+0.5)/(float64(df[t])+0.5)))
	}
	weights, bs := ix.w.field, ix.w.b
	if ix.opts.Ranking == PlainBM25 {
		weights, bs = [nFields]float32{fDesc: 1}, [nFields]float32{fDesc: 0.75}
	}
	for d, es := range b.entries {
		for _, e := range es {
			var tf float32
			for f := range e.tf {
				if e.tf[f] == 0 {
					continue
				}
				norm := 1 - bs[f] + bs[f]*b.lengths[d][f]/avg[f]
				tf += weights[f] * float32(e.tf[f]) / norm
			}
			ix.postings[e.term] = append(ix.postings[e.term], posting{doc: int32(d), impact: ix.idf[e.term] * tf / (k1 + tf)})
		}
	}
	b.entries, b.lengths = nil, nil
}

// priors are per-tool score factors: among near-duplicates (Graph reaches
// one event through /me/events, /me/calendar/events and
// /me/calendarGroups/{id}/calendars/{id}/events) the shorter path is the
// one a caller means.
func (b *builder) priors() {
	ix := b.ix
	ix.prior = make([]float32, len(ix.docs))
	for i := range ix.docs {
		if ix.opts.Ranking == PlainBM25 {
			ix.prior[i] = 1
			continue
		}
		path := ix.docs[i].Path
		depth := strings.Count(strings.Trim(path, "/"), "/") + 1
		ix.prior[i] = 1 / (1 + ix.w.depthPenalty*float32(max(depth-3, 0)))
		// OData's /$count answers a number, not the resource a caller means.
		if strings.HasSuffix(path, "/$count") {
			ix.prior[i] *= 0.5
		}
	}
}
