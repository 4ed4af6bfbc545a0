package openapi

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"golang.org/x/text/unicode/norm"
)

// methodOrder is the order of operations within one path.
func methodOrder() [8]string {
	return [...]string{
		http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete,
		http.MethodOptions, http.MethodHead, http.MethodPatch, http.MethodTrace,
	}
}

const (
	defaultMaxName        = 64
	maxMaxName            = 128
	defaultMaxDescription = 1024
	defaultMaxOutput      = 64 << 10
	defaultMaxInput       = 64 << 10
	maxArgName            = 64
)

// Generate builds one tool per operation of doc that passes the filters in
// opts. It fails only on invalid options; document problems become
// warnings in the result.
func Generate(doc *Document, opts GenerateOptions) (*Result, error) {
	return GenerateContext(context.Background(), doc, opts)
}

// GenerateContext is [Generate] under ctx: it returns ctx's error once ctx
// is done (a reload stopped by shutdown).
func GenerateContext(ctx context.Context, doc *Document, opts GenerateOptions) (res *Result, err error) {
	if doc == nil || doc.T == nil {
		return nil, errors.New("openapi: Generate: no document")
	}
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, &LoadError{Source: doc.Source, Err: fmt.Errorf("internal error while generating tools (please report it with the document): %v", r)}
		}
	}()
	g, err := newGenerator(doc, opts)
	if err != nil {
		return nil, err
	}
	return g.run(ctx)
}

type generator struct {
	doc         *Document
	opts        GenerateOptions
	maxName     int
	maxDesc     int
	maxOut      int
	maxIn       int
	trimmedIn   int // tools whose inputSchema $defs were trimmed
	trimmedOut  int // tools whose outputSchema $defs were trimmed
	includePath []*regexp.Regexp
	excludePath []*regexp.Regexp
	methods     map[string]bool
	namer       *defNamer
	in, out     *schemaConverter
	apiKeys     map[apiKeyParam]string // apiKey parameters of the security schemes
	warnings    []string
	warned      map[string]bool
}

func newGenerator(doc *Document, opts GenerateOptions) (*generator, error) {
	g := &generator{doc: doc, opts: opts, warned: map[string]bool{}}
	g.maxName = cmp.Or(opts.MaxNameLength, defaultMaxName)
	if g.maxName < 16 || g.maxName > maxMaxName {
		return nil, fmt.Errorf("openapi: MaxNameLength %d: must be between 16 and %d", opts.MaxNameLength, maxMaxName)
	}
	g.maxDesc = cmp.Or(opts.MaxDescriptionLength, defaultMaxDescription)
	g.maxOut = cmp.Or(opts.MaxOutputSchemaBytes, defaultMaxOutput)
	g.maxIn = cmp.Or(opts.MaxInputSchemaBytes, defaultMaxInput)
	switch opts.OutputSchema {
	case "", OutputSchemaCompact, OutputSchemaFull, OutputSchemaNone:
	default:
		return nil, fmt.Errorf("openapi: OutputSchema %q: want compact, full or none", opts.OutputSchema)
	}
	for _, pat := range opts.IncludePaths {
		re, err := globRegexp(pat)
		if err != nil {
			return nil, err
		}
		g.includePath = append(g.includePath, re)
	}
	for _, pat := range opts.ExcludePaths {
		re, err := globRegexp(pat)
		if err != nil {
			return nil, err
		}
		g.excludePath = append(g.excludePath, re)
	}
	if len(opts.IncludeMethods) > 0 {
		g.methods = map[string]bool{}
		for _, m := range opts.IncludeMethods {
			g.methods[strings.ToUpper(strings.TrimSpace(m))] = true
		}
	}
	g.apiKeys = apiKeyParams(doc.T)
	g.namer = newDefNamer()
	g.in = newSchemaConverter(modeInput, g.namer, g.warn)
	g.out = newSchemaConverter(modeOutput, g.namer, g.warn)
	g.out.compact = opts.OutputSchema == "" || opts.OutputSchema == OutputSchemaCompact
	g.in.refDescriptions, g.out.refDescriptions = doc.refDescriptions, doc.refDescriptions
	// Component schemas keep their own names, whatever order tools meet
	// them; an alias (a component that is only a $ref) names its target
	// only when nothing else does.
	if comps := doc.T.Components; comps != nil {
		for _, aliases := range []bool{false, true} {
			for _, name := range sortedKeys(comps.Schemas) {
				if r := comps.Schemas[name]; r != nil && r.Value != nil && (r.Ref != "") == aliases {
					g.namer.name(r.Value, "#/components/schemas/"+name)
				}
			}
		}
	}
	return g, nil
}

func (g *generator) warn(msg string) {
	if !g.warned[msg] {
		g.warned[msg] = true
		g.warnings = append(g.warnings, msg)
	}
}

// globRegexp compiles a path glob: "**" matches anything, "*" anything but
// "/", "?" one character but "/".
func globRegexp(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '*':
			if i+1 < len(glob) && glob[i+1] == '*' {
				b.WriteString(".*")
				i++
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("openapi: path glob %q: %w", glob, err)
	}
	return re, nil
}

func (g *generator) run(ctx context.Context) (*Result, error) {
	t := g.doc.T
	res := &Result{Source: g.doc.Source}
	if t.Info != nil {
		res.Title, res.Version = t.Info.Title, t.Info.Version
	}
	for _, s := range t.Servers {
		if s != nil {
			res.Servers = append(res.Servers, s.URL)
		}
	}
	res.SecuritySchemes = securitySchemes(t)
	packed := 0 // res.Tools[:packed] are packed
	var walkErr error
	for path, item := range g.pathItems(ctx, &walkErr) {
		if g.opts.OnPathItem != nil {
			g.opts.OnPathItem(path, item)
		}
		for _, method := range methodOrder() {
			op := item.GetOperation(method)
			if op == nil {
				continue
			}
			ov, ok := g.selected(method, path, op)
			if !ok {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			res.Tools = append(res.Tools, g.tool(path, item, method, op, ov))
			if len(res.Tools)-packed >= packEvery {
				pack(res.Tools[packed:])
				packed = len(res.Tools)
			}
		}
		if g.opts.Consume {
			t.Paths.Delete(path)
		}
	}
	if walkErr != nil {
		return nil, walkErr
	}
	pack(res.Tools[packed:])
	g.uniqueNames(res.Tools)
	if g.trimmedOut > 0 {
		g.warn(fmt.Sprintf("%d outputSchemas were over %d bytes: their $defs farthest from the root became true (any value)", g.trimmedOut, g.maxOut))
	}
	if g.trimmedIn > 0 {
		g.warn(fmt.Sprintf("%d inputSchemas were over %d bytes: their $defs farthest from the root became true (any value)", g.trimmedIn, g.maxIn))
	}
	res.Warnings = append(slices.Clone(g.doc.Warnings), g.warnings...)
	return res, nil
}

// selected applies the filters and returns the merged override.
func (g *generator) selected(method, path string, op *openapi3.Operation) (Override, bool) {
	ov := extensionOverride(op, g.warn)
	if o, ok := g.opts.Overrides[method+" "+path]; ok {
		ov = mergeOverride(ov, o)
	}
	if op.OperationID != "" {
		if o, ok := g.opts.Overrides[op.OperationID]; ok {
			ov = mergeOverride(ov, o)
		}
	}
	if ov.Hide {
		return ov, false
	}
	if g.methods != nil && !g.methods[method] {
		return ov, false
	}
	for _, tag := range op.Tags {
		if slices.Contains(g.opts.ExcludeTags, tag) {
			return ov, false
		}
	}
	if len(g.includePath) > 0 && !slices.ContainsFunc(g.includePath, func(re *regexp.Regexp) bool { return re.MatchString(path) }) {
		return ov, false
	}
	if slices.ContainsFunc(g.excludePath, func(re *regexp.Regexp) bool { return re.MatchString(path) }) {
		return ov, false
	}
	if len(g.opts.IncludeOperations) > 0 && !slices.Contains(g.opts.IncludeOperations, op.OperationID) {
		return ov, false
	}
	if op.OperationID != "" && slices.Contains(g.opts.ExcludeOperations, op.OperationID) {
		return ov, false
	}
	if g.opts.Filter != nil && !g.opts.Filter(method, path) {
		return ov, false
	}
	return ov, true
}

// extensionOverride reads the x-mcp-* operation extensions.
func extensionOverride(op *openapi3.Operation, warn func(string)) Override {
	var ov Override
	if len(op.Extensions) == 0 {
		return ov
	}
	get := func(key string, dst any) {
		v, ok := op.Extensions[key]
		if !ok {
			return
		}
		raw, err := json.Marshal(v)
		if err == nil {
			err = json.Unmarshal(raw, dst)
		}
		if err != nil {
			warn(fmt.Sprintf("operation %s: %s: %v", op.OperationID, key, err))
		}
	}
	get("x-mcp-name", &ov.Name)
	get("x-mcp-title", &ov.Title)
	get("x-mcp-description", &ov.Description)
	get("x-mcp-hide", &ov.Hide)
	get("x-mcp-redact-response", &ov.RedactResponse)
	get("x-mcp-task", &ov.Task)
	var ann struct {
		ReadOnlyHint    *bool `json:"readOnlyHint"`
		DestructiveHint *bool `json:"destructiveHint"`
		IdempotentHint  *bool `json:"idempotentHint"`
		OpenWorldHint   *bool `json:"openWorldHint"`
	}
	get("x-mcp-annotations", &ann)
	ov.ReadOnlyHint, ov.DestructiveHint, ov.IdempotentHint, ov.OpenWorldHint = ann.ReadOnlyHint, ann.DestructiveHint, ann.IdempotentHint, ann.OpenWorldHint
	return ov
}

func mergeOverride(base, o Override) Override {
	base.Name = cmp.Or(o.Name, base.Name)
	base.Title = cmp.Or(o.Title, base.Title)
	base.Description = cmp.Or(o.Description, base.Description)
	base.Hide = base.Hide || o.Hide
	base.Task = base.Task || o.Task
	base.ReadOnlyHint = cmp.Or(o.ReadOnlyHint, base.ReadOnlyHint)
	base.DestructiveHint = cmp.Or(o.DestructiveHint, base.DestructiveHint)
	base.IdempotentHint = cmp.Or(o.IdempotentHint, base.IdempotentHint)
	base.OpenWorldHint = cmp.Or(o.OpenWorldHint, base.OpenWorldHint)
	if o.RedactResponse != nil {
		base.RedactResponse = o.RedactResponse
	}
	return base
}

// argCandidate is an argument before its final name is chosen.
type argCandidate struct {
	arg    Argument
	schema any
	deps   deps
	// ifBody marks a field the body schema requires while the body itself
	// is optional: required as soon as any body argument is given.
	ifBody bool
}

func (g *generator) tool(docPath string, item *openapi3.PathItem, method string, op *openapi3.Operation, ov Override) Tool {
	where := method + " " + docPath
	path := routePath(docPath)
	if i := strings.IndexByte(docPath, '#'); i >= 0 && strings.ContainsAny(docPath[i+1:], "/{") {
		g.warn(fmt.Sprintf("%s: the path's \"#…\" marker is not sent; the request path is %s", where, path))
	}
	route := Route{Method: method, Path: path, OperationID: op.OperationID, Mutating: isMutating(method),
		Security: g.security(op), Servers: servers(item, op)}
	if path != docPath {
		route.DocPath = docPath
	}

	cands, hidden := g.parameterCandidates(where, path, item, op)
	route.Hidden = hidden
	if op.RequestBody != nil {
		if rb := op.RequestBody.Value; rb != nil {
			body, bc := g.bodyCandidates(where, rb)
			if body != nil {
				route.Body = body
				cands = append(cands, bc...)
			}
		} else {
			g.warn(where + ": unresolved request body skipped")
		}
	}
	var input json.RawMessage
	route.Arguments, input = g.inputSchema(where, cands)

	tool := Tool{Name: g.name(ov, op, method, path), InputSchema: input, OutputSchema: g.outputSchema(where, op), Route: route}
	tool.Title = oneLine(plainText(cmp.Or(ov.Title, op.Summary)))
	if tool.Title == "" {
		tool.Title = humanize(cmp.Or(op.OperationID, tool.Name))
	}
	tool.Title = boundText(tool.Title, 200)
	tool.Description, tool.FullDescription = g.description(ov, op)
	tool.Meta = map[string]any{OperationMetaKey: OperationMeta{Method: method, Path: docPath, OperationID: op.OperationID}}
	tool.Annotations = annotations(hints(method, docPath, item, op), tool.Title, ov)
	tool.RedactResponse = slices.Clone(ov.RedactResponse)
	tool.Task = ov.Task
	tool.Tags = slices.Clone(op.Tags)
	if len(tool.RedactResponse) > 0 && tool.OutputSchema != nil {
		narrowed, err := narrowOutputSchema(tool.OutputSchema, tool.RedactResponse)
		if err != nil {
			g.warn(fmt.Sprintf("%s: %v", where, err))
		} else {
			tool.OutputSchema = narrowed
		}
	}
	return tool
}

// description returns a tool's description (the override as written, or
// the lead paragraph of the operation's text, HTML turned into Markdown)
// and, when that is a cut, the full text.
func (g *generator) description(ov Override, op *openapi3.Operation) (desc, full string) {
	prefix := ""
	if op.Deprecated {
		prefix = "Deprecated. "
	}
	if ov.Description != "" {
		return boundText(prefix+ov.Description, g.maxDesc), ""
	}
	full = plainText(strings.TrimSpace(cmp.Or(op.Description, op.Summary)))
	desc = strings.TrimSpace(prefix + cutAtSentence(leadParagraph(full), g.maxDesc-len(prefix)))
	if full = strings.TrimSpace(prefix + full); full == desc {
		full = ""
	}
	return desc, full
}

// name is the tool name before uniqueness: the override, the operationId
// (a path-slug one made readable), or a method_path slug, made tool-name
// safe.
func (g *generator) name(ov Override, op *openapi3.Operation, method, path string) string {
	slug := strings.ToLower(method) + "_" + path
	for _, candidate := range []string{ov.Name, readableName(op.OperationID), slug} {
		if name := toolName(candidate, g.maxName); name != "" {
			return name
		}
	}
	return strings.ToLower(method)
}

// annotations applies the override's hints (x-mcp-annotations, then the
// options) to the derived ones (hints.go).
func annotations(a Annotations, title string, ov Override) Annotations {
	a.Title = title
	a.ReadOnlyHint = deref(ov.ReadOnlyHint, a.ReadOnlyHint)
	a.DestructiveHint = deref(ov.DestructiveHint, a.DestructiveHint)
	a.IdempotentHint = deref(ov.IdempotentHint, a.IdempotentHint)
	a.OpenWorldHint = deref(ov.OpenWorldHint, a.OpenWorldHint)
	if a.ReadOnlyHint {
		a.DestructiveHint = false
	}
	return a
}

// security is the operation's security requirements, else the document's.
func (g *generator) security(op *openapi3.Operation) []SecurityRequirement {
	sec := g.doc.T.Security
	if op.Security != nil {
		sec = *op.Security
	}
	if sec == nil {
		return nil
	}
	out := make([]SecurityRequirement, 0, len(sec))
	for _, req := range sec {
		r := SecurityRequirement{}
		for name, scopes := range req {
			r[name] = append([]string{}, scopes...)
		}
		out = append(out, r)
	}
	return out
}

// servers is the operation's servers, else the path item's.
func servers(item *openapi3.PathItem, op *openapi3.Operation) []string {
	list := item.Servers
	if op.Servers != nil {
		list = *op.Servers
	}
	var out []string
	for _, s := range list {
		if s != nil {
			out = append(out, s.URL)
		}
	}
	return out
}

// parameterCandidates returns the path, query, header and cookie arguments
// (in that order): path-item parameters overridden by operation ones (same
// name and location), path parameters checked against the template, and
// the parameters that are plumbing rather than arguments (plumbing.go).
func (g *generator) parameterCandidates(where, path string, item *openapi3.PathItem, op *openapi3.Operation) ([]argCandidate, []HiddenParameter) {
	type key struct{ name, in string }
	var params []*openapi3.Parameter
	index := map[key]int{}
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, pr := range list {
			if pr == nil || pr.Value == nil {
				g.warn(where + ": unresolved parameter skipped")
				continue
			}
			p := pr.Value
			k := key{p.Name, p.In}
			if i, ok := index[k]; ok {
				params[i] = p
				continue
			}
			index[k] = len(params)
			params = append(params, p)
		}
	}
	for _, p := range params {
		switch p.In {
		case "path", "query", "header", "cookie":
		default:
			g.warn(fmt.Sprintf("%s: parameter %q in %q is not a valid location; dropped", where, p.Name, p.In))
		}
	}
	var cands []argCandidate
	var hidden []HiddenParameter
	templ := templateParams(path)
	declaredPath := map[string]bool{}
	for _, loc := range []string{"path", "query", "header", "cookie"} {
		for _, p := range params {
			if p.In != loc || p.Name == "" {
				continue
			}
			if loc == "path" {
				if !slices.Contains(templ, p.Name) {
					g.warn(fmt.Sprintf("%s: path parameter %q is not in the path template; dropped", where, p.Name))
					continue
				}
				declaredPath[p.Name] = true
			}
			if loc == "header" && ReservedHeader(p.Name) {
				continue
			}
			if h, ok := g.hiddenParameter(p); ok && loc != "path" {
				hidden = append(hidden, h)
				continue
			}
			cands = append(cands, g.paramCandidate(p))
		}
		if loc != "path" {
			continue
		}
		for _, name := range templ {
			if !declaredPath[name] {
				declaredPath[name] = true
				g.warn(fmt.Sprintf("%s: path template parameter %q is not declared; added as a string", where, name))
				cands = append(cands, argCandidate{
					arg:    Argument{In: InPath, Param: name, Required: true, Style: "simple"},
					schema: map[string]any{"type": "string", "minLength": 1},
				})
			}
		}
	}
	return cands, hidden
}

// inputSchema names the arguments and builds the inputSchema. Names: the
// first claimant (path, query, header, cookie, body order) keeps a name;
// later ones get their location as a prefix ("query_id"), then a number.
func (g *generator) inputSchema(where string, cands []argCandidate) ([]Argument, json.RawMessage) {
	used := map[string]bool{}
	props := make(map[string]any, len(cands))
	d := deps{}
	var required []string
	for i := range cands {
		c := &cands[i]
		base := sanitizeIdent(c.arg.Param, "_.-", maxArgName)
		if c.arg.In == InWholeBody {
			base = "body"
		}
		if base == "" {
			base = "arg"
		}
		name := base
		if used[name] {
			name = truncate(locPrefix(c.arg.In)+"_"+base, maxArgName)
		}
		for n := 2; used[name]; n++ {
			suffix := "_" + strconv.Itoa(n)
			name = truncate(base, maxArgName-len(suffix)) + suffix
		}
		used[name] = true
		c.arg.Name = name
		props[name] = c.schema
		if c.arg.Required {
			required = append(required, name)
		}
		for s := range c.deps {
			d[s] = struct{}{}
		}
	}
	slices.SortFunc(cands, func(a, b argCandidate) int { return strings.Compare(a.arg.Name, b.arg.Name) })
	args := make([]Argument, len(cands))
	for i, c := range cands {
		args[i] = c.arg
	}
	slices.Sort(required)
	root := map[string]any{"type": "object", "properties": props}
	if len(cands) == 0 {
		root["additionalProperties"] = false
	}
	if len(required) > 0 {
		root["required"] = required
	}
	if dr := bodyDependencies(cands); len(dr) > 0 {
		root["dependentRequired"] = dr
	}
	input, trimmed, err := g.in.encodeWithDefs(root, d, g.maxIn)
	if trimmed > 0 {
		g.trimmedIn++
	}
	if err != nil {
		g.warn(fmt.Sprintf("%s: inputSchema: %v", where, err))
		input = json.RawMessage(`{"type":"object"}`)
	}
	return args, input
}

// bodyDependencies keeps the required list of an optional body: the body
// may be left out, but once any body argument is given, the fields the body
// requires are required ("dependentRequired", which the gateway's own
// validation enforces). Each such field also says so in its description,
// for agents that read descriptions more closely than keywords.
func bodyDependencies(cands []argCandidate) map[string][]string {
	var ifBody []string
	for i := range cands {
		if cands[i].ifBody {
			ifBody = append(ifBody, cands[i].arg.Name)
			if m, ok := cands[i].schema.(map[string]any); ok {
				const note = "Required when any body field is given."
				if desc, _ := m["description"].(string); desc != "" {
					m["description"] = desc + " " + note
				} else {
					m["description"] = note
				}
			}
		}
	}
	if len(ifBody) == 0 {
		return nil
	}
	slices.Sort(ifBody)
	dr := map[string][]string{}
	for _, c := range cands {
		if c.arg.In != InBodyProperty {
			continue
		}
		others := slices.DeleteFunc(slices.Clone(ifBody), func(n string) bool { return n == c.arg.Name })
		if len(others) > 0 {
			dr[c.arg.Name] = others
		}
	}
	return dr
}

func deref(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

func isReadOnly(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

func isMutating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// ReservedHeader reports whether a header parameter never becomes a tool
// argument: OpenAPI says Accept, Content-Type and Authorization parameters
// are ignored, and no argument may set a credential, hop-by-hop, framing
// or routing header (the credential resolver and the transport set those).
func ReservedHeader(name string) bool {
	switch strings.ToLower(name) {
	case "accept", "content-type", "authorization",
		"proxy-authorization", "proxy-authenticate", "cookie", "set-cookie", "www-authenticate",
		"host", "content-length", "transfer-encoding", "connection", "keep-alive", "te",
		"trailer", "upgrade", "proxy-connection", "accept-encoding", "expect", "max-forwards", "http2-settings",
		"forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-real-ip":
		return true
	}
	return false
}

func locPrefix(in Location) string {
	switch in {
	case InBodyProperty, InWholeBody:
		return "body"
	}
	return string(in)
}

// routePath is the path a request uses for a document path key. Documents
// put a "#…" in keys that HTTP never sends: a suffix that tells operations
// on one path apart ("/{Bucket}#cors", AWS's "/#X-Amz-Target=Service.Op",
// S3's "#uploads"), removed with everything after it; or a marker segment
// that client SDKs replace (Mastercard's "/send/#env/v1/partners/{id}"),
// removed up to the next '/' or '{' so that the rest of the path and every
// template parameter stay.
func routePath(docPath string) string {
	i := strings.IndexByte(docPath, '#')
	if i < 0 {
		return docPath
	}
	base, rest := docPath[:i], docPath[i+1:]
	j := strings.IndexAny(rest, "/{")
	if j < 0 {
		return base
	}
	rest = rest[j:]
	if strings.HasSuffix(base, "/") && strings.HasPrefix(rest, "/") {
		rest = rest[1:]
	}
	return routePath(base + rest)
}

// templateParams returns the {names} in a path template, in order.
func templateParams(path string) []string {
	var names []string
	for {
		i := strings.IndexByte(path, '{')
		if i < 0 {
			return names
		}
		j := strings.IndexByte(path[i:], '}')
		if j < 0 {
			return names
		}
		name := path[i+1 : i+j]
		if name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
		path = path[i+j+1:]
	}
}

func (g *generator) paramCandidate(p *openapi3.Parameter) argCandidate {
	c := argCandidate{deps: deps{}}
	c.arg = Argument{In: Location(p.In), Param: p.Name, Required: p.Required || p.In == "path", AllowReserved: p.AllowReserved}
	schema := p.Schema
	if schema == nil && len(p.Content) > 0 {
		ct := pickContentType(p.Content)
		c.arg.ContentType = ct
		schema = p.Content[ct].Schema
	}
	if c.arg.ContentType == "" {
		c.arg.Style = p.Style
		if c.arg.Style == "" {
			switch p.In {
			case "path", "header":
				c.arg.Style = "simple"
			default:
				c.arg.Style = "form"
			}
		}
		if p.Explode != nil {
			c.arg.Explode = *p.Explode
		} else {
			c.arg.Explode = c.arg.Style == "form"
		}
	}
	var m map[string]any
	if schema != nil {
		v := g.in.convertRef(schema, c.deps)
		if mm, ok := v.(map[string]any); ok {
			m = mm
		} else if b, ok := v.(bool); ok && !b {
			m = map[string]any{"not": map[string]any{}}
		}
	}
	if m == nil {
		m = map[string]any{}
	}
	if desc := plainText(strings.TrimSpace(p.Description)); desc != "" {
		// The parameter's description replaces its schema's, but not the
		// note of a pattern the schema could not keep.
		if schema != nil && schema.Ref == "" && schema.Value != nil && schema.Value.Pattern != "" {
			if _, ok := g.in.pattern(schema.Value.Pattern); !ok {
				desc = withPatternNote(desc, schema.Value.Pattern)
			}
		}
		m["description"] = desc
	}
	if p.Deprecated {
		m["deprecated"] = true
	}
	if p.In == "path" {
		nonEmpty(m)
	}
	c.schema = m
	return c
}

// nonEmpty makes a path parameter's schema refuse the values that expand
// to nothing, which the gateway refuses anyway (an empty segment changes
// the path's shape): the empty string (minLength 1), the empty object
// (minProperties 1) and the empty array (minItems 1), for whichever of
// those types the schema allows, unless it already says more.
func nonEmpty(m map[string]any) {
	allows := func(typ string) bool {
		switch t := m["type"].(type) {
		case nil:
			return typ == "string" // an untyped parameter is text
		case string:
			return t == typ
		case []any:
			return slices.Contains(t, any(typ))
		case []string:
			return slices.Contains(t, typ)
		}
		return false
	}
	for _, k := range [...]struct{ typ, keyword string }{{"string", "minLength"}, {"object", "minProperties"}, {"array", "minItems"}} {
		if !allows(k.typ) {
			continue
		}
		if n, ok := m[k.keyword].(uint64); ok && n >= 1 {
			continue
		}
		m[k.keyword] = 1
	}
}

// pickContentType chooses the media type to use from a content map: JSON
// first, then form, multipart, then the first in byte order.
func pickContentType(content openapi3.Content) string {
	keys := sortedKeys(content)
	rank := func(ct string) int {
		l := strings.ToLower(ct)
		switch {
		case l == "application/json":
			return 0
		case isJSON(l):
			return 1
		case strings.HasPrefix(l, "application/x-www-form-urlencoded"):
			return 2
		case strings.HasPrefix(l, "multipart/form-data"):
			return 3
		case strings.HasPrefix(l, "application/octet-stream"):
			return 4
		}
		return 5
	}
	slices.SortStableFunc(keys, func(a, b string) int { return rank(a) - rank(b) })
	return keys[0]
}

func isJSON(ct string) bool {
	ct = strings.ToLower(ct)
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return ct == "application/json" || strings.HasSuffix(ct, "+json") || strings.HasSuffix(ct, "/json") || ct == "*/*" || strings.Contains(ct, "json")
}

func isTextual(ct string) bool {
	l := strings.ToLower(ct)
	return strings.HasPrefix(l, "text/") || strings.Contains(l, "xml") || strings.Contains(l, "yaml") ||
		strings.Contains(l, "csv") || strings.Contains(l, "javascript") || strings.Contains(l, "graphql") || strings.Contains(l, "sql")
}

// bodyCandidates turns a request body into arguments: the flattened
// top-level properties of an object body, or one whole-body argument.
func (g *generator) bodyCandidates(where string, rb *openapi3.RequestBody) (*Body, []argCandidate) {
	if len(rb.Content) == 0 {
		g.warn(where + ": request body without content skipped")
		return nil, nil
	}
	ct := pickContentType(rb.Content)
	mt := rb.Content[ct]
	body := &Body{ContentType: ct, Required: rb.Required}
	if ct == "*/*" {
		body.ContentType = "application/json"
	}
	l := strings.ToLower(ct)
	form := strings.HasPrefix(l, "application/x-www-form-urlencoded")
	multipart := strings.HasPrefix(l, "multipart/")
	var schema *openapi3.SchemaRef
	if mt != nil {
		schema = mt.Schema
	}
	whole := func(s any, base64 bool) (*Body, []argCandidate) {
		body.Whole = true
		return body, []argCandidate{{arg: Argument{In: InWholeBody, Required: rb.Required, Base64: base64}, schema: s, deps: deps{}}}
	}
	if !isJSON(l) && !form && !multipart {
		if isTextual(l) {
			return whole(map[string]any{"type": "string", "description": "The request body (" + ct + ")."}, false)
		}
		if isBase64Text(schema) {
			// The document says the body itself is base64 text (format:
			// byte, contentEncoding: base64): it is sent as given.
			return whole(map[string]any{"type": "string", "contentEncoding": "base64", "description": "The request body (" + ct + "): base64 text, sent as it is."}, false)
		}
		return whole(map[string]any{"type": "string", "contentEncoding": "base64", "description": "The request body (" + ct + "), base64-encoded."}, true)
	}
	if multipart && isBinary(schema) {
		// The multipart body is one file (Jira's attachments): one file
		// argument, sent as a part named "file", since the schema names no
		// part.
		c := argCandidate{deps: deps{}, arg: Argument{In: InBodyProperty, Param: "file", Required: rb.Required, File: true}}
		c.schema = fileSchema(schema, `The file, sent as the multipart part "file".`)
		return body, []argCandidate{c}
	}
	props, req, ok := flattenable(schema)
	if ok && len(props) == 0 && closedObject(schema) {
		// An empty closed object ({"properties":{},"additionalProperties":false},
		// as in Stripe's GET operations): nothing to send.
		if !rb.Required {
			return nil, nil
		}
		return body, nil
	}
	if !ok || len(props) == 0 {
		if form || multipart {
			return whole(map[string]any{"type": "object"}, false)
		}
		d := deps{}
		s := g.in.convertRef(schema, d)
		if schema == nil {
			s = map[string]any{}
		}
		body.Whole = true
		return body, []argCandidate{{arg: Argument{In: InWholeBody, Required: rb.Required}, schema: s, deps: d}}
	}
	var cands []argCandidate
	for _, name := range sortedKeys(props) {
		pr := props[name]
		if g.in.hidden(pr) {
			continue
		}
		// Swagger 2.0 formData bodies come without a required flag; their
		// required parameters are required.
		c := argCandidate{deps: deps{}, arg: Argument{In: InBodyProperty, Param: name, Required: req[name] && (rb.Required || g.doc.SourceVersion == "2.0")}}
		c.ifBody = req[name] && !c.arg.Required
		if multipart && isBinary(pr) {
			c.arg.File = true
			c.schema = fileSchema(pr, "")
		} else if multipart && pr != nil && pr.Value != nil && pr.Value.Type.Is("array") && isBinary(pr.Value.Items) {
			// Several files in one field: one part each.
			c.arg.File = true
			c.schema = fileArraySchema(pr)
		} else {
			c.schema = g.in.convertRef(pr, c.deps)
		}
		if (form || multipart) && mt != nil {
			if enc := mt.Encoding[name]; enc != nil {
				c.arg.ContentType = enc.ContentType
				c.arg.Style = enc.Style
				if enc.Explode != nil {
					c.arg.Explode = *enc.Explode
				} else {
					c.arg.Explode = enc.Style == "" || enc.Style == "form"
				}
				c.arg.AllowReserved = enc.AllowReserved
			}
			if form && c.arg.Style == "" {
				c.arg.Style, c.arg.Explode = "form", true
			}
		}
		cands = append(cands, c)
	}
	return body, cands
}

// flattenable returns the top-level properties and required set of an
// object body schema (merging allOf), or ok=false when the body is not a
// plain object (array, scalar, oneOf/anyOf, ...).
func flattenable(r *openapi3.SchemaRef) (map[string]*openapi3.SchemaRef, map[string]bool, bool) {
	props := map[string]*openapi3.SchemaRef{}
	req := map[string]bool{}
	var walk func(r *openapi3.SchemaRef, depth int) bool
	walk = func(r *openapi3.SchemaRef, depth int) bool {
		if r == nil || r.Value == nil || depth > 8 {
			return false
		}
		s := r.Value
		if s.Type != nil && !(len(*s.Type) == 1 && (*s.Type)[0] == "object") {
			return false
		}
		if len(s.OneOf) > 0 || len(s.AnyOf) > 0 || s.Not != nil || s.If != nil || s.Nullable {
			return false
		}
		if s.AdditionalProperties.Schema != nil || (s.AdditionalProperties.Has != nil && *s.AdditionalProperties.Has && len(s.Properties) == 0) {
			return false
		}
		for _, sub := range s.AllOf {
			if !walk(sub, depth+1) {
				return false
			}
		}
		for k, v := range s.Properties {
			props[k] = v
		}
		for _, k := range s.Required {
			req[k] = true
		}
		return true
	}
	if !walk(r, 0) {
		return nil, nil, false
	}
	return props, req, true
}

// closedObject: additionalProperties is false.
func closedObject(r *openapi3.SchemaRef) bool {
	if r == nil || r.Value == nil {
		return false
	}
	h := r.Value.AdditionalProperties.Has
	return h != nil && !*h
}

func isBinary(r *openapi3.SchemaRef) bool {
	if r == nil || r.Value == nil {
		return false
	}
	s := r.Value
	if s.Type != nil && s.Type.Is("file") {
		return true
	}
	return s.Format == "binary" || (s.ContentMediaType != "" && s.ContentEncoding == "")
}

// isBase64Text reports whether a body schema says the body is base64 text
// (OpenAPI 3.0's format: byte, 3.1's contentEncoding: base64), rather than
// the raw bytes an agent passes base64-encoded.
func isBase64Text(r *openapi3.SchemaRef) bool {
	if r == nil || r.Value == nil || (r.Value.Type != nil && !r.Value.Type.Is("string")) {
		return false
	}
	return r.Value.Format == "byte" || strings.EqualFold(r.Value.ContentEncoding, "base64")
}

// fileSchema is the argument shape of a multipart file part; the schema's
// description, else desc, describes it.
func fileSchema(r *openapi3.SchemaRef, desc string) map[string]any {
	m := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"content":     map[string]any{"type": "string", "contentEncoding": "base64", "description": "The file's bytes, base64-encoded."},
			"filename":    map[string]any{"type": "string", "description": "The file name sent with the part."},
			"contentType": map[string]any{"type": "string", "description": "The part's media type (default application/octet-stream)."},
		},
		"required":             []string{"content"},
		"additionalProperties": false,
	}
	if r != nil && r.Value != nil {
		desc = cmp.Or(strings.TrimSpace(r.Value.Description), desc)
	}
	if desc != "" {
		m["description"] = desc
	}
	return m
}

// fileArraySchema is the argument shape of a multipart field holding
// several files (an array of binary strings).
func fileArraySchema(r *openapi3.SchemaRef) map[string]any {
	s := r.Value
	m := map[string]any{"type": "array", "items": fileSchema(s.Items, "")}
	if desc := strings.TrimSpace(s.Description); desc != "" {
		m["description"] = desc
	}
	if s.MinItems > 0 {
		m["minItems"] = s.MinItems
	}
	if s.MaxItems != nil {
		m["maxItems"] = *s.MaxItems
	}
	return m
}

// outputSchema is the schema of the first documented 2xx JSON response.
func (g *generator) outputSchema(where string, op *openapi3.Operation) json.RawMessage {
	if op.Responses == nil || g.opts.OutputSchema == OutputSchemaNone {
		return nil
	}
	resps := op.Responses.Map()
	codes := sortedKeys(resps)
	for _, code := range codes {
		if len(code) != 3 || code[0] != '2' {
			continue
		}
		rr := resps[code]
		if rr == nil || rr.Value == nil || len(rr.Value.Content) == 0 {
			continue
		}
		ct := pickContentType(rr.Value.Content)
		if !isJSON(ct) {
			continue
		}
		mt := rr.Value.Content[ct]
		if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
			continue
		}
		raw, trimmed, err := g.encodeOutput(mt.Schema, compactDepth, compactNodes)
		for _, retry := range []struct{ depth, nodes int }{{compactDepth - 1, compactNodes / 10}, {compactDepth - 1, 10}, {0, 0}} {
			if err != nil || !g.out.compact || g.maxOut <= 0 || len(raw) <= g.maxOut {
				break
			}
			raw, trimmed, err = g.encodeOutput(mt.Schema, retry.depth, retry.nodes)
		}
		if err != nil {
			g.warn(fmt.Sprintf("%s: outputSchema: %v", where, err))
			return nil
		}
		if raw == nil {
			return nil
		}
		if trimmed > 0 {
			g.trimmedOut++
		}
		if g.maxOut > 0 && len(raw) > g.maxOut {
			g.warn(fmt.Sprintf("%s: outputSchema of %d bytes is over the %d-byte bound even without its $defs; left out", where, len(raw), g.maxOut))
			return nil
		}
		return raw
	}
	return nil
}

// encodeOutput converts and encodes one response schema; depth and nodes
// bound a compact schema's inlining. A schema that is not an object gives
// nil.
func (g *generator) encodeOutput(schema *openapi3.SchemaRef, depth, nodes int) ([]byte, int, error) {
	d := deps{}
	g.out.nodes, g.out.nodeLimit, g.out.depthLimit = 0, nodes, depth
	root, ok := g.out.convertRef(schema, d).(map[string]any)
	if !ok {
		return nil, 0, nil
	}
	return g.out.encodeWithDefs(root, d, g.maxOut)
}

func securitySchemes(t *openapi3.T) map[string]SecurityScheme {
	if t.Components == nil || len(t.Components.SecuritySchemes) == 0 {
		return nil
	}
	out := map[string]SecurityScheme{}
	for name, r := range t.Components.SecuritySchemes {
		if r == nil || r.Value == nil {
			continue
		}
		v := r.Value
		s := SecurityScheme{Type: v.Type, Description: strings.TrimSpace(v.Description), In: v.In, Name: v.Name,
			Scheme: strings.ToLower(v.Scheme), BearerFormat: v.BearerFormat, OpenIDConnectURL: v.OpenIdConnectUrl}
		if f := v.Flows; f != nil {
			s.Flows = map[string]OAuthFlow{}
			for kind, fl := range map[string]*openapi3.OAuthFlow{"implicit": f.Implicit, "password": f.Password, "clientCredentials": f.ClientCredentials, "authorizationCode": f.AuthorizationCode} {
				if fl != nil {
					s.Flows[kind] = OAuthFlow{AuthorizationURL: fl.AuthorizationURL, TokenURL: fl.TokenURL, RefreshURL: fl.RefreshURL, Scopes: fl.Scopes}
				}
			}
		}
		out[name] = s
	}
	return out
}

// uniqueNames makes tool names unique: the first tool keeps a name, later
// ones get "_2", "_3", ... (shortened to fit the bound).
func (g *generator) uniqueNames(tools []Tool) {
	used := make(map[string]bool, len(tools))
	for i := range tools {
		name := tools[i].Name
		base := name
		for n := 2; used[name]; n++ {
			suffix := "_" + strconv.Itoa(n)
			name = truncate(base, g.maxName-len(suffix)) + suffix
		}
		used[name] = true
		tools[i].Name = name
	}
}

// toolName makes s tool-name safe: ASCII letters, digits, '_' and '-';
// other characters are transliterated (accents removed) or become '_'.
// Names over max are cut and given a hash suffix of the full name.
func toolName(s string, max int) string {
	name := sanitizeIdent(s, "_-", 0)
	if len(name) > max {
		sum := sha256.Sum256([]byte(name))
		name = strings.TrimRight(name[:max-9], "_-") + "_" + hex.EncodeToString(sum[:4])
	}
	return name
}

// sanitizeIdent keeps ASCII letters, digits and the extra characters,
// transliterates accented letters, turns runs of anything else into one
// '_', trims '_' at both ends, and cuts at max bytes (0 = no bound).
func sanitizeIdent(s, extra string, max int) string {
	var b strings.Builder
	b.Grow(len(s))
	pendingSep := false
	for _, r := range norm.NFKD.String(s) {
		switch {
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(extra, r) && r != '_'):
			if pendingSep && b.Len() > 0 {
				b.WriteByte('_')
			}
			pendingSep = false
			b.WriteRune(r)
		case unicode.Is(unicode.Mn, r):
			// combining mark from decomposition: drop
		default:
			pendingSep = true
		}
	}
	out := b.String()
	if max > 0 {
		out = truncate(out, max)
	}
	return strings.Trim(out, "_")
}

func truncate(s string, n int) string {
	if n < 0 {
		n = 0
	}
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// boundText trims s and cuts it to at most max bytes at a rune boundary,
// appending "…" when cut (max < 0: unbounded).
func boundText(s string, max int) string {
	s = strings.TrimSpace(s)
	if max < 0 || len(s) <= max {
		return s
	}
	const ell = "…"
	cut := max - len(ell)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimSpace(s[:cut]) + ell
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// humanize turns an identifier into a title: "listPets" → "List pets",
// "getHTTPStatus" → "Get http status".
func humanize(id string) string {
	rs := []rune(id)
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if unicode.IsUpper(r) && i > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	if len(words) == 0 {
		return id
	}
	s := strings.Join(words, " ")
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// packEvery is how many tools are made between two packs: the spans the
// last ones held are let go while generation goes on, for the next ones.
const packEvery = 256

// pack moves what the tools keep of their making into fresh, dense
// memory: their arguments into one array and their _meta maps allocated
// one after the other. Made one tool at a time, each was allocated among
// the garbage of its schemas' conversion and kept the heap spans it shared
// with that garbage in use: on Graph, serve's heap held 90 MB of free
// slots in spans in use when ready, 50 MB with one pack at the end, and
// its heap reached 255 MB instead of 275 MB packing every 256 tools.
func pack(tools []Tool) {
	n := 0
	for i := range tools {
		n += len(tools[i].Route.Arguments)
	}
	args := make([]Argument, 0, n)
	for i := range tools {
		t := &tools[i]
		if t.Route.Arguments != nil {
			start := len(args)
			args = append(args, t.Route.Arguments...)
			t.Route.Arguments = args[start:len(args):len(args)]
		}
		if t.Meta != nil {
			t.Meta = maps.Clone(t.Meta)
		}
	}
}
