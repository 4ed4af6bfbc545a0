package discovery

import (
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// The domain thesaurus (domain.txt): how users name what web APIs call
// otherwise. Unlike the general synonyms, distilled from WordNet, it is
// written by hand, so it knows that a chargeback is a dispute and an
// out-of-office reply lives in the mailbox settings. An operator adds
// entries of the same format for an API of their own ([Options.Thesaurus]).
//
//go:embed domain.txt
var domainText string

// A Thesaurus is a parsed table in domain.txt's format: phrase rewrites,
// applied to a request's words before anything else, and curated stand-ins
// of single words. It is read-only once built; [ParseThesaurus] makes one.
type Thesaurus struct {
	// rewrites maps a phrase's first word to its rules, longest first.
	rewrites map[string][]rewrite
	// standIns maps a stem to the stems that may stand for it.
	standIns map[string][]string
	// ids maps the prefix of an object's id ("pi" of "pi_3MxyzL") to the
	// words that name the object ("payment intent").
	ids map[string]string
}

type rewrite struct {
	phrase []string // the request's words, as spelt
	stems  []string // and stemmed: "meeting rooms" is "meeting room" where no phrase is spelt so
	to     []string // the words read instead
}

// embeddedThesaurus parses domain.txt once per process.
var embeddedThesaurus = sync.OnceValue(func() *Thesaurus {
	t, err := ParseThesaurus("domain.txt", domainText)
	if err != nil {
		panic(err) // TestDomainTable keeps the embedded table valid
	}
	return t
})

// ParseThesaurus reads a table: "phrase = words" and "word: words" lines and
// # comments, as domain.txt documents them. Errors name source and the line.
func ParseThesaurus(source, text string) (*Thesaurus, error) {
	t := &Thesaurus{rewrites: map[string][]rewrite{}, standIns: map[string][]string{}, ids: map[string]string{}}
	seen := map[string]int{}
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if err := t.add(line, seen, n+1); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", source, n+1, err)
		}
	}
	t.sort()
	return t, nil
}

// with returns t with extra's entries added, an entry of extra replacing
// t's for the same phrase or word. Neither is modified.
func (t *Thesaurus) with(extra *Thesaurus) *Thesaurus {
	if extra == nil {
		return t
	}
	out := &Thesaurus{rewrites: map[string][]rewrite{}, standIns: maps.Clone(t.standIns), ids: maps.Clone(t.ids)}
	for k, v := range t.rewrites {
		out.rewrites[k] = slices.Clone(v)
	}
	maps.Copy(out.standIns, extra.standIns)
	if out.ids == nil {
		out.ids = map[string]string{}
	}
	maps.Copy(out.ids, extra.ids)
	for k, rules := range extra.rewrites {
		replaced := make(map[string]bool, len(rules))
		for _, r := range rules {
			replaced[strings.Join(r.phrase, " ")] = true
		}
		kept := slices.DeleteFunc(out.rewrites[k], func(o rewrite) bool { return replaced[strings.Join(o.phrase, " ")] })
		out.rewrites[k] = append(kept, rules...)
	}
	out.sort()
	return out
}

// sort puts each first word's rules longest first, so the longest phrase
// matches.
func (t *Thesaurus) sort() {
	for k := range t.rewrites {
		slices.SortStableFunc(t.rewrites[k], func(a, b rewrite) int { return len(b.phrase) - len(a.phrase) })
	}
}

func (t *Thesaurus) add(line string, seen map[string]int, n int) error {
	lhs, rhs, isRewrite := strings.Cut(line, "=")
	if !isRewrite {
		var ok bool
		if lhs, rhs, ok = strings.Cut(line, ":"); !ok {
			return fmt.Errorf("%q: want \"phrase = words\" or \"word: words\"", line)
		}
	}
	sep := ":"
	if isRewrite {
		sep = "="
	}
	var from, to []string
	words(lhs, func(w string) { from = append(from, w) })
	words(rhs, func(w string) { to = append(to, w) })
	if prefix := strings.TrimSpace(lhs); isRewrite && strings.HasSuffix(prefix, "_") {
		return t.addID(line, strings.TrimSuffix(prefix, "_"), to, seen, n)
	}
	switch {
	case len(from) == 0:
		return fmt.Errorf("%q: no words before %q", line, sep)
	case len(to) == 0 && !isRewrite:
		return fmt.Errorf("%q: no words after %q", line, sep)
	case len(to) == 0 && strings.TrimSpace(rhs) != "":
		return fmt.Errorf("%q: no words after %q (nothing after it leaves the phrase out)", line, sep)
	case !isRewrite && len(from) > 1:
		return fmt.Errorf("%q: a stand-in entry is for one word; write a phrase as \"phrase = words\"", line)
	case !isRewrite && stopWords[from[0]]:
		return fmt.Errorf("%q: %q is a stop word, never searched for; write \"%s = ...\" to read it as other words", line, from[0], from[0])
	}
	// A phrase is matched as spelt, else, of two words or more, by its
	// words' stems ("meeting rooms" is "meeting room"); a stand-in entry
	// by its word's stem ("files:" is "file:").
	stems := make([]string, len(from))
	for i, w := range from {
		stems[i] = stem(w)
	}
	key := strings.Join(from, " ")
	if !isRewrite {
		key = "~" + stems[0]
	}
	if prev, ok := seen[key]; ok {
		return fmt.Errorf("%q: %q is already defined on line %d", line, strings.TrimPrefix(key, "~"), prev)
	}
	seen[key] = n
	if isRewrite {
		// "my team", "am I in": the words for the caller stay.
		if i := slices.IndexFunc(from, isSelfWord); i >= 0 && !slices.ContainsFunc(to, isSelfWord) {
			to = append(to, from[i])
		}
		t.rewrites[stems[0]] = append(t.rewrites[stems[0]], rewrite{phrase: from, stems: stems, to: to})
		return nil
	}
	self := stems[0]
	var ins []string
	for _, w := range to {
		if s := stem(w); !stopWords[w] && s != self {
			ins = appendUnique(ins, s)
		}
	}
	if len(ins) == 0 {
		return fmt.Errorf("%q: no word after %q but %q itself", line, sep, from[0])
	}
	t.standIns[self] = ins
	return nil
}

// addID adds an id prefix's line ("pi_ = payment intent").
func (t *Thesaurus) addID(line, prefix string, to []string, seen map[string]int, n int) error {
	if prefix == "" || strings.Trim(prefix, "abcdefghijklmnopqrstuvwxyz_") != "" {
		return fmt.Errorf("%q: an id's prefix is lower-case letters before \"_\" (\"pi_ = payment intent\")", line)
	}
	if len(to) == 0 {
		return fmt.Errorf("%q: no words after \"=\" for the id's object", line)
	}
	if w := strings.Join(to, " "); len(w) > maxIDWords {
		return fmt.Errorf("%q: an id's object is named in at most %d bytes", line, maxIDWords)
	}
	key := "id " + prefix
	if prev, ok := seen[key]; ok {
		return fmt.Errorf("%q: %q is already defined on line %d", line, prefix+"_", prev)
	}
	seen[key] = n
	t.ids[prefix] = strings.Join(to, " ")
	return nil
}

// maxIDWords bounds the words an id's prefix is read as, so that a
// request read through the table grows by a bounded factor.
const maxIDWords = 48

// idWords returns the words naming the object whose ids start with prefix
// and "_" (none for a nil table).
func (t *Thesaurus) idWords(prefix string) (string, bool) {
	if t == nil {
		return "", false
	}
	w, ok := t.ids[prefix]
	return w, ok
}

// keepWhole lowercases, in a request's text, each word spelled in mixed
// case ("GitHub", "OneDrive") that is the first word of one of t's phrases
// as one word ("github =", "onedrive = drive"): words() would otherwise
// split it at its case change and the phrase would never match. The text
// keeps its length; a word the table does not know stays as it is.
func (t *Thesaurus) keepWhole(text string) string {
	if t == nil {
		return text
	}
	var b []byte // text's copy, once a word changes
	for i := 0; i < len(text); {
		j := i
		for j < len(text) && isASCIILetter(text[j]) {
			j++
		}
		if j == i {
			i++
			continue
		}
		w := text[i:j]
		if lower := strings.ToLower(w); mixedCase(w) && len(t.rewrites[stem(lower)]) > 0 {
			if b == nil {
				b = []byte(text)
			}
			copy(b[i:j], lower)
		}
		i = j
	}
	if b == nil {
		return text
	}
	return string(b)
}

func isASCIILetter(c byte) bool { c |= 0x20; return c >= 'a' && c <= 'z' }

// mixedCase tells whether an ASCII word has a capital past its first letter
// and a small letter: "GitHub", not "Acme" or "GITHUB".
func mixedCase(w string) bool {
	return strings.ContainsAny(w[1:], "ABCDEFGHIJKLMNOPQRSTUVWXYZ") && strings.ContainsAny(w, "abcdefghijklmnopqrstuvwxyz")
}

// rewrite returns a request's words with each phrase of the table replaced
// by its words (longest phrase first, left to right; a two-word phrase that
// ends in a particle also when a few words part them: "pass the message
// on"). ws is not modified.
func (t *Thesaurus) rewrite(ws []string) []string {
	if t == nil || len(t.rewrites) == 0 {
		return ws
	}
	var out []string
	var skip []int // particles already read with their verb
	changed := false
	stems := make([]string, len(ws))
	for i, w := range ws {
		stems[i] = stem(w)
	}
	for i := 0; i < len(ws); {
		if slices.Contains(skip, i) {
			i++
			continue
		}
		to, n, at, ok := t.match(ws, stems, i)
		if !ok {
			if changed {
				out = append(out, ws[i])
			}
			i++
			continue
		}
		if !changed {
			out, changed = append(make([]string, 0, len(ws)+4), ws[:i]...), true
		}
		out = append(out, to...)
		if at >= 0 {
			skip = append(skip, at)
			n = 1
		}
		i += n
	}
	if !changed {
		return ws
	}
	return out
}

// match finds the rule for the words at ws[i] (stems[i] their stems): the
// words it reads them as, how many words it covers, and for a parted verb
// and particle the particle's position (else -1).
func (t *Thesaurus) match(ws, stems []string, i int) (to []string, n, at int, ok bool) {
	rules := t.rewrites[stems[i]]
	for _, r := range rules {
		if len(r.phrase) <= len(ws)-i && slices.Equal(r.phrase, ws[i:i+len(r.phrase)]) {
			return r.to, len(r.phrase), -1, true
		}
	}
	for _, r := range rules {
		// One word is matched as spelt only: "privately" is no "private".
		if len(r.stems) > 1 && len(r.stems) <= len(ws)-i && r.matchesStems(ws[i:], stems[i:]) {
			return r.to, len(r.stems), -1, true
		}
	}
	_, at, ok = separable(ws, i, func(verb, particle string) (string, bool) {
		for _, r := range rules {
			if len(r.phrase) == 2 && r.phrase[1] == particle && particles[particle] {
				to = r.to
				return "", true
			}
		}
		return "", false
	})
	if !ok || at == i+1 {
		return nil, 0, 0, false // adjacent: the loop above would have found it
	}
	return to, 1, at, true
}

// matchesStems reports whether the words ws (stems their stems) start
// with r's phrase by stems, its words spelt as a participle ("deleted",
// "showing") matched as spelt: "deleted users" is no "delete users".
func (r rewrite) matchesStems(ws, stems []string) bool {
	if len(ws) < len(r.stems) {
		return false
	}
	for k, s := range r.stems {
		if participle(r.phrase[k]) {
			if ws[k] != r.phrase[k] {
				return false
			}
		} else if stems[k] != s {
			return false
		}
	}
	return true
}

// participle reports whether a word is spelt as a verb's -ed or -ing form.
func participle(w string) bool {
	return len(w) > 4 && (strings.HasSuffix(w, "ed") || strings.HasSuffix(w, "ing"))
}

func isSelfWord(w string) bool { return selfWords[w] }

// of returns the curated stand-ins of a stem (none for a nil table).
func (t *Thesaurus) of(s string) []string {
	if t == nil {
		return nil
	}
	return t.standIns[s]
}
