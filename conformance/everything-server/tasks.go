package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpgate/mcpgate/mcp"
	"github.com/mcpgate/mcpgate/tasks"
)

// taskRuntime is the Tasks extension of the fixture server: an explicit
// in-memory manager (the fixture keeps nothing across restarts), its
// publisher and a runner.
type taskRuntime struct {
	runner *tasks.Runner
}

func (f *fixtures) taskTools(logger *slog.Logger) (*taskRuntime, error) {
	bus := tasks.NewBus(0)
	mgr := tasks.NewMemory(10_000, tasks.Options{Publisher: bus})
	runner, err := tasks.NewRunner(tasks.RunnerConfig{Manager: mgr, Publisher: bus, Concurrency: 16, Poll: 200 * time.Millisecond, Logger: logger})
	if err != nil {
		return nil, err
	}
	if err := f.s.EnableTasks(mcp.TaskConfig{Runner: runner, TTL: time.Hour, PollInterval: 500 * time.Millisecond}); err != nil {
		return nil, err
	}
	if err := f.s.AddTool(&mcp.Tool{Name: "greet", Description: "Greets someone (always synchronous)",
		InputSchema: []byte(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Name string `json:"name"`
			}
			if err := r.Bind(&in); err != nil {
				return mcp.ToolError("Invalid arguments: " + err.Error()), nil
			}
			return text("Hello, " + in.Name + "!"), nil
		}); err != nil {
		return nil, err
	}
	confirm := mcp.ElicitForm("Delete the file?", formSchema("confirm", "boolean", "Delete it"))
	list := []mcp.TaskTool{
		{
			Tool:    mcp.Tool{Name: "slow_compute", Description: "Sleeps for a number of seconds, then answers (runs as a task when the client supports tasks)", InputSchema: []byte(`{"type":"object","properties":{"seconds":{"type":"number","minimum":0},"label":{"type":"string"}},"required":["seconds"]}`)},
			Support: mcp.TaskOptional, Idempotent: true,
			Run: func(ctx context.Context, r *mcp.TaskRequest) (*mcp.CallToolResult, error) {
				var in struct {
					Seconds float64 `json:"seconds"`
					Label   string  `json:"label"`
				}
				if err := r.Bind(&in); err != nil {
					return mcp.ToolError("Invalid arguments: " + err.Error()), nil
				}
				if in.Seconds > 0 {
					select {
					case <-time.After(time.Duration(in.Seconds * float64(time.Second))):
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				return text(fmt.Sprintf("Computed %q after %gs", in.Label, in.Seconds)), nil
			},
		},
		{
			Tool:    mcp.Tool{Name: "failing_job", Description: "A task that ends with a tool error"},
			Support: mcp.TaskRequired,
			Run: func(ctx context.Context, r *mcp.TaskRequest) (*mcp.CallToolResult, error) {
				select {
				case <-time.After(time.Second):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return mcp.ToolError("The job failed: the input data was rejected"), nil
			},
		},
		{
			Tool:    mcp.Tool{Name: "protocol_error_job", Description: "A task that fails with a protocol error"},
			Support: mcp.TaskOptional,
			Run: func(ctx context.Context, r *mcp.TaskRequest) (*mcp.CallToolResult, error) {
				return nil, mcp.NewError(mcp.CodeInternalError, "The job could not run: its backend is unavailable", nil)
			},
		},
		{
			Tool:    mcp.Tool{Name: "confirm_delete", Description: "Asks for confirmation, then deletes a file (as a task)", InputSchema: []byte(`{"type":"object","properties":{"filename":{"type":"string"}},"required":["filename"]}`)},
			Support: mcp.TaskOptional,
			Run: func(ctx context.Context, r *mcp.TaskRequest) (*mcp.CallToolResult, error) {
				var in struct {
					Filename string `json:"filename"`
				}
				_ = r.Bind(&in)
				got, err := r.Input(ctx, map[string]mcp.InputRequest{"confirm": confirm})
				if err != nil {
					return nil, err
				}
				if accepted(got["confirm"], "confirm") {
					return text("Deleted " + in.Filename), nil
				}
				return text("Kept " + in.Filename), nil
			},
		},
		{
			Tool:    mcp.Tool{Name: "multi_input", Description: "Asks two questions at once (as a task)"},
			Support: mcp.TaskOptional,
			Run: func(ctx context.Context, r *mcp.TaskRequest) (*mcp.CallToolResult, error) {
				got, err := r.Input(ctx, map[string]mcp.InputRequest{"user_name": askName, "favorite_color": askColor})
				if err != nil {
					return nil, err
				}
				return text(fmt.Sprintf("Name: %s, colour: %s", contentOf(got["user_name"], "name"), contentOf(got["favorite_color"], "color"))), nil
			},
		},
		{
			Tool:    mcp.Tool{Name: "test_tool_with_task", Description: "Asks the user's name, then greets them from a task"},
			Support: mcp.TaskRequired,
			Prepare: func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if _, ok := field(r.Request, "user_name", "name"); ok {
					return nil, nil
				}
				return nil, mcp.RequireInput(map[string]mcp.InputRequest{"user_name": askName}, nil)
			},
			Run: func(ctx context.Context, r *mcp.TaskRequest) (*mcp.CallToolResult, error) {
				got, err := r.Input(ctx, map[string]mcp.InputRequest{"user_name": askName})
				if err != nil {
					return nil, err
				}
				return text("Hello, " + contentOf(got["user_name"], "name") + "!"), nil
			},
		},
	}
	for i := range list {
		if err := f.s.AddTaskTool(&list[i]); err != nil {
			return nil, err
		}
	}
	return &taskRuntime{runner: runner}, nil
}
