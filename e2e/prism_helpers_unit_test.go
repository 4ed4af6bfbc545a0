package e2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// TestExchangeVerdict: the verdict comes from Prism's router and
// validators only, and what Prism cannot judge is kept apart.
func TestExchangeVerdict(t *testing.T) {
	unroutable := unroutablePatterns([]string{"/{Bucket}#acl", "/pets/{id}", "/{Bucket}/{Key}#uploads", "/search?q={q}"})
	verdict := func(s string) *prismVerdict {
		var v prismVerdict
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return &v
	}
	jsonBody := http.Header{"Content-Type": {"application/json"}}
	xmlBody := http.Header{"Content-Type": {"application/xml"}}
	cases := []struct {
		name    string
		e       exchange
		want    string
		classes []string
	}{
		{"clean", exchange{Verdict: verdict(`{"exchange":"1","security":[],"input":[]}`)}, verdictAccepted, nil},
		{"warnings only", exchange{Verdict: verdict(`{"exchange":"1","input":[{"path":["query","x"],"code":"deprecated","severity":"warning"}]}`)}, verdictAccepted, nil},
		{"body required", exchange{Header: jsonBody, Verdict: verdict(`{"exchange":"1","input":[
			{"path":["body"],"code":"required","severity":"error"},{"path":["body","a"],"code":"type","severity":"error"},
			{"path":["body"],"code":"required","severity":"error"}]}`)}, verdictRefused, []string{"body:required", "body:type"}},
		{"security", exchange{Verdict: verdict(`{"exchange":"1","security":[{"code":"401","severity":"error"}],"input":[]}`)}, verdictRefused, []string{"security"}},
		{"route", exchange{Target: upstreamBase + "/no/where/else?x=1", Verdict: verdict(`{"exchange":"1","route":{"type":"NO_PATH_MATCHED_ERROR"}}`)},
			verdictRefused, []string{"route:NO_PATH_MATCHED_ERROR"}},
		{"fragment route", exchange{Target: upstreamBase + "/b1/k1?uploads=true", Verdict: verdict(`{"exchange":"1","route":{"type":"NO_PATH_MATCHED_ERROR"}}`)},
			verdictUnjudged, []string{"prism:unroutable-key"}},
		{"query in the key", exchange{Target: upstreamBase + "/search?q=a&q=a", Verdict: verdict(`{"exchange":"1","route":{"type":"NO_PATH_MATCHED_ERROR"}}`)},
			verdictUnjudged, []string{"prism:unroutable-key"}},
		{"required in an optional body", exchange{Header: jsonBody, Verdict: verdict(`{"exchange":"1","operation":{"method":"post","path":"/u","body":{"required":false,"mediaTypes":["application/json"]}},
			"input":[{"path":["body"],"code":"required","severity":"error"},{"path":["body","a"],"code":"required","severity":"error"}]}`)},
			verdictRefused, []string{"body:required-optional-body", "body:required"}},
		{"reserved headers", exchange{Verdict: verdict(`{"exchange":"1","input":[
			{"path":["header"],"code":"required","message":"Request header must have required property 'content-type'","severity":"error"},
			{"path":["header","accept"],"code":"enum","severity":"error"}]}`)}, verdictUnjudged, []string{"prism:reserved-header"}},
		{"other header", exchange{Verdict: verdict(`{"exchange":"1","input":[
			{"path":["header"],"code":"required","message":"Request header must have required property 'x-tenant'","severity":"error"}]}`)},
			verdictRefused, []string{"header:required"}},
		{"form: absent deepObject, repeated array key", exchange{Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
			Body: []byte("a=1&ev=x&ev=y&meta%5Bk%5D=v"), Verdict: verdict(`{"exchange":"1","input":[
			{"path":["body","usage"],"code":"required","severity":"error"},
			{"path":["body","ev"],"code":"type","message":"Request body property ev must be array","severity":"error"}]}`)},
			verdictUnjudged, []string{"prism:absent-object", "prism:form-array"}},
		{"form: a present property", exchange{Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
			Body: []byte("a=1&meta%5Bk%5D=v"), Verdict: verdict(`{"exchange":"1","input":[
			{"path":["body","meta"],"code":"required","severity":"error"}]}`)}, verdictRefused, []string{"body:required"}},
		{"form: one value where an array is wanted", exchange{Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
			Body: []byte("ev=x"), Verdict: verdict(`{"exchange":"1","input":[
			{"path":["body","ev"],"code":"type","message":"Request body property ev must be array","severity":"error"}]}`)},
			verdictUnjudged, []string{"prism:form-array"}},
		{"form: absent and present deepObject members", exchange{Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
			Body: []byte("m%5Bc%5D%5Btype%5D=online&n=1"), Verdict: verdict(`{"exchange":"1","input":[
			{"path":["body","m","c","online"],"code":"required","severity":"error"},
			{"path":["body","m","c"],"code":"required","severity":"error"}]}`)},
			verdictRefused, []string{"body:required"}},
		{"form: a value of the wrong type", exchange{Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
			Body: []byte("n=abc"), Verdict: verdict(`{"exchange":"1","input":[
			{"path":["body","n"],"code":"type","message":"Request body property n must be integer","severity":"error"}]}`)},
			verdictRefused, []string{"body:type"}},
		{"query: absent deepObject, type list, oneOf", exchange{Target: upstreamBase + "/s?label=a&expand=x",
			Verdict: verdict(`{"exchange":"1","input":[
			{"path":["query","customer_details"],"code":"required","severity":"error"},
			{"path":["query","label"],"code":"type","message":"Request query parameter label must be array,null","severity":"error"},
			{"path":["path","id"],"code":"oneOf","severity":"error"}]}`)},
			verdictUnjudged, []string{"prism:absent-object", "prism:array-type-list", "prism:param-oneOf"}},
		{"query: an array item", exchange{Target: upstreamBase + "/s?properties=%7B%7D",
			Verdict: verdict(`{"exchange":"1","input":[{"path":["query","properties","0"],"code":"type","message":"must be object","severity":"error"}]}`)},
			verdictRefused, []string{"query:type"}},
		{"query: a wrong value", exchange{Target: upstreamBase + "/s?n=0",
			Verdict: verdict(`{"exchange":"1","input":[{"path":["query","n"],"code":"minimum","severity":"error"}]}`)},
			verdictRefused, []string{"query:minimum"}},
		{"multipart: a repeated part", exchange{Header: http.Header{"Content-Type": {"multipart/form-data; boundary=b"}},
			Body:    []byte("--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nx\r\n--b\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\ny\r\n--b--"),
			Verdict: verdict(`{"exchange":"1","input":[{"path":["body","f"],"code":"type","message":"Request body property f must be array","severity":"error"}]}`)},
			verdictUnjudged, []string{"prism:form-array"}},
		{"multipart: a JSON part", exchange{Header: http.Header{"Content-Type": {"multipart/form-data; boundary=b"}},
			Body: []byte("--b\r\nContent-Disposition: form-data; name=\"o\"\r\nContent-Type: application/json\r\n\r\n{}\r\n--b--"),
			Verdict: verdict(`{"exchange":"1","input":[{"path":["body","o"],"code":"type","message":"Request body property o must be object","severity":"error"},
			{"path":["body","o"],"code":"","message":"Reserved characters used in request body","severity":"error"}]}`)},
			verdictUnjudged, []string{"prism:multipart-json-part"}},
		{"octet-stream body against an object schema", exchange{Header: http.Header{"Content-Type": {"application/octet-stream"}},
			Verdict: verdict(`{"exchange":"1","input":[{"path":["body"],"code":"type","message":"Request body must be object","severity":"error"}]}`)},
			verdictUnjudged, []string{"prism:unparsed-body"}},
		{"octet-stream body, format byte", exchange{Header: http.Header{"Content-Type": {"application/octet-stream"}},
			Verdict: verdict(`{"exchange":"1","input":[{"path":["body"],"code":"format","severity":"error"}]}`)},
			verdictRefused, []string{"body:format"}},
		{"415 no media type", exchange{Header: jsonBody, Verdict: verdict(`{"exchange":"1","operation":{"method":"post","path":"/u","body":{"required":true,"mediaTypes":[]}},
			"input":[{"code":"415","severity":"error"}]}`)}, verdictUnjudged, []string{"prism:no-media-type"}},
		{"415 body to an operation without one", exchange{Header: jsonBody, Verdict: verdict(`{"exchange":"1","operation":{"method":"get","path":"/u","body":null},
			"input":[{"code":"415","severity":"error"}]}`)}, verdictRefused, []string{"content-type"}},
		{"xml body", exchange{Header: xmlBody, Verdict: verdict(`{"exchange":"1","input":[{"path":["body"],"code":"type","severity":"error"}]}`)},
			verdictUnjudged, []string{"prism:xml-body"}},
		{"xml body and a real violation", exchange{Header: xmlBody, Target: upstreamBase + "/x?n=0", Verdict: verdict(`{"exchange":"1","input":[
			{"path":["body"],"code":"type","severity":"error"},{"path":["query","n"],"code":"minimum","severity":"error"}]}`)},
			verdictRefused, []string{"query:minimum"}},
		{"a schema Prism could not compile", exchange{Verdict: verdict(`{"exchange":"1","input":[],"compileErrors":["can't resolve reference"]}`)},
			verdictUnjudged, []string{"prism:schema-compile"}},
		{"a schema Prism could not compile, and a violation", exchange{Target: upstreamBase + "/x?n=0", Verdict: verdict(`{"exchange":"1","compileErrors":["x"],
			"input":[{"path":["query","n"],"code":"minimum","severity":"error"}]}`)}, verdictRefused, []string{"query:minimum"}},
		{"validator threw", exchange{Verdict: verdict(`{"exchange":"1","error":"TypeError"}`)}, verdictUnjudged, []string{"prism-exception"}},
		{"no verdict", exchange{}, verdictUnjudged, []string{"no-verdict"}},
		{"outside the base path", exchange{BasePathError: "x", Verdict: verdict(`{"exchange":"1"}`)}, verdictRefused, []string{"base-path"}},
		{"unreachable", exchange{ForwardError: "refused"}, verdictUnjudged, []string{"prism-unreachable"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, classes := c.e.verdict(unroutable)
			if got != c.want || !slices.Equal(classes, c.classes) {
				t.Errorf("verdict = %s %v, want %s %v", got, classes, c.want, c.classes)
			}
		})
	}
}

// TestUnroutablePatterns: only keys with a #fragment or a literal query
// give patterns, and a pattern matches the request paths of its key
// without them.
func TestUnroutablePatterns(t *testing.T) {
	res := unroutablePatterns([]string{"/plain/{id}", "/{Bucket}#acl", "/a.b/{Key}#x&y", "/search/{kind}?query={q}"})
	if len(res) != 3 {
		t.Fatalf("%d patterns, want 3", len(res))
	}
	for _, c := range []struct {
		re    int
		path  string
		match bool
	}{
		{0, "/b1", true}, {0, "/b1/k", false}, {0, "/", false},
		{1, "/a.b/k1", true}, {1, "/aXb/k1", false}, {1, "/a.b/k1/x", false},
		{2, "/search/users", true}, {2, "/search", false},
	} {
		if got := res[c.re].MatchString(c.path); got != c.match {
			t.Errorf("pattern %s on %q = %v, want %v", res[c.re], c.path, got, c.match)
		}
	}
}
