package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/bench/internal/benchutil"
	"github.com/mcpgate/mcpgate/bench/internal/mcptest"
	"github.com/mcpgate/mcpgate/demo"
)

func TestGetPet(t *testing.T) {
	up := httptest.NewServer(demo.New(demo.Options{RequireAuth: true, Tokens: map[string]string{"tok": "bench"}}))
	defer up.Close()
	getter, err := benchutil.NewPetGetter(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	auth := http.Header{"Authorization": {"Bearer tok"}}
	for _, sse := range []bool{false, true} {
		srv := httptest.NewServer(newHandler(getter, sse))
		r := mcptest.CallTool(t, srv.URL+"/mcp", "get_pet", `{"id":2}`, auth)
		if r.IsError || r.ResultType != "complete" || len(r.Content) != 1 || r.Content[0].Text != string(r.StructuredContent) ||
			!strings.Contains(string(r.StructuredContent), `"name":"Whiskers"`) {
			t.Errorf("sse=%v: result %+v", sse, r)
		}
		if r := mcptest.CallTool(t, srv.URL+"/mcp", "get_pet", `{"id":999}`, auth); !r.IsError {
			t.Errorf("sse=%v: missing pet is not an error result: %+v", sse, r)
		}
		if r := mcptest.CallTool(t, srv.URL+"/mcp", "get_pet", `{"id":2}`, nil); !r.IsError {
			t.Errorf("sse=%v: call without the caller's token succeeded upstream: %+v", sse, r)
		}
		srv.Close()
	}
}
