package discovery

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// Text handling: how operation text and queries become terms.
//
// words splits text into lower-case words. It reads plain prose, identifiers
// and paths alike: camelCase, PascalCase and acronyms split at their case
// boundaries ("getHTTPStatus" → get, http, status; "IDs" stays one word),
// snake_case, kebab-case, dots and slashes separate words, HTML tags and
// entities, URLs and the targets of Markdown links are skipped, digits are
// dropped (they name versions and sizes, rarely what an operation does), and
// so are single letters but "i".
func words(s string, emit func(w string)) {
	wordBytes(s, func(w []byte) { emit(string(w)) })
}

// wordBytes is words without an allocation per word: w is only valid
// during the call.
func wordBytes(s string, emit func(w []byte)) { splitWords(nil, s, emit) }

// splitWords is wordBytes spelling each word in buf, which it returns
// (grown as needed) for the next call: an index build splits hundreds of
// thousands of texts with one buffer. emit must not call it with the same
// buffer.
func splitWords(buf []byte, s string, emit func(w []byte)) []byte {
	buf = buf[:0]
	flush := func() {
		if len(buf) > 1 || len(buf) == 1 && buf[0] == 'i' {
			emit(buf)
		}
		buf = buf[:0]
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '<' && tagAt(s, i):
			flush()
			i = skipTag(s, i)
			continue
		case c == '&':
			if j := entityEnd(s, i); j > i {
				flush()
				i = j
				continue
			}
		case c == 'h' && (strings.HasPrefix(s[i:], "http://") || strings.HasPrefix(s[i:], "https://")) && len(buf) == 0:
			i = skipURL(s, i)
			continue
		case c == ']' && i+1 < len(s) && s[i+1] == '(':
			// The text of a Markdown link was read; skip its target.
			flush()
			if j := strings.IndexByte(s[i:], ')'); j > 0 {
				i += j + 1
				continue
			}
		}
		if lc := c | 0x20; lc >= 'a' && lc <= 'z' { // an ASCII letter, the common case
			if c != lc && len(buf) > 0 && caseBoundary(s, i, rune(c)) {
				flush()
			}
			buf = append(buf, lc)
			i++
			continue
		}
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		switch {
		case unicode.IsLetter(r):
			if len(buf) > 0 && unicode.IsUpper(r) && caseBoundary(s, i, r) { // only before a capital
				flush()
			}
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
		case r == '\'' || r == '’':
			// A contraction's ending is no word: "customer's" → customer,
			// "we're" → we, "doesn't" → does.
			n := contractionEnd(s[i+size:])
			if n == 1 && (s[i+size]|0x20) == 't' && len(buf) > 1 && buf[len(buf)-1] == 'n' && string(buf) != "can" {
				buf = buf[:len(buf)-1] // "doesn't": the n is the not's
			}
			flush()
			i += size + n
			continue
		default:
			flush()
		}
		i += size
	}
	flush()
	return buf
}

// caseBoundary reports whether a word boundary falls before the letter r at
// s[i]: lower→Upper ("listPets"), or the last capital of an acronym run
// before lower case ("HTTPStatus" splits before "S"), but not a plural "s"
// after an acronym ("IDs", "URLs").
func caseBoundary(s string, i int, r rune) bool {
	prev, _ := utf8.DecodeLastRuneInString(s[:i])
	if !unicode.IsLetter(prev) {
		return false
	}
	if unicode.IsUpper(r) && unicode.IsLower(prev) {
		return true
	}
	if unicode.IsUpper(r) && unicode.IsUpper(prev) {
		next, n := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):])
		if n > 0 && unicode.IsLower(next) {
			// "IDs" and "URLs": a lone "s" closing the word keeps the acronym whole.
			after := i + utf8.RuneLen(r) + n
			if next == 's' && (after >= len(s) || !isLetterByte(s[after]) || isUpperByte(s[after])) {
				return false
			}
			return true
		}
	}
	return false
}

// contractionEnd is the length of the contraction ending ("s", "re", "ve",
// "ll", "d", "m", "t") that s starts with, when it ends a word; 0 when
// there is none.
func contractionEnd(s string) int {
	for _, end := range [...]string{"s", "re", "ve", "ll", "d", "m", "t"} {
		if len(s) >= len(end) && strings.EqualFold(s[:len(end)], end) && (len(s) == len(end) || !isLetterByte(s[len(end)])) {
			return len(end)
		}
	}
	return 0
}

func isLetterByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf
}
func isUpperByte(c byte) bool { return c >= 'A' && c <= 'Z' }

// tagAt reports whether an HTML tag (<p>, </code>, <a href=…>, <br/>) starts
// at s[i].
func tagAt(s string, i int) bool {
	if i+1 >= len(s) {
		return false
	}
	c := s[i+1]
	return c == '/' || c == '!' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func skipTag(s string, i int) int {
	if j := strings.IndexByte(s[i:], '>'); j >= 0 && j < 512 {
		return i + j + 1
	}
	return i + 1
}

// entityEnd returns the index after an HTML entity (&amp; &#39; &#x2019;)
// at s[i], or i when there is none.
func entityEnd(s string, i int) int {
	for j := i + 1; j < len(s) && j < i+10; j++ {
		c := s[j]
		if c == ';' {
			if j > i+1 {
				return j + 1
			}
			return i
		}
		if !(c == '#' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return i
		}
	}
	return i
}

func skipURL(s string, i int) int {
	for i < len(s) {
		c := s[i]
		if c == ' ' || c == '\n' || c == '\t' || c == '"' || c == '<' || c == ')' || c == ']' {
			return i
		}
		i++
	}
	return i
}

// stem is the English (Porter2) stem of a lower-case word.
func stem(w string) string { return english.Stem(w, true) }

// stemmer memoizes stems while an index is built: operation text repeats a
// small vocabulary many times. It is not safe for concurrent use.
type stemmer map[string]string

func (m stemmer) stem(w string) string {
	if s, ok := m[w]; ok {
		return s
	}
	s := stem(w)
	m[w] = s
	return s
}

// stopWords are left out of every field and query: function words (number
// words too, as digits are dropped: "OneDrive" is read as "drive"), and the
// filler of requests ("please", "I want to", "can you").
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		a an and are as at be been being but by can could did do does doing done
		for from had has have having he her here hers him his how if in into is it
		its itself just let me might mine more most much must my myself no nor not
		of off on once only or other our ours ourselves out over own please same
		shall she should so some such than that the their theirs them then there
		these they this those through to too under until up upon us very was we
		were what when where which while who whom whose why will with within would
		you your yours yourself i am want wanted need needs like any also via
		each every all again already ever there's it's i'm i'd i'll let's another
		others thing things stuff something someone anything everything way able
		etc one ones two three four five six seven eight nine ten`) {
		m[w] = true
	}
	return m
}()

// selfWords name the caller itself; APIs write that as "me", "self", "current
// user" or "the authenticated user", so a query's "my" becomes a weak concept
// over those words instead of being dropped as a stop word.
var selfWords = map[string]bool{"my": true, "me": true, "mine": true, "myself": true, "i": true}

// listWords are stop words that still ask for a whole collection ("show me
// all pets").
var listWords = map[string]bool{"all": true, "every": true, "each": true}

// timeUnits after "every" or "each" make it say how often ("every time",
// "each week"), not that a request is for a whole collection.
var timeUnits = map[string]bool{"time": true, "times": true, "day": true, "days": true, "week": true,
	"weeks": true, "month": true, "months": true, "year": true, "years": true, "hour": true,
	"hours": true, "minute": true, "minutes": true, "morning": true, "night": true, "evening": true,
	"monday": true, "tuesday": true, "wednesday": true, "thursday": true, "friday": true,
	"saturday": true, "sunday": true, "weekend": true, "quarter": true, "sprint": true, "release": true}

// readQuestions start a question that asks to read something ("which
// invoices are unpaid", "who has starred this"): the query then implies the
// read actions.
var readQuestions = map[string]bool{"what": true, "which": true, "who": true, "whom": true, "whose": true, "how": true, "when": true, "where": true, "is": true, "are": true, "has": true, "have": true, "does": true, "do": true, "did": true}
