package openapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// ecmaOracle compiles each pattern as `new RegExp(p, "u")` in Node.js and
// tests it against the samples: the ECMA-262 unicode-mode parser that Ajv
// (and so the TypeScript SDK) uses, run for real. No pure-Go u-mode parser
// is among the kept libraries: dlclark/regexp2's ECMAScript option follows
// the lenient Annex B grammar (it accepts `\-`, `\:` and `\_`, which u-mode
// refuses), so it would pass exactly the patterns this file is about.
// Without node the oracle is skipped, except under CI.
type ecmaResult struct {
	Err     string `json:"err"`
	Matches []bool `json:"matches"`
}

func ecmaOracle(t *testing.T, patterns []string, samples [][]string) []ecmaResult {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node is required in CI for the ECMA-262 pattern oracle: %v", err)
		}
		t.Skip("node not on PATH: skipping the ECMA-262 unicode-mode oracle")
	}
	type job struct {
		P       string   `json:"p"`
		Samples []string `json:"samples"`
	}
	jobs := make([]job, len(patterns))
	for i, p := range patterns {
		jobs[i] = job{P: p, Samples: samples[i]}
		if jobs[i].Samples == nil {
			jobs[i].Samples = []string{}
		}
	}
	in, err := json.Marshal(jobs)
	if err != nil {
		t.Fatal(err)
	}
	const script = `let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{
const out=JSON.parse(s).map(j=>{try{const re=new RegExp(j.p,"u");return {err:"",matches:j.samples.map(x=>re.test(x))}}catch(e){return {err:e.message,matches:[]}}});
process.stdout.write(JSON.stringify(out))})`
	cmd := exec.Command(node, "-e", script)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var res []ecmaResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node output: %v", err)
	}
	return res
}

type patternCase struct {
	in   string
	want string // the portable spelling; "" when it must fail
	// unportable: the failure is errUnportable (a valid pattern with no
	// portable spelling), not a malformed pattern.
	unportable bool
	match      []string
	noMatch    []string
}

var patternCases = []patternCase{
	// Already portable: unchanged.
	{in: `^[a-z0-9-]{1,63}$`, want: `^[a-z0-9-]{1,63}$`, match: []string{"a-1"}, noMatch: []string{"A"}},
	{in: `^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$`, want: `^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$`, match: []string{"QUJD", "QQ=="}, noMatch: []string{"Q"}},
	{in: `^[KEg\$lshzxeA]*$`, want: `^[KEg\$lshzxeA]*$`, match: []string{"$K"}, noMatch: []string{"b"}},
	{in: `([a-z0-9-_ ]|[^\\x00-\\x7F])+`, want: `([a-z0-9-_ ]|[^\\x00-\\x7F])+`, match: []string{"a b"}},
	{in: `^[A-Za-z0-9.\-_]+$`, want: `^[A-Za-z0-9.\-_]+$`, match: []string{"a.b-c_d"}, noMatch: []string{"a b"}},
	{in: `\/projects\/[a-f\d]{24}`, want: `\/projects\/[a-f\d]{24}`, match: []string{"/projects/0123456789abcdef01234567"}},
	{in: `^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2})?$`, want: `^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2})?$`, match: []string{"2024-01-02T03:04"}, noMatch: []string{"2024-1-02"}},
	{in: `^\p{L}+\P{Nd}$`, want: `^\p{L}+\P{Nd}$`, match: []string{"éa"}, noMatch: []string{"é1"}},
	{in: `a+?b*?`, want: `a+?b*?`, match: []string{"a"}},
	// Identity escapes unicode mode refuses (DigitalOcean: `\-\:` in a class).
	{in: `^[a-zA-Z0-9_\-\:]+$`, want: `^[a-zA-Z0-9_\-:]+$`, match: []string{"do:tag-1"}, noMatch: []string{"a b"}},
	{in: `^a\ b\_c\:d\#e\/f\-g\@h$`, want: `^a b_c:d#e\/f-g@h$`, match: []string{"a b_c:d#e/f-g@h"}, noMatch: []string{"a b_c"}},
	{in: `^[\w\-\.\ ]+$`, want: `^[\w\-\. ]+$`, match: []string{"a-b. c"}, noMatch: []string{"a/b"}},
	// PCRE, Python and Java anchors and escapes.
	{in: `\A[a-z]+\z`, want: `^[a-z]+$`, match: []string{"abc"}, noMatch: []string{"abc\n", "1"}},
	{in: `^\d+\Z`, want: `^\d+(?:\n?$)`, match: []string{"12", "12\n"}, noMatch: []string{"12\n\n"}},
	{in: "^\\x{60}+\\x41$", want: "^`+\\x41$", match: []string{"``A"}, noMatch: []string{"A"}},
	{in: `^\u00e9\u{1F600}\uD83D\uDE00$`, want: "^é😀😀$", match: []string{"é😀😀"}},
	{in: `^\Qa.b*\E$`, want: `^a\.b\*$`, match: []string{"a.b*"}, noMatch: []string{"axb"}},
	{in: `^\e\a\0\cA$`, want: `^\x1B\x07\x00\x01$`, match: []string{"\x1b\x07\x00\x01"}},
	{in: `^(?P<year>\d{4})-(?<month>\d{2})-(?'day'\d{2})$`, want: `^(\d{4})-(\d{2})-(\d{2})$`, match: []string{"2024-01-02"}},
	{in: `^a(?#a comment)b$`, want: `^ab$`, match: []string{"ab"}},
	{in: `^x{,3}$`, want: `^x{0,3}$`, match: []string{"", "xxx"}, noMatch: []string{"xxxx"}},
	{in: `^{a}]$`, want: `^\{a\}\]$`, match: []string{"{a}]"}},
	{in: `^[]a]+$`, want: `^[\]a]+$`, match: []string{"]a"}, noMatch: []string{"b"}},
	{in: `^[\w-a]+$`, want: `^[\w\-a]+$`, match: []string{"-a_"}, noMatch: []string{"$"}},
	{in: `^[[:alpha:][:digit:]_]+$`, want: `^[A-Za-z0-9_]+$`, match: []string{"a1_"}, noMatch: []string{"-"}},
	{in: `^\pL\p{Letter}\p{IsLu}\p{gc=Nd}\p{Alpha}$`, want: `^\p{L}\p{L}\p{Lu}\p{Nd}[A-Za-z]$`, match: []string{"abC1z"}},
	{in: `^[^]$`, want: `^[\s\S]$`, match: []string{"\n"}},
	// Flags.
	{in: `(?i)^ab[c-e]$`, want: `^[Aa][Bb][C-Ec-e]$`, match: []string{"ABd", "abE"}, noMatch: []string{"abf"}},
	{in: `^a(?i:b)c$`, want: `^a(?:[Bb])c$`, match: []string{"aBc"}, noMatch: []string{"ABc", "aBC"}},
	{in: `(?s)^a.b$`, want: `^a[\s\S]b$`, match: []string{"a\nb"}},
	{in: "(?x) ^ a # letter a\n b $", want: `^ab$`, match: []string{"ab"}},
	// JavaScript literals.
	{in: `/^[a-z]+$/`, want: `^[a-z]+$`, match: []string{"abc"}, noMatch: []string{"/abc/"}},
	{in: `/^abc$/i`, want: `^[Aa][Bb][Cc]$`, match: []string{"aBc"}},
	{in: `/v1/`, want: `/v1/`, match: []string{"/v1/x"}, noMatch: []string{"v1"}},
	{in: `/a/b/`, want: `/a/b/`, match: []string{"/a/b/"}},
	// No portable spelling.
	{in: `^(?=.*\d)\w+$`, unportable: true},
	{in: `^(?!x)`, unportable: true},
	{in: `(?<=a)b`, unportable: true},
	{in: `(a)\1`, unportable: true},
	{in: `a++`, unportable: true},
	{in: `(?>a)`, unportable: true},
	{in: `\p{Greek}`, unportable: true},
	{in: `a{1001}`, unportable: true},
	{in: `(?m)^a$`, unportable: true},
	{in: `[a-z&&[^e]]`, unportable: true},
	{in: `^\b*$`, unportable: true},
	{in: `\G\d`, unportable: true},
	// Malformed in every dialect.
	{in: `(a`},
	{in: `a)`},
	{in: `[a`},
	{in: `*a`},
	{in: `[z-a]`},
	{in: `a\`},
	{in: `a{3,2}`},
	{in: "\xff"},
}

func TestPortablePattern(t *testing.T) {
	var ok []patternCase
	for _, c := range patternCases {
		got, err := portablePattern(c.in)
		if c.want == "" {
			if err == nil {
				t.Errorf("%q: translated to %q, want an error", c.in, got)
			} else if errors.Is(err, errUnportable) != c.unportable {
				t.Errorf("%q: error %v, unportable = %t, want %t", c.in, err, errors.Is(err, errUnportable), c.unportable)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
			continue
		}
		re := regexp.MustCompile(got)
		for _, s := range c.match {
			if !re.MatchString(s) {
				t.Errorf("%q → %q: Go does not match %q", c.in, got, s)
			}
		}
		for _, s := range c.noMatch {
			if re.MatchString(s) {
				t.Errorf("%q → %q: Go matches %q", c.in, got, s)
			}
		}
		ok = append(ok, c)
	}
	// The same outputs, compiled and run by a real ECMA-262 engine in
	// unicode mode, must compile and agree on every sample.
	pats := make([]string, len(ok))
	samples := make([][]string, len(ok))
	for i, c := range ok {
		pats[i] = c.want
		samples[i] = append(append([]string{}, c.match...), c.noMatch...)
	}
	for i, r := range ecmaOracle(t, pats, samples) {
		c := ok[i]
		if r.Err != "" {
			t.Errorf("%q → %q: ECMA-262 u-mode refuses it: %s", c.in, c.want, r.Err)
			continue
		}
		for j, m := range r.Matches {
			if want := j < len(c.match); m != want {
				t.Errorf("%q → %q: ECMA-262 match(%q) = %t, want %t", c.in, c.want, samples[i][j], m, want)
			}
		}
	}
}

// TestPortablePatternOracleCatchesDialects proves the oracle can fail: the
// raw dialect patterns of the table are refused by ECMA-262 u-mode.
func TestPortablePatternOracleCatchesDialects(t *testing.T) {
	raw := []string{`^[a-zA-Z0-9_\-\:]+$`, `\A[a-z]+\z`, "^\\x{60}$", `a\ b`, `(?i)ab`, `a\-b`}
	res := ecmaOracle(t, raw, make([][]string, len(raw)))
	for i, r := range res {
		if r.Err == "" {
			t.Errorf("%q: ECMA-262 u-mode accepted a pattern it should refuse", raw[i])
		}
	}
}

func FuzzPortablePattern(f *testing.F) {
	for _, c := range patternCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, p string) {
		out, err := portablePattern(p)
		if err != nil {
			return
		}
		if _, err := regexp.Compile(out); err != nil {
			t.Fatalf("%q → %q: not RE2: %v", p, out, err)
		}
		// Translating the output again changes nothing.
		again, err := portablePattern(out)
		if err != nil || (again != out && !strings.Contains(out, "/")) {
			t.Fatalf("%q → %q → %q, %v", p, out, again, err)
		}
	})
}

// schemaPatterns collects every pattern and patternProperties key of a
// schema (keywords holding data are skipped; maps of named subschemas are
// walked whatever their names).
func schemaPatterns(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "pattern":
				if s, ok := e.(string); ok {
					*out = append(*out, s)
				}
			case "patternProperties":
				if pp, ok := e.(map[string]any); ok {
					for p := range pp {
						*out = append(*out, p)
					}
				}
			case "enum", "const", "default", "examples":
				continue
			}
			if named, ok := e.(map[string]any); ok && (k == "properties" || k == "patternProperties" || k == "$defs" || k == "dependentSchemas") {
				for _, sub := range named {
					schemaPatterns(sub, out)
				}
				continue
			}
			schemaPatterns(e, out)
		}
	case []any:
		for _, e := range x {
			schemaPatterns(e, out)
		}
	}
}

// TestPatternsFromOtherDialects: every pattern of testdata/patterns.yaml
// comes out as an ECMA-262 unicode-mode pattern (checked by node) or, when
// it has none, leaves the schema for the description.
func TestPatternsFromOtherDialects(t *testing.T) {
	res := loadGenerate(t, "testdata/patterns.yaml", GenerateOptions{})
	var pats []string
	for _, tool := range res.Tools {
		for _, raw := range []json.RawMessage{tool.InputSchema, tool.OutputSchema} {
			if raw == nil {
				continue
			}
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			schemaPatterns(v, &pats)
		}
	}
	want := map[string]bool{
		`^[a-zA-Z0-9_\-:]+$`: true, `^\d{4}-\d{2}-\d{2}$`: true, "^[A-Za-z\u017f\u212a]{3}$": true, // ſ and the Kelvin sign fold to s and k
		"^`[a-z ]+`$": true, `^\/srv\/[\w \-\.]+#\d+$`: true, `^_id:\d+(?:\n?$)`: true, `^x-[a-z]+$`: true,
	}
	for _, p := range pats {
		if !want[p] {
			t.Errorf("unexpected pattern %q in the schemas", p)
		}
		delete(want, p)
	}
	for p := range want {
		t.Errorf("pattern %q missing from the schemas", p)
	}
	props, _, _ := inputProps(t, findTool(t, res, "getTag"))
	if d := props["password"]["description"]; d != "A password.\n\nMust match the pattern `^(?=.*\\d).{8,}$`." {
		t.Errorf("dropped pattern: description = %q", d)
	}
	if _, ok := props["password"]["pattern"]; ok {
		t.Error("a lookahead pattern stayed in the schema")
	}
	for i, r := range ecmaOracle(t, pats, make([][]string, len(pats))) {
		if r.Err != "" {
			t.Errorf("pattern %q: ECMA-262 u-mode refuses it: %s", pats[i], r.Err)
		}
	}
}
