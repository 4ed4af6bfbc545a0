package discovery

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Semantic re-ranking (off unless an operator configures it). The index
// asks an OpenAI-compatible embeddings endpoint (POST {URL}/embeddings, as
// served by OpenAI, Ollama, vLLM, llama.cpp, LocalAI) for one vector per
// tool and one per query, and re-ranks the union of the best lexical and the
// best semantic candidates by a blend of both scores. Nothing is downloaded:
// the model runs wherever the operator points URL.
//
// Tool vectors are cached in memory by the hash of the embedded text (so
// indexes of the same tools share them) and, with CacheDir, on disk in one
// file per index named by the hash of the model and of all its texts. Query
// vectors are never cached: queries are caller-controlled. When the endpoint
// fails, searches return the lexical ranking and the failure is logged
// (without the key).

// Embedder is the configuration and in-memory cache of one embeddings
// endpoint. Set the exported fields before the first use; it is then safe
// for concurrent use by several indexes.
type Embedder struct {
	// URL is the API base, e.g. "http://127.0.0.1:11434/v1"; requests go to
	// URL + "/embeddings".
	URL string
	// Model is the embedding model's name, e.g. "nomic-embed-text".
	Model string
	// APIKey, when set, is sent as a bearer token. It is never logged.
	APIKey string
	// HTTPClient defaults to a client with a 30 s timeout.
	HTTPClient *http.Client
	// CacheDir, when set, keeps tool vectors on disk between runs.
	CacheDir string
	// Weight is the share of the semantic score in the blend (0 means 0.5;
	// at most 1).
	Weight float64
	// BatchSize is the number of texts per request (0 means 64).
	BatchSize int
	// Logger receives re-ranking failures (default slog.Default()).
	Logger *slog.Logger

	mu  sync.Mutex
	mem map[[32]byte][]float32
}

// rerankCandidates is how many lexical (and as many semantic) candidates
// are re-ranked.
const rerankCandidates = 50

// maxEmbeddingResponse bounds one response body.
const maxEmbeddingResponse = 64 << 20

type embedState struct {
	ix    *Index
	e     *Embedder
	texts []string
	// vecs holds one vector per tool once Prepare has run (nil before).
	vecs atomic.Pointer[[][]float32]
}

func newEmbedState(ix *Index, e *Embedder) *embedState {
	st := &embedState{ix: ix, e: e, texts: make([]string, len(ix.docs))}
	for i := range ix.docs {
		d := &ix.docs[i]
		st.texts[i] = strings.TrimSpace(d.Name + ": " + d.Title + ". " + ix.short[i] + " (" + d.Method + " " + d.Path + ")")
	}
	return st
}

// PrepareEmbeddings computes (or reads from the caches) the vector of every
// tool, so searches only embed the query. Call it at load, off the request
// path; searches before it finishes embed their candidates as they go.
// Without configured embeddings it does nothing.
func (ix *Index) PrepareEmbeddings(ctx context.Context) error {
	st := ix.embed
	if st == nil {
		return nil
	}
	file := st.cacheFile()
	if file != "" {
		if vecs, err := readVectors(file, len(st.texts)); err == nil {
			st.e.remember(st.texts, vecs)
			st.vecs.Store(&vecs)
			return nil
		}
	}
	vecs, err := st.e.vectors(ctx, st.texts)
	if err != nil {
		return err
	}
	st.vecs.Store(&vecs)
	if file != "" {
		if err := writeVectors(file, vecs); err != nil {
			st.e.logger().Warn("discovery: embeddings cache not written", "file", file, "error", err)
		}
	}
	return nil
}

func (st *embedState) cacheFile() string {
	if st.e.CacheDir == "" {
		return ""
	}
	h := sha256.New()
	h.Write([]byte(st.e.Model))
	for _, t := range st.texts {
		h.Write([]byte{0})
		h.Write([]byte(t))
	}
	return filepath.Join(st.e.CacheDir, "embeddings-"+hex.EncodeToString(h.Sum(nil))[:32]+".bin")
}

// rerank blends lexical and semantic scores over the lexical hits and, once
// every tool has a vector, the best semantic matches.
func (st *embedState) rerank(ctx context.Context, query string, lexical []hit, q Query) []hit {
	qv, err := st.e.embed(ctx, []string{query})
	if err != nil {
		st.e.logger().Warn("discovery: semantic re-ranking skipped", "error", err)
		return lexical
	}
	cands := map[int32]float32{}
	for _, h := range lexical {
		cands[h.doc] = h.score
	}
	vecs := st.vecs.Load()
	if vecs != nil {
		for _, h := range st.semanticTop(qv[0], *vecs, q) {
			if _, ok := cands[h.doc]; !ok {
				cands[h.doc] = 0
			}
		}
	}
	docs := make([]int32, 0, len(cands))
	for d := range cands {
		docs = append(docs, d)
	}
	var dv [][]float32
	if vecs != nil {
		for _, d := range docs {
			dv = append(dv, (*vecs)[d])
		}
	} else {
		texts := make([]string, len(docs))
		for i, d := range docs {
			texts[i] = st.texts[d]
		}
		if dv, err = st.e.vectors(ctx, texts); err != nil {
			st.e.logger().Warn("discovery: semantic re-ranking skipped", "error", err)
			return lexical
		}
	}
	var top float32
	for _, s := range cands {
		top = max(top, s)
	}
	alpha := float32(st.e.weight())
	out := make([]hit, len(docs))
	for i, d := range docs {
		lex := float32(0)
		if top > 0 {
			lex = cands[d] / top
		}
		out[i] = hit{d, (1-alpha)*lex + alpha*cosine(qv[0], dv[i])}
	}
	sortHits(out)
	return out
}

// semanticTop is the best rerankCandidates tools by cosine alone, among
// those q lets through.
func (st *embedState) semanticTop(qv []float32, vecs [][]float32, q Query) []hit {
	h := topK{k: rerankCandidates}
	for d, v := range vecs {
		score := cosine(qv, v)
		if !h.wants(int32(d), score) {
			continue
		}
		doc := &st.ix.docs[d]
		if (q.API != "" && doc.API != q.API) || (q.Visible != nil && !q.Visible(doc.Name)) {
			continue
		}
		h.push(hit{int32(d), score})
	}
	return h.sorted()
}

func sortHits(hs []hit) {
	h := topK{items: hs[:0], k: len(hs)}
	for _, x := range hs {
		h.push(x)
	}
	copy(hs, h.sorted())
}

func cosine(a, b []float32) float32 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return float32(dot / math.Sqrt(na*nb))
}

func (e *Embedder) weight() float64 {
	if e.Weight <= 0 {
		return 0.5
	}
	return min(e.Weight, 1)
}

func (e *Embedder) logger() *slog.Logger {
	if e.Logger != nil {
		return e.Logger
	}
	return slog.Default()
}

// vectors returns one vector per text, from the memory cache or the
// endpoint, and remembers the new ones.
func (e *Embedder) vectors(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var missing []int
	e.mu.Lock()
	for i, t := range texts {
		if v, ok := e.mem[sha256.Sum256([]byte(t))]; ok {
			out[i] = v
		} else {
			missing = append(missing, i)
		}
	}
	e.mu.Unlock()
	batch := e.BatchSize
	if batch <= 0 {
		batch = 64
	}
	for start := 0; start < len(missing); start += batch {
		idx := missing[start:min(start+batch, len(missing))]
		chunk := make([]string, len(idx))
		for i, j := range idx {
			chunk[i] = texts[j]
		}
		vs, err := e.embed(ctx, chunk)
		if err != nil {
			return nil, err
		}
		for i, j := range idx {
			out[j] = vs[i]
		}
		e.remember(chunk, vs)
	}
	return out, nil
}

func (e *Embedder) remember(texts []string, vecs [][]float32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.mem == nil {
		e.mem = map[[32]byte][]float32{}
	}
	for i, t := range texts {
		e.mem[sha256.Sum256([]byte(t))] = vecs[i]
	}
}

// embed makes one request for texts.
func (e *Embedder) embed(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}{e.Model, texts})
	if err != nil {
		return nil, err
	}
	url := strings.TrimRight(e.URL, "/") + "/embeddings"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embeddings endpoint %s: %w", e.URL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	client := e.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embeddings endpoint: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxEmbeddingResponse+1))
	if err != nil {
		return nil, fmt.Errorf("embeddings endpoint %s: reading the response: %w", e.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("embeddings endpoint %s answered %s", e.URL, resp.Status)
	}
	if len(data) > maxEmbeddingResponse {
		return nil, fmt.Errorf("embeddings endpoint %s: response over %d bytes", e.URL, maxEmbeddingResponse)
	}
	return decodeEmbeddings(data, len(texts))
}

// decodeEmbeddings reads an OpenAI-style response: data[i].embedding placed
// by data[i].index, every vector of the same non-zero length, every number
// finite.
func decodeEmbeddings(data []byte, n int) ([][]float32, error) {
	var r struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("embeddings response: %w", err)
	}
	if len(r.Data) != n {
		return nil, fmt.Errorf("embeddings response: %d vectors for %d inputs", len(r.Data), n)
	}
	out := make([][]float32, n)
	dim := len(r.Data[0].Embedding)
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= n || out[d.Index] != nil {
			return nil, fmt.Errorf("embeddings response: bad or repeated index %d", d.Index)
		}
		if len(d.Embedding) != dim || dim == 0 {
			return nil, fmt.Errorf("embeddings response: vectors of different or zero length")
		}
		v := make([]float32, dim)
		for i, x := range d.Embedding {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("embeddings response: a vector holds %v", x)
			}
			v[i] = float32(x)
		}
		out[d.Index] = v
	}
	return out, nil
}

// The disk cache: "MCPGEMB1", count and dimension as uint32, then the
// vectors as little-endian float32.
const vectorMagic = "MCPGEMB1"

func readVectors(file string, n int) ([][]float32, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if len(data) < 16 || string(data[:8]) != vectorMagic {
		return nil, fmt.Errorf("%s: not an embeddings cache", file)
	}
	count, dim := int(binary.LittleEndian.Uint32(data[8:])), int(binary.LittleEndian.Uint32(data[12:]))
	if count != n || dim == 0 || len(data) != 16+4*count*dim {
		return nil, fmt.Errorf("%s: holds %d vectors of %d, want %d", file, count, dim, n)
	}
	out := make([][]float32, count)
	p := data[16:]
	for i := range out {
		v := make([]float32, dim)
		for j := range v {
			v[j] = math.Float32frombits(binary.LittleEndian.Uint32(p))
			p = p[4:]
		}
		out[i] = v
	}
	return out, nil
}

func writeVectors(file string, vecs [][]float32) error {
	if len(vecs) == 0 {
		return nil
	}
	dim := len(vecs[0])
	buf := make([]byte, 16, 16+4*len(vecs)*dim)
	copy(buf, vectorMagic)
	binary.LittleEndian.PutUint32(buf[8:], uint32(len(vecs)))
	binary.LittleEndian.PutUint32(buf[12:], uint32(dim))
	for _, v := range vecs {
		for _, x := range v {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		}
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".embeddings-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(buf); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), file)
}
