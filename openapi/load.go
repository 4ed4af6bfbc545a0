package openapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-json-experiment/json/jsontext"
	yaml "go.yaml.in/yaml/v4"
)

// Document is a loaded OpenAPI document, converted to OpenAPI 3 with its
// references resolved.
type Document struct {
	// Source is where the document came from (file path, URL or "-").
	Source string
	// SourceVersion is the declared version: "2.0", "3.0.3", "3.1.0", ...
	SourceVersion string
	// T is the kin-openapi document (Swagger 2.0 converted to 3.0).
	T *openapi3.T
	// Warnings are problems that did not make the document unusable.
	Warnings []string

	// refDescriptions are descriptions written beside $refs (kept apart
	// because kin-openapi has no field for them).
	refDescriptions map[*openapi3.SchemaRef]string
	// deferred are the path items left for Generate (LoadOptions.DeferPaths).
	deferred *deferredPaths
}

// LoadOptions control [Load] and [Parse]. The zero value is usable.
type LoadOptions struct {
	// Stdin is read when the source is "-" (default os.Stdin).
	Stdin io.Reader
	// HTTPClient fetches http(s) sources and their relative refs
	// (default http.DefaultClient).
	HTTPClient *http.Client
	// Validate runs kin-openapi's validation and records its findings as
	// warnings. It never makes loading fail.
	Validate bool
	// MaxBytes bounds the size of a document read from stdin or a URL
	// (0 means 256 MiB).
	MaxBytes int64
	// DeferPaths leaves the path items of an OpenAPI 3.x document to
	// Generate, which builds them on another goroutine while it makes the
	// tools of those before them, and drops each once its tools are made
	// (on two cores Microsoft Graph's tools are ready in about a quarter
	// less time). The document is then generated from once: its T.Paths
	// stays empty, a second Generate is an error, and a problem in a path
	// item is Generate's [LoadError]; GenerateOptions.OnPathItem sees each
	// path item. Path items that need the whole document (a reference to
	// another file, a path item's own $ref, a reference into the paths),
	// Swagger 2.0 and Validate load as without it.
	DeferPaths bool
}

// LoadError is returned for an unusable document. It names the source and,
// when known, the place in the document.
type LoadError struct {
	Source string // file, URL or "-"
	Place  string // e.g. "paths./pets.get" or "line 3, column 7"; may be empty
	Err    error
}

func (e *LoadError) Error() string {
	if e.Place != "" {
		return fmt.Sprintf("openapi: %s: %s: %v", e.Source, e.Place, e.Err)
	}
	return fmt.Sprintf("openapi: %s: %v", e.Source, e.Err)
}

func (e *LoadError) Unwrap() error { return e.Err }

// Load reads and parses a document from a file path, an http(s) URL, or
// stdin when src is "-". Relative $refs resolve against the source's
// location (files in the same directory tree, or the same URL origin).
func Load(ctx context.Context, src string, opts LoadOptions) (*Document, error) {
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = 256 << 20
	}
	var (
		data []byte
		err  error
		loc  *url.URL
	)
	switch {
	case src == "-":
		in := opts.Stdin
		if in == nil {
			in = os.Stdin
		}
		data, err = readAllLimit(in, maxBytes)
		if wd, werr := os.Getwd(); werr == nil {
			loc = &url.URL{Path: filepath.ToSlash(filepath.Join(wd, "stdin"))}
		}
	case strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://"):
		loc, err = url.Parse(src)
		if err == nil {
			data, err = fetchURL(ctx, opts.HTTPClient, loc, maxBytes)
		}
	default:
		if abs, aerr := filepath.Abs(src); aerr == nil {
			loc = &url.URL{Path: filepath.ToSlash(abs)}
		}
		return loadFile(ctx, src, loc, opts)
	}
	if err != nil {
		return nil, &LoadError{Source: src, Err: err}
	}
	return parse(ctx, data, src, loc, opts)
}

// Parse parses a document held in memory. source labels it in errors; when
// it is a file path or URL, relative $refs resolve against it.
func Parse(ctx context.Context, data []byte, source string, opts LoadOptions) (*Document, error) {
	var loc *url.URL
	if strings.HasPrefix(source, "http://") || strings.HasPrefix(source, "https://") {
		loc, _ = url.Parse(source)
	} else if source != "" && source != "-" {
		if abs, err := filepath.Abs(source); err == nil {
			loc = &url.URL{Path: filepath.ToSlash(abs)}
		}
	}
	return parse(ctx, data, source, loc, opts)
}

func readAllLimit(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("document larger than %d bytes", max)
	}
	return data, nil
}

func fetchURL(ctx context.Context, client *http.Client, u *url.URL, max int64) ([]byte, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, application/yaml;q=0.9, */*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("GET %s: %s", u.Redacted(), resp.Status)
	}
	return readAllLimit(resp.Body, max)
}

const utf8BOM = "\xEF\xBB\xBF"

// loadFile loads a file. A JSON document is decoded as it is read, never
// held whole; anything else (YAML, or not a document) is read whole and
// parsed. The file is read again only for what needs its bytes: the place
// of a syntax error, or Swagger 2.0 (which kin-openapi decodes itself).
func loadFile(ctx context.Context, src string, loc *url.URL, opts LoadOptions) (*Document, error) {
	f, err := os.Open(src)
	if err != nil {
		return nil, &LoadError{Source: src, Err: err}
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	head, _ := r.Peek(r.Size()) // short at the end of the file
	start := bytes.TrimLeft(bytes.TrimPrefix(head, []byte(utf8BOM)), " \t\r\n")
	if len(start) == 0 || start[0] != '{' {
		data, err := io.ReadAll(r)
		if err != nil {
			return nil, &LoadError{Source: src, Err: err}
		}
		return parse(ctx, data, src, loc, opts)
	}
	if bytes.HasPrefix(head, []byte(utf8BOM)) {
		_, _ = r.Discard(len(utf8BOM))
	}
	reread := func() ([]byte, error) {
		data, err := os.ReadFile(src)
		return bytes.TrimPrefix(data, []byte(utf8BOM)), err
	}
	return decodeDocument(ctx, r, reread, src, loc, opts)
}

// parse parses a document held in memory: JSON or YAML.
func parse(ctx context.Context, data []byte, source string, loc *url.URL, opts LoadOptions) (doc *Document, err error) {
	defer recoverLoad(source, &doc, &err)
	data = bytes.TrimPrefix(data, []byte(utf8BOM))
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, &LoadError{Source: source, Err: errors.New("empty document")}
	}
	if trimmed[0] == '<' {
		return nil, &LoadError{Source: source, Err: notOpenAPI(markupKind(trimmed))}
	}
	if trimmed[0] != '{' {
		j, err := yamlToJSON(data)
		if errors.Is(err, errNotMapping) {
			return nil, &LoadError{Source: source, Err: notOpenAPI(fmt.Sprintf("text that starts with %q", firstLine(trimmed)))}
		}
		if err != nil {
			return nil, &LoadError{Source: source, Err: err}
		}
		data = j
	}
	return decodeDocument(ctx, bytes.NewBuffer(data), func() ([]byte, error) { return data, nil }, source, loc, opts)
}

// decodeDocument decodes a JSON document from r and builds it; data gives
// its bytes, for the place of a syntax error and for Swagger 2.0.
func decodeDocument(ctx context.Context, r io.Reader, data func() ([]byte, error), source string, loc *url.URL, opts LoadOptions) (doc *Document, err error) {
	defer recoverLoad(source, &doc, &err)
	tree, dec, pathRefs, err := decodeDocumentTree(ctx, r)
	if err != nil {
		if b, rerr := data(); rerr == nil {
			return nil, jsonLoadError(source, b, err)
		}
		return nil, &LoadError{Source: source, Err: err}
	}
	root, ok := tree.(map[string]any)
	if !ok {
		return nil, &LoadError{Source: source, Err: notOpenAPI("a JSON " + jsonKind(tree))}
	}
	oas, swagger := versionString(root["openapi"]), versionString(root["swagger"])
	doc = &Document{Source: source}
	switch {
	case oas != "":
		if !strings.HasPrefix(oas, "3.") {
			return nil, &LoadError{Source: source, Place: "openapi", Err: fmt.Errorf("unsupported version %q", oas)}
		}
		doc.SourceVersion = oas
		t, b, err := buildOpenAPI3(root, !pathRefs, opts.DeferPaths && !opts.Validate, dec)
		if err != nil {
			var pe *placeError
			if errors.As(err, &pe) {
				return nil, &LoadError{Source: source, Place: pe.place, Err: err}
			}
			return nil, &LoadError{Source: source, Err: err}
		}
		doc.Warnings = append(doc.Warnings, b.warnings...)
		doc.refDescriptions = b.refDescriptions
		if b.deferred != nil {
			doc.deferred = &deferredPaths{b: b, items: b.deferred}
		}
		// The builder resolved the local references; kin's loader follows
		// the ones to other files.
		if b.external {
			if err := newLoader(ctx, loc, opts, &doc.Warnings).ResolveRefsIn(t, loc); err != nil {
				return nil, &LoadError{Source: source, Place: refPlace(err), Err: err}
			}
		}
		doc.T = t
	case swagger != "":
		if swagger != "2.0" {
			return nil, &LoadError{Source: source, Place: "swagger", Err: fmt.Errorf("unsupported version %q", swagger)}
		}
		doc.SourceVersion = swagger
		root = nil // let the collector have it while kin decodes
		b, err := data()
		if err != nil {
			return nil, &LoadError{Source: source, Err: err}
		}
		t2 := &openapi2.T{}
		if err := json.Unmarshal(b, t2); err != nil {
			return nil, jsonLoadError(source, b, err)
		}
		t, err := openapi2conv.ToV3WithLoader(t2, newLoader(ctx, loc, opts, &doc.Warnings), loc)
		if err != nil {
			return nil, &LoadError{Source: source, Place: refPlace(err), Err: fmt.Errorf("converting Swagger 2.0: %w", err)}
		}
		doc.T = t
	default:
		return nil, &LoadError{Source: source, Err: notOpenAPI(describeRoot(root))}
	}
	if doc.T.Paths == nil {
		doc.T.Paths = openapi3.NewPaths()
	}
	if opts.Validate {
		if err := doc.T.Validate(ctx, openapi3.DisableExamplesValidation(), openapi3.DisableSchemaPatternValidation(), openapi3.AllowExtraSiblingFields("description", "summary", "example", "nullable", "deprecated", "readOnly", "writeOnly", "title")); err != nil {
			doc.Warnings = append(doc.Warnings, "validation: "+err.Error())
		}
	}
	return doc, nil
}

// recoverLoad, deferred, makes a bug in this package or kin-openapi on
// some input an error naming the document, never a crash of the caller.
func recoverLoad(source string, doc **Document, err *error) {
	if r := recover(); r != nil {
		*doc, *err = nil, &LoadError{Source: source, Err: fmt.Errorf("internal error while loading (please report it with the document): %v", r)}
	}
}

// mayReferToPaths reports whether a local reference into the document's
// paths ("#/paths/~1pets/get/parameters/0") may occur in data. It is
// conservative: a '#' that JSON escapes (\u0023), or one followed by an
// escape (\/, \u…, a URI's %2F) instead of "/paths", counts as one. Without
// one, the builder may drop each path item of the decoded tree once built.
func mayReferToPaths(data []byte) bool {
	if bytes.Contains(data, []byte(`\u0023`)) {
		return true
	}
	for rest := data; ; {
		i := bytes.IndexByte(rest, '#')
		if i < 0 {
			return false
		}
		rest = rest[i+1:]
		switch {
		case len(rest) == 0:
			return false
		case rest[0] == '\\' || rest[0] == '%': // an escaped or encoded '/'
			return true
		case rest[0] == '/':
			seg := rest[1:min(len(rest), 1+len("paths")+8)]
			if j := bytes.IndexAny(seg, `/"`); j >= 0 {
				seg = seg[:j]
			}
			if string(seg) == "paths" || bytes.ContainsAny(seg, `\%`) {
				return true
			}
		}
	}
}

// newLoader returns a kin loader that reads relative refs only below the
// document's directory (files) or from the document's origin (URLs). A
// missing whole-file ref is replaced by an empty document and a warning,
// because real documents ship with dangling refs (GitHub's ghec.json).
func newLoader(ctx context.Context, loc *url.URL, opts LoadOptions, warnings *[]string) *openapi3.Loader {
	loader := openapi3.NewLoader()
	loader.Context = ctx
	loader.IsExternalRefsAllowed = true
	var root string
	if loc != nil && loc.Scheme == "" {
		root = filepath.Dir(filepath.FromSlash(loc.Path))
	}
	client := opts.HTTPClient
	loader.ReadFromURIFunc = func(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
		switch {
		case u.Scheme == "http" || u.Scheme == "https":
			if loc == nil || loc.Scheme != u.Scheme || loc.Host != u.Host {
				return nil, fmt.Errorf("external ref %s: only refs on the document's own origin are followed", u.Redacted())
			}
			return fetchURL(ctx, client, u, 64<<20)
		case u.Scheme == "" || u.Scheme == "file":
			p := filepath.Clean(filepath.FromSlash(u.Path))
			if root == "" || !(p == root || strings.HasPrefix(p, root+string(filepath.Separator))) {
				return nil, fmt.Errorf("external ref %s: outside the document's directory", u.Path)
			}
			data, err := os.ReadFile(p)
			if errors.Is(err, os.ErrNotExist) {
				*warnings = append(*warnings, fmt.Sprintf("external ref %s: file not found, treated as an empty schema", filepath.Base(p)))
				return []byte("{}"), nil
			}
			if err != nil {
				return nil, err
			}
			data = bytes.TrimPrefix(data, []byte(utf8BOM))
			return data, nil
		default:
			return nil, fmt.Errorf("external ref %s: unsupported scheme", u.Redacted())
		}
	}
	return loader
}

// versionString reads a version field; YAML may give a number (2.0).
func versionString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

func yamlToJSON(data []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("YAML: %w", err)
	}
	v, err := jsonable(v, "")
	if err != nil {
		return nil, err
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errNotMapping
	}
	return json.Marshal(v)
}

// jsonable converts YAML-decoded values into values encoding/json accepts.
func jsonable(v any, place string) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			c, err := jsonable(e, place+"."+k)
			if err != nil {
				return nil, err
			}
			x[k] = c
		}
		return x, nil
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			ks := fmt.Sprint(k)
			c, err := jsonable(e, place+"."+ks)
			if err != nil {
				return nil, err
			}
			m[ks] = c
		}
		return m, nil
	case []any:
		for i, e := range x {
			c, err := jsonable(e, fmt.Sprintf("%s[%d]", place, i))
			if err != nil {
				return nil, err
			}
			x[i] = c
		}
		return x, nil
	case float64, float32, int, int64, uint64, string, bool, nil:
		return x, nil
	default:
		// timestamps, big ints and the like: keep their text.
		return fmt.Sprint(x), nil
	}
}

var errNotMapping = errors.New("document root is not a mapping")

// notOpenAPI is the error for a document that is something else; found
// says what it is.
func notOpenAPI(found string) error {
	return fmt.Errorf(`not an OpenAPI document (no "openapi" or "swagger" version field): found %s`, found)
}

var htmlTitle = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)

// markupKind names a document that starts with '<': an HTML page (with
// its title: often a login or error page served instead of the document),
// XML, or other markup.
func markupKind(data []byte) string {
	head := strings.ToLower(string(data[:min(len(data), 512)]))
	switch {
	case strings.HasPrefix(head, "<!doctype html") || strings.HasPrefix(head, "<html") || strings.Contains(head, "<head") || strings.Contains(head, "<body"):
		if m := htmlTitle.FindSubmatch(data[:min(len(data), 64<<10)]); m != nil {
			if title := boundText(oneLine(string(m[1])), 80); title != "" {
				return fmt.Sprintf("an HTML page titled %q (a login or error page served instead of the document?)", title)
			}
		}
		return "an HTML page (a login or error page served instead of the document?)"
	case strings.HasPrefix(head, "<?xml"):
		return "an XML document"
	}
	return fmt.Sprintf("markup that starts with %q", firstLine(data))
}

// describeRoot says what a decoded object that is not OpenAPI looks like.
func describeRoot(root map[string]any) string {
	switch {
	case root["asyncapi"] != nil:
		return "an AsyncAPI document"
	case root["openrpc"] != nil:
		return "an OpenRPC document"
	case root["$schema"] != nil:
		return "a JSON Schema"
	case obj(root["info"])["_postman_id"] != nil || (root["item"] != nil && root["info"] != nil):
		return "a Postman collection"
	}
	keys := sortedKeys(root)
	if len(keys) == 0 {
		return "an empty object"
	}
	more := ""
	if len(keys) > 5 {
		keys, more = keys[:5], ", …"
	}
	return fmt.Sprintf("an object with the keys %s%s", strings.Join(keys, ", "), more)
}

// firstLine is the start of a document's first line, for messages.
func firstLine(data []byte) string {
	line, _, _ := strings.Cut(string(data[:min(len(data), 200)]), "\n")
	return boundText(strings.TrimSpace(line), 60)
}

func jsonLoadError(source string, data []byte, err error) error {
	var xe *jsontext.SyntacticError
	if errors.As(err, &xe) {
		line, col := lineCol(data, xe.ByteOffset)
		return &LoadError{Source: source, Place: fmt.Sprintf("line %d, column %d", line, col), Err: xe.Err}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the bytes read, the offending one included.
		line, col := lineCol(data, max(se.Offset-1, 0))
		return &LoadError{Source: source, Place: fmt.Sprintf("line %d, column %d", line, col), Err: err}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		place := te.Field
		if place == "" {
			line, col := lineCol(data, te.Offset)
			place = fmt.Sprintf("line %d, column %d", line, col)
		}
		return &LoadError{Source: source, Place: place, Err: err}
	}
	return &LoadError{Source: source, Err: err}
}

func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// refPlace extracts a "$ref" mention from a kin resolution error, if any.
func refPlace(err error) string {
	msg := err.Error()
	for _, marker := range []string{"#/", "$ref"} {
		if i := strings.Index(msg, marker); i >= 0 {
			end := strings.IndexAny(msg[i:], " \"',:")
			if end < 0 {
				end = len(msg) - i
			}
			if end > 0 && marker == "#/" {
				return msg[i : i+end]
			}
		}
	}
	return ""
}

// sortedKeys returns the keys of m in byte order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
