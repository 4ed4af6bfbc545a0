package discovery

// Variant weights: how much a stand-in for a query word counts beside the
// word itself.
const (
	wAbbrev    = 0.8 // "repo" for "repository"
	wAction    = 1.0 // the canonical action of a verb, matched on the action field
	wImplied   = 0.5 // the read action implied by a question ("which invoices …")
	wSelf      = 0.3 // "my" as "me", "self", "authenticated", "current"
	wGroupmate = 0.4 // another verb of the same action group, on the text fields
)

// compile turns a query into concepts over the index's terms. Words with no
// term in the index drop out; so do stop words.
func (ix *Index) compile(text string) []concept {
	var raw []string
	words(text, func(w string) { raw = append(raw, w) })
	if ix.opts.Ranking == PlainBM25 {
		return ix.compilePlain(text)
	}
	raw = joinPhrasalVerbs(raw)
	var cs []concept
	seen := map[string]bool{}
	actions := map[string]bool{}
	addAction := func(a string, w float32) {
		if actions[a] {
			return
		}
		actions[a] = true
		if id, ok := ix.terms[actionToken(a)]; ok {
			cs = append(cs, concept{w: 1, vs: []variant{{id, w}}})
		}
	}
	self := false
	first := true
	question := len(raw) > 0 && readQuestions[raw[0]]
	for _, w := range raw {
		if selfWords[w] {
			self = true
			continue
		}
		if stopWords[w] {
			continue
		}
		s := stem(w)
		isFirst := first
		first = false
		if acts := ix.actions.of(s); len(acts) > 0 && (isFirst || !nounish[w]) {
			for _, a := range acts {
				addAction(a, wAction)
			}
		}
		if seen[s] {
			continue
		}
		seen[s] = true
		if c, ok := ix.wordConcept(w, s); ok {
			cs = append(cs, c)
		}
	}
	if question && len(actions) == 0 {
		addAction("read", wImplied)
	}
	if self {
		c := concept{w: 1}
		for _, t := range []string{"me", "self", "authent", "current"} {
			if id, ok := ix.terms[t]; ok {
				c.vs = append(c.vs, variant{id, wSelf})
			}
		}
		if len(c.vs) > 0 {
			cs = append(cs, c)
		}
	}
	return cs
}

// wordConcept is one query word with its stand-ins: abbreviations, general
// synonyms, the aliases mined from the document, and the other verbs of its
// action group.
func (ix *Index) wordConcept(w, s string) (concept, bool) {
	c := concept{w: 1}
	add := func(term string, weight float32) {
		id, ok := ix.terms[term]
		if !ok {
			return
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
	for _, p := range commonAbbreviations {
		if p[0] == w {
			add(stem(p[1]), wAbbrev)
		} else if p[1] == w {
			add(stem(p[0]), wAbbrev)
		}
	}
	for _, sy := range ix.syn.lookup(s) {
		add(sy.term, sy.w)
	}
	for _, a := range ix.aliases[s] {
		add(a.term, a.w)
	}
	for _, act := range ix.actions.of(s) {
		for _, mate := range ix.actions.mates[act] {
			add(mate, wGroupmate)
		}
	}
	return c, len(c.vs) > 0
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
// word.
func joinPhrasalVerbs(ws []string) []string {
	out := ws[:0:0]
	for i := 0; i < len(ws); i++ {
		if i+1 < len(ws) {
			if j, ok := phrasalVerbs[[2]string{ws[i], ws[i+1]}]; ok {
				out = append(out, j)
				i++
				continue
			}
		}
		out = append(out, ws[i])
	}
	return out
}
