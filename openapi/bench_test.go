package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/mcpgate/mcpgate/internal/corpustest"
)

// Benchmarks over corpus documents (MCPGATE_CORPUS, see corpustest.Dir):
//
//	MCPGATE_CORPUS=DIR go test -run '^$' -bench 'ToolsList|KinLoadFromData' -benchtime 3x -benchmem ./openapi/
//
// BenchmarkToolsList measures file → streamed tools/list, with compact and
// full output schemas; BenchmarkKinLoadFromData
// is kin-openapi's own LoadFromData on the same bytes, for the ratio. Peak RSS
// of one GitHub run:
//
//	go test -c -o /tmp/openapi.test ./openapi/ && cd openapi &&
//	MCPGATE_CORPUS=DIR /usr/bin/time -v /tmp/openapi.test -test.run '^$' \
//	    -test.bench 'ToolsList/microsoft.com-graph.json/compact' -test.benchtime 1x

var benchDocs = []string{"github/api.github.com.json", "apis-guru/microsoft.com-graph.json"}

func BenchmarkToolsList(b *testing.B) {
	dir := corpustest.Dir(b)
	for _, name := range benchDocs {
		path := filepath.Join(dir, name)
		for _, mode := range []string{OutputSchemaCompact, OutputSchemaFull} {
			b.Run(filepath.Base(name)+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				var n int
				for b.Loop() {
					doc, err := Load(context.Background(), path, LoadOptions{})
					if err != nil {
						b.Fatal(err)
					}
					res, err := Generate(doc, GenerateOptions{OutputSchema: mode})
					if err != nil {
						b.Fatal(err)
					}
					if err := WriteToolsList(io.Discard, res.Tools); err != nil {
						b.Fatal(err)
					}
					n = len(res.Tools)
				}
				b.ReportMetric(float64(n), "tools")
			})
		}
	}
}

func BenchmarkKinLoadFromData(b *testing.B) {
	dir := corpustest.Dir(b)
	for _, name := range benchDocs {
		path := filepath.Join(dir, name)
		b.Run(filepath.Base(name), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				data, err := os.ReadFile(path)
				if err != nil {
					b.Fatal(err)
				}
				loader := openapi3.NewLoader()
				if _, err := loader.LoadFromData(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeTree: the generic tree the builder reads, from the
// package's one-pass jsontext decoder and from encoding/json (UseNumber),
// on the same bytes, for the ratio:
//
//	MCPGATE_CORPUS=DIR go test -run '^$' -bench DecodeTree -count 5 -benchmem ./openapi/
func BenchmarkDecodeTree(b *testing.B) {
	dir := corpustest.Dir(b)
	for _, name := range benchDocs {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(name)+"/jsontext", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := decodeTree(context.Background(), data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(filepath.Base(name)+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				dec := json.NewDecoder(bytes.NewReader(data))
				dec.UseNumber()
				var v any
				if err := dec.Decode(&v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
