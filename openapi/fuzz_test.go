package openapi

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseGenerate: whatever the bytes, Parse either fails with a
// *LoadError naming the source, or gives a document that Generate turns
// into tools whose tools/list encodes; nothing panics. With DeferPaths
// the same bytes give the same tools, or fail too (Parse or Generate,
// with a LoadError: which broken path item is named may differ, since
// without it they are built in no order).
//
//	go test -run '^$' -fuzz FuzzParseGenerate -fuzztime 60s ./openapi/
func FuzzParseGenerate(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	more, _ := filepath.Glob("testdata/*.json")
	for _, file := range append(files, more...) {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`<!DOCTYPE html><html><head><title>Login</title></head><body></body></html>`))
	f.Add([]byte(`{"openapi":"3.0.0","paths":{"/a/{b}":{"get":{"parameters":[{"$ref":"#/x"}]}}}}`))
	f.Add([]byte(`swagger: "2.0"
paths: {/a: {post: {parameters: [{in: body, name: b, schema: {$ref: "#/definitions/A"}}]}}}
definitions: {A: {$ref: "#/definitions/A"}}`))
	f.Add([]byte(`{"openapi":"3.0.0","components":{"schemas":{"A":{"allOf":[{"$ref":"#/components/schemas/A"}]}}},"paths":{"/a":{"get":{"responses":{"200":{"description":"x","content":{"application/json":{"schema":{"$ref":"#/components/schemas/A"}}}}}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		isLoadError := func(err error) bool {
			var le *LoadError
			return errors.As(err, &le) && le.Source == "fuzz.yaml"
		}
		deferred, derr := Parse(context.Background(), data, "fuzz.yaml", LoadOptions{DeferPaths: true})
		var dres *Result
		if derr == nil {
			dres, derr = Generate(deferred, GenerateOptions{Consume: true})
		}
		if derr != nil && !isLoadError(derr) {
			t.Fatalf("DeferPaths: error %v (%T) is not a LoadError naming the source", derr, derr)
		}
		doc, err := Parse(context.Background(), data, "fuzz.yaml", LoadOptions{})
		if err != nil {
			if !isLoadError(err) {
				t.Fatalf("error %v (%T) is not a LoadError naming the source", err, err)
			}
			if derr == nil {
				t.Fatalf("Parse failed (%v) but with DeferPaths generation did not", err)
			}
			return
		}
		res, err := Generate(doc, GenerateOptions{})
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		list, err := EncodeToolsList(res.Tools)
		if err != nil {
			t.Fatalf("EncodeToolsList: %v", err)
		}
		if derr != nil {
			t.Fatalf("with DeferPaths: %v; without, the document generates", derr)
		}
		if dlist, _ := EncodeToolsList(dres.Tools); !bytes.Equal(dlist, list) {
			t.Fatalf("the tools differ with DeferPaths:\n%s\n%s", dlist, list)
		}
	})
}
