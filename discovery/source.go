package discovery

import (
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/mcpgate/mcpgate/openapi"
)

// Operations is what the index reads from a document beside its tools:
// each operation's tags, the names of its request and response schemas,
// its arguments' descriptions, whether it moves files and whether it says
// x-mcp-pin, by "METHOD /path" as in the document. When generation
// consumes the document (openapi.GenerateOptions.Consume drops each
// operation once its tools are made), it is read before (ReadOperations)
// or, path item by path item, as generation walks them (Read, as
// GenerateOptions.OnPathItem), so that the document is never whole beside
// its tools.
type Operations map[string]opInfo

// ReadOperations reads doc's Operations (none from a nil doc).
func ReadOperations(doc *openapi.Document) Operations {
	if doc == nil || doc.T == nil {
		return nil
	}
	return operationInfo(doc.T)
}

// FromTools makes the index input for the tools of one API, with ops, when
// not nil, read from the document they were generated from: it gives each
// tool its operation's tags and the names of its request and response
// schemas, which the tools themselves do not carry.
func FromTools(api string, tools []openapi.Tool, ops Operations) []Doc {
	extra := ops
	out := make([]Doc, len(tools))
	for i := range tools {
		t := &tools[i]
		// The whole description is indexed: the tool's own is only its lead
		// paragraph, and the rest often names what a user asks for.
		d := Doc{API: api, Name: t.Name, Title: t.Title, Description: cmp0(t.FullDescription, t.Description),
			Method: t.Route.Method, Path: t.Route.Path, OperationID: t.Route.OperationID}
		d.Params = make([]string, len(t.Route.Arguments))
		for j, a := range t.Route.Arguments {
			d.Params[j] = a.Name
		}
		if info, ok := extra[t.Route.Method+" "+cmp0(t.Route.DocPath, t.Route.Path)]; ok {
			d.Tags, d.Schemas, d.ParamText, d.Actions = info.tags, info.schemas, info.paramText, info.actions
		}
		out[i] = d
	}
	return out
}

type opInfo struct {
	tags, schemas []string
	paramText     string
	actions       []string
	pinned        bool // x-mcp-pin: true
}

// maxParamText bounds what is read about one operation's arguments.
const maxParamText = 1500

// operationInfo reads each operation's tags and schema names, keyed by
// "METHOD /path" as in the document.
func operationInfo(t *openapi3.T) Operations {
	out := Operations{}
	if t.Paths == nil {
		return out
	}
	for path, item := range t.Paths.Map() {
		out.Read(path, item)
	}
	return out
}

// Read adds the operations of one path item of a document: the reader to
// give openapi.GenerateOptions.OnPathItem when the document's path items
// are built during generation (openapi.LoadOptions.DeferPaths).
func (o Operations) Read(path string, item *openapi3.PathItem) {
	if item == nil {
		return
	}
	for method, op := range item.Operations() {
		pinned, _ := op.Extensions["x-mcp-pin"].(bool)
		info := opInfo{tags: op.Tags, pinned: pinned}
		seen := map[string]bool{}
		add := func(ref string) {
			name := refName(ref)
			if name != "" && !seen[name] {
				seen[name] = true
				info.schemas = append(info.schemas, name)
			}
		}
		var text strings.Builder
		say := func(desc string) {
			if desc == "" || text.Len() >= maxParamText {
				return
			}
			lead, _ := leadSentence(plainText(desc))
			text.WriteString(lead)
			text.WriteByte(' ')
		}
		for _, p := range op.Parameters {
			if p != nil && p.Value != nil {
				say(p.Value.Description)
			}
		}
		if rb := op.RequestBody; rb != nil && rb.Value != nil {
			if binaryBody(rb.Value.Content) {
				info.actions = append(info.actions, "upload")
			}
			say(rb.Value.Description)
			for _, mt := range rb.Value.Content {
				schemaNames(mt.Schema, add)
				if mt.Schema != nil && mt.Schema.Value != nil {
					props := mt.Schema.Value.Properties
					for _, name := range sortedKeys(props) {
						if p := props[name]; p != nil && p.Value != nil {
							say(p.Value.Description)
						}
					}
				}
			}
		}
		info.paramText = text.String()
		if op.Responses != nil {
			for code, r := range op.Responses.Map() {
				if !strings.HasPrefix(code, "2") || r == nil {
					continue
				}
				add(r.Ref)
				if r.Value != nil && binaryBody(r.Value.Content) && !slices.Contains(info.actions, "download") {
					info.actions = append(info.actions, "download")
				}
				if r.Value != nil {
					for _, mt := range r.Value.Content {
						schemaNames(mt.Schema, add)
					}
				}
			}
		}
		sort.Strings(info.schemas)
		o[strings.ToUpper(method)+" "+path] = info
	}
}

// binaryBody reports whether a body is a file: a media type that is no
// JSON, form or text, or a string schema of format binary.
func binaryBody(content openapi3.Content) bool {
	for mt, m := range content {
		mt = strings.ToLower(mt)
		if m != nil && m.Schema != nil && m.Schema.Value != nil && m.Schema.Value.Format == "binary" {
			return true
		}
		textual := strings.Contains(mt, "json") || strings.HasPrefix(mt, "text/") ||
			strings.Contains(mt, "form") || strings.Contains(mt, "xml") || mt == "*/*"
		if !textual {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// schemaNames reports the named schemas a body is made of: the schema
// itself, its items, and the items of a list envelope (Stripe's "data",
// OData's "value").
func schemaNames(s *openapi3.SchemaRef, add func(string)) {
	if s == nil {
		return
	}
	add(s.Ref)
	v := s.Value
	if v == nil {
		return
	}
	if v.Items != nil {
		add(v.Items.Ref)
	}
	for _, env := range []string{"data", "value"} {
		if p := v.Properties[env]; p != nil && p.Value != nil && p.Value.Items != nil {
			add(p.Value.Items.Ref)
		}
	}
}

// refName is the last part of a local $ref ("#/components/schemas/issuing.card"
// → "issuing.card").
func refName(ref string) string {
	if ref == "" {
		return ""
	}
	return ref[strings.LastIndexByte(ref, '/')+1:]
}

// Pinned returns the names of the tools to list beside the discovery tools:
// those whose operation says x-mcp-pin: true in ops (may be nil), and those
// named in pins by tool name, operationId or "METHOD /path". Unmatched pins
// are returned apart, for the caller to report.
func Pinned(tools []openapi.Tool, ops Operations, pins []string) (names, unmatched []string) {
	want := map[string]bool{}
	for _, p := range pins {
		want[strings.TrimSpace(p)] = true
	}
	matched := map[string]bool{}
	for i := range tools {
		t := &tools[i]
		route := t.Route.Method + " " + cmp0(t.Route.DocPath, t.Route.Path)
		keys := []string{t.Name, route}
		if t.Route.OperationID != "" {
			keys = append(keys, t.Route.OperationID)
		}
		hit := ops[route].pinned
		for _, k := range keys {
			if want[k] {
				matched[k] = true
				hit = true
			}
		}
		if hit {
			names = append(names, t.Name)
		}
	}
	for _, p := range pins {
		if p = strings.TrimSpace(p); !matched[p] {
			unmatched = append(unmatched, p)
		}
	}
	return names, unmatched
}
