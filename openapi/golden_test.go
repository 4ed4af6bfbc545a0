package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// goldenDocs are the hand-written documents under testdata, one per hard
// feature (see the assertions in generate_test.go).
func goldenDocs(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"testdata/*.json", "testdata/*.yaml"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 8 {
		t.Fatalf("only %d documents under testdata", len(files))
	}
	return files
}

func loadGenerate(t *testing.T, file string, opts GenerateOptions) *Result {
	t.Helper()
	doc, err := Load(context.Background(), file, LoadOptions{})
	if err != nil {
		t.Fatalf("load %s: %v", file, err)
	}
	res, err := Generate(doc, opts)
	if err != nil {
		t.Fatalf("generate %s: %v", file, err)
	}
	return res
}

// TestGolden compares the manifest and tools/list of every testdata
// document with testdata/golden, and checks the tool invariants.
func TestGolden(t *testing.T) {
	for _, file := range goldenDocs(t) {
		name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		t.Run(name, func(t *testing.T) {
			res := loadGenerate(t, file, GenerateOptions{})
			var n int
			checkTools(t, res.Tools, &n)
			manifest, err := NewManifest(res).Encode()
			if err != nil {
				t.Fatal(err)
			}
			list, err := EncodeToolsList(res.Tools)
			if err != nil {
				t.Fatal(err)
			}
			// Streamed a tool at a time, the manifest is what encoding it
			// whole with encoding/json gives.
			var whole bytes.Buffer
			enc := json.NewEncoder(&whole)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(NewManifest(res)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(manifest, whole.Bytes()) {
				t.Error("the streamed manifest differs from encoding/json's encoding of it")
			}
			// Determinism: a second run gives the same bytes.
			again, _ := NewManifest(loadGenerate(t, file, GenerateOptions{})).Encode()
			if !bytes.Equal(manifest, again) {
				t.Error("two runs gave different manifests")
			}
			// The manifest reads back to itself: no drift against its own document.
			decoded, err := DecodeManifest(manifest)
			if err != nil {
				t.Fatal(err)
			}
			if changes := Diff(decoded, NewManifest(res)); len(changes) != 0 {
				t.Errorf("manifest differs from itself after a round trip: %v", changes)
			}
			compareGolden(t, filepath.Join("testdata", "golden", name+".manifest.json"), manifest)
			compareGolden(t, filepath.Join("testdata", "golden", name+".tools.json"), list)
		})
	}
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./openapi -run TestGolden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run with -update and review the diff)", path)
	}
}
