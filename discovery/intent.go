package discovery

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reading a request for what it asks. Users say more than what to do: the
// values the call will carry (an address, a link, a quoted title) and
// sentences that tell the circumstances ("Refund order 1182, the customer
// sent the shoes back"; "We think Dave's password leaked. Sign him out
// everywhere"). Their words name other operations as often as the wanted
// one ("report", "month", "product"), so intentParts puts what a request
// asks first, where its verb is read, and marks the rest as context, whose
// words count for less (wContext).

// A part is a stretch of a request: asked, or context.
type part struct {
	text    string
	context bool
}

// A lexicon is what reading a request needs to know of the index's words.
type lexicon interface {
	// isVerb reports whether a lower-case word can be a request's verb.
	isVerb(w string) bool
	// has reports whether a lower-case word is a word of the index.
	has(w string) bool
	// inThesaurus reports whether the domain thesaurus reads a lower-case
	// word (a phrase starts with it, or it has stand-ins).
	inThesaurus(w string) bool
	// idWords returns the words that name the object whose ids start with
	// prefix and "_" ("pi": "payment intent").
	idWords(prefix string) (string, bool)
}

// intentParts splits a request into its parts, those it asks first and in
// order, then its context:
//   - values drop out: e-mail addresses, URLs, @handles and names with a
//     slash name no operation (Microsoft Graph's examples are full of
//     "contoso"), the name a request gives a thing ("a team called
//     Project Falcon") and the names of people and places that the index
//     does not know ("add Ana to the Marketing group");
//   - quoted text ("put 'submit expense report' on my to-do list") and
//     what follows a colon ("a new item in our catalog: Ceramic Mug, 12
//     oz") are context when there is more;
//   - when a sentence or comma-separated clause asks with a verb of the
//     index, the clauses that neither ask nor question nor open with a
//     preposition tell the circumstances, and are context: "the customer
//     sent …", "he moved away", "Maria's last day was today".
//
// A request with no such verb is kept whole and in order, less its values
// and quotes: "my unread emails, newest first" is all it asks.
func intentParts(text string, lex lexicon) []part {
	text, quoted := splitQuoted(dropNames(dropValues(text, lex), lex))
	if i := strings.Index(text, ": "); i > 0 { // "a new item in our catalog: Ceramic Mug, 12 oz"
		text, quoted = text[:i], append(quoted, text[i+2:])
	}
	cls := clauses(text)
	var asked, context []part
	imperative := false
	for _, cl := range cls {
		first, lead := leadWords(cl)
		verb := lead != "" && lex.isVerb(lead)
		imperative = imperative || verb
		if verb || readQuestions[first] || prepositions[first] {
			asked = append(asked, part{text: cl})
		} else {
			context = append(context, part{cl, true})
		}
	}
	if !imperative { // nothing asks with a verb: every clause is the request
		asked, context = asked[:0], context[:0]
		for _, cl := range cls {
			asked = append(asked, part{text: cl})
		}
	}
	for _, q := range quoted {
		context = append(context, part{q, true})
	}
	if len(asked) == 0 { // only quotes: they are what is asked
		for i := range context {
			context[i].context = false
		}
	}
	return append(asked, context...)
}

// dropValues blanks the values of a request: e-mail addresses, URLs,
// @handles, and names with a slash that say what the index does not know
// ("acme/api", "vercel/next.js", "release/2.3": a repository or a branch;
// "read/write", "repos/create-fork" and "/repos/{owner}/{repo}/pulls"
// stay), except that an owner's name and a thing's ("acme/api") say
// "repo" where the index knows repositories; a file's name
// ("budget-2025.xlsx") says only that it is a file, "#412" after a verb
// that it is an issue, and an object's id ("pi_3MxyzL") the object its
// prefix names (lexicon.idWords). A number
// ("0") stands after the words of a numbered thing or an id ("issue 0",
// "payment intent 0"), as after "issue" in "issue 212": the request means
// one of them (markNumbered). The punctuation after a value stays (it may
// end a clause).
func dropValues(text string, lex lexicon) string {
	if !strings.ContainsAny(text, "@:/.#_") {
		return text
	}
	fields := strings.Fields(text)
	for i, f := range fields {
		core := strings.TrimRight(f, trailing)
		switch {
		case strings.Contains(core, "@") || strings.Contains(core, "://") || strings.HasPrefix(core, "www."):
			fields[i] = f[len(core):]
		case strings.Contains(strings.Trim(core, "/"), "/") && !knownName(core, lex):
			fields[i] = f[len(core):]
			if isSlug(core) && lex.has("repository") {
				fields[i] = "repo" + f[len(core):] // "acme/api": an owner's repository
			}
		case isFileName(core):
			fields[i] = "file" + f[len(core):]
		case isObjectID(core):
			// "pi_3MxyzL": its prefix names the object, the rest is a value.
			// The number after its words says it is one of them (see
			// markNumbered); words() reads no number.
			if w, ok := lex.idWords(idPrefix(core)); ok {
				fields[i] = w + " 0" + f[len(core):]
			} else {
				fields[i] = f[len(core):]
			}
		case isNumberRef(core):
			// "close #412": an issue or a pull request, when nothing else
			// says what it numbers ("order #1182", "PR #42").
			if i > 0 && !lex.isVerb(strings.ToLower(fields[i-1])) {
				fields[i] = "0" + f[len(core):]
			} else {
				fields[i] = "issue 0" + f[len(core):]
			}
		}
	}
	return strings.Join(fields, " ")
}

// dropNames blanks the names in a request that no general table should
// read: the name after "called", "named" or "titled" (with that word: "a
// team called Project Falcon", "a repo named dotfiles"), and a word
// capitalized in mid-sentence as a name is ("Ana", "Lisbon") that neither
// the index nor the thesaurus knows. Such a word has no term to match,
// only general synonyms, and a person's name has the wrong ones ("Ana" is
// a collection of sayings, "John" a room). A name between "add" (or
// "invite") and "to" is someone joining: "members" stands in its place.
// A name spelled like a product ("OneDrive", "GitHub") stays for the
// compound splitter.
func dropNames(text string, lex lexicon) string {
	fields := strings.Fields(text)
	out := make([]string, 0, len(fields))
	changed := false
	for i := 0; i < len(fields); i++ {
		core := strings.TrimRight(fields[i], trailing)
		lower := strings.ToLower(core)
		midSentence := i > 0 && !endsSentence(fields[i-1])
		switch {
		default:
			out = append(out, fields[i])
			continue
		case namingWords[lower] && midSentence && core == fields[i] && i+1 < len(fields) &&
			!opensWithQuote(fields[i+1]) && !actorWords[strings.ToLower(fields[i-1])]:
			last, punct := nameEnd(fields, i+1)
			if punct != "" {
				out = append(out, punct)
			}
			i = last
		case midSentence && isCapitalizedName(core) &&
			!lex.has(lower) && !lex.isVerb(lower) && !lex.inThesaurus(lower):
			if rest := fields[i][len(core):]; rest != "" {
				out = append(out, rest)
			} else if len(out) > 0 && joinVerbs[strings.ToLower(out[len(out)-1])] && i+1 < len(fields) && fields[i+1] == "to" {
				out = append(out, "members") // "add Ana to the group": she joins it
			}
		}
		changed = true
	}
	if !changed {
		return text
	}
	return strings.Join(out, " ")
}

// isSlug reports whether s is an owner's name and a thing's ("acme/api";
// not "release/2.3", "acme.io/tools").
func isSlug(s string) bool {
	owner, name, ok := strings.Cut(s, "/")
	return ok && owner != "" && name != "" && !strings.Contains(name, "/") && !strings.ContainsAny(owner, ".:") &&
		isASCIILetter(name[0])
}

// trailing is the punctuation that may follow a word.
const trailing = ".,;:!?)\"'”’"

// joinVerbs, with a name and "to" after them, have someone join
// something: the name is read as its members.
var joinVerbs = map[string]bool{"add": true, "invite": true, "include": true, "bring": true, "put": true}

// nameEnd returns the last word of the name that starts at fields[i] (its
// first word, then the capitalized words after it, up to a punctuation
// mark) and the punctuation after it.
func nameEnd(fields []string, i int) (last int, punct string) {
	for j := i; j < len(fields); j++ {
		c := strings.TrimRight(fields[j], trailing)
		if j > i && !startsUpperOrDigit(c) {
			return j - 1, ""
		}
		if p := fields[j][len(c):]; p != "" {
			return j, p
		}
	}
	return len(fields) - 1, ""
}

// namingWords introduce the name a request gives a thing.
var namingWords = map[string]bool{"called": true, "named": true, "titled": true, "entitled": true}

// actorWords before "called" make it a verb: "who called", "I called".
var actorWords = map[string]bool{"who": true, "i": true, "he": true, "she": true, "they": true,
	"we": true, "you": true, "someone": true, "somebody": true, "that": true, "which": true,
	"has": true, "have": true, "had": true, "just": true, "recently": true, "never": true}

// endsSentence reports whether a field ends a sentence, so the next word
// is capitalized for that reason alone.
func endsSentence(f string) bool {
	f = strings.TrimRight(f, ")\"'”’")
	return f == "" || strings.ContainsAny(f[len(f)-1:], ".!?:")
}

// isCapitalizedName reports whether w is spelled as a name: a capital
// letter, then lower-case letters only ("Ana", not "OneDrive", "CFO" or
// "E5").
func isCapitalizedName(w string) bool {
	r, n := utf8.DecodeRuneInString(w)
	if !unicode.IsUpper(r) || n == len(w) {
		return false
	}
	for _, r := range w[n:] {
		if !unicode.IsLower(r) {
			return false
		}
	}
	return true
}

// opensWithQuote reports whether w starts with a quotation mark.
func opensWithQuote(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	_, ok := quoteCloser(r)
	return ok
}

// startsUpperOrDigit reports whether w starts with a capital or a digit.
func startsUpperOrDigit(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r) || unicode.IsDigit(r)
}

// maxGrowth bounds how much longer a request's parts are than the request:
// the shortest value read as words is an id of three bytes ("a_1"), read
// as at most maxIDWords bytes.
const maxGrowth = maxIDWords / 3

// isObjectID reports whether w is an object's id: lower-case words joined
// by "_", then a last part with a digit or a capital ("pi_3MxyzL",
// "cs_live_b7", "sub_sched_1Nx"), as Stripe and others prefix theirs.
func isObjectID(w string) bool {
	i := strings.LastIndexByte(w, '_')
	if i < 1 || i == len(w)-1 {
		return false
	}
	for _, c := range w[:i] {
		if (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	marked := false
	for _, c := range w[i+1:] {
		switch {
		case c >= '0' && c <= '9', c >= 'A' && c <= 'Z':
			marked = true
		case c < 'a' || c > 'z':
			return false
		}
	}
	return marked
}

// idPrefix is an id's prefix without its mode ("cs_live_b7": "cs").
func idPrefix(id string) string {
	p := id[:strings.LastIndexByte(id, '_')]
	for _, mode := range []string{"_test", "_live"} {
		p = strings.TrimSuffix(p, mode)
	}
	return p
}

// isNumberRef reports whether w is "#" and digits ("#412").
func isNumberRef(w string) bool {
	if len(w) < 2 || w[0] != '#' {
		return false
	}
	for _, c := range w[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// knownName reports whether every part of a slashed name has words, all
// of them words of the index: "read/write", an operation's path or its
// id, not a repository's or a branch's name.
func knownName(name string, lex lexicon) bool {
	for p := range strings.SplitSeq(strings.Trim(name, "/"), "/") {
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			continue // a path's parameter
		}
		n, known := 0, true
		words(p, func(w string) {
			n++
			known = known && lex.has(w)
		})
		if n == 0 || !known {
			return false
		}
	}
	return true
}

// isFileName reports whether w is a file's name: a name, a dot and an
// extension of two to four letters or digits that starts with a letter,
// not a domain ("contoso.com").
func isFileName(w string) bool {
	dot := strings.LastIndexByte(w, '.')
	if dot < 1 || len(w)-dot-1 < 2 || len(w)-dot-1 > 4 {
		return false
	}
	ext := strings.ToLower(w[dot+1:])
	if !unicode.IsLetter(rune(ext[0])) || domainEnds[ext] {
		return false
	}
	for _, r := range ext {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// domainEnds are the ends of the domain names that requests name.
var domainEnds = map[string]bool{"com": true, "org": true, "net": true, "io": true, "dev": true,
	"app": true, "co": true, "edu": true, "gov": true, "ai": true}

// splitQuoted takes the quoted stretches out of text: in double quotes
// (straight or curly), or in single ones that open a word and close one
// (apostrophes, as in "Carla's", stay).
func splitQuoted(text string) (rest string, quoted []string) {
	if !strings.ContainsAny(text, "\"“'‘") {
		return text, nil
	}
	var b strings.Builder
	unclosed := map[rune]bool{} // closers not found: looking again is no use (and would be quadratic)
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if closer, ok := quoteCloser(r); ok && !unclosed[closer] && opensQuote(text, i) {
			if end := closingQuote(text, i+size, closer); end > 0 {
				quoted = append(quoted, text[i+size:end])
				b.WriteByte(' ')
				_, csize := utf8.DecodeRuneInString(text[end:])
				i = end + csize
				continue
			}
			unclosed[closer] = true
		}
		b.WriteString(text[i : i+size])
		i += size
	}
	return b.String(), quoted
}

// quoteCloser is the rune that closes a quote opened by r.
func quoteCloser(r rune) (rune, bool) {
	switch r {
	case '"':
		return '"', true
	case '“':
		return '”', true
	case '\'':
		return '\'', true
	case '‘':
		return '’', true
	}
	return 0, false
}

// opensQuote reports whether the quote mark at text[i] opens a quote: it
// starts the text or follows a space or an opening bracket.
func opensQuote(text string, i int) bool {
	if i == 0 {
		return true
	}
	prev, _ := utf8.DecodeLastRuneInString(text[:i])
	return unicode.IsSpace(prev) || prev == '(' || prev == '['
}

// closingQuote is the position of the mark that closes a quote whose text
// starts at from: closer, past the quote's first rune and before a space,
// punctuation or the end; -1 when there is none.
func closingQuote(text string, from int, closer rune) int {
	for j := from; j < len(text); {
		r, size := utf8.DecodeRuneInString(text[j:])
		if r == closer && j > from {
			next, _ := utf8.DecodeRuneInString(text[j+size:])
			if j+size == len(text) || unicode.IsSpace(next) || unicode.IsPunct(next) {
				return j
			}
		}
		j += size
	}
	return -1
}

// clauses splits text at the ends of sentences and at commas: ".", "?",
// "!", ";" or "," before a space or the end ("v1.4.0" and "1,000" stay
// whole).
func clauses(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case ',', ';', '.', '?', '!':
			if i+1 < len(text) && !unicode.IsSpace(rune(text[i+1])) {
				continue
			}
			if s := strings.TrimSpace(text[start:i]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

// leadWords are a clause's first word and its first word past the fillers
// that may precede a request's verb ("so go ahead and collect", "please
// refund"), lower-cased.
func leadWords(clause string) (first, lead string) {
	for _, f := range strings.Fields(clause) {
		w := strings.ToLower(strings.TrimLeftFunc(f, func(r rune) bool { return !unicode.IsLetter(r) }))
		if end := strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) }); end >= 0 {
			w = w[:end] // "who's" is "who"
		}
		if w == "" {
			continue
		}
		if first == "" {
			first = w
		}
		if !leadFillers[w] {
			return first, w
		}
	}
	return first, ""
}

// prepositions open a clause that says what a request is about ("for the
// chargeback on order 5521, add …").
var prepositions = map[string]bool{
	"for": true, "in": true, "on": true, "at": true, "to": true, "from": true, "with": true,
	"about": true, "of": true, "into": true, "onto": true, "by": true, "under": true, "within": true,
	"between": true, "across": true, "per": true, "during": true, "without": true,
}

// leadFillers may stand before a request's verb.
var leadFillers = map[string]bool{
	"please": true, "so": true, "then": true, "and": true, "now": true, "just": true,
	"also": true, "go": true, "ahead": true, "kindly": true, "quickly": true, "can": true,
	"could": true, "would": true, "you": true,
}

// has reports whether w is a word of the index.
func (ix *Index) has(w string) bool {
	_, ok := ix.terms[stem(w)]
	return ok
}

// idWords returns the words the index's thesaurus gives an id's prefix.
func (ix *Index) idWords(prefix string) (string, bool) { return ix.domain.idWords(prefix) }

// inThesaurus reports whether the index's domain thesaurus reads w.
func (ix *Index) inThesaurus(w string) bool {
	t := ix.domain
	return t != nil && (len(t.rewrites[stem(w)]) > 0 || len(t.of(stem(w))) > 0)
}

// isVerb reports whether the index reads w as a request's verb: a word of
// the action vocabulary, the first word of some tool's title, or the first
// word of a two-word verb ("sign him out").
func (ix *Index) isVerb(w string) bool {
	s := stem(w)
	if len(ix.actions.of(s)) > 0 || phrasalHeads[w] {
		return true
	}
	_, ok := ix.terms[verbToken(s)]
	return ok
}

// phrasalHeads are the first words of phrasalVerbs.
var phrasalHeads = func() map[string]bool {
	m := map[string]bool{}
	for pv := range phrasalVerbs {
		m[pv[0]] = true
	}
	return m
}()
