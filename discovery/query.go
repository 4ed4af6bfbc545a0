package discovery

import (
	"slices"
	"strings"
)

// Variant weights: how much a stand-in for a query word counts beside the
// word itself.
const (
	wAbbrev         = 0.8 // "repo" for "repository"
	wDomain         = 1.0 // "dispute" for "chargeback" (domain.txt; chosen on dev over 0.4-0.8)
	wAction         = 1.0 // the canonical action of a verb, matched on the action field
	wImplied        = 0.5 // the read action implied by a question ("which invoices …")
	wSelf           = 0.3 // "my" as "me", "self", "authenticated", "current"
	wClause         = 0.5 // a word of a clause that tells why or when
	wContext        = 0.5 // a word of a request's context: a sentence that tells, a quote (intentParts)
	wQuestionAction = 0.5 // a word of an action other than reading, in a question
	wLeadVerb       = 0.5 // a request's first word, matched on the verb its tools' titles start with
	wWho            = 0.5 // the roles people play, for a question that asks who
	wGroupmate      = 0.6 // another verb of the same action group, on the text fields
	wCompoundHead   = 0.7 // "mail" for "email"
	rareDocs        = 20  // "a few"
	wCompoundPart   = 0.5 // "drive" for "onedrive"
	wSelector       = 0.3 // "last" in "reply to her last email": which one, not what
	wItem           = 0.5 // "issue 212": tools that take one issue
)

// compile turns a query into concepts over the index's terms. Words with no
// term in the index drop out; so do stop words.
func (ix *Index) compile(text string) []concept {
	if ix.opts.Ranking == PlainBM25 {
		return ix.compilePlain(text)
	}
	q := &queryReading{ix: ix, seen: map[string]bool{}, actions: map[string]bool{}}
	q.split(text)
	for i, w := range q.raw {
		q.word(i, w)
	}
	// A question ("which invoices are unpaid") asks to read. (A bare noun
	// phrase is not read so: the dev half lost 0.06 R@5 when it was, since
	// many requests' verbs are in no action group.)
	if q.question {
		q.addAction("read", wImplied)
		if asksForMany(q.raw) {
			q.addAction("list", wAction)
		}
	}
	if q.who {
		q.addRoles()
	}
	if q.self {
		if id, ok := ix.terms[actionToken("self")]; ok {
			q.cs = append(q.cs, concept{w: 1, vs: []variant{{id, wSelf}}})
		}
	}
	return q.cs
}

// asksForMany reports whether a question asks which or what things, in
// the plural: "which subscriptions are past due", "what channels does it
// have" want a list.
func asksForMany(raw []string) bool {
	if len(raw) < 2 || raw[0] != "which" && raw[0] != "what" {
		return false
	}
	for _, w := range raw[1:min(3, len(raw))] { // "which invoices", "which pull requests"
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && stem(w) != w {
			return true
		}
	}
	return false
}

// tellingVerbs ask to be told something: "me" after them is no part of
// what is asked about.
var tellingVerbs = map[string]bool{"show": true, "give": true, "tell": true}

// selectorWords pick which of many a request means ("her last email"),
// seldom what it asks.
var selectorWords = map[string]bool{"last": true, "latest": true, "newest": true, "recent": true,
	"oldest": true, "previous": true}

// queryReading is compile's state as it reads a query's words in order.
type queryReading struct {
	ix       *Index
	raw      []string
	question bool // the query asks a question ("which invoices …")
	cs       []concept
	seen     map[string]bool // stems already made concepts
	actions  map[string]bool // actions already added
	self     bool            // the caller named itself ("my")
	hasVerb  bool            // the request's verb has been read
	first    bool            // a content word has been read
	light    int             // words left in which a light verb's noun may name the action
	clause   bool            // past a word that starts a clause of circumstance
	context  int             // raw[context:] are the request's context (intentParts)
	numbered map[string]bool // words a number follows: "issue 212" is one issue
	who      bool            // the request asks who
}

// split reads text's words into raw, what it asks first and its context
// after (intentParts), each part through the thesaurus and the two-word
// verbs; a question is told by the first word it asks with.
func (q *queryReading) split(text string) {
	q.context = -1
	for _, p := range intentParts(text, q.ix) {
		var raw []string
		words(q.ix.domain.keepWhole(p.text), func(w string) { raw = append(raw, w) })
		q.markNumbered(p.text)
		if p.context && q.context < 0 {
			q.context = len(q.raw)
		}
		if len(q.raw) == 0 && len(raw) > 0 {
			q.question = readQuestions[raw[0]]
			q.who = whoWords[raw[0]]
		}
		q.raw = append(q.raw, q.ix.undoVerbs(joinPhrasalVerbs(q.ix.domain.rewrite(raw)))...)
	}
	if q.context < 0 {
		q.context = len(q.raw)
	}
}

// undoVerbs reads "stop" before a verb's -ing form as the verb's undoing
// where the index has one: "stop following" is "unfollow", "stop watching"
// "unwatch". ws is modified in place.
func (ix *Index) undoVerbs(ws []string) []string {
	for i := 0; i+1 < len(ws); i++ {
		if ws[i] != "stop" || !strings.HasSuffix(ws[i+1], "ing") {
			continue
		}
		if un := "un" + stem(ws[i+1]); hasTerm(ix, un) {
			ws = slices.Delete(ws, i, i+1)
			ws[i] = un
		}
	}
	return ws
}

// markNumbered notes the words of text that a number follows ("issue
// 212", "PR 45"): the request means one of those things.
func (q *queryReading) markNumbered(text string) {
	fields := strings.Fields(text)
	for i := 1; i < len(fields); i++ {
		n := strings.TrimRight(fields[i], trailing)
		if n == "" || strings.Trim(n, "0123456789") != "" || fields[i-1] != strings.TrimRight(fields[i-1], trailing) {
			continue
		}
		if q.numbered == nil {
			q.numbered = map[string]bool{}
		}
		q.numbered[strings.ToLower(fields[i-1])] = true
	}
}

// addRoles adds the roles people play as one concept ("who is in this
// chat": its members).
func (q *queryReading) addRoles() {
	c := concept{w: wWho}
	for _, r := range personRoles {
		if id, ok := q.ix.terms[stem(r)]; ok {
			c.vs = append(c.vs, variant{id, 1})
		}
	}
	if len(c.vs) > 0 {
		q.cs = append(q.cs, c)
	}
}

// addAction adds action a as a concept (once).
func (q *queryReading) addAction(a string, w float32) {
	if q.actions[a] {
		return
	}
	q.actions[a] = true
	if id, ok := q.ix.terms[actionToken(a)]; ok {
		q.cs = append(q.cs, concept{w: 1, vs: []variant{{id, w}}})
	}
}

// word reads the query's word i.
func (q *queryReading) word(i int, w string) {
	ix := q.ix
	switch {
	case !q.clause && clauseWords[w] && len(q.cs) >= 2:
		q.clause = true
		return
	case selfWords[w]:
		// "show me", "give me": the one to tell, not what is asked about
		// ("make me a repo" makes the caller's).
		q.self = q.self || !(w == "me" && i == 1 && tellingVerbs[q.raw[0]])
		return
	case stopWords[w]:
		if listWords[w] && (i+1 == len(q.raw) || !timeUnits[q.raw[i+1]]) {
			q.addAction("list", wAction) // "all invoices", not "every time"
		}
		return
	}
	s := stem(w)
	isFirst := !q.first
	q.first = true
	if isFirst && !q.question {
		if id, ok := ix.terms[verbToken(s)]; ok {
			q.cs = append(q.cs, concept{w: wLeadVerb, bonus: true, vs: []variant{{id, 1}}})
		}
	}
	acts := q.verb(i, w, s, isFirst)
	for _, a := range acts {
		q.addAction(a, wAction)
	}
	if q.seen[s] {
		return
	}
	q.seen[s] = true
	c, ok := ix.wordConcept(w, s, acts)
	if !ok {
		return
	}
	if q.clause {
		c.w *= wClause
	}
	if i >= q.context {
		c.w *= wContext
	}
	if selectorWords[w] {
		c.w *= wSelector
	}
	// A question reads: a word of another action in it ("what's new",
	// "what changed") qualifies what is read.
	if q.question && changesSomething(ix.actions.of(s)) {
		c.w *= wQuestionAction
	}
	q.cs = append(q.cs, c)
	if lc, ok := ix.leafConcept(c); ok {
		q.cs = append(q.cs, lc)
	}
	if q.numbered[w] {
		if ic, ok := ix.itemConcept(c); ok {
			q.cs = append(q.cs, ic)
		}
	}
}

// verb returns the actions word i (w, stemmed s) asks for as the
// request's verb: its first action word; later ones ("starting next
// quarter") only qualify it, and so do all in a question ("which cards has
// this customer saved"), except the noun after a light verb.
func (q *queryReading) verb(i int, w, s string, isFirst bool) []string {
	var acts []string
	switch {
	case !q.question && !q.hasVerb && (isFirst || !nounish[w]):
		acts = verbActions(w, q.ix.actions.of(s), q.raw[i+1:])
		if lightVerbs[w] {
			q.light = lightReach
		}
	case q.light > 0:
		// "make a copy", "run a search": the noun after a light verb
		// names the action.
		q.light--
		if acts = q.ix.actions.of(s); len(acts) > 0 {
			q.light = 0
		}
	}
	if len(acts) > 0 {
		q.hasVerb = true
	}
	return acts
}

// verbActions are the actions a request's verb w asks for, given the words
// after it: those of its groups, except that a verb which creates with an
// indefinite object reads with a definite or possessive one ("open an
// issue" creates, "open my notebook" reads), and "make" with a pronoun
// for its object sets a state ("make it private").
func verbActions(w string, acts []string, rest []string) []string {
	switch {
	case len(acts) == 0 || len(rest) == 0:
		return acts
	case readsWhenDefinite[w] && definite[rest[0]]:
		return []string{"read"}
	case w == "make" && objectPronouns[rest[0]] && (len(rest) == 1 || !articles[rest[1]]):
		// "make it private", "make this one read-only": a state set on a
		// thing that exists, not a thing made.
		return []string{"update"}
	}
	return acts
}

// objectPronouns stand for a thing already named ("make me a new repo"
// makes one: the article that would tell is too short a word to be read).
var objectPronouns = map[string]bool{"it": true, "them": true, "this": true, "that": true}

// changesSomething reports whether acts hold an action other than
// reading, listing and searching.
func changesSomething(acts []string) bool {
	for _, a := range acts {
		if a != "read" && a != "list" && a != "search" {
			return true
		}
	}
	return false
}

// clauseWords start a clause that tells why or when ("star this repo so I
// can find it later", "sign a user out after their laptop was stolen"), or
// what a message is to say ("reply saying I'm on it", "email Dana and tell
// her the report is late"): its words count for less than the request's
// own.
var clauseWords = map[string]bool{"so": true, "because": true, "since": true, "after": true, "before": true,
	"saying": true, "tell": true, "telling": true, "asking": true, "letting": true, "along": true, "including": true}

// lightVerbs say little on their own: the noun after them names the action
// ("make a copy" copies, "run a search" searches; "do" and "have" are stop
// words and never a request's verb).
var lightVerbs = map[string]bool{"make": true, "take": true, "give": true, "perform": true, "create": true, "run": true}

// lightReach is how many content words after a light verb may name its
// action.
const lightReach = 3

// readsWhenDefinite are the verbs that create something new of an
// indefinite object and read a definite one.
var readsWhenDefinite = map[string]bool{"open": true}

// definite words name a thing that already exists.
var definite = map[string]bool{"my": true, "our": true, "your": true, "the": true, "this": true,
	"that": true, "these": true, "those": true, "his": true, "her": true, "their": true, "its": true}

// wordConcept is one query word with its stand-ins: abbreviations, general
// synonyms, the aliases mined from the document, and the other verbs of its
// action group.
func (ix *Index) wordConcept(w, s string, acts []string) (concept, bool) {
	c := concept{w: 1}
	orig, known := ix.terms[s]
	add := func(term string, weight float32) {
		id, ok := ix.terms[term]
		if !ok {
			return
		}
		// A stand-in never counts for more than the word itself could: a
		// rarer synonym of a common word would otherwise outrank it.
		if known && id != orig && ix.idf[id] > ix.idf[orig] {
			weight *= ix.idf[orig] / ix.idf[id]
		}
		for i := range c.vs {
			if c.vs[i].term == id {
				c.vs[i].w = max(c.vs[i].w, weight)
				return
			}
		}
		c.vs = append(c.vs, variant{id, weight})
	}
	add(s, 1)
	for _, a := range ix.abbrev[s] {
		add(a, wAbbrev)
	}
	// General synonyms help most where the document lacks the user's word.
	synW := float32(1)
	if known {
		synW = ix.w.synKnown
		if len(ix.postings[orig]) <= rareDocs {
			synW = ix.w.synRare
		}
	}
	for _, sy := range ix.syn.lookup(s) {
		add(sy.term, sy.w*synW)
	}
	for _, d := range ix.domain.of(s) {
		add(d, wDomain)
	}
	for _, a := range ix.aliases[s] {
		add(a.term, a.w)
	}
	for _, act := range acts {
		for _, mate := range ix.actions.mates[act] {
			add(mate, wGroupmate)
		}
	}
	ix.decompound(w, s, add)
	return c, len(c.vs) > 0
}

// itemConcept is the bonus a tool earns when a word concept names a thing
// the request means one of ("issue 212") and the tool takes one (its path
// has an "{issue_number}").
func (ix *Index) itemConcept(c concept) (concept, bool) {
	ic := concept{w: wItem, bonus: true}
	for _, v := range c.vs {
		if id, ok := ix.terms[itemToken(ix.names[v.term])]; ok {
			ic.vs = append(ic.vs, variant{id, v.w})
		}
	}
	return ic, len(ic.vs) > 0
}

// leafConcept is the bonus a tool earns when a word concept names the
// resource it acts on (the last literal segment of its path).
func (ix *Index) leafConcept(c concept) (concept, bool) {
	lc := concept{w: ix.w.leaf, bonus: true}
	for _, v := range c.vs {
		if id, ok := ix.terms[leafToken(ix.names[v.term])]; ok {
			lc.vs = append(lc.vs, variant{id, v.w})
		}
	}
	return lc, len(lc.vs) > 0
}

// decompound reads a compound word through its parts: "onedrive" as
// "drive" and "one", "chargeback" as "charge" and "back" when the index has
// no such word, and "email", "ebook", "ical" (a one- or two-letter prefix
// before a word) also as "mail", "book", "cal" even when it has.
func (ix *Index) decompound(w, s string, add func(string, float32)) {
	if len(w) < 5 {
		return
	}
	_, known := ix.terms[s]
	for i := 1; i <= 2; i++ {
		if head := w[i:]; len(head) >= 4 {
			if hs := stem(head); hasTerm(ix, hs) {
				add(hs, wCompoundHead)
				return
			}
		}
	}
	if known {
		return
	}
	best, bestLen := "", 0
	for i := 3; i <= len(w)-3; i++ {
		l, r := w[:i], w[i:]
		if hasTerm(ix, stem(l)) && hasTerm(ix, stem(r)) && min(len(l), len(r)) > bestLen {
			best, bestLen = l, min(len(l), len(r))
		}
	}
	if best != "" {
		add(stem(best), wCompoundPart)
		add(stem(w[len(best):]), wCompoundPart)
	}
}

func hasTerm(ix *Index, t string) bool {
	_, ok := ix.terms[t]
	return ok
}

func (ix *Index) compilePlain(text string) []concept {
	var cs []concept
	seen := map[string]bool{}
	plainWords(text, func(w string) {
		if stopWords[w] || seen[w] {
			return
		}
		seen[w] = true
		if id, ok := ix.terms[w]; ok {
			cs = append(cs, concept{w: 1, vs: []variant{{id, 1}}})
		}
	})
	return cs
}

// joinPhrasalVerbs replaces two-word verbs ("set up", "look for") by one
// word, their particle also a few words on ("turn the alerts off").
func joinPhrasalVerbs(ws []string) []string {
	out := ws[:0:0]
	var skip []int // positions of particles already joined
	for i := 0; i < len(ws); i++ {
		if slices.Contains(skip, i) {
			continue
		}
		if j, at, ok := separable(ws, i, func(v, p string) (string, bool) {
			j, ok := phrasalVerbs[[2]string{v, p}]
			return j, ok
		}); ok {
			out = append(out, j)
			if at == i+1 {
				i++
			} else {
				skip = append(skip, at)
			}
			continue
		}
		out = append(out, ws[i])
	}
	return out
}

// particles are the adverbs that end a phrasal verb and may stand after its
// object ("pass the message on").
var particles = map[string]bool{"on": true, "off": true, "up": true, "out": true, "in": true,
	"back": true, "down": true, "over": true, "away": true}

// maxParticleGap is how many words may stand between a verb and its
// particle.
const maxParticleGap = 3

// separable finds the two-word verb that starts at ws[i]: with the next word,
// or with a particle at most maxParticleGap words on. It returns what join
// makes of the pair and the particle's position.
func separable(ws []string, i int, join func(verb, particle string) (string, bool)) (string, int, bool) {
	for at := i + 1; at < len(ws) && at <= i+1+maxParticleGap; at++ {
		if at > i+1 && !particles[ws[at]] {
			continue
		}
		if j, ok := join(ws[i], ws[at]); ok {
			return j, at, true
		}
		if at > i+1 {
			return "", 0, false // the nearest particle decides
		}
	}
	return "", 0, false
}
