package audit_test

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/mcpgate/mcpgate/audit"
)

func Example() {
	clock := time.Date(2026, 7, 28, 9, 30, 0, 0, time.UTC)
	rec := audit.NewRecorder(audit.NewWriterSink(os.Stdout), audit.Options{
		Replica: "mcpgate-0",
		Now:     func() time.Time { return clock },
	})
	// When a tools/call starts:
	e := rec.Start(audit.Call{
		Subject: "alice", API: "petstore", Tool: "getPet", Method: "GET", Path: "/pets/{petId}",
		Arguments: json.RawMessage(`{"petId":2}`),
	})
	ctx := audit.WithEntry(context.Background(), e) // audit.Transport records the upstream status from it
	_ = ctx
	e.Upstream(200)
	clock = clock.Add(4 * time.Millisecond)
	// When it ends:
	e.Finish(audit.Result{})
	_ = rec.Close(context.Background())
	// Output:
	// {"time":"2026-07-28T09:30:00Z","kind":"tools/call","replica":"mcpgate-0","subject":"alice","api":"petstore","tool":"getPet","method":"GET","path":"/pets/{petId}","arguments_sha256":"cGMfZCGRMIc7lUw-1s2GjEUJFimIa88jWx0V_XP5PHo","http_status":200,"outcome":"ok","duration_ms":4}
}

func ExampleFormat() {
	recs := []audit.Record{{
		Time: time.Date(2026, 7, 28, 9, 30, 0, 0, time.UTC), Kind: audit.KindToolCall, Subject: "alice",
		API: "petstore", Tool: "deletePet", Method: "DELETE", Path: "/pets/{petId}",
		HTTPStatus: 204, Outcome: audit.OK, DurationMS: 12.5, Replica: "mcpgate-0",
	}}
	_ = audit.Format(os.Stdout, recs, "text")
	// Output:
	// TIME                  KIND        SUBJECT  TOOL                CALL                  STATUS    OUTCOME  DURATION  REPLICA
	// 2026-07-28T09:30:00Z  tools/call  alice    petstore/deletePet  DELETE /pets/{petId}  http 204  ok       12.5ms    mcpgate-0
}
