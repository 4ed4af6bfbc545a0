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
	fragments := fragmentPatterns([]string{"/{Bucket}#acl", "/pets/{id}", "/{Bucket}/{Key}#uploads"})
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
			verdictUnjudged, []string{"prism:fragment-path"}},
		{"415 no media type", exchange{Header: jsonBody, Verdict: verdict(`{"exchange":"1","operation":{"method":"post","path":"/u","body":{"required":true,"mediaTypes":[]}},
			"input":[{"code":"415","severity":"error"}]}`)}, verdictUnjudged, []string{"prism:no-media-type"}},
		{"415 body to an operation without one", exchange{Header: jsonBody, Verdict: verdict(`{"exchange":"1","operation":{"method":"get","path":"/u","body":null},
			"input":[{"code":"415","severity":"error"}]}`)}, verdictRefused, []string{"content-type"}},
		{"xml body", exchange{Header: xmlBody, Verdict: verdict(`{"exchange":"1","input":[{"path":["body"],"code":"type","severity":"error"}]}`)},
			verdictUnjudged, []string{"prism:xml-body"}},
		{"xml body and a real violation", exchange{Header: xmlBody, Verdict: verdict(`{"exchange":"1","input":[
			{"path":["body"],"code":"type","severity":"error"},{"path":["query","n"],"code":"minimum","severity":"error"}]}`)},
			verdictRefused, []string{"query:minimum"}},
		{"validator threw", exchange{Verdict: verdict(`{"exchange":"1","error":"TypeError"}`)}, verdictUnjudged, []string{"prism-exception"}},
		{"no verdict", exchange{}, verdictUnjudged, []string{"no-verdict"}},
		{"outside the base path", exchange{BasePathError: "x", Verdict: verdict(`{"exchange":"1"}`)}, verdictRefused, []string{"base-path"}},
		{"unreachable", exchange{ForwardError: "refused"}, verdictUnjudged, []string{"prism-unreachable"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, classes := c.e.verdict(fragments)
			if got != c.want || !slices.Equal(classes, c.classes) {
				t.Errorf("verdict = %s %v, want %s %v", got, classes, c.want, c.classes)
			}
		})
	}
}

// TestFragmentPatterns: only #fragment keys give patterns, and a pattern
// matches the request paths of its key with the fragment removed.
func TestFragmentPatterns(t *testing.T) {
	res := fragmentPatterns([]string{"/plain/{id}", "/{Bucket}#acl", "/a.b/{Key}#x&y"})
	if len(res) != 2 {
		t.Fatalf("%d patterns, want 2", len(res))
	}
	for _, c := range []struct {
		re    int
		path  string
		match bool
	}{
		{0, "/b1", true}, {0, "/b1/k", false}, {0, "/", false},
		{1, "/a.b/k1", true}, {1, "/aXb/k1", false}, {1, "/a.b/k1/x", false},
	} {
		if got := res[c.re].MatchString(c.path); got != c.match {
			t.Errorf("pattern %s on %q = %v, want %v", res[c.re], c.path, got, c.match)
		}
	}
}
