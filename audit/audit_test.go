package audit

import (
	"bytes"
	"context"
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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/mrtr"
)

// memSink collects what it is given.
type memSink struct {
	mu      sync.Mutex
	records []Record
	block   chan struct{} // when set, Write waits for it to close
	err     error
}

func (s *memSink) Write(_ context.Context, batch []Record) error {
	if s.block != nil {
		<-s.block
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.records = append(s.records, batch...)
	return nil
}

func (s *memSink) Close() error { return nil }

func (s *memSink) all() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Record(nil), s.records...)
}

func closeRecorder(t *testing.T, r *Recorder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestToolCallRecord(t *testing.T) {
	sink := &memSink{}
	clock := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	r := NewRecorder(sink, Options{Replica: "r1", Now: func() time.Time { return clock }})
	args := json.RawMessage(`{"petId": 2, "verbose":true}`)
	e := r.Start(Call{Subject: "alice", API: "petstore", Tool: "deletePet", Method: "DELETE", Path: "/pets/{petId}", Arguments: args, TraceID: "0af7651916cd43dd8448eb211c80319c"})
	e.Confirm("Delete pet 2?", "accept")
	e.Upstream(204)
	clock = clock.Add(12500 * time.Microsecond)
	e.Finish(Result{})
	e.Finish(Result{IsError: true}) // a second Finish does nothing
	closeRecorder(t, r)

	got := sink.all()
	if len(got) != 1 {
		t.Fatalf("%d records, want 1", len(got))
	}
	want, _ := mrtr.HashArguments(args)
	rec := got[0]
	if rec.Kind != KindToolCall || rec.Subject != "alice" || rec.API != "petstore" || rec.Tool != "deletePet" ||
		rec.Method != "DELETE" || rec.Path != "/pets/{petId}" || rec.HTTPStatus != 204 || rec.Outcome != OK ||
		rec.DurationMS != 12.5 || rec.Replica != "r1" || rec.ArgumentsSHA256 != want || rec.Arguments != nil ||
		rec.Confirmation == nil || rec.Confirmation.Answer != "accept" || !rec.Time.Equal(clock.Add(-12500*time.Microsecond)) {
		t.Fatalf("record %+v", rec)
	}
}

func TestOutcomes(t *testing.T) {
	sink := &memSink{}
	r := NewRecorder(sink, Options{})
	r.Start(Call{Tool: "a"}).Finish(Result{})
	r.Start(Call{Tool: "b"}).Finish(Result{IsError: true})
	r.Start(Call{Tool: "c"}).Finish(Result{RPCError: &RPCErr{Code: -32602, Message: "Invalid params"}})
	e := r.Start(Call{Tool: "d"})
	e.Refuse("policy")
	e.Finish(Result{IsError: true})
	for _, s := range []string{"working", "input_required", "completed", "failed", "cancelled"} {
		r.Task(TaskChange{TaskID: "t1", Status: s, Tool: "report"})
	}
	r.Task(TaskChange{TaskID: "t2", Status: "completed", IsError: true})
	closeRecorder(t, r)
	var got []string
	for _, rec := range sink.all() {
		got = append(got, string(rec.Outcome))
	}
	want := "ok tool_error rpc_error refused pending pending ok tool_error cancelled tool_error"
	if strings.Join(got, " ") != want {
		t.Fatalf("outcomes %v, want %s", got, want)
	}
}

func TestNilRecorderAndEntry(t *testing.T) {
	var r *Recorder
	e := r.Start(Call{Tool: "x"})
	e.Confirm("?", "accept")
	e.Upstream(200)
	e.Refuse("quota")
	e.Finish(Result{})
	r.Task(TaskChange{})
	if WithEntry(context.Background(), e) != context.Background() {
		t.Fatal("a nil entry changed the context")
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestFullBufferDrops: a stalled sink never blocks a call; what does not fit
// is dropped and counted.
func TestFullBufferDrops(t *testing.T) {
	sink := &memSink{block: make(chan struct{})}
	r := NewRecorder(sink, Options{Buffer: 8, MaxPerSubject: 8})
	start := time.Now()
	for range 1000 {
		r.Start(Call{Tool: "x"}).Finish(Result{})
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("1000 finishes took %v with a stalled sink", d)
	}
	close(sink.block)
	closeRecorder(t, r)
	n := uint64(len(sink.all()))
	// At most the buffer and the one batch the writer holds are kept.
	if n+r.Dropped() != 1000 || n > 8+maxBatch || n < 8 || r.Written() != n {
		t.Fatalf("written %d (counter %d), dropped %d: want 1000 in all, at most %d kept", n, r.Written(), r.Dropped(), 8+maxBatch)
	}
	r.Start(Call{}).Finish(Result{}) // after Close: dropped, no panic
	if r.Dropped() != 1000-n+1 {
		t.Fatal("a record after Close was not counted as dropped")
	}
}

// TestSubjectShare: one subject flooding a stalled sink keeps only its share
// of the buffer; another subject's records still get in.
func TestSubjectShare(t *testing.T) {
	sink := &memSink{block: make(chan struct{})}
	r := NewRecorder(sink, Options{Buffer: 64, MaxPerSubject: 8})
	r.Start(Call{Subject: "first"}).Finish(Result{}) // the writer takes it and stalls in Write
	time.Sleep(50 * time.Millisecond)
	for range 1000 {
		r.Start(Call{Subject: "mallory"}).Finish(Result{})
	}
	for range 5 {
		r.Start(Call{Subject: "alice"}).Finish(Result{})
	}
	close(sink.block)
	closeRecorder(t, r)
	per := map[string]int{}
	for _, rec := range sink.all() {
		per[rec.Subject]++
	}
	if per["alice"] != 5 || per["mallory"] != 8 || per["first"] != 1 || r.Dropped() != 992 {
		t.Fatalf("kept %v, dropped %d", per, r.Dropped())
	}
}

func TestSinkFailureCounted(t *testing.T) {
	sink := &memSink{err: errors.New("disk full")}
	var logs bytes.Buffer
	r := NewRecorder(sink, Options{Logger: newTestLogger(&logs)})
	for range 3 {
		r.Start(Call{}).Finish(Result{})
	}
	closeRecorder(t, r)
	if r.Failed() != 3 || !strings.Contains(logs.String(), "disk full") {
		t.Fatalf("failed %d, log %q", r.Failed(), logs.String())
	}
}

// TestNoCredentialInRecords makes records of calls that carry a bearer
// token, secret headers, a secret query parameter and secret arguments, and
// greps every output (the file sink, stdout, a store, the text format) for
// the secrets.
func TestNoCredentialInRecords(t *testing.T) {
	secrets := []string{"tok-SECRET-1", "key-SECRET-2", "pw-SECRET-3", "cookie-SECRET-4", "q-SECRET-5", "user-SECRET-6"}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+secrets[0] {
			t.Error("the upstream did not get the bearer: the test would prove nothing")
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer upstream.Close()

	path := filepath.Join(t.TempDir(), "audit.jsonl")
	file, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	sinks := map[string]Sink{"file": file, "stdout": NewWriterSink(&stdout), "mem": &memSink{}}
	for name, sink := range sinks {
		r := NewRecorder(sink, Options{IncludeArguments: true, Replica: name})
		args := json.RawMessage(`{"petId":1,"X-Api-Key":"` + secrets[1] + `","body":{"password":"` + secrets[2] +
			`","nested":[{"session_token":"` + secrets[0] + `"}]},"Cookie":"` + secrets[3] + `"}`)
		e := r.Start(Call{Subject: "bearer:hash", API: "petstore", Tool: "createPet", Method: "POST", Path: "/pets", Arguments: args})
		ctx := WithEntry(context.Background(), e)
		req, _ := http.NewRequestWithContext(ctx, "POST", upstream.URL+"/pets?api_key="+secrets[4], strings.NewReader(`{"password":"`+secrets[2]+`"}`))
		req.Header.Set("Authorization", "Bearer "+secrets[0])
		req.Header.Set("X-Api-Key", secrets[1])
		req.Header.Set("Cookie", "sid="+secrets[3])
		req.URL.User = url.UserPassword("admin", secrets[5])
		resp, err := (&http.Client{Transport: Transport(http.DefaultTransport)}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		e.Finish(Result{})
		closeRecorder(t, r)
	}
	fileOut, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := Format(&text, sinks["mem"].(*memSink).all(), "text"); err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{"file": string(fileOut), "stdout": stdout.String(), "text": text.String()}
	for name, out := range outputs {
		if !strings.Contains(out, "createPet") {
			t.Fatalf("%s output has no record: %q", name, out)
		}
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s output contains the secret %q:\n%s", name, s, out)
			}
		}
	}
	rec := sinks["mem"].(*memSink).all()[0]
	if rec.HTTPStatus != http.StatusCreated || !strings.Contains(string(rec.Arguments), `"petId":1`) ||
		strings.Count(string(rec.Arguments), "[redacted]") != 4 {
		t.Fatalf("record: status %d, arguments %s", rec.HTTPStatus, rec.Arguments)
	}
}

func TestRedactArguments(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1,"Authorization":"x"}`, `{"a":1,"Authorization":"[redacted]"}`},
		{`{"list":[{"apiKey":{"deep":1}},{"ok":"y"}]}`, `{"list":[{"apiKey":"[redacted]"},{"ok":"y"}]}`},
		{` { "client_secret" : [1,2] , "n" : null } `, `{"client_secret":"[redacted]","n":null}`},
		{`[1,"token"]`, `[1,"token"]`},
		{`{"bad":`, ``},
		{`{} {}`, ``},
		{``, ``},
	}
	for _, tt := range tests {
		if got := string(redactArguments(json.RawMessage(tt.in))); got != tt.want {
			t.Errorf("redact %s = %s, want %s", tt.in, got, tt.want)
		}
	}
	for name, want := range map[string]bool{"X-API-KEY": true, "access_token": true, "passwd": true, "petId": false, "tokenizer": true, "author": false} {
		if Sensitive(name) != want {
			t.Errorf("Sensitive(%q) = %v", name, !want)
		}
	}
}

func TestInvalidArgumentsDigest(t *testing.T) {
	r := NewRecorder(&memSink{}, Options{IncludeArguments: true})
	e := r.Start(Call{Arguments: json.RawMessage(`{"a":1,"a":2}`)})
	if !strings.HasPrefix(e.rec.ArgumentsSHA256, "raw:") || e.rec.Arguments == nil {
		t.Fatalf("duplicate names: digest %q, arguments %s", e.rec.ArgumentsSHA256, e.rec.Arguments)
	}
	e = r.Start(Call{Arguments: json.RawMessage(`{"a":`)})
	if !strings.HasPrefix(e.rec.ArgumentsSHA256, "raw:") || e.rec.Arguments != nil {
		t.Fatalf("invalid JSON: digest %q, arguments %s", e.rec.ArgumentsSHA256, e.rec.Arguments)
	}
	closeRecorder(t, r)
}

// TestFileConcurrentWriters appends to one file from several processes at
// once (this test binary re-executed) and checks that every line is a whole
// record.
func TestFileConcurrentWriters(t *testing.T) {
	if path := os.Getenv("AUDIT_TEST_APPEND"); path != "" {
		appendRecords(t, path)
		return
	}
	path := filepath.Join(t.TempDir(), "shared.jsonl")
	const procs = 4
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestFileConcurrentWriters$")
			cmd.Env = append(os.Environ(), "AUDIT_TEST_APPEND="+path, fmt.Sprint("AUDIT_TEST_REPLICA=p", i))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("writer %d: %v\n%s", i, err, out)
			}
		})
	}
	wg.Wait()
	recs, err := ReadFile(context.Background(), path, Filter{Limit: MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != procs*appendCount {
		t.Fatalf("%d records in the file, want %d", len(recs), procs*appendCount)
	}
	per := map[string]int{}
	for _, r := range recs {
		per[r.Replica]++
	}
	for i := range procs {
		if n := per[fmt.Sprint("p", i)]; n != appendCount {
			t.Errorf("writer p%d: %d records, want %d", i, n, appendCount)
		}
	}
}

const appendCount = 500

func appendRecords(t *testing.T, path string) {
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRecorder(f, Options{Replica: os.Getenv("AUDIT_TEST_REPLICA"), Buffer: appendCount, MaxPerSubject: appendCount, IncludeArguments: true})
	pad := strings.Repeat("x", 2000) // lines longer than a pipe buffer's atomic size
	for i := range appendCount {
		r.Start(Call{Tool: "t", Arguments: json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":%q}`, i, pad))}).Finish(Result{})
		if i%50 == 0 {
			time.Sleep(time.Millisecond) // let the writer flush in several batches
		}
	}
	closeRecorder(t, r)
	if r.Dropped() != 0 {
		t.Fatalf("dropped %d", r.Dropped())
	}
}

func TestReadFileFilterAndErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs []Record
	for i := range 300 {
		recs = append(recs, Record{Time: base.Add(time.Duration(i) * time.Minute), Kind: KindToolCall, Subject: []string{"a", "b", "c"}[i%3], Tool: "t", Outcome: OK})
	}
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Write(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, err := ReadFile(context.Background(), path, Filter{Subject: "b", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || !got[0].Time.Equal(recs[298].Time) || !got[9].Time.Equal(recs[271].Time) {
		t.Fatalf("got %d records, first %v", len(got), got[0].Time)
	}
	os.WriteFile(path, []byte("{\"kind\":\"tools/call\"}\nnot json\n"), 0o600)
	if _, err := ReadFile(context.Background(), path, Filter{}); err == nil || !strings.Contains(err.Error(), path+":2") {
		t.Fatalf("error %v, want one naming %s:2", err, path)
	}
	if _, err := ReadFile(context.Background(), filepath.Join(t.TempDir(), "missing"), Filter{}); err == nil {
		t.Fatal("a missing file read")
	}
}

func TestParseSink(t *testing.T) {
	var out bytes.Buffer
	if s, err := ParseSink("stdout", &out, nil); err != nil || s == nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "x.jsonl")
	s, err := ParseSink("file:"+path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("file sink: %v, %v", st, err)
	}
	for _, bad := range []string{"store", "file:", "syslog", ""} {
		if _, err := ParseSink(bad, &out, nil); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if _, err := ParseSink("file:"+filepath.Join(t.TempDir(), "no", "dir"), nil, nil); err == nil {
		t.Error("a file in a missing directory opened")
	}
}

// sweepStore counts sweeps.
type sweepStore struct {
	memSink
	mu     sync.Mutex
	before []time.Time
}

func (s *sweepStore) List(context.Context, Filter) ([]Record, error) { return nil, nil }

func (s *sweepStore) Sweep(_ context.Context, before time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.before = append(s.before, before)
	return 0, nil
}

func TestRetentionSweeps(t *testing.T) {
	s := &sweepStore{}
	now := time.Date(2026, 7, 28, 0, 0, 0, 0, time.UTC)
	r := NewRecorder(s, Options{Retention: 24 * time.Hour, SweepEvery: 10 * time.Millisecond, Now: func() time.Time { return now }})
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		n := len(s.before)
		s.mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	closeRecorder(t, r)
	if len(s.before) < 2 || !s.before[0].Equal(now.Add(-24*time.Hour)) {
		t.Fatalf("sweeps %v", s.before)
	}
}

func TestFormat(t *testing.T) {
	recs := []Record{
		{Time: time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC), Kind: KindToolCall, Subject: "alice", API: "petstore", Tool: "getPet", Method: "GET", Path: "/pets/{petId}", HTTPStatus: 200, Outcome: OK, DurationMS: 3.5, Replica: "r1"},
		{Time: time.Date(2026, 7, 28, 10, 0, 1, 0, time.UTC), Kind: KindTask, Tool: "createReport", TaskID: "t-9", TaskStatus: "completed", Outcome: OK},
		{Time: time.Date(2026, 7, 28, 10, 0, 2, 0, time.UTC), Kind: KindToolCall, Tool: "x", RPCError: &RPCErr{Code: -32602}, Outcome: RPCError},
	}
	var text bytes.Buffer
	if err := Format(&text, recs, "text"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "TIME") ||
		!strings.Contains(lines[1], "petstore/getPet") || !strings.Contains(lines[1], "GET /pets/{petId}") || !strings.Contains(lines[1], "http 200") || !strings.Contains(lines[1], "3.5ms") ||
		!strings.Contains(lines[2], "task t-9") || !strings.Contains(lines[2], "completed") ||
		!strings.Contains(lines[3], "rpc -32602") {
		t.Fatalf("text:\n%s", text.String())
	}
	var js bytes.Buffer
	if err := Format(&js, recs, "json"); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&js)
	for i := range recs {
		var r Record
		if err := dec.Decode(&r); err != nil || r.Tool != recs[i].Tool {
			t.Fatalf("json line %d: %v %+v", i, err, r)
		}
	}
	if err := Format(io.Discard, recs, "xml"); err == nil {
		t.Fatal("xml formatted")
	}
}
