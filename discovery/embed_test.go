package discovery

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeEmbeddings serves /v1/embeddings with a bag-of-concepts "model": each
// word is hashed into one of 1024 dimensions, except that the words of a
// concept share a dimension, so "vacation" and "inventories" mean the same
// to it while sharing no letters. It counts the texts it embedded.
type fakeEmbeddings struct {
	texts atomic.Int64
	calls atomic.Int64
	fail  atomic.Bool
	key   string
}

var fakeConcepts = map[string]string{"vacation": "stock", "inventories": "stock", "stock": "stock"}

func (f *fakeEmbeddings) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost || f.fail.Load() {
		http.Error(w, "no", http.StatusBadGateway)
		return
	}
	if f.key != "" && r.Header.Get("Authorization") != "Bearer "+f.key {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "fake-embed" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	f.texts.Add(int64(len(req.Input)))
	type item struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	var resp struct {
		Data []item `json:"data"`
	}
	// Answer in reverse order: the client must place vectors by index.
	for i := len(req.Input) - 1; i >= 0; i-- {
		v := make([]float64, 1024)
		words(req.Input[i], func(w string) {
			if c, ok := fakeConcepts[w]; ok {
				w = c
			}
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%1024]++
		})
		resp.Data = append(resp.Data, item{i, v})
	}
	json.NewEncoder(w).Encode(resp)
}

func fakeEmbedder(t *testing.T, f *fakeEmbeddings, dir string) *Embedder {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return &Embedder{URL: srv.URL + "/v1", Model: "fake-embed", APIKey: f.key, CacheDir: dir, BatchSize: 3, Weight: 0.8}
}

func TestEmbeddingsRerank(t *testing.T) {
	f := &fakeEmbeddings{key: "sekret"}
	dir := t.TempDir()
	e := fakeEmbedder(t, f, dir)
	ix, err := New(petDocs(), Options{Embeddings: e})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Lexically, "vacation" matches no tool; to the fake model it is the
	// stock, so the inventory comes first once every tool has a vector.
	if err := ix.PrepareEmbeddings(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.texts.Load(); got != int64(len(petDocs())) {
		t.Errorf("prepare embedded %d texts, want %d", got, len(petDocs()))
	}
	res, err := ix.Search(ctx, Query{Text: "vacation"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 || res[0].Name != "getInventory" {
		t.Errorf("re-ranked: %v, want getInventory first", names(res))
	}
	plain, _ := New(petDocs(), Options{})
	if lex, _ := plain.Search(ctx, Query{Text: "vacation"}); len(lex) > 0 {
		t.Fatalf("the lexical ranking finds %v: the test shows nothing", names(lex))
	}
	// Only the query was embedded by the search.
	if got := f.texts.Load(); got != int64(len(petDocs()))+1 {
		t.Errorf("after one search %d texts embedded, want %d", got, len(petDocs())+1)
	}
	// Hidden tools stay hidden, semantic candidates included.
	res, _ = ix.Search(ctx, Query{Text: "vacation", Visible: func(n string) bool { return n != "getInventory" }})
	for _, r := range res {
		if r.Name == "getInventory" {
			t.Error("a hidden tool came back through re-ranking")
		}
	}

	// A new index over the same tools reads the disk cache: no tool text is
	// embedded again.
	files, _ := filepath.Glob(filepath.Join(dir, "embeddings-*.bin"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	f2 := &fakeEmbeddings{key: "sekret"}
	ix2, _ := New(petDocs(), Options{Embeddings: fakeEmbedder(t, f2, dir)})
	if err := ix2.PrepareEmbeddings(ctx); err != nil {
		t.Fatal(err)
	}
	if f2.texts.Load() != 0 {
		t.Errorf("with a disk cache, %d texts were embedded", f2.texts.Load())
	}
	// A damaged cache file is ignored and rewritten.
	os.WriteFile(files[0], []byte("MCPGEMB1garbage"), 0o644)
	f3 := &fakeEmbeddings{key: "sekret"}
	ix3, _ := New(petDocs(), Options{Embeddings: fakeEmbedder(t, f3, dir)})
	if err := ix3.PrepareEmbeddings(ctx); err != nil || f3.texts.Load() != int64(len(petDocs())) {
		t.Errorf("damaged cache: %v, %d texts embedded", err, f3.texts.Load())
	}
}

func TestEmbeddingsOnDemandAndFailure(t *testing.T) {
	f := &fakeEmbeddings{}
	e := fakeEmbedder(t, f, "")
	ix, _ := New(petDocs(), Options{Embeddings: e})
	ctx := context.Background()
	// Without Prepare, the lexical candidates are embedded as they come.
	res, err := ix.Search(ctx, Query{Text: "pet"})
	if err != nil || len(res) == 0 {
		t.Fatalf("search: %v %v", res, err)
	}
	first := f.texts.Load()
	if first == 0 {
		t.Fatal("nothing was embedded")
	}
	ix.Search(ctx, Query{Text: "pet"})
	if again := f.texts.Load() - first; again != 1 {
		t.Errorf("second search embedded %d texts, want only the query", again)
	}
	// A failing endpoint gives the lexical ranking, never an error.
	f.fail.Store(true)
	lexical, _ := New(petDocs(), Options{})
	want, _ := lexical.Search(ctx, Query{Text: "remove a pet"})
	got, err := ix.Search(ctx, Query{Text: "remove a pet"})
	if err != nil || strings.Join(names(got), ",") != strings.Join(names(want), ",") {
		t.Errorf("failing endpoint: %v, %v; want %v", names(got), err, names(want))
	}
	if err := ix.PrepareEmbeddings(ctx); err == nil || strings.Contains(err.Error(), "sekret") {
		t.Errorf("prepare against a failing endpoint: %v", err)
	}
}

func TestDecodeEmbeddings(t *testing.T) {
	for _, bad := range []string{
		`{"data":[]}`,
		`{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}`,
		`{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1]}]}`,
		`{"data":[{"index":5,"embedding":[1]},{"index":1,"embedding":[1]}]}`,
		`{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[]}]}`,
		`not json`,
	} {
		if _, err := decodeEmbeddings([]byte(bad), 2); err == nil {
			t.Errorf("decodeEmbeddings(%s) accepted", bad)
		}
	}
	v, err := decodeEmbeddings([]byte(`{"data":[{"index":1,"embedding":[3,4]},{"index":0,"embedding":[1,2]}]}`), 2)
	if err != nil || v[0][0] != 1 || v[1][1] != 4 {
		t.Errorf("decodeEmbeddings: %v %v", v, err)
	}
}
