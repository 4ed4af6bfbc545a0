package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// prismServer is one running `node mock.cjs --serve` (scripts/prism): the
// pinned Prism serving the documents it is told to load, each on its own
// port, with its router's and validators' verdict on every request that
// names an exchange printed on stdout (see mock.cjs). One process serves
// one document at a time (a prismPool hands them out), so that Node and
// Prism start once per parallel lane, not once per document.
type prismServer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr lockedBuffer
	exited chan struct{}

	mu    sync.Mutex
	slots map[string]chan []byte // "x:ID", "l:KEY", "c:KEY": the line that answers
	bad   []string               // stdout lines that answer nothing
}

// prismDoc is a document a prismServer serves.
type prismDoc struct {
	URL        string `json:"url"`
	Operations int    `json:"operations"`
	Circular   string `json:"circular"`
	LoadMs     int    `json:"loadMs"`
	Error      string `json:"error"`
}

func startPrismServer(node, modules string) (*prismServer, error) {
	script, err := filepath.Abs(filepath.Join("..", "scripts", "prism", "mock.cjs"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(node, script, "--serve")
	home, err := os.MkdirTemp("", "mcpgate-prism-home-")
	if err != nil {
		return nil, err
	}
	cmd.Env = []string{"NODE_PATH=" + filepath.Join(modules, "node_modules"), "HOME=" + home}
	if v, ok := os.LookupEnv("PATH"); ok {
		cmd.Env = append(cmd.Env, "PATH="+v)
	}
	s := &prismServer{cmd: cmd, exited: make(chan struct{}), slots: map[string]chan []byte{}}
	cmd.Stderr = &s.stderr
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer os.RemoveAll(home)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			s.record(slices.Clone(sc.Bytes()))
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

// record files one stdout line under what it answers.
func (s *prismServer) record(line []byte) {
	var head struct{ Exchange, Loaded, Closed *string }
	var key string
	if json.Unmarshal(line, &head) == nil {
		switch {
		case head.Exchange != nil:
			key = "x:" + *head.Exchange
		case head.Loaded != nil:
			key = "l:" + *head.Loaded
		case head.Closed != nil:
			key = "c:" + *head.Closed
		}
	}
	if key != "" {
		select {
		case s.slot(key) <- line:
			return
		default: // a second answer to the same key
		}
	}
	s.mu.Lock()
	s.bad = append(s.bad, string(line))
	s.mu.Unlock()
}

// slot is the channel the line answering key arrives on (taking it
// forgets it).
func (s *prismServer) slot(key string) chan []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.slots[key]
	if !ok {
		c = make(chan []byte, 1)
		s.slots[key] = c
	}
	return c
}

func (s *prismServer) forget(key string) {
	s.mu.Lock()
	delete(s.slots, key)
	s.mu.Unlock()
}

// await waits up to timeout for the line answering key.
func (s *prismServer) await(key string, timeout time.Duration) ([]byte, error) {
	defer s.forget(key)
	select {
	case line := <-s.slot(key):
		return line, nil
	case <-s.exited:
		return nil, fmt.Errorf("Prism (mock.cjs) exited: %s", lastLines(s.stderr.String(), 8))
	case <-time.After(timeout):
		return nil, fmt.Errorf("no answer from Prism (mock.cjs) after %s", timeout)
	}
}

func (s *prismServer) send(cmd any) error {
	line, err := json.Marshal(cmd)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err = s.stdin.Write(append(line, '\n'))
	return err
}

// load has Prism serve doc (pruned to paths) under key; circular is the
// mode it loads cyclic $refs in (empty: mock.cjs's default, auto, with a
// budget of budget).
func (s *prismServer) load(key, doc string, paths []string, circular string, budget, timeout time.Duration) (*prismDoc, error) {
	cmd := map[string]any{"load": key, "doc": doc, "paths": paths, "budgetMs": budget.Milliseconds()}
	if circular != "" {
		cmd["circular"] = circular
	}
	if err := s.send(cmd); err != nil {
		return nil, err
	}
	line, err := s.await("l:"+key, timeout)
	if err != nil {
		return nil, err
	}
	var d prismDoc
	if err := json.Unmarshal(line, &d); err != nil {
		return nil, err
	}
	if d.Error != "" {
		return nil, errors.New(d.Error)
	}
	return &d, nil
}

// unload stops serving key's document.
func (s *prismServer) unload(key string) error {
	if err := s.send(map[string]any{"close": key}); err != nil {
		return err
	}
	_, err := s.await("c:"+key, 30*time.Second)
	return err
}

// verdict waits for exchange id's verdict: Prism prints it before it
// answers, so once the answer came it is there or on its way. Nil when it
// does not come (Prism did not judge the request).
func (s *prismServer) verdict(id string) *prismVerdict {
	line, err := s.await("x:"+id, 5*time.Second)
	if err != nil {
		return nil
	}
	var v prismVerdict
	if json.Unmarshal(line, &v) != nil {
		return nil
	}
	return &v
}

func (s *prismServer) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// log is the end of Prism's stderr.
func (s *prismServer) log() string { return lastLines(s.stderr.String(), 12) }

// stop ends the process: end of stdin, then SIGKILL if it lingers.
func (s *prismServer) stop() {
	_ = s.stdin.Close()
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// prismPool hands out prismServers: an idle one that is still alive, or a
// new one. It stops them all at the end of the test that made it.
type prismPool struct {
	node, modules string
	idle          chan *prismServer

	mu  sync.Mutex
	all []*prismServer
}

func newPrismPool(t *testing.T, node, modules string) *prismPool {
	p := &prismPool{node: node, modules: modules, idle: make(chan *prismServer, 64)}
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, s := range p.all {
			s.stop()
		}
	})
	return p
}

func (p *prismPool) take() (*prismServer, error) {
	for {
		select {
		case s := <-p.idle:
			if s.alive() {
				return s, nil
			}
		default:
			s, err := startPrismServer(p.node, p.modules)
			if err != nil {
				return nil, err
			}
			p.mu.Lock()
			p.all = append(p.all, s)
			p.mu.Unlock()
			return s, nil
		}
	}
}

// give returns s to the pool, unless it died or is stuck (then it is
// stopped).
func (p *prismPool) give(s *prismServer, healthy bool) {
	if !healthy || !s.alive() {
		s.stop()
		return
	}
	select {
	case p.idle <- s:
	default:
		s.stop()
	}
}

// prismVerdict is what Prism's router and validators said of one request.
type prismVerdict struct {
	Exchange string `json:"exchange"`
	Route    *struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Detail string `json:"detail"`
	} `json:"route"`
	Operation *struct {
		Method string `json:"method"`
		Path   string `json:"path"`
		Body   *struct {
			Required   bool     `json:"required"`
			MediaTypes []string `json:"mediaTypes"`
		} `json:"body"`
	} `json:"operation"`
	Security []prismViolation `json:"security"`
	Input    []prismViolation `json:"input"`
	// CompileErrors are the schemas Prism could not compile, and so did
	// not check.
	CompileErrors []string `json:"compileErrors"`
	Error         string   `json:"error"` // a validator threw: no verdict
}

// prismViolation is one finding of a Prism validator.
type prismViolation struct {
	Path     []string `json:"path"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	Severity string   `json:"severity"` // error, warning, information, hint
}

// exchangeHeader names an exchange in a request to Prism (mock.cjs).
const exchangeHeader = "X-Prism-Exchange"

// lockedBuffer is a bytes.Buffer safe for a writer and readers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// exchange is one request the gateway sent upstream, as the verdict proxy
// passed it to Prism, with Prism's verdict and answer.
type exchange struct {
	Method  string
	Target  string // the request target the gateway sent (with the upstream's base path)
	Header  http.Header
	Body    []byte
	Chunked bool // the gateway sent the body chunked

	BasePathError string // the target was outside the upstream's base path: not forwarded
	ForwardError  string // Prism could not be reached

	Verdict *prismVerdict // nil: Prism gave none
	Status  int
	Problem *prismProblem // Prism's own problem+json answer, if it gave one
}

// prismProblem is Prism's application/problem+json answer.
type prismProblem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// prismErrorsType prefixes the type of every problem Prism makes itself.
const prismErrorsType = "https://stoplight.io/prism/errors#"

// Verdicts of an exchange.
const (
	verdictAccepted = "accepted" // Prism found nothing wrong with the request
	verdictRefused  = "refused"  // Prism refused it, or it missed the upstream's base path
	verdictUnjudged = "unjudged" // Prism gave no verdict (unreachable, or its validator threw)
)

// verdict decides from Prism's router and validators alone; the classes
// say why a request was refused: "route:NO_PATH_MATCHED_ERROR", "security",
// "body:required", "query:enum", "content-type", "base-path".
// "body:required-optional-body" is a required property missing from a
// body the operation does not require (the property is required once there
// is a body).
//
// What Prism 5.14 cannot judge, whatever the gateway sends, is unjudged and
// named "prism:…" (unroutable keys are the sampled path keys it cannot
// route, as patterns of request paths; see unroutablePatterns):
//   - prism:unroutable-key: a path key with a #fragment or a literal query
//     (AWS's "/{Bucket}#acl", "/search?query={q}"), which its router
//     matches literally;
//   - prism:reserved-header: a header parameter named Accept, Content-Type
//     or Authorization, which OpenAPI 3 says to ignore and Prism checks;
//   - prism:xml-body: an XML body (Prism does not parse XML: it finds a
//     string where the schema wants an object);
//   - prism:no-media-type: a body whose operation declares no media type
//     (Swagger 2.0 without consumes: Prism accepts none);
//   - prism:absent-object: a violation at a form body property or query
//     parameter (or a deepObject member of one) the request does not have
//     (Prism makes up an empty object for an absent deepObject);
//   - prism:form-array: "must be array" for a form or multipart body
//     property the request has (Prism reads every value of such a body as
//     one string unless the document gives the property an encoding style);
//   - prism:multipart-json-part: "must be object" or "reserved characters"
//     for a multipart part the request has (Prism neither parses a JSON
//     part nor knows allowReserved is for form bodies only);
//   - prism:array-type-list: "must be array,null" for a value the request
//     has (Prism splits arrays only for "type": "array", not a type list);
//   - prism:param-oneOf: a parameter's oneOf (Prism coerces the string to
//     every branch, so integer|string matches twice);
//   - prism:unparsed-body: a body of a media type Prism does not parse
//     (application/octet-stream, text/*) held against an object schema;
//   - prism:schema-compile: a schema Prism could not compile (a pattern
//     JavaScript rejects, a $ref it cannot resolve), which it then does not
//     check at all.
func (e *exchange) verdict(unroutable []*regexp.Regexp) (string, []string) {
	switch {
	case e.BasePathError != "":
		return verdictRefused, []string{"base-path"}
	case e.ForwardError != "":
		return verdictUnjudged, []string{"prism-unreachable"}
	case e.Verdict == nil:
		return verdictUnjudged, []string{"no-verdict"}
	case e.Verdict.Error != "":
		return verdictUnjudged, []string{"prism-exception"}
	case e.Verdict.Route != nil:
		path, _, _ := strings.Cut(strings.TrimPrefix(e.Target, upstreamBase), "?")
		if slices.ContainsFunc(unroutable, func(re *regexp.Regexp) bool { return re.MatchString(path) }) {
			return verdictUnjudged, []string{"prism:unroutable-key"}
		}
		return verdictRefused, []string{"route:" + e.Verdict.Route.Type}
	}
	var refused, limits []string
	for _, v := range e.Verdict.Security {
		if v.Severity == "error" {
			refused = append(refused, "security")
		}
	}
	for _, v := range e.Verdict.Input {
		if v.Severity != "error" {
			continue
		}
		if limit := e.prismLimit(v); limit != "" {
			limits = append(limits, limit)
		} else {
			refused = append(refused, e.class(v))
		}
	}
	if len(e.Verdict.CompileErrors) > 0 {
		limits = append(limits, "prism:schema-compile")
	}
	switch {
	case len(refused) > 0:
		return verdictRefused, uniq(refused)
	case len(limits) > 0:
		return verdictUnjudged, uniq(limits)
	}
	return verdictAccepted, nil
}

// prismLimit names the Prism limitation behind a violation, if it is one
// (see verdict).
func (e *exchange) prismLimit(v prismViolation) string {
	op := e.Verdict.Operation
	contentType := strings.ToLower(e.Header.Get("Content-Type"))
	where, name := "", ""
	if len(v.Path) > 0 {
		where = v.Path[0]
	}
	if len(v.Path) > 1 {
		name = v.Path[1]
	}
	parsed := strings.Contains(contentType, "json") || strings.HasPrefix(contentType, "application/x-www-form-urlencoded") ||
		strings.HasPrefix(contentType, "multipart/form-data")
	count := -1 // occurrences of the violation's key in the form body or query, when that is where it is
	switch {
	case where == "query" && name != "":
		_, query, _ := strings.Cut(e.Target, "?")
		count = formCount([]byte(query), v.Path[1:])
	case where == "body" && name != "" && strings.HasPrefix(contentType, "application/x-www-form-urlencoded"):
		count = formCount(e.Body, v.Path[1:])
	case where == "body" && name != "" && strings.HasPrefix(contentType, "multipart/form-data"):
		count = bytes.Count(e.Body, []byte(`name="`+name+`"`))
	}
	form := strings.HasPrefix(contentType, "application/x-www-form-urlencoded") || strings.HasPrefix(contentType, "multipart/form-data")
	arrayType := v.Code == "type" && strings.Contains(v.Message, "must be array")
	switch {
	case v.Code == "415" && op != nil && op.Body != nil && len(op.Body.MediaTypes) == 0:
		return "prism:no-media-type"
	case where == "header" && reservedHeader(v):
		return "prism:reserved-header"
	case where == "body" && strings.Contains(contentType, "xml"):
		return "prism:xml-body"
	case where == "body" && !parsed && v.Code == "type":
		return "prism:unparsed-body"
	case count == 0 && !strings.HasPrefix(contentType, "multipart/form-data"):
		return "prism:absent-object"
	case where == "body" && form && count > 0 && arrayType:
		return "prism:form-array"
	case where == "body" && strings.HasPrefix(contentType, "multipart/form-data") && count > 0 &&
		(v.Code == "type" && strings.HasSuffix(v.Message, "must be object") || strings.Contains(v.Message, "Reserved characters")):
		return "prism:multipart-json-part"
	case where == "query" && count > 0 && arrayType && strings.Contains(v.Message, "must be array,"):
		return "prism:array-type-list"
	case (where == "path" || where == "query" || where == "header") && v.Code == "oneOf":
		return "prism:param-oneOf"
	}
	return ""
}

// reservedHeader says whether a header violation is about Accept,
// Content-Type or Authorization (its path names the header, or a required
// violation's message does).
func reservedHeader(v prismViolation) bool {
	name := ""
	if len(v.Path) > 1 {
		name = v.Path[1]
	} else if v.Code == "required" {
		if _, rest, ok := strings.Cut(v.Message, "required property '"); ok {
			name, _, _ = strings.Cut(rest, "'")
		}
	}
	switch strings.ToLower(name) {
	case "accept", "content-type", "authorization":
		return true
	}
	return false
}

// formCount is how many keys of a form body or query string stand for the
// value at path: the key path[0] itself, or a deepObject key under
// path[0][path[1]]... (an array index ends the path: items repeat the key).
func formCount(body []byte, path []string) int {
	if i := slices.IndexFunc(path, func(p string) bool { _, err := strconv.Atoi(p); return err == nil }); i > 0 {
		path = path[:i]
	}
	deep := path[0]
	for _, p := range path[1:] {
		deep += "[" + p + "]"
	}
	n := 0
	for pair := range strings.SplitSeq(string(body), "&") {
		k, _, _ := strings.Cut(pair, "=")
		k, err := url.QueryUnescape(k)
		if err != nil {
			continue
		}
		if len(path) == 1 && k == path[0] || k == deep || strings.HasPrefix(k, deep+"[") {
			n++
		}
	}
	return n
}

// unroutablePatterns turns the path keys Prism cannot route (with a
// #fragment or a literal query) into patterns of the request paths they
// stand for: "/{Bucket}#acl" matches "/b1".
func unroutablePatterns(paths []string) []*regexp.Regexp {
	var out []*regexp.Regexp
	param := regexp.MustCompile(`\{[^}]*\}`)
	for _, p := range paths {
		i := strings.IndexAny(p, "#?")
		if i < 0 {
			continue
		}
		key := p[:i]
		var b strings.Builder
		last := 0
		for _, m := range param.FindAllStringIndex(key, -1) {
			b.WriteString(regexp.QuoteMeta(key[last:m[0]]))
			b.WriteString(`[^/]+`)
			last = m[1]
		}
		b.WriteString(regexp.QuoteMeta(key[last:]))
		out = append(out, regexp.MustCompile("^"+b.String()+"$"))
	}
	return out
}

// class names an input violation by where it is and what failed.
func (e *exchange) class(v prismViolation) string {
	if v.Code == "415" {
		return "content-type"
	}
	where := "request"
	if len(v.Path) > 0 {
		where = v.Path[0]
	}
	if op := e.Verdict.Operation; where == "body" && v.Code == "required" && len(v.Path) == 1 && op != nil && op.Body != nil && !op.Body.Required {
		return "body:required-optional-body"
	}
	return where + ":" + v.Code
}

func uniq(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// verdictProxy is the gateway's upstream: it passes every request under its
// base path on to Prism unchanged (the base path stripped, an exchange id
// added) and records Prism's verdict on it.
type verdictProxy struct {
	srv    *httptest.Server
	base   string // the upstream's base path, e.g. /base/v1
	prism  atomic.Pointer[prismTarget]
	next   atomic.Int64 // exchange ids
	client *http.Client

	mu  sync.Mutex
	log []exchange
}

// maxRecorded bounds a body read by the proxy.
const maxRecorded = 16 << 20

func newVerdictProxy(t *testing.T, base string) *verdictProxy {
	p := &verdictProxy{base: base, client: &http.Client{
		Timeout:       60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	t.Cleanup(p.client.CloseIdleConnections)
	return p
}

// upstream is the URL the gateway is given.
func (p *verdictProxy) upstream() string { return p.srv.URL + p.base }

// prismTarget is where the proxy sends requests: a document a prismServer
// serves, and the prefix of its exchange ids (unique in the process).
type prismTarget struct {
	server *prismServer
	url    string
	prefix string
}

// use makes the document Prism serves at url the target.
func (p *verdictProxy) use(server *prismServer, url, prefix string) {
	p.prism.Store(&prismTarget{server, url, prefix})
}

// count is how many exchanges were recorded; since returns those after n.
func (p *verdictProxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.log)
}

func (p *verdictProxy) since(n int) []exchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]exchange(nil), p.log[n:]...)
}

func (p *verdictProxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRecorded))
	e := exchange{Method: r.Method, Target: r.RequestURI, Header: r.Header.Clone(), Body: body,
		Chunked: len(r.TransferEncoding) > 0}
	defer func() {
		p.mu.Lock()
		p.log = append(p.log, e)
		p.mu.Unlock()
	}()
	rest, ok := strings.CutPrefix(r.RequestURI, p.base)
	switch {
	case err != nil:
		e.ForwardError = "reading the request body: " + err.Error()
	case !ok || rest != "" && rest[0] != '/' && rest[0] != '?':
		e.BasePathError = fmt.Sprintf("target %q is not under the upstream's base path %s", r.RequestURI, p.base)
		http.Error(w, e.BasePathError, http.StatusNotFound)
		return
	}
	prism := p.prism.Load()
	if prism == nil {
		e.ForwardError = "Prism is not serving yet"
	}
	if e.ForwardError != "" {
		http.Error(w, e.ForwardError, http.StatusBadGateway)
		return
	}
	id := prism.prefix + strconv.FormatInt(p.next.Add(1), 10)
	status, header, answer, err := p.forward(r, prism.url, rest, id, body)
	if err != nil {
		e.ForwardError = err.Error()
		http.Error(w, e.ForwardError, http.StatusBadGateway)
		return
	}
	e.Verdict = prism.server.verdict(id)
	e.Status = status
	if strings.HasPrefix(header.Get("Content-Type"), "application/problem+json") {
		var prob prismProblem
		if json.Unmarshal(answer, &prob) == nil && strings.HasPrefix(prob.Type, prismErrorsType) {
			e.Problem = &prob
		}
	}
	for k, vs := range header {
		if !hopByHop(k) {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

// forward sends the request to Prism at base with target rest, its headers
// and body as the gateway sent them, and the exchange id.
func (p *verdictProxy) forward(r *http.Request, base, rest, id string, body []byte) (int, http.Header, []byte, error) {
	if rest == "" || rest[0] == '?' {
		rest = "/" + rest
	}
	var rd io.Reader
	if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, base, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	// The request target is sent byte for byte: Opaque is written as is
	// (a path starting with // would read as an authority, so it goes in
	// absolute form instead).
	path, query, _ := strings.Cut(rest, "?")
	out.URL.Opaque, out.URL.RawQuery = path, query
	if strings.HasPrefix(path, "//") {
		out.URL.Opaque = "//" + out.URL.Host + path
	}
	for k, vs := range r.Header {
		if !hopByHop(k) {
			out.Header[k] = vs
		}
	}
	out.Header.Set(exchangeHeader, id)
	resp, err := p.client.Do(out)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxRecorded))
	return resp.StatusCode, resp.Header, answer, err
}

func hopByHop(h string) bool {
	switch http.CanonicalHeaderKey(h) {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Transfer-Encoding", "Te", "Trailer", "Upgrade", "Content-Length":
		return true
	}
	return false
}
