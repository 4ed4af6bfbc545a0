package proxy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/demo"
	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/openapi"
)

// TestHugeNumbersRefused: a number literal beyond the limits of
// jsonx.Number.Check is refused as invalid arguments, at its location,
// before any validation (fast path or jsonschema) and without a request
// upstream.
func TestHugeNumbersRefused(t *testing.T) {
	rec := newRecorder(t, nil)
	p := newProxy(t, rec.srv.URL, nil)
	tools := map[string]*Endpoint{
		// fast path with an int64 bound
		"fast": endpoint(t, p, mkTool("fast", "GET", "/pets/{id}", map[string]any{"id": map[string]any{"type": "integer", "minimum": 1}}, []string{"id"},
			pathArg("id"))),
		// not on the fast path's whitelist: jsonschema alone
		"jsonschema": endpoint(t, p, mkTool("jsonschema", "POST", "/things", map[string]any{
			"n": map[string]any{"type": "number", "multipleOf": 0.5},
			"a": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "number", "maximum": 10}}}},
		}, nil, bodyArg("n"), bodyArg("a"))),
		// no constraint at all on the value
		"free": endpoint(t, p, mkTool("free", "POST", "/free", map[string]any{"v": map[string]any{}}, nil, bodyArg("v"))),
	}
	digits := strings.Repeat("9", 800_000)
	for _, c := range []struct {
		tool, args, want string
	}{
		{"fast", `{"id":` + digits + `}`, "/id: a number with 800000 significant digits is refused (at most 100)"},
		{"fast", `{"id":1e401}`, "/id: a number of magnitude 1e401 is refused (the limit is 1e±400)"},
		{"fast", `{"id":1e10000000}`, "/id: a number of magnitude 1e10000000 is refused"},
		{"fast", `{"id":0.` + strings.Repeat("0", 500) + `1}`, "/id: a number of magnitude 1e-501 is refused"},
		{"jsonschema", `{"n":` + digits + `}`, "/n: a number with 800000 significant digits"},
		{"jsonschema", `{"a":[{"x":1},{"x":-` + digits + `.5}]}`, "/a/1/x: a number with 800001 significant digits"},
		{"free", `{"v":{"a/b":[1e-99999]}}`, "/v/a~1b/0: a number of magnitude 1e-99999"},
	} {
		res := call(t, p, tools[c.tool], c.args)
		wantError(t, res, "Invalid arguments: "+c.want)
		if len(text(res)) > 300 {
			t.Errorf("%s: the error echoes the input (%d bytes)", c.tool, len(text(res)))
		}
	}
	if n := len(rec.all()); n != 0 {
		t.Errorf("%d requests reached the upstream", n)
	}
	// the limits themselves pass
	for tool, args := range map[string]string{
		"fast":       `{"id":` + strings.Repeat("9", 100) + `}`,
		"jsonschema": `{"n":1e400,"a":[{"x":-1e400},{"x":1e-400}]}`,
	} {
		wantOK(t, call(t, p, tools[tool], args))
	}
}

// TestHugeNumbersInOutput: with CheckOutput, an upstream answer with a
// number beyond the limits is a tool error, not minutes of math/big.
func TestHugeNumbersInOutput(t *testing.T) {
	rec := newRecorder(t, reply(200, "application/json", `{"id":1,"big":[`+strings.Repeat("1", 200_000)+`]}`))
	p := newProxy(t, rec.srv.URL, func(c *Config) { c.CheckOutput = true })
	tool := mkTool("t", "GET", "/o", nil, nil)
	tool.OutputSchema = json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"},"big":{"type":"array","items":{"type":"integer","minimum":0}}}}`)
	res := call(t, p, endpoint(t, p, tool), `{}`)
	wantError(t, res, "cannot be checked against the tool's documented output schema: /big/0: a number with 200000 significant digits is refused")
}

func pathArg(name string) openapi.Argument {
	return openapi.Argument{Name: name, Param: name, In: openapi.InPath, Required: true}
}

func bodyArg(name string) openapi.Argument {
	return openapi.Argument{Name: name, Param: name, In: openapi.InBodyProperty}
}

// BenchmarkHugeArgument is the cost of a getPet call whose petId is a
// number of 10⁶ digits beside one whose petId is a string of the same
// size, both refused as invalid arguments, alternated in one loop. The
// ratio metric (number/string) is the one to watch: validation costs
// time linear in the request, whatever its numbers.
func BenchmarkHugeArgument(b *testing.B) {
	p, eps, _ := demoGateway(b, demo.Options{}, nil)
	e := eps["getPet"]
	ctx := mcp.WithPrincipal(context.Background(), mcp.Principal{Credential: "demo-token"})
	const size = 1_000_000
	number := json.RawMessage(`{"petId":` + strings.Repeat("7", size) + `}`)
	str := json.RawMessage(`{"petId":"` + strings.Repeat("7", size-2) + `"}`)
	run := func(args json.RawMessage) time.Duration {
		start := time.Now()
		res, err := p.Dispatch(ctx, e, args)
		if err != nil || !res.IsError {
			b.Fatalf("%v %v", err, res)
		}
		return time.Since(start)
	}
	var tNumber, tString time.Duration
	b.ReportAllocs()
	for b.Loop() {
		tNumber += run(number)
		tString += run(str)
	}
	b.ReportMetric(float64(tNumber.Nanoseconds())/float64(b.N), "ns/number-call")
	b.ReportMetric(float64(tString.Nanoseconds())/float64(b.N), "ns/string-call")
	b.ReportMetric(float64(tNumber)/float64(tString), "number/string")
}
