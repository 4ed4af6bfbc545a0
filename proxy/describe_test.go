package proxy

import (
	"encoding/json"
	"testing"

	"github.com/mcpgate/mcpgate/demo"
)

// TestDescribe: the request a confirmation names is the one the call sends,
// below the base path and without the upstream's address.
func TestDescribe(t *testing.T) {
	p, eps, _ := demoGateway(t, demo.Options{}, nil)
	for _, c := range []struct {
		tool, args, want string
	}{
		{"deletePet", `{"petId":42}`, "DELETE /pets/42"},
		{"deletePet", `{"petId":4.2e1}`, "DELETE /pets/42"},
		{"listPets", `{"limit":5,"tags":["a-b","c"]}`, "GET /pets?limit=5&tags=a-b,c"},
	} {
		got, err := p.Describe(eps[c.tool], json.RawMessage(c.args))
		if err != nil || got != c.want {
			t.Errorf("Describe(%s, %s) = %q, %v; want %q", c.tool, c.args, got, err, c.want)
		}
	}
	if _, err := p.Describe(eps["deletePet"], json.RawMessage(`{}`)); err == nil {
		t.Error("missing petId described")
	}
}
