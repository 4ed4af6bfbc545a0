package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/tasks"
)

// TestTaskDeliveryChecks: what a poll delivers is checked when it is
// delivered. A stored result or input request that is not well formed fails
// the poll with a fixed internal error (nothing of it reaches the client,
// the task is unchanged), and outstanding input the polling client cannot
// answer fails the poll with -32021.
func TestTaskDeliveryChecks(t *testing.T) {
	ctx := context.Background()
	mgr := tasks.NewMemory(100, tasks.Options{})
	runner, err := tasks.NewRunner(tasks.RunnerConfig{Manager: mgr})
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(Implementation{Name: "delivery", Version: "1"}, nil)
	if err := s.EnableTasks(TaskConfig{Runner: runner}); err != nil {
		t.Fatal(err)
	}
	owner := Principal{Subject: "alice"}
	newTask := func(finish func(l tasks.Lease) error) string {
		task, err := mgr.Create(ctx, tasks.NewTask{Owner: taskPrincipal(owner), ToolName: "t"})
		if err != nil {
			t.Fatal(err)
		}
		claimed, err := mgr.Claim(ctx, tasks.Claim{TaskID: task.ID, Owner: "w", For: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := finish(claimed.Lease()); err != nil {
			t.Fatal(err)
		}
		return task.ID
	}
	client := func(caps ClientCapabilities) *Client {
		c := NewClient(s)
		c.Principal = owner
		caps.Extensions = map[string]json.RawMessage{ExtensionTasks: json.RawMessage("{}")}
		c.Capabilities = caps
		return c
	}
	get := func(c *Client, id string) *Response {
		r, err := c.Do(ctx, "tasks/get", map[string]any{"taskId": id})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// A completed task whose stored result is not a JSON object.
	bad := newTask(func(l tasks.Lease) error {
		return mgr.Finish(ctx, l, tasks.Completed, json.RawMessage(`"secret internal detail"`), "")
	})
	r := get(client(ClientCapabilities{}), bad)
	if r.Error == nil || r.Error.Code != CodeInternalError || r.Error.Message != "Internal error" || strings.Contains(string(r.Error.Data), "secret") {
		t.Fatalf("an invalid stored result must fail the poll with a fixed internal error: %+v %s", r.Error, r.Result)
	}
	if got, _ := mgr.Get(ctx, taskPrincipal(owner), bad); got.Status != tasks.Completed {
		t.Fatalf("the failed delivery changed the task: %s", got.Status)
	}

	// A task waiting for an elicitation the polling client cannot answer.
	waiting := newTask(func(l tasks.Lease) error {
		_, err := mgr.RequireInput(ctx, l, map[string]json.RawMessage{
			"q": json.RawMessage(`{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}}`),
		}, "waiting")
		return err
	})
	r = get(client(ClientCapabilities{}), waiting)
	if r.Error == nil || r.Error.Code != CodeMissingRequiredClientCapability || !strings.Contains(string(r.Error.Data), "elicitation") {
		t.Fatalf("input the client cannot answer must fail the poll with -32021: %+v", r.Error)
	}
	r = get(client(ClientCapabilities{Elicitation: &ElicitationCapability{}}), waiting)
	if r.Error != nil || !strings.Contains(string(r.Result), `"status":"input_required"`) || !strings.Contains(string(r.Result), `"inputRequests"`) {
		t.Fatalf("a client that can answer sees the input requests: %+v %s", r.Error, r.Result)
	}

	// A foreign caller cannot tell the task exists.
	other := client(ClientCapabilities{})
	other.Principal = Principal{Subject: "bob"}
	foreign, unknown := get(other, waiting), get(other, "no-such-task")
	if foreign.Error == nil || unknown.Error == nil || foreign.Error.Code != unknown.Error.Code || foreign.Error.Message != unknown.Error.Message {
		t.Fatalf("foreign %+v vs unknown %+v", foreign.Error, unknown.Error)
	}
}
