package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/demo"
	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/mrtr"
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
	ctx := mcp.WithPrincipal(context.Background(), mcp.Principal{Credential: mcp.NewSecret("demo-token")})
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

// numberSpellings are the spellings of the forwarding table: beyond 2^53,
// exponent forms, trailing zeros, -0, negative, at and past the int64
// limits, huge.
var numberSpellings = []string{
	"28", "28.0", "2.8e1", "280E-1", "28.000000000000000000001",
	"9007199254740992", "9007199254740993", "9007199254740992.0", "9.007199254740993e15",
	"1234567890123456789", "1.234567890123456789e18", "123456789012345678900000",
	"9223372036854775807", "9223372036854775808",
	"0", "-0", "0.0", "-5", "-5e0", "-5.5",
	"1e400", "1e401", strings.Repeat("9", 101),
}

// TestForwardedNumbersMatchTheHash is the invariant of issue 13 item 3 for
// every place an argument can go (path, query, header, cookie, JSON, form
// and multipart bodies), with integer (format int64) and number schemas:
// for each pair of spellings (confirmed, submitted), the call is accepted
// (the arguments hash sealed for the confirmation, mrtr.HashArguments,
// matches, and the submitted arguments are valid) exactly when the proxy
// forwards the identical request for both.
func TestForwardedNumbersMatchTheHash(t *testing.T) {
	rec := newRecorder(t, nil)
	p := newProxy(t, rec.srv.URL, nil)
	for _, typ := range []map[string]any{
		{"type": "integer", "format": "int64"},
		{"type": "number"},
	} {
		props := map[string]any{"p": typ, "q": typ, "h": typ, "c": typ, "b": typ}
		params := []openapi.Argument{
			{Name: "p", In: openapi.InPath, Param: "p", Required: true},
			{Name: "q", In: openapi.InQuery, Param: "q", Style: "form", Explode: true},
			{Name: "h", In: openapi.InHeader, Param: "X-N", Style: "simple"},
			{Name: "c", In: openapi.InCookie, Param: "n", Style: "form", Explode: true},
		}
		bodies := map[string]*openapi.Body{
			"json":      nil,
			"form":      {ContentType: "application/x-www-form-urlencoded"},
			"multipart": {ContentType: "multipart/form-data"},
		}
		for kind, body := range bodies {
			t.Run(fmt.Sprint(typ["type"], "/", kind), func(t *testing.T) {
				tool := mkTool("t", "POST", "/n/{p}", props, []string{"p"}, append(params, bodyArg("b"))...)
				tool.Route.Body = body
				e := endpoint(t, p, tool)
				sent := map[string]string{} // spelling → the request, "" when refused
				for _, s := range numberSpellings {
					rec.reset()
					args := fmt.Sprintf(`{"p":%s,"q":%s,"h":%s,"c":%s,"b":%s}`, s, s, s, s, s)
					res := call(t, p, e, args)
					if all := rec.all(); len(all) == 1 {
						sent[s] = wireForm(all[0])
					} else if !res.IsError || len(all) != 0 {
						t.Fatalf("%s: %d requests, result %s", s, len(all), text(res))
					}
				}
				forwarded := 0
				for _, a := range numberSpellings {
					if sent[a] != "" {
						forwarded++
					}
					for _, b := range numberSpellings {
						ha, err1 := mrtr.HashArguments(json.RawMessage(`{"p":` + a + `,"q":` + a + `,"h":` + a + `,"c":` + a + `,"b":` + a + `}`))
						hb, err2 := mrtr.HashArguments(json.RawMessage(`{"p":` + b + `,"q":` + b + `,"h":` + b + `,"c":` + b + `,"b":` + b + `}`))
						if err1 != nil || err2 != nil {
							t.Fatal(err1, err2)
						}
						// the call goes through when the state opens and the
						// submitted arguments are valid
						accepted := ha == hb && sent[b] != ""
						if identical := sent[a] != "" && sent[a] == sent[b]; accepted != identical {
							t.Errorf("confirmed %s, submitted %s: accepted %v, requests identical %v\n%s\n%s", a, b, accepted, identical, sent[a], sent[b])
						}
					}
				}
				if forwarded < 8 {
					t.Errorf("only %d spellings were forwarded", forwarded)
				}
			})
		}
	}
}

// wireForm is a recorded request as one string, with a multipart boundary
// (random per request) replaced by a fixed one.
func wireForm(r recorded) string {
	body := string(r.Body)
	ct := r.Header.Get("Content-Type")
	if _, b, ok := strings.Cut(ct, "boundary="); ok {
		body = strings.ReplaceAll(body, b, "BOUNDARY")
		ct = strings.ReplaceAll(ct, b, "BOUNDARY")
	}
	return fmt.Sprintf("%s %s\nX-N: %s\nCookie: %s\nContent-Type: %s\n\n%s", r.Method, r.RequestURI, r.Header.Get("X-N"), r.Header.Get("Cookie"), ct, body)
}

// TestCanonicalNumbersForwarded pins the form each place receives.
func TestCanonicalNumbersForwarded(t *testing.T) {
	rec := newRecorder(t, nil)
	p := newProxy(t, rec.srv.URL, nil)
	num := map[string]any{"type": "number"}
	tool := mkTool("t", "POST", "/n/{p}", map[string]any{"p": num, "q": num, "h": num, "c": num, "b": map[string]any{}}, []string{"p"},
		openapi.Argument{Name: "p", In: openapi.InPath, Param: "p", Required: true},
		openapi.Argument{Name: "q", In: openapi.InQuery, Param: "q", Style: "form", Explode: true},
		openapi.Argument{Name: "h", In: openapi.InHeader, Param: "X-N", Style: "simple"},
		openapi.Argument{Name: "c", In: openapi.InCookie, Param: "n", Style: "form", Explode: true},
		bodyArg("b"))
	e := endpoint(t, p, tool)
	wantOK(t, call(t, p, e, `{"p":28.0,"q":-0,"h":9.007199254740993e15,"c":1.50e-7,"b":[2.8e1,{"x":100E-2},1e100]}`))
	got := rec.last(t)
	if got.RequestURI != "/n/28?q=0" || got.Header.Get("X-N") != "9007199254740993" || got.Header.Get("Cookie") != "n=1.5e-7" ||
		string(got.Body) != `{"b":[28,{"x":1},1e+100]}` {
		t.Errorf("forwarded %s", wireForm(got))
	}
}

// TestIntegerFormats: int32/int64 (and the sized and unsigned formats)
// bound the value even though jsonschema treats format as an annotation;
// a non-integral value is refused for type integer.
func TestIntegerFormats(t *testing.T) {
	rec := newRecorder(t, nil)
	p := newProxy(t, rec.srv.URL, nil)
	schema := json.RawMessage(`{"type":"object","properties":{
		"i32":{"type":"integer","format":"int32"},
		"i64":{"type":"integer","format":"int64"},
		"u8":{"type":"integer","format":"uint8"},
		"u64":{"type":"integer","format":"uint64"},
		"s64":{"type":"string","format":"int64"},
		"list":{"type":"array","items":{"type":"integer","format":"int32"}},
		"tuple":{"type":"array","prefixItems":[{"format":"int8"}],"items":{"format":"uint16"}},
		"pet":{"$ref":"#/$defs/Pet"},
		"both":{"allOf":[{"format":"int64"},{"format":"uint32"}]},
		"either":{"oneOf":[{"type":"integer","format":"int8"},{"type":"string"}]},
		"free":{"type":"object","additionalProperties":{"format":"int16"}}
	},"$defs":{"Pet":{"type":"object","properties":{"id":{"type":"integer","format":"int64"},"parent":{"$ref":"#/$defs/Pet"}}}}}`)
	tool := &openapi.Tool{Name: "t", InputSchema: schema, Route: openapi.Route{Method: "POST", Path: "/f"}}
	for _, name := range []string{"i32", "i64", "u8", "u64", "s64", "list", "tuple", "pet", "both", "either", "free"} {
		tool.Route.Arguments = append(tool.Route.Arguments, bodyArg(name))
	}
	e := endpoint(t, p, tool)
	for _, c := range []struct{ args, err string }{
		{`{"i32":2147483647,"i64":-9223372036854775808,"u8":255,"u64":18446744073709551615}`, ""},
		{`{"i32":2147483648}`, "/i32: 2147483648 is out of range for format int32 (-2147483648 to 2147483647)"},
		{`{"i32":-2147483649}`, "/i32: -2147483649 is out of range for format int32"},
		{`{"i32":2.147483648e9}`, "/i32: 2147483648 is out of range for format int32"},
		{`{"i32":21474836.47e2}`, ""},
		{`{"i64":9223372036854775808}`, "/i64: 9223372036854775808 is out of range for format int64"},
		{`{"i64":1e400}`, "/i64: 1e+400 is out of range for format int64"},
		{`{"i64":1.5}`, "/i64: got number, want integer"}, // jsonschema's type check comes first
		{`{"u8":256}`, "/u8: 256 is out of range for format uint8 (0 to 255)"},
		{`{"u8":-1}`, "/u8: -1 is out of range for format uint8"},
		{`{"u64":18446744073709551616}`, "/u64: 18446744073709551616 is out of range for format uint64"},
		{`{"s64":"99999999999999999999"}`, ""}, // a string is not a number
		{`{"list":[1,2,3000000000]}`, "/list/2: 3000000000 is out of range for format int32"},
		{`{"tuple":[-128,65535]}`, ""},
		{`{"tuple":[128,65536]}`, "/tuple/0: 128 is out of range for format int8 (-128 to 127); /tuple/1: 65536 is out of range for format uint16"},
		{`{"tuple":[1.5]}`, "/tuple/0: 1.5 is not an integer (format int8)"},
		{`{"pet":{"id":1,"parent":{"parent":{"id":9223372036854775808}}}}`, "/pet/parent/parent/id: 9223372036854775808 is out of range for format int64"},
		{`{"both":4294967296}`, "/both: 4294967296 is out of range for format uint32"},
		{`{"both":-1}`, "/both: -1 is out of range for format uint32"},
		{`{"either":"x"}`, ""},
		{`{"free":{"a/b":32768}}`, "/free/a~1b: 32768 is out of range for format int16"},
	} {
		rec.reset()
		res := call(t, p, e, c.args)
		if c.err == "" {
			wantOK(t, res)
			continue
		}
		wantError(t, res, "Invalid arguments: "+c.err)
		if len(rec.all()) != 0 {
			t.Errorf("%s: sent upstream", c.args)
		}
	}
}
