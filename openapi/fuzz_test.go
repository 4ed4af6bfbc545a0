package openapi

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseGenerate: whatever the bytes, Parse either fails with a
// *LoadError naming the source, or gives a document that Generate turns
// into tools whose tools/list encodes; nothing panics.
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
		doc, err := Parse(context.Background(), data, "fuzz.yaml", LoadOptions{})
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) || le.Source != "fuzz.yaml" {
				t.Fatalf("error %v (%T) is not a LoadError naming the source", err, err)
			}
			return
		}
		res, err := Generate(doc, GenerateOptions{})
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if _, err := EncodeToolsList(res.Tools); err != nil {
			t.Fatalf("EncodeToolsList: %v", err)
		}
	})
}
