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
	srv := httptest.NewServer(newHandler(getter))
	defer srv.Close()
	auth := http.Header{"Authorization": {"Bearer tok"}}
	r := mcptest.CallTool(t, srv.URL+"/mcp", "get_pet", `{"id":2}`, auth)
	if r.IsError || r.ResultType != "complete" || len(r.Content) != 1 || r.Content[0].Text != string(r.StructuredContent) ||
		!strings.Contains(string(r.StructuredContent), `"name":"Whiskers"`) {
		t.Errorf("result %+v", r)
	}
	if r := mcptest.CallTool(t, srv.URL+"/mcp", "get_pet", `{"id":999}`, auth); !r.IsError {
		t.Errorf("missing pet is not an error result: %+v", r)
	}
	if r := mcptest.CallTool(t, srv.URL+"/mcp", "get_pet", `{"id":2}`, nil); !r.IsError {
		t.Errorf("call without the caller's token succeeded upstream: %+v", r)
	}
}
