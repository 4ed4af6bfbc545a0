package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ManifestVersion is bumped on any intentional change of the manifest shape
// or of how tools are generated.
const ManifestVersion = 1

// Manifest is the committed source of truth the drift check compares a
// document against: the tools with their routing, plus the document's
// security schemes.
type Manifest struct {
	Version         int                       `json:"version"`
	Source          string                    `json:"source"`
	Title           string                    `json:"title,omitempty"`
	APIVersion      string                    `json:"apiVersion,omitempty"`
	Servers         []string                  `json:"servers,omitempty"`
	SecuritySchemes map[string]SecurityScheme `json:"securitySchemes,omitempty"`
	Tools           []Tool                    `json:"tools"`
}

// NewManifest wraps a generation result.
func NewManifest(r *Result) *Manifest {
	return &Manifest{
		Version: ManifestVersion, Source: r.Source, Title: r.Title, APIVersion: r.Version,
		Servers: r.Servers, SecuritySchemes: r.SecuritySchemes, Tools: r.Tools,
	}
}

// Encode returns the manifest as indented JSON with a final newline; the
// same manifest always gives the same bytes.
func (m *Manifest) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("openapi: encoding manifest: %w", err)
	}
	return buf.Bytes(), nil
}

// DecodeManifest parses a manifest written by [Manifest.Encode].
func DecodeManifest(data []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(bytes.TrimPrefix(data, utf8BOM), &m); err != nil {
		return nil, fmt.Errorf("openapi: decoding manifest: %w", err)
	}
	if m.Version == 0 {
		return nil, fmt.Errorf("openapi: decoding manifest: no version field (not a manifest?)")
	}
	if m.Version > ManifestVersion {
		return nil, fmt.Errorf("openapi: decoding manifest: version %d is newer than this program's %d", m.Version, ManifestVersion)
	}
	return &m, nil
}

// mcpTool is the tools/list shape of a Tool.
type mcpTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  Annotations     `json:"annotations"`
}

// EncodeToolsList returns exactly a tools/list result, {"tools":[...]},
// compact, deterministic, with a final newline.
func EncodeToolsList(tools []Tool) ([]byte, error) {
	list := struct {
		Tools []mcpTool `json:"tools"`
	}{Tools: make([]mcpTool, len(tools))}
	size := 16
	for i, t := range tools {
		list.Tools[i] = mcpTool{t.Name, t.Title, t.Description, t.InputSchema, t.OutputSchema, t.Annotations}
		size += len(t.InputSchema) + len(t.OutputSchema) + len(t.Description) + 256
	}
	var buf bytes.Buffer
	buf.Grow(size)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(list); err != nil {
		return nil, fmt.Errorf("openapi: encoding tools/list: %w", err)
	}
	return buf.Bytes(), nil
}

// CompileSchema compiles a JSON Schema 2020-12 document (an inputSchema or
// outputSchema); name labels it in errors.
func CompileSchema(name string, schema json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("openapi: schema %s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "mcpgate:///" + name
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("openapi: schema %s: %w", name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("openapi: schema %s: %w", name, err)
	}
	return s, nil
}

// CompileInputSchema compiles a tool's inputSchema, for validating call
// arguments.
func CompileInputSchema(t *Tool) (*jsonschema.Schema, error) {
	return CompileSchema(t.Name+"/input", t.InputSchema)
}

// Change is one difference between a manifest and a newer one.
type Change struct {
	Tool     string `json:"tool"`
	Breaking bool   `json:"breaking"`
	Message  string `json:"message"`
}

func (c Change) String() string {
	kind := "compatible"
	if c.Breaking {
		kind = "BREAKING"
	}
	return fmt.Sprintf("%s: %s: %s", kind, c.Tool, c.Message)
}

// Diff lists the changes from old to new, classified as breaking (a tool
// removed or renamed, a required argument added, an argument removed, a
// type narrowed, an annotation made less safe) or compatible (anything
// else). The order is deterministic: old tools in order, then added ones.
func Diff(old, new *Manifest) []Change {
	var changes []Change
	newByName := map[string]*Tool{}
	newByRoute := map[string]*Tool{}
	for i := range new.Tools {
		t := &new.Tools[i]
		newByName[t.Name] = t
		newByRoute[routeKey(t)] = t
	}
	oldNames := map[string]bool{}
	for i := range old.Tools {
		o := &old.Tools[i]
		oldNames[o.Name] = true
		n := newByName[o.Name]
		if n == nil {
			if r := newByRoute[routeKey(o)]; r != nil && !slices.ContainsFunc(old.Tools, func(t Tool) bool { return t.Name == r.Name }) {
				changes = append(changes, Change{o.Name, true, fmt.Sprintf("renamed to %s", r.Name)})
				oldNames[r.Name] = true
				continue
			}
			changes = append(changes, Change{o.Name, true, "tool removed"})
			continue
		}
		changes = append(changes, diffTool(o, n)...)
	}
	for _, n := range new.Tools {
		if !oldNames[n.Name] {
			changes = append(changes, Change{n.Name, false, "tool added"})
		}
	}
	return changes
}

func routeKey(t *Tool) string { return t.Route.Method + " " + cmpOr(t.Route.DocPath, t.Route.Path) }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

type schemaShape struct {
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
}

type propShape struct {
	Type any    `json:"type"`
	Ref  string `json:"$ref"`
	Enum []any  `json:"enum"`
}

func diffTool(o, n *Tool) []Change {
	var out []Change
	add := func(breaking bool, format string, args ...any) {
		out = append(out, Change{o.Name, breaking, fmt.Sprintf(format, args...)})
	}
	var os, ns schemaShape
	_ = json.Unmarshal(o.InputSchema, &os)
	_ = json.Unmarshal(n.InputSchema, &ns)
	for _, name := range sortedKeys(os.Properties) {
		if _, ok := ns.Properties[name]; !ok {
			add(true, "argument %q removed", name)
			continue
		}
		var op, np propShape
		_ = json.Unmarshal(os.Properties[name], &op)
		_ = json.Unmarshal(ns.Properties[name], &np)
		ot, nt := typeSet(op.Type), typeSet(np.Type)
		switch {
		case narrower(ot, nt):
			add(true, "argument %q type narrowed from %s to %s", name, typeString(ot), typeString(nt))
		case !slices.Equal(ot, nt):
			add(false, "argument %q type widened from %s to %s", name, typeString(ot), typeString(nt))
		}
		if len(np.Enum) > 0 {
			for _, v := range op.Enum {
				if !slices.ContainsFunc(np.Enum, func(x any) bool { return reflect.DeepEqual(x, v) }) {
					add(true, "argument %q no longer accepts %v", name, v)
				}
			}
			if len(op.Enum) == 0 {
				add(true, "argument %q restricted to an enum", name)
			}
		}
		if op.Ref != np.Ref {
			add(false, "argument %q schema reference changed from %q to %q", name, op.Ref, np.Ref)
		}
	}
	for _, name := range sortedKeys(ns.Properties) {
		if _, ok := os.Properties[name]; !ok {
			if slices.Contains(ns.Required, name) {
				add(true, "required argument %q added", name)
			} else {
				add(false, "optional argument %q added", name)
			}
		}
	}
	for _, name := range ns.Required {
		if _, existed := os.Properties[name]; existed && !slices.Contains(os.Required, name) {
			add(true, "argument %q became required", name)
		}
	}
	for _, name := range os.Required {
		if _, ok := ns.Properties[name]; ok && !slices.Contains(ns.Required, name) {
			add(false, "argument %q became optional", name)
		}
	}
	if !bytes.Equal(o.InputSchema, n.InputSchema) && len(out) == 0 {
		add(false, "inputSchema changed")
	}
	// Annotations: less safe is breaking.
	oa, na := o.Annotations, n.Annotations
	hint := func(name string, ov, nv, safe bool) {
		if ov == nv {
			return
		}
		add(nv != safe, "%s changed from %t to %t", name, ov, nv)
	}
	hint("readOnlyHint", oa.ReadOnlyHint, na.ReadOnlyHint, true)
	hint("destructiveHint", oa.DestructiveHint, na.DestructiveHint, false)
	hint("idempotentHint", oa.IdempotentHint, na.IdempotentHint, true)
	hint("openWorldHint", oa.OpenWorldHint, na.OpenWorldHint, false)
	if oa.Title != na.Title {
		add(false, "annotations.title changed")
	}
	if o.Title != n.Title {
		add(false, "title changed")
	}
	if o.Description != n.Description {
		add(false, "description changed")
	}
	if !bytes.Equal(o.OutputSchema, n.OutputSchema) {
		add(false, "outputSchema changed")
	}
	if !reflect.DeepEqual(o.Route, n.Route) {
		add(false, "route changed (%s %s → %s %s)", o.Route.Method, o.Route.Path, n.Route.Method, n.Route.Path)
	}
	if !slices.Equal(o.RedactResponse, n.RedactResponse) {
		add(len(n.RedactResponse) < len(o.RedactResponse), "redactResponse changed")
	}
	return out
}

func typeSet(t any) []string {
	var out []string
	switch x := t.(type) {
	case string:
		out = []string{x}
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	}
	slices.Sort(out)
	return out
}

// narrower: the new type set accepts less than the old one.
func narrower(old, new []string) bool {
	if len(new) == 0 {
		return false // no type: anything
	}
	if len(old) == 0 {
		return true
	}
	for _, t := range old {
		if !slices.Contains(new, t) && !(t == "integer" && slices.Contains(new, "number")) {
			return true
		}
	}
	return false
}

func typeString(t []string) string {
	if len(t) == 0 {
		return "any"
	}
	return strings.Join(t, "|")
}
