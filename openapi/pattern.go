package openapi

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file translates the regular expressions found in documents
// (`pattern`, `patternProperties`) into the one dialect every consumer of a
// tool schema accepts. OpenAPI says patterns are ECMA-262, but documents are
// written by hand or generated from Java, Python, .NET or PCRE code, and
// carry their dialects: `\A`, `\z`, `\x{60}`, `(?i)`, `\_`, `\-` outside a
// class, whole patterns wrapped in `/…/`. A client validating with Ajv (the
// TypeScript SDK) compiles patterns as ECMA-262 unicode-mode RegExps, which
// are strict: one such pattern makes the whole tool unusable. The gateway
// validates the same schemas in Go (RE2 syntax).
//
// [portablePattern] therefore parses a pattern in a permissive union of
// those dialects and writes it back using only constructs that are valid,
// with the same meaning, both as an ECMA-262 `u`-mode pattern and as RE2
// syntax: literals (escaped where either dialect needs it), `.`, `^`, `$`,
// `\b`, `\B`, `\d\D\w\W\s\S`, `\t\n\v\f\r`, `\xHH`, `\p{GC}` with a Unicode
// general category, classes with ranges, groups, alternation and bounded
// repetition (greedy or lazy, at most 1000). A construct with no such
// spelling (lookaround and backreferences, which RE2 lacks; possessive
// quantifiers and atomic groups; scripts in `\p{…}`; a multi-line `^`/`$`)
// makes it fail with the reason, and the caller drops the pattern from the
// schema and keeps it in the description. The output is written from the
// parse, never copied, so it cannot carry an unchecked construct; it is
// also compiled with Go's regexp as a last check. Tokens whose spelling is
// already portable keep it, so a pattern that was fine comes out unchanged.
//
// Two differences remain, by choice: `.` and `\s` keep their own meaning in
// each engine (ECMA's `.` also refuses \r, \u2028 and \u2029; its `\s` also
// takes Unicode spaces such as U+00A0), because spelling them out would make
// every such pattern unreadable for a difference no real input shows.

// maxRepeat is RE2's bound on a counted repetition.
const maxRepeat = 1000

// maxFoldWork bounds the characters one case-insensitive pattern may expand.
const maxFoldWork = 1 << 16

// errUnportable marks a pattern that is well-formed in its own dialect but
// has no portable spelling.
var errUnportable = errors.New("no ECMA-262/RE2 equivalent")

// portablePattern returns p spelled so that it compiles, with the same
// meaning, as an ECMA-262 unicode-mode RegExp and as Go RE2 syntax.
func portablePattern(p string) (string, error) {
	if !utf8.ValidString(p) {
		return "", errors.New("pattern is not valid UTF-8")
	}
	inner, fl, err := unwrapSlashes(p)
	if err != nil {
		return "", err
	}
	pp := &patParser{src: []rune(inner)}
	out, err := pp.alternation(fl, 0)
	if err != nil {
		return "", err
	}
	if pp.pos < len(pp.src) {
		return "", fmt.Errorf("unmatched ) at offset %d", pp.pos)
	}
	if _, err := regexp.Compile(out); err != nil {
		return "", fmt.Errorf("translated pattern %q does not compile in RE2: %w", out, err)
	}
	return out, nil
}

// unwrapSlashes removes a JavaScript literal wrapper (`/…/flags`) and returns
// its flags. A pattern counts as wrapped when it is a valid literal: it
// starts with '/', ends with '/' and JavaScript flags, has no unescaped '/'
// in between outside a class, and either has flags or contains a regex
// operator (so "/v1/" stays a literal path).
func unwrapSlashes(p string) (string, patFlags, error) {
	var fl patFlags
	if len(p) < 3 || p[0] != '/' {
		return p, fl, nil
	}
	end := strings.LastIndexByte(p, '/')
	if end == 0 {
		return p, fl, nil
	}
	flags, inner := p[end+1:], p[1:end]
	if strings.Trim(flags, "dgimsuvy") != "" {
		return p, fl, nil
	}
	inClass := false
	for i := 0; i < len(inner); i++ {
		switch inner[i] {
		case '\\':
			i++
		case '[':
			inClass = true
		case ']':
			inClass = false
		case '/':
			if !inClass {
				return p, fl, nil
			}
		}
	}
	if flags == "" && !strings.ContainsAny(inner, `^$.*+?()[]{}|\`) {
		return p, fl, nil
	}
	fl.i = strings.ContainsRune(flags, 'i')
	fl.s = strings.ContainsRune(flags, 's')
	fl.m = strings.ContainsRune(flags, 'm')
	return inner, fl, nil
}

// patFlags are the inline flags in force.
type patFlags struct {
	i, s, m, x bool
}

type patParser struct {
	src      []rune
	pos      int
	foldWork int
}

func (p *patParser) more() bool { return p.pos < len(p.src) }
func (p *patParser) peek() rune { return p.src[p.pos] }

// peekAt returns the rune at pos+off, or -1.
func (p *patParser) peekAt(off int) rune {
	if p.pos+off < len(p.src) {
		return p.src[p.pos+off]
	}
	return -1
}

func (p *patParser) hasPrefix(s string) bool {
	i := p.pos
	for _, r := range s {
		if i >= len(p.src) || p.src[i] != r {
			return false
		}
		i++
	}
	return true
}

func unportable(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), errUnportable)
}

// termKind tells what a term is, for the quantifier that may follow.
type termKind int

const (
	termNone      termKind = iota // nothing (a comment or a flag group)
	termAtom                      // something a quantifier may repeat
	termAssertion                 // ^ $ \b \B: never repeated
)

// alternation parses up to an unmatched ')' or the end.
func (p *patParser) alternation(fl patFlags, depth int) (string, error) {
	if depth > 200 {
		return "", errors.New("groups nested more than 200 deep")
	}
	var b strings.Builder
	for {
		seq, err := p.sequence(&fl, depth)
		if err != nil {
			return "", err
		}
		b.WriteString(seq)
		if p.more() && p.peek() == '|' {
			p.pos++
			b.WriteByte('|')
			continue
		}
		return b.String(), nil
	}
}

// sequence parses terms and their quantifiers up to '|', ')' or the end.
// Inline flags ("(?i)") change fl for the rest of the enclosing group.
func (p *patParser) sequence(fl *patFlags, depth int) (string, error) {
	var b strings.Builder
	last := termNone
	for p.more() {
		c := p.peek()
		if c == '|' || c == ')' {
			break
		}
		if fl.x && p.skipExtended() {
			continue
		}
		if q, ok, err := p.quantifier(); err != nil {
			return "", err
		} else if ok {
			switch last {
			case termNone:
				return "", fmt.Errorf("quantifier %s at offset %d repeats nothing", q, p.pos)
			case termAssertion:
				return "", unportable("quantified assertion %s", q)
			}
			b.WriteString(q)
			last = termNone // a second quantifier repeats nothing
			continue
		}
		s, kind, err := p.term(fl, depth)
		if err != nil {
			return "", err
		}
		b.WriteString(s)
		if kind != termNone || s != "" {
			last = kind
		}
	}
	return b.String(), nil
}

// skipExtended skips whitespace and #-comments in extended (x) mode.
func (p *patParser) skipExtended() bool {
	c := p.peek()
	switch {
	case c == '#':
		for p.more() && p.peek() != '\n' {
			p.pos++
		}
		return true
	case unicode.IsSpace(c):
		p.pos++
		return true
	}
	return false
}

// quantifier parses *, +, ?, {n}, {n,}, {n,m} or {,m} with an optional lazy
// '?'; a '{' that starts no quantifier is not one (ok false).
func (p *patParser) quantifier() (string, bool, error) {
	var q string
	switch c := p.peek(); c {
	case '*', '+', '?':
		p.pos++
		q = string(c)
	case '{':
		var ok bool
		var err error
		q, ok, err = p.braces()
		if !ok || err != nil {
			return "", false, err
		}
	default:
		return "", false, nil
	}
	if p.more() {
		switch p.peek() {
		case '?':
			p.pos++
			q += "?"
		case '+':
			return "", false, unportable("possessive quantifier %s+", q)
		}
	}
	return q, true, nil
}

// braces parses a counted repetition at '{'.
func (p *patParser) braces() (string, bool, error) {
	i := p.pos + 1
	digits := func() (int, bool) {
		start := i
		for i < len(p.src) && p.src[i] >= '0' && p.src[i] <= '9' {
			i++
		}
		if i == start {
			return 0, false
		}
		n, err := strconv.Atoi(string(p.src[start:i]))
		if err != nil || n > maxRepeat {
			return maxRepeat + 1, true
		}
		return n, true
	}
	lo, hasLo := digits()
	hi, hasHi, comma := lo, hasLo, false
	if i < len(p.src) && p.src[i] == ',' {
		comma = true
		i++
		hi, hasHi = digits()
	}
	if i >= len(p.src) || p.src[i] != '}' || (!hasLo && !hasHi) {
		return "", false, nil // a literal '{'
	}
	p.pos = i + 1
	if !hasLo {
		lo = 0
	}
	if lo > maxRepeat || (hasHi && hi > maxRepeat) {
		return "", false, unportable("repetition count over %d", maxRepeat)
	}
	switch {
	case !comma:
		return "{" + strconv.Itoa(lo) + "}", true, nil
	case !hasHi:
		return "{" + strconv.Itoa(lo) + ",}", true, nil
	case hi < lo:
		return "", false, fmt.Errorf("repetition {%d,%d} has its bounds reversed", lo, hi)
	default:
		return "{" + strconv.Itoa(lo) + "," + strconv.Itoa(hi) + "}", true, nil
	}
}

// term parses one atom or assertion.
func (p *patParser) term(fl *patFlags, depth int) (string, termKind, error) {
	c := p.peek()
	switch c {
	case '(':
		return p.group(fl, depth)
	case '[':
		s, err := p.class(*fl)
		return s, termAtom, err
	case '.':
		p.pos++
		if fl.s {
			return `[\s\S]`, termAtom, nil
		}
		return ".", termAtom, nil
	case '^', '$':
		p.pos++
		if fl.m {
			return "", 0, unportable("multi-line %c", c)
		}
		return string(c), termAssertion, nil
	case '\\':
		return p.escape(*fl)
	case '{':
		p.pos++
		return `\{`, termAtom, nil
	}
	p.pos++
	return p.literal(c, *fl), termAtom, nil
}

// group parses a parenthesized group at '('.
func (p *patParser) group(fl *patFlags, depth int) (string, termKind, error) {
	start := p.pos
	p.pos++
	inner := *fl
	open := "("
	if p.more() && p.peek() == '?' {
		p.pos++
		switch {
		case p.hasPrefix("#"):
			for p.more() && p.peek() != ')' {
				p.pos++
			}
			if !p.more() {
				return "", 0, errors.New("unterminated comment (?#")
			}
			p.pos++
			return "", termNone, nil
		case p.hasPrefix(":"):
			p.pos++
			open = "(?:"
		case p.hasPrefix("P<"), p.hasPrefix("<") && !p.hasPrefix("<=") && !p.hasPrefix("<!"), p.hasPrefix("'"):
			// A named group matches like a plain one.
			closer := '>'
			if p.peek() == '\'' {
				closer = '\''
				p.pos++
			}
			for p.more() && p.peek() != closer {
				p.pos++
			}
			if !p.more() {
				return "", 0, fmt.Errorf("unterminated group name at offset %d", start)
			}
			p.pos++
		case p.hasPrefix("="), p.hasPrefix("!"):
			return "", 0, unportable("lookahead (?%c…)", p.peek())
		case p.hasPrefix("<="), p.hasPrefix("<!"):
			return "", 0, unportable("lookbehind (?<%c…)", p.peekAt(1))
		case p.hasPrefix(">"):
			return "", 0, unportable("atomic group (?>…)")
		default:
			isGroup, err := p.inlineFlags(&inner)
			if err != nil {
				return "", 0, err
			}
			if !isGroup {
				*fl = inner // (?i) applies to the rest of the enclosing group
				return "", termNone, nil
			}
			open = "(?:"
		}
	}
	body, err := p.alternation(inner, depth+1)
	if err != nil {
		return "", 0, err
	}
	if !p.more() || p.peek() != ')' {
		return "", 0, fmt.Errorf("unterminated group at offset %d", start)
	}
	p.pos++
	return open + body + ")", termAtom, nil
}

// inlineFlags parses "flags)" or "flags:" after "(?". isGroup is true for
// the scoped form "(?flags:…)".
func (p *patParser) inlineFlags(fl *patFlags) (bool, error) {
	start := p.pos
	on := true
	for p.more() {
		c := p.peek()
		p.pos++
		switch c {
		case ')':
			return false, nil
		case ':':
			return true, nil
		case '-':
			on = false
		case 'i':
			fl.i = on
		case 's':
			fl.s = on
		case 'm':
			fl.m = on
		case 'x':
			fl.x = on
		default:
			return false, unportable("group (?%s…)", string(p.src[start:p.pos]))
		}
	}
	return false, fmt.Errorf("unterminated group at offset %d", start-2)
}

// escape parses a backslash escape outside a class.
func (p *patParser) escape(fl patFlags) (string, termKind, error) {
	start := p.pos
	p.pos++ // the backslash
	if !p.more() {
		return "", 0, errors.New("pattern ends with a backslash")
	}
	c := p.peek()
	p.pos++
	switch c {
	case 'A':
		return "^", termAssertion, nil
	case 'z':
		return "$", termAssertion, nil
	case 'Z':
		// End of input, or before a final newline.
		return `(?:\n?$)`, termAtom, nil
	case 'b', 'B':
		return `\` + string(c), termAssertion, nil
	case 'd', 'D', 'w', 'W', 's', 'S':
		return `\` + string(c), termAtom, nil
	case 'p', 'P':
		s, err := p.property(c == 'P')
		return s, termAtom, err
	case 'Q':
		var b strings.Builder
		for p.more() && !p.hasPrefix(`\E`) {
			b.WriteString(p.literal(p.peek(), fl))
			p.pos++
		}
		if p.more() {
			p.pos += 2
		}
		return b.String(), termAtom, nil
	case 'E':
		return "", termNone, nil // a stray \E ends nothing
	case 'G', 'K', 'R', 'X', 'C', 'N', 'h', 'H', 'V', 'k', 'g':
		return "", 0, unportable(`escape \%c`, c)
	}
	if c >= '1' && c <= '9' {
		return "", 0, unportable(`backreference \%c`, c)
	}
	p.pos = start
	r, spelled, err := p.charEscape()
	if err != nil {
		return "", 0, err
	}
	if spelled != "" && !fl.i {
		return spelled, termAtom, nil
	}
	return p.literal(r, fl), termAtom, nil
}

// charEscape parses an escape that stands for one character, at '\'. When
// the source spelling is portable as it is (`\.`, `\t`, `\x41`), spelled
// returns it.
func (p *patParser) charEscape() (r rune, spelled string, err error) {
	start := p.pos
	p.pos++
	c := p.peek()
	p.pos++
	switch c {
	case 't', 'n', 'r', 'f', 'v':
		return map[rune]rune{'t': '\t', 'n': '\n', 'r': '\r', 'f': '\f', 'v': '\v'}[c], `\` + string(c), nil
	case 'a':
		return 0x07, "", nil
	case 'e':
		return 0x1B, "", nil
	case '0':
		// \0 or PCRE's octal \0oo.
		n := 0
		for k := 0; k < 2 && p.more() && p.peek() >= '0' && p.peek() <= '7'; k++ {
			n = n*8 + int(p.peek()-'0')
			p.pos++
		}
		return rune(n), "", nil
	case 'c':
		if p.more() && (p.peek()|0x20 >= 'a' && p.peek()|0x20 <= 'z') {
			r := p.peek() % 32
			p.pos++
			return r, "", nil
		}
		return 0, "", errors.New(`\c not followed by a letter`)
	case 'x':
		if p.more() && p.peek() == '{' {
			return p.hexBraces(start)
		}
		r, ok := p.hexDigits(2)
		if !ok {
			return 0, "", fmt.Errorf(`bad \x escape at offset %d`, start)
		}
		return r, string(p.src[start:p.pos]), nil
	case 'u':
		if p.more() && p.peek() == '{' {
			return p.hexBraces(start)
		}
		r, ok := p.hexDigits(4)
		if !ok {
			return 0, "", fmt.Errorf(`bad \u escape at offset %d`, start)
		}
		if utf16IsHigh(r) && p.hasPrefix(`\u`) {
			save := p.pos
			p.pos += 2
			if lo, ok := p.hexDigits(4); ok && utf16IsLow(lo) {
				return (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000, "", nil
			}
			p.pos = save
		}
		if r >= 0xD800 && r <= 0xDFFF {
			return 0, "", unportable(`lone surrogate \u%04X`, r)
		}
		return r, "", nil
	case 'U':
		r, ok := p.hexDigits(8)
		if !ok || r > unicode.MaxRune {
			return 0, "", fmt.Errorf(`bad \U escape at offset %d`, start)
		}
		return r, "", nil
	case 'o':
		if p.more() && p.peek() == '{' {
			end := p.pos + 1
			for end < len(p.src) && p.src[end] != '}' {
				end++
			}
			n, err := strconv.ParseInt(string(p.src[p.pos+1:end]), 8, 32)
			if err != nil || end >= len(p.src) || n > unicode.MaxRune {
				return 0, "", fmt.Errorf(`bad \o{…} escape at offset %d`, start)
			}
			p.pos = end + 1
			return rune(n), "", nil
		}
	}
	if c < utf8.RuneSelf && !isASCIIAlnum(c) {
		// An escaped punctuation or space character is itself. ECMA's
		// unicode mode allows the escape only before a syntax character
		// or '/'.
		if strings.ContainsRune(`^$\.*+?()[]{}|/`, c) {
			return c, `\` + string(c), nil
		}
		return c, "", nil
	}
	if c >= utf8.RuneSelf {
		return c, "", nil
	}
	return 0, "", fmt.Errorf(`unknown escape \%c at offset %d`, c, start)
}

func utf16IsHigh(r rune) bool { return r >= 0xD800 && r < 0xDC00 }
func utf16IsLow(r rune) bool  { return r >= 0xDC00 && r < 0xE000 }

func isASCIIAlnum(c rune) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func (p *patParser) hexDigits(n int) (rune, bool) {
	if p.pos+n > len(p.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.src[p.pos:p.pos+n]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += n
	return rune(v), true
}

// hexBraces parses "{H…}" after \x or \u.
func (p *patParser) hexBraces(start int) (rune, string, error) {
	end := p.pos + 1
	for end < len(p.src) && p.src[end] != '}' {
		end++
	}
	if end >= len(p.src) {
		return 0, "", fmt.Errorf("unterminated escape at offset %d", start)
	}
	v, err := strconv.ParseUint(string(p.src[p.pos+1:end]), 16, 32)
	if err != nil || v > unicode.MaxRune || (v >= 0xD800 && v <= 0xDFFF) {
		return 0, "", fmt.Errorf("bad code point escape at offset %d", start)
	}
	p.pos = end + 1
	return rune(v), "", nil
}

// literal spells one character outside a class: itself, escaped when a
// dialect gives it a meaning, `\xHH` for a control character, or a class of
// its case variants under the i flag.
func (p *patParser) literal(r rune, fl patFlags) string {
	if fl.i {
		if variants := caseVariants(r); len(variants) > 1 {
			var b strings.Builder
			b.WriteByte('[')
			for _, v := range variants {
				b.WriteString(classRune(v))
			}
			b.WriteByte(']')
			return b.String()
		}
	}
	switch {
	case strings.ContainsRune(`^$\.*+?()[]{}|`, r):
		return `\` + string(r)
	case r < 0x20 || r == 0x7F:
		return controlEscape(r)
	}
	return string(r)
}

func controlEscape(r rune) string {
	switch r {
	case '\t':
		return `\t`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\f':
		return `\f`
	case '\v':
		return `\v`
	}
	return fmt.Sprintf(`\x%02X`, r)
}

// classRune spells one character inside a class.
func classRune(r rune) string {
	switch {
	case strings.ContainsRune(`\]-^[`, r):
		return `\` + string(r)
	case r < 0x20 || r == 0x7F:
		return controlEscape(r)
	}
	return string(r)
}

// caseVariants returns r and every character that matches it case-
// insensitively (its simple case-folding orbit), sorted.
func caseVariants(r rune) []rune {
	out := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// generalCategories maps the names of Unicode general categories both
// engines know (short and long, as ECMA-262 lists them) to the short name.
// "C" and "Cn" are missing on purpose: RE2's C leaves out unassigned code
// points, ECMA's includes them, and RE2 has no Cn.
var generalCategories = func() map[string]string {
	m := map[string]string{}
	long := map[string]string{
		"Control": "Cc", "Format": "Cf", "Private_Use": "Co", "Surrogate": "Cs",
		"Letter": "L", "Cased_Letter": "LC", "Lowercase_Letter": "Ll", "Modifier_Letter": "Lm",
		"Other_Letter": "Lo", "Titlecase_Letter": "Lt", "Uppercase_Letter": "Lu",
		"Mark": "M", "Combining_Mark": "M", "Spacing_Mark": "Mc", "Enclosing_Mark": "Me", "Nonspacing_Mark": "Mn",
		"Number": "N", "Decimal_Number": "Nd", "digit": "Nd", "Letter_Number": "Nl", "Other_Number": "No",
		"Punctuation": "P", "punct": "P", "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd",
		"Close_Punctuation": "Pe", "Final_Punctuation": "Pf", "Initial_Punctuation": "Pi",
		"Other_Punctuation": "Po", "Open_Punctuation": "Ps",
		"Symbol": "S", "Currency_Symbol": "Sc", "Modifier_Symbol": "Sk", "Math_Symbol": "Sm", "Other_Symbol": "So",
		"Separator": "Z", "Line_Separator": "Zl", "Paragraph_Separator": "Zp", "Space_Separator": "Zs",
	}
	for name, short := range long {
		m[name] = short
		m[short] = short
	}
	return m
}()

// asciiClasses are the POSIX (and Java \p{…}) ASCII classes, as class items.
var asciiClasses = map[string]string{
	"alpha": "A-Za-z", "digit": "0-9", "alnum": "0-9A-Za-z", "upper": "A-Z", "lower": "a-z",
	"space": `\t\n\v\f\r `, "blank": `\t `, "punct": "!-/:-@\\[-`{-~", "xdigit": "0-9A-Fa-f",
	"word": `\w`, "cntrl": `\x00-\x1F\x7F`, "print": " -~", "graph": "!-~", "ascii": `\x00-\x7F`,
}

// property parses the rest of \p or \P: {Name}, a one-letter name, {^Name}.
func (p *patParser) property(negated bool) (string, error) {
	if !p.more() {
		return "", errors.New(`\p at the end of the pattern`)
	}
	var name string
	if p.peek() == '{' {
		end := p.pos + 1
		for end < len(p.src) && p.src[end] != '}' {
			end++
		}
		if end >= len(p.src) {
			return "", errors.New(`unterminated \p{`)
		}
		name = string(p.src[p.pos+1 : end])
		p.pos = end + 1
	} else {
		name = string(p.peek())
		p.pos++
	}
	if strings.HasPrefix(name, "^") {
		negated, name = !negated, name[1:]
	}
	for _, prefix := range []string{"General_Category=", "gc=", "Is"} {
		name = strings.TrimPrefix(name, prefix)
	}
	if short, ok := generalCategories[name]; ok {
		if negated {
			return `\P{` + short + `}`, nil
		}
		return `\p{` + short + `}`, nil
	}
	if set, ok := asciiClasses[strings.ToLower(name)]; ok {
		if negated {
			return "[^" + set + "]", nil
		}
		return "[" + set + "]", nil
	}
	return "", unportable(`property \p{%s}`, name)
}

// classItem is one member of a character class: a range (lo..hi) or an
// escape that stands for a set (spelled as set, e.g. `\d` or `\p{L}`).
type classItem struct {
	lo, hi rune
	set    string
	// spelled is the source spelling of a single character when it is
	// portable as it is.
	spelled string
}

// class parses a bracketed class at '['.
func (p *patParser) class(fl patFlags) (string, error) {
	start := p.pos
	p.pos++
	negated := false
	if p.more() && p.peek() == '^' {
		negated = true
		p.pos++
	}
	var items []classItem
	// A ']' right after the opening is a literal in PCRE, Java and RE2
	// when the class closes later; in ECMA "[]" is the empty class.
	if p.more() && p.peek() == ']' && strings.ContainsRune(string(p.src[p.pos+1:]), ']') {
		items = append(items, classItem{lo: ']', hi: ']'})
		p.pos++
	}
	for {
		if !p.more() {
			return "", fmt.Errorf("unterminated class at offset %d", start)
		}
		if p.peek() == ']' {
			p.pos++
			break
		}
		if p.hasPrefix("&&") {
			return "", unportable("class intersection &&")
		}
		if name, n := p.posixClass(); n > 0 {
			set, ok := asciiClasses[name]
			if !ok {
				return "", unportable("POSIX class [:%s:]", name)
			}
			items = append(items, classItem{set: set})
			p.pos += n
			continue
		}
		it, err := p.classAtom(fl)
		if err != nil {
			return "", err
		}
		// A range: atom '-' atom, unless the '-' is the last member.
		if it.set == "" && p.more() && p.peek() == '-' && p.peekAt(1) != ']' && p.peekAt(1) != -1 {
			save := p.pos
			p.pos++
			hi, err := p.classAtom(fl)
			if err != nil {
				return "", err
			}
			if hi.set != "" {
				// "[a-\d]": PCRE reads a literal '-'.
				items = append(items, it, classItem{lo: '-', hi: '-'}, hi)
				continue
			}
			if hi.lo < it.lo {
				return "", fmt.Errorf("class range %q at offset %d is out of order", string(p.src[save-1:p.pos]), save-1)
			}
			items = append(items, classItem{lo: it.lo, hi: hi.lo})
			continue
		}
		items = append(items, it)
	}
	if fl.i {
		var err error
		if items, err = p.foldClass(items); err != nil {
			return "", err
		}
	}
	if len(items) == 0 {
		// ECMA's "[^]" (anything) and "[]" (nothing), which RE2 lacks.
		if negated {
			return `[\s\S]`, nil
		}
		return `[^\s\S]`, nil
	}
	return writeClass(negated, items), nil
}

// posixClass recognizes "[:name:]" at the current position and returns the
// name and its length in runes (0 when there is none).
func (p *patParser) posixClass() (string, int) {
	if !p.hasPrefix("[:") {
		return "", 0
	}
	for end := p.pos + 2; end+1 < len(p.src); end++ {
		if p.src[end] == ':' && p.src[end+1] == ']' {
			return string(p.src[p.pos+2 : end]), end + 2 - p.pos
		}
		if !(p.src[end] == '^' || p.src[end] >= 'a' && p.src[end] <= 'z') {
			return "", 0
		}
	}
	return "", 0
}

// classAtom parses one class member: a character or a set escape.
func (p *patParser) classAtom(fl patFlags) (classItem, error) {
	c := p.peek()
	if c != '\\' {
		p.pos++
		return classItem{lo: c, hi: c}, nil
	}
	if p.pos+1 >= len(p.src) {
		return classItem{}, errors.New("pattern ends with a backslash")
	}
	switch e := p.peekAt(1); e {
	case 'd', 'D', 'w', 'W', 's', 'S':
		p.pos += 2
		return classItem{set: `\` + string(e)}, nil
	case 'p', 'P':
		p.pos += 2
		s, err := p.property(e == 'P')
		if err != nil {
			return classItem{}, err
		}
		if strings.HasPrefix(s, "[") {
			if strings.HasPrefix(s, "[^") {
				return classItem{}, unportable(`negated \P{…} ASCII class inside a class`)
			}
			return classItem{set: s[1 : len(s)-1]}, nil
		}
		return classItem{set: s}, nil
	case 'b':
		p.pos += 2
		return classItem{lo: '\b', hi: '\b'}, nil
	case '-':
		p.pos += 2
		return classItem{lo: '-', hi: '-', spelled: `\-`}, nil
	case 'h', 'H', 'v', 'V', 'R', 'N', 'X', 'Q', 'E':
		if e == 'v' {
			break // \v is the vertical tab in ECMA, RE2 and most others
		}
		return classItem{}, unportable(`escape \%c inside a class`, e)
	}
	if e := p.peekAt(1); e >= '1' && e <= '9' {
		return classItem{}, unportable(`octal or backreference \%c inside a class`, e)
	}
	r, spelled, err := p.charEscape()
	if err != nil {
		return classItem{}, err
	}
	return classItem{lo: r, hi: r, spelled: spelled}, nil
}

// foldClass adds the case variants of every character in the class and
// returns the characters as sorted, merged ranges (the set escapes last).
func (p *patParser) foldClass(items []classItem) ([]classItem, error) {
	var runes []rune
	var sets []classItem
	for _, it := range items {
		if it.set != "" {
			sets = append(sets, it)
			continue
		}
		p.foldWork += int(it.hi-it.lo) + 1
		if p.foldWork > maxFoldWork {
			return nil, unportable("case-insensitive class too large to expand")
		}
		for r := it.lo; r <= it.hi; r++ {
			runes = append(runes, caseVariants(r)...)
		}
	}
	slices.Sort(runes)
	runes = slices.Compact(runes)
	var out []classItem
	for _, r := range runes {
		if n := len(out); n > 0 && out[n-1].hi+1 == r {
			out[n-1].hi = r
			continue
		}
		out = append(out, classItem{lo: r, hi: r})
	}
	return append(out, sets...), nil
}

// writeClass spells a class. A literal '-' stays bare only where no engine
// can read it as a range: first, last, or right after a range.
func writeClass(negated bool, items []classItem) string {
	var b strings.Builder
	b.WriteByte('[')
	if negated {
		b.WriteByte('^')
	}
	for i, it := range items {
		switch {
		case it.set != "":
			b.WriteString(it.set)
		case it.lo == it.hi && it.lo == '-' && it.spelled != "":
			b.WriteString(it.spelled)
		case it.lo == it.hi && it.lo == '-':
			prevRange := i > 0 && items[i-1].set == "" && items[i-1].lo != items[i-1].hi
			if i == 0 || i == len(items)-1 || prevRange {
				b.WriteByte('-')
			} else {
				b.WriteString(`\-`)
			}
		case it.lo == it.hi:
			if it.spelled != "" {
				b.WriteString(it.spelled)
			} else if i == 0 && !negated && it.lo == '^' {
				b.WriteString(`\^`)
			} else {
				b.WriteString(classRuneAt(it.lo))
			}
		default:
			b.WriteString(classRuneAt(it.lo))
			b.WriteByte('-')
			b.WriteString(classRuneAt(it.hi))
		}
	}
	b.WriteByte(']')
	return b.String()
}

// classRuneAt spells a character inside a class, leaving '^' bare (it only
// needs escaping first, which writeClass handles).
func classRuneAt(r rune) string {
	if r == '^' {
		return "^"
	}
	return classRune(r)
}
