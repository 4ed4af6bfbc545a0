package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcpgate/mcpgate/internal/corpustest"
)

// stdTree is what decodeTree must give: encoding/json with UseNumber.
func stdTree(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return v
}

func TestDecodeTreeMatchesEncodingJSON(t *testing.T) {
	long := strings.Repeat("x", internMax+1)
	cases := []string{
		`{"openapi":"3.0.0","paths":{}}`,
		`{"a":1,"a":2}`, // the last member of a name wins
		`{"n":[1,-0,1.5e300,123456789012345678901234567890,0.1],"b":[true,false,null]}`,
		`{"esc":"tab\there \u00e9 \ud83d\ude00 \"q\" \\ \/","k\u0065y":"v"}`,
		"{\"bad\":\"\xff\xfeok\",\"\xc3\":1}", // invalid UTF-8 becomes U+FFFD
		`{"long":"` + long + `","again":"` + long + `","short":"string","s2":"string"}`,
		`{"deep":[[[[{"x":[{}]}]]]],"empty":{},"none":[]}`,
		`[1,{"a":"b"}]`,
		`"just a string"`,
		"  {\"ws\" : [ 1 , 2 ] }\n\t",
	}
	for _, c := range cases {
		got, err := decodeTree(context.Background(), []byte(c))
		if err != nil {
			t.Errorf("decodeTree(%q): %v", c, err)
			continue
		}
		if want := stdTree(t, []byte(c)); !reflect.DeepEqual(got, want) {
			t.Errorf("decodeTree(%q) = %#v, want %#v", c, got, want)
		}
	}
}

func TestDecodeTreeErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"{\"a\":\n {,}}", "line 2, column 3"},
		{`{"a":1}{"b":2}`, "data after the end of the document"},
		{`{"a":1`, "unexpected EOF"},
		{`{"a":tru}`, "line 1, column 9"},
		{`{"a" 1}`, "line 1, column 6"},
		{strings.Repeat("[", 20000) + strings.Repeat("]", 20000), "exceeded max depth"},
	}
	for _, c := range cases {
		_, err := decodeTree(context.Background(), []byte(c.in))
		if err == nil {
			t.Errorf("decodeTree(%.30q): no error, want %q", c.in, c.want)
			continue
		}
		if got := jsonLoadError("doc.json", []byte(c.in), err).Error(); !strings.Contains(got, c.want) {
			t.Errorf("decodeTree(%.30q): %q, want it to contain %q", c.in, got, c.want)
		}
	}
}

// TestDecodeTreeInterns: equal short strings share their bytes.
func TestDecodeTreeInterns(t *testing.T) {
	v, err := decodeTree(context.Background(), []byte(`[{"type":"string"},{"type":"string"}]`))
	if err != nil {
		t.Fatal(err)
	}
	a := v.([]any)
	s1, s2 := a[0].(map[string]any)["type"].(string), a[1].(map[string]any)["type"].(string)
	if s1 != "string" || s2 != "string" {
		t.Fatalf("values %q %q", s1, s2)
	}
	if unsafe.StringData(s1) != unsafe.StringData(s2) {
		t.Error("two equal short strings were not interned")
	}
}

// TestDecodeTreeStops: a done context stops a decode (a reload that
// shutdown interrupts), with the context's error.
func TestDecodeTreeStops(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"paths":{`)
	for i := range 2 * ctxEvery {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"/p%d":{}`, i)
	}
	b.WriteString(`}}`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := decodeTree(ctx, []byte(b.String())); !errors.Is(err, context.Canceled) {
		t.Errorf("decode under a done context: %v, want context.Canceled", err)
	}
	if _, err := decodeTree(context.Background(), []byte(b.String())); err != nil {
		t.Errorf("decode: %v", err)
	}
}

// TestDecodeTreeCorpus: every JSON document of the corpus decodes to what
// encoding/json gives, and its tree encodes (appendTree) to the very bytes
// marshalNoEscape gives.
func TestDecodeTreeCorpus(t *testing.T) {
	dir := corpustest.Dir(t)
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".json" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		data = bytes.TrimPrefix(data, []byte(utf8BOM))
		got, pathRefs, err := decodeTreeFrom(context.Background(), bytes.NewReader(data)) // read as it goes, as a file is
		if err != nil {
			var se *jsontext.SyntacticError
			if errors.As(err, &se) {
				t.Errorf("%s: %v", p, err)
			}
			return nil
		}
		if pathRefs != mayReferToPaths(data) {
			t.Errorf("%s: decodeTreeFrom says %v of references into the paths, mayReferToPaths the opposite", p, pathRefs)
		}
		if !reflect.DeepEqual(got, stdTree(t, data)) {
			t.Errorf("%s: the tree differs from encoding/json's", p)
		}
		enc, err := appendTree(nil, got)
		want, werr := marshalNoEscape(got)
		if err != nil || werr != nil || !bytes.Equal(enc, want) {
			t.Errorf("%s: appendTree %v, marshalNoEscape %v, or their bytes differ", p, err, werr)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 40 {
		t.Fatalf("only %d JSON documents in %s", n, dir)
	}
}

func TestMayReferToPaths(t *testing.T) {
	cases := []struct {
		doc  string
		want bool
	}{
		{`{"$ref":"#/components/schemas/Pet","description":"## Pets\n# heading #1"}`, false},
		{`{"$ref":"#/paths/~1pets/get/parameters/0"}`, true},
		{`{"$ref":"#\/paths/~1pets"}`, true},
		{`{"$ref":"#/p\u0061ths/~1pets"}`, true},
		{`{"$ref":"\u0023/paths/~1pets"}`, true},
		{`{"$ref":"#%2Fpaths%2F~1pets"}`, true},
		{`{"$ref":"#/%70aths/~1pets"}`, true},
		{`{"$ref":"other.json#/paths/~1pets"}`, true}, // conservative
		{`{"a":"#/pathsX"}`, false},
		{`#`, false},
		{``, false},
	}
	for _, c := range cases {
		if got := mayReferToPaths([]byte(c.doc)); got != c.want {
			t.Errorf("mayReferToPaths(%s) = %v, want %v", c.doc, got, c.want)
		}
		// the decoder, which checks a document's strings one by one, agrees
		if _, got, err := decodeTreeFrom(context.Background(), strings.NewReader(c.doc)); err == nil && got != c.want {
			t.Errorf("decodeTreeFrom(%s) says %v of references into the paths, want %v", c.doc, got, c.want)
		}
	}
}

// TestDocumentTreePathItems: the root's path items are left raw, and
// decoded (by the same decoder) to exactly what decodeTree gives; a
// reference into the paths has them decoded at once, for the builder to
// resolve it; either way the tools are the same.
func TestDocumentTreePathItems(t *testing.T) {
	param := `{"name":"q","in":"query","schema":{"type":"string"}}`
	docs := map[bool]string{
		false: `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"parameters":[` + param + `],"responses":{"200":{"description":"ok"}}}},` +
			`"/b":{"get":{"responses":{"200":{"description":"ok"}}}},"x-note":{"a":1}}}`,
		true: `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"parameters":[` + param + `],"responses":{"200":{"description":"ok"}}}},` +
			`"/b":{"get":{"parameters":[{"$ref":"#/paths/~1a/get/parameters/0"}],"responses":{"200":{"description":"ok"}}}},"x-note":{"a":1}}}`,
	}
	for refers, doc := range docs {
		tree, dec, pathRefs, err := decodeDocumentTree(context.Background(), strings.NewReader(doc))
		if err != nil || pathRefs != refers {
			t.Fatalf("refers %v: decodeDocumentTree: %v, pathRefs %v", refers, err, pathRefs)
		}
		want, _ := decodeTree(context.Background(), []byte(doc))
		paths := tree.(map[string]any)["paths"].(map[string]any)
		for k, v := range paths {
			if raw, ok := v.(rawPathItem); ok == refers {
				t.Errorf("refers %v: path item %s left raw: %v", refers, k, ok)
			} else if ok {
				if paths[k], err = dec.pathItem(raw); err != nil {
					t.Fatal(err)
				}
			}
		}
		if !reflect.DeepEqual(tree, want) {
			t.Errorf("refers %v: the tree differs from decodeTree's", refers)
		}
		d, err := Parse(context.Background(), []byte(doc), "doc.json", LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := Generate(d, GenerateOptions{})
		if err != nil || len(res.Tools) != 2 {
			t.Fatalf("refers %v: %v, %d tools", refers, err, len(res.Tools))
		}
		for _, tool := range res.Tools {
			if len(tool.Route.Arguments) != 1 && (refers || tool.Route.Path == "/a") {
				t.Errorf("refers %v: %s has arguments %v", refers, tool.Route.Path, tool.Route.Arguments)
			}
		}
	}
}
