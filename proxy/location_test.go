package proxy

import (
	"context"
	"net/url"
	"reflect"
	"testing"

	"github.com/mcpgate/mcpgate/openapi"
)

const locationSpec = `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{
 "/reports":{"post":{"operationId":"createReport","responses":{"202":{"description":"accepted"}}}},
 "/reports/{reportId}":{"get":{"operationId":"getReport","parameters":[
   {"name":"reportId","in":"path","required":true,"schema":{"type":"integer"}},
   {"name":"verbose","in":"query","schema":{"type":"boolean"}}],"responses":{"200":{"description":"ok"}}},
   "delete":{"operationId":"deleteReport","parameters":[
   {"name":"reportId","in":"path","required":true,"schema":{"type":"integer"}}],"responses":{"204":{"description":"gone"}}}},
 "/reports/latest":{"get":{"operationId":"latestReport","responses":{"200":{"description":"ok"}}}},
 "/jobs/{job}.json":{"get":{"operationId":"getJob","parameters":[
   {"name":"job","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
 "/ops/{id}":{"get":{"operationId":"getOp","parameters":[
   {"name":"id","in":"path","required":true,"schema":{"type":"string"}},
   {"name":"X-Tenant","in":"header","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}}}}`

func TestStatusCall(t *testing.T) {
	doc, err := openapi.Parse(context.Background(), []byte(locationSpec), "location.json", openapi.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := openapi.Generate(doc, openapi.GenerateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse("https://api.example.com/v1")
	p, err := New(Config{BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	var eps []*Endpoint
	for i := range res.Tools {
		e, err := p.Endpoint(&res.Tools[i])
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, e)
	}
	for _, tc := range []struct {
		location string
		tool     string
		args     map[string]any
	}{
		{"https://api.example.com/v1/reports/7", "getReport", map[string]any{"reportId": int64(7)}},
		{"https://API.example.com:443/v1/reports/7?verbose=true", "getReport", map[string]any{"reportId": int64(7), "verbose": true}},
		{"https://api.example.com/v1/reports/latest", "latestReport", map[string]any{}}, // the literal route is more specific
		{"https://api.example.com/v1/jobs/a%20b.json", "getJob", map[string]any{"job": "a b"}},
		{"https://api.example.com/v1/reports/seven", "", nil},    // not an integer
		{"https://api.example.com/v1/reports/7?page=2", "", nil}, // a query the route does not declare
		{"https://api.example.com/v1/reports/7/rows", "", nil},   // no such route
		{"https://api.example.com/v2/reports/7", "", nil},        // outside the base path
		{"https://api.example.com/v1x/reports/7", "", nil},       // not under the base path either
		{"https://evil.example.net/v1/reports/7", "", nil},       // another origin
		{"http://api.example.com/v1/reports/7", "", nil},         // another scheme
		{"/v1/reports/7", "", nil},                               // not absolute
		{"https://api.example.com/v1/ops/9", "", nil},            // needs a header argument
		{"https://api.example.com/v1/jobs/.json", "", nil},       // empty value
		{"https://api.example.com/v1/reports/%zz", "", nil},      // bad escape
		{"https://api.example.com/v1/reports", "", nil},          // only a POST there
	} {
		tool, args, ok := p.StatusCall(tc.location, eps)
		if ok != (tc.tool != "") || tool != tc.tool || !reflect.DeepEqual(args, tc.args) && tc.tool != "" {
			t.Errorf("StatusCall(%s) = %q %v %v, want %q %v", tc.location, tool, args, ok, tc.tool, tc.args)
		}
	}
	other, _ := New(Config{BaseURL: base})
	if _, _, ok := other.StatusCall("https://api.example.com/v1/reports/7", eps); ok {
		t.Error("endpoints of another Proxy matched")
	}
}
