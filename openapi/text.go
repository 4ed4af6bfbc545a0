package openapi

import (
	"html"
	"regexp"
	"strings"
)

// This file shapes the text an agent reads (issue 15 item 8): HTML in
// descriptions becomes Markdown, a tool's description is cut down to its
// lead paragraph (the full text stays in Tool.FullDescription), and
// operationIds that are path slugs become readable names.

// htmlTag matches the tags plainText knows.
var htmlTag = regexp.MustCompile(`(?is)<(/?)(p|br|div|span|b|strong|i|em|code|tt|pre|a|ul|ol|li|h[1-6]|table|thead|tbody|tr|td|th|blockquote|hr|sup|sub|u|s|del|dl|dt|dd|img|note|important)\b([^>]*)>`)

var hrefAttr = regexp.MustCompile(`(?is)\bhref\s*=\s*("([^"]*)"|'([^']*)'|([^\s>]+))`)

// plainText turns HTML markup in a description into Markdown: paragraphs
// and line breaks stay, emphasis, code, links and list items keep their
// Markdown form, other tags go, entities are decoded. Text without any
// known tag is returned as it is (a "<" in prose stays).
func plainText(s string) string {
	if !strings.Contains(s, "<") || !htmlTag.MatchString(s) {
		return s
	}
	var b strings.Builder
	last := 0
	var href []string // open <a> targets
	for _, m := range htmlTag.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(s[last:m[0]])
		last = m[1]
		closing := m[3] > m[2]
		tag := strings.ToLower(s[m[4]:m[5]])
		attrs := s[m[6]:m[7]]
		switch tag {
		case "p", "div", "table", "blockquote", "pre", "ul", "ol", "dl", "note", "important":
			b.WriteString("\n\n")
		case "br", "tr", "hr", "dt", "dd":
			b.WriteString("\n")
		case "h1", "h2", "h3", "h4", "h5", "h6":
			if closing {
				b.WriteString("**\n\n")
			} else {
				b.WriteString("\n\n**")
			}
		case "li":
			if !closing {
				b.WriteString("\n- ")
			}
		case "b", "strong":
			b.WriteString("**")
		case "i", "em":
			b.WriteString("*")
		case "code", "tt":
			b.WriteString("`")
		case "td", "th":
			if closing {
				b.WriteString(" ")
			}
		case "a":
			if !closing {
				target := ""
				if h := hrefAttr.FindStringSubmatch(attrs); h != nil {
					target = h[2] + h[3] + h[4]
				}
				href = append(href, target)
				if target != "" {
					b.WriteString("[")
				}
			} else if n := len(href); n > 0 {
				if target := href[n-1]; target != "" {
					b.WriteString("](" + html.UnescapeString(target) + ")")
				}
				href = href[:n-1]
			}
		}
	}
	b.WriteString(s[last:])
	return tidyText(html.UnescapeString(b.String()))
}

var (
	blankLines  = regexp.MustCompile(`\n[ \t]*\n(\s*\n)*`)
	spaceRuns   = regexp.MustCompile(`[ \t]+`)
	spaceBefore = regexp.MustCompile(` +\n`)
)

// tidyText collapses the whitespace markup leaves behind: runs of spaces,
// more than one blank line, spaces at line ends.
func tidyText(s string) string {
	s = strings.ReplaceAll(s, "\u00a0", " ")
	s = spaceRuns.ReplaceAllString(s, " ")
	s = spaceBefore.ReplaceAllString(s, "\n")
	s = blankLines.ReplaceAllString(s, "\n\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, " ")
		if strings.HasPrefix(strings.TrimSpace(l), "- ") {
			lines[i] = strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// leadParagraph returns what helps choose a tool: the first paragraph of
// the text that is not a heading. What follows it (notes, permissions,
// examples, caveats) stays in the full description.
func leadParagraph(s string) string {
	for p := range strings.SplitSeq(s, "\n\n") {
		if p = strings.TrimSpace(p); p != "" && !isHeading(p) {
			return p
		}
	}
	return strings.TrimSpace(s)
}

func isHeading(p string) bool {
	return strings.HasPrefix(p, "#") || (strings.HasPrefix(p, "**") && strings.HasSuffix(p, "**") && !strings.Contains(p, "\n"))
}

// cutAtSentence bounds s to max bytes, at the end of a sentence when one
// ends past a third of the bound, else at a rune boundary with "…".
func cutAtSentence(s string, max int) string {
	if max < 0 || len(s) <= max {
		return s
	}
	cut := boundText(s, max)
	body := strings.TrimSuffix(cut, "…")
	if i := strings.LastIndexAny(body, ".!?"); i >= max/3 && i+1 < len(body) && (body[i+1] == ' ' || body[i+1] == '\n') {
		return body[:i+1]
	}
	return cut
}

// uglyName matches operationIds that are path slugs rather than names:
// runs of separators, or a separator at either end
// ("GET--version-incidents--id---format-").
var uglyName = regexp.MustCompile(`[-_]{2,}|^[-_]|[-_]$`)

// readableName turns a slug-like operationId into words joined by '_'
// ("GET--version-incidents--id---format-" → "get_version_incidents_id_format");
// other names are returned as they are.
func readableName(id string) string {
	if !uglyName.MatchString(id) {
		return id
	}
	words := strings.FieldsFunc(id, func(r rune) bool { return r == '-' || r == '_' })
	if len(words) > 0 && isHTTPMethod(words[0]) {
		words[0] = strings.ToLower(words[0])
	}
	return strings.Join(words, "_")
}

func isHTTPMethod(w string) bool {
	for _, m := range methodOrder() {
		if w == m {
			return true
		}
	}
	return false
}
