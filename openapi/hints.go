package openapi

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"
)

// This file derives a tool's behaviour hints (issue 15 item 7). The HTTP
// method decides by default: GET, HEAD, OPTIONS and TRACE are read-only;
// DELETE, PUT and PATCH destructive; everything but POST and PATCH
// idempotent; every tool is open-world. Two refinements follow, in this
// order, and then the document's x-mcp-annotations and the options'
// overrides, which always win:
//
//  1. RPC style. Where every operation is a POST and the action is named
//     elsewhere, the action's verb decides, because the API style makes it
//     unambiguous: AWS's JSON protocol (the X-Amz-Target header, or a
//     "#X-Amz-Target=Service.Action" path key), JSON-RPC over HTTP (a body
//     with "jsonrpc" and a single-valued "method"), and Twirp/Connect paths
//     (POST /package.Service/Method). A read verb (Get, List, Describe,
//     Search, Query, …) makes the tool read-only and idempotent; a
//     destroying verb (Delete, Remove, Terminate, Purge, …) destructive.
//
//  2. Text, for the remaining POSTs, and only towards caution: a summary
//     that starts with a destroying verb ("Delete a webhook"), or a summary
//     or description that says data is destroyed ("destroying all data",
//     "permanently deletes", "cannot be undone"), makes the tool
//     destructive. Text never makes a tool read-only: a wrong read-only
//     hint lets a client skip the confirmation of a write, while a wrong
//     destructive hint costs one extra confirmation.

// readVerbs and destroyVerbs are action verbs, lower-case.
var (
	readVerbs = []string{"get", "list", "describe", "search", "query", "find", "lookup", "fetch", "read",
		"show", "count", "scan", "retrieve", "view", "head", "select", "estimate", "preview", "batchget"}
	destroyVerbs = []string{"delete", "remove", "destroy", "terminate", "purge", "drop", "erase", "wipe", "truncate"}
)

// destroysData matches text saying an operation destroys data.
var destroysData = regexp.MustCompile(`(?i)\b(destroy(s|ing)?\b.{0,40}\b(data|everything|all)|permanently (delete|remove|erase|destroy)s?\b|(cannot|can ?not|can't) be (undone|reversed|recovered)|irreversibl[ey]|all data (will be|is) (lost|deleted|erased))`)

// hints computes the annotations of a tool before overrides.
func hints(method, docPath string, item *openapi3.PathItem, op *openapi3.Operation) Annotations {
	a := Annotations{
		ReadOnlyHint:    isReadOnly(method),
		DestructiveHint: method == http.MethodDelete || method == http.MethodPut || method == http.MethodPatch,
		IdempotentHint:  method != http.MethodPost && method != http.MethodPatch,
		OpenWorldHint:   true,
	}
	if method != http.MethodPost {
		return a
	}
	if action, lowercase := rpcAction(docPath, item, op); action != "" {
		switch verb := actionVerb(action, lowercase); {
		case slices.Contains(readVerbs, verb):
			a.ReadOnlyHint, a.IdempotentHint = true, true
		case slices.Contains(destroyVerbs, verb):
			a.DestructiveHint = true
		}
		return a
	}
	if isDestroyVerb(firstWord(op.Summary)) ||
		destroysData.MatchString(op.Summary) || destroysData.MatchString(op.Description) {
		a.DestructiveHint = true
	}
	return a
}

// rpcAction returns the action an RPC-style operation names, or "".
// lowercase is true for a JSON-RPC method, whose names are often one
// lower-case word ("getblockcount").
func rpcAction(docPath string, item *openapi3.PathItem, op *openapi3.Operation) (action string, lowercase bool) {
	// AWS JSON protocol: "/#X-Amz-Target=AmazonSQS.ListQueues" or the
	// header parameter with its one value.
	if _, frag, ok := strings.Cut(docPath, "#X-Amz-Target="); ok {
		return frag, false
	}
	for _, list := range []openapi3.Parameters{op.Parameters, item.Parameters} {
		for _, pr := range list {
			if p := pr.Value; p != nil && p.In == "header" && strings.EqualFold(p.Name, "X-Amz-Target") {
				if v := singleValue(p.Schema); v != "" {
					return v, false
				}
			}
		}
	}
	// JSON-RPC: a body {"jsonrpc": …, "method": <one value>}.
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		for ct, mt := range op.RequestBody.Value.Content {
			if !isJSON(ct) || mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
				continue
			}
			props := mt.Schema.Value.Properties
			if _, ok := props["jsonrpc"]; ok {
				if v := singleValue(props["method"]); v != "" {
					return v, true
				}
			}
		}
	}
	// Twirp and Connect: POST /[prefix/]package.Service/Method.
	segs := strings.Split(strings.Trim(docPath, "/"), "/")
	if n := len(segs); n >= 2 && strings.Contains(segs[n-2], ".") && !strings.ContainsAny(docPath, "{#") {
		if m := segs[n-1]; m != "" && unicode.IsUpper(rune(m[0])) && isIdent(m) {
			return m, false
		}
	}
	return "", false
}

// singleValue returns the one string a schema allows (const, a one-value
// enum), or "".
func singleValue(r *openapi3.SchemaRef) string {
	if r == nil || r.Value == nil {
		return ""
	}
	if s, ok := r.Value.Const.(string); ok {
		return s
	}
	if len(r.Value.Enum) == 1 {
		if s, ok := r.Value.Enum[0].(string); ok {
			return s
		}
	}
	return ""
}

func isIdent(s string) bool {
	for _, r := range s {
		if !(r == '_' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			return false
		}
	}
	return true
}

// actionVerb returns the lower-case verb of an action name:
// "AmazonSQS.ListQueues" → "list", "eth_getBalance" → "get",
// "DynamoDB_20120810.BatchGetItem" → "batchget". A JSON-RPC name in one
// lower-case word is matched by prefix ("getblockcount" → "get").
func actionVerb(action string, lowercase bool) string {
	if i := strings.LastIndexAny(action, "./:"); i >= 0 {
		action = action[i+1:]
	}
	if i := strings.LastIndexByte(action, '_'); i >= 0 && i+1 < len(action) {
		action = action[i+1:]
	}
	words := strings.Fields(humanize(action))
	if len(words) == 0 {
		return ""
	}
	verb := strings.ToLower(words[0])
	if verb == "batch" && len(words) > 1 {
		verb += strings.ToLower(words[1])
	}
	if lowercase && len(words) == 1 {
		for _, v := range append(slices.Clone(readVerbs), destroyVerbs...) {
			if len(v) >= 3 && strings.HasPrefix(verb, v) {
				return v
			}
		}
	}
	return verb
}

// isDestroyVerb reports whether a summary's first word destroys:
// "Delete", "Deletes", "remove".
func isDestroyVerb(word string) bool {
	w := strings.ToLower(word)
	return slices.Contains(destroyVerbs, w) || strings.HasSuffix(w, "s") && slices.Contains(destroyVerbs, w[:len(w)-1])
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return strings.TrimFunc(f[0], func(r rune) bool { return !unicode.IsLetter(r) })
}
