// Package tasks is the task authority of mcpgate: the domain model, the state
// machine and the execution runtime behind the MCP Tasks extension
// (io.modelcontextprotocol/tasks, spec revision 2026-07-28).
//
// # Ownership
//
// This package owns task state and its legal transitions. The mcp package owns
// the wire: it maps tasks/get, tasks/update, tasks/cancel, CreateTaskResult
// and notifications/tasks onto a [Store]. Payloads that belong to the wire (a
// CallToolResult, a JSON-RPC error object, input requests and responses)
// travel through this package as opaque [encoding/json.RawMessage] values and
// are stored and returned unchanged. This package never imports mcp.
//
// Storage is pluggable ([Manager] = [Store] + [WorkerStore]): [Memory] here
// (development and tests only, bounded), package sqlite for the durable
// default (one machine; several processes may share its file) and package
// postgres for replicas sharing one database. Package store opens any of
// them from a location URL. Package taskstest holds the contract every
// manager must pass.
//
// What a task keeps for its worker beyond its call is stored with it and
// deleted when it ends: the handler's [Stage] and Checkpoint (where it
// stands, for recovery) and a secret sealed by a [Sealer] ([Secrets]: the
// caller's credential, so that any runner acts as the caller).
//
// # State machine
//
//	create ──► working ◄──────────► input_required
//	              │                      │
//	              └──────────┬───────────┘
//	                         ▼
//	       completed | failed | cancelled   (terminal, immutable)
//
// working → input_required when a handler asks for input
// ([WorkerStore.RequireInput]); input_required → working when the client has
// answered every outstanding key ([Store.Update]); either → completed (a
// result, tool errors included), failed (a JSON-RPC error: protocol-level
// failures only) or cancelled. The rules are methods on *[Task]
// (AcceptInput, RequestCancel, TakeLease, Renew, AskInput, Finish, ...):
// a manager loads a task, applies one of them inside its atomic section and
// stores the result, so every store shares one state machine.
//
// # Invariants
//
// Every [Manager] keeps these (package taskstest checks them):
//
//   - Terminal states never change; nothing else changes a terminal task.
//   - A task id carries at least 128 bits from crypto/rand ([NewID]).
//   - Every task is bound to the [Principal] (subject and tenant) that created
//     it. An unknown, expired or foreign id yields [ErrNotFound] itself, with
//     its one message, from Get, Update and Cancel alike.
//   - Create returns only once Get would find the task (for a durable
//     manager: committed).
//   - Input request keys are unique over a task's lifetime: an answered key
//     is never outstanding again and its answer is kept; answers to keys that
//     are not outstanding are ignored.
//   - Worker writes are fenced: a worker acts through a [Lease] whose token
//     every claim increments, so a worker whose task was taken over can no
//     longer change it ([ErrLeaseLost]).
//   - Cancel on a terminal task is an idempotent no-op. Cancel on a task no
//     live worker holds cancels it at once; otherwise it records intent that
//     the worker sees (context cause [ErrCancelRequested]).
//
// # Execution and recovery
//
// [Runner] runs [Handler]s with bounded concurrency, renews leases
// (heartbeat), passes cancelation through the context, supports input rounds
// ([Exec.RequireInput]) and records outcomes: a returned result is completed
// (isError or not); a returned error is failed, with the code and message of
// an [*RPCError] or else a generic -32603 "Internal error".
//
// Recovery is one mechanism, owned by [Runner.Run]: its workers start
// first; then it takes over every task whose lease has lapsed, in passes
// that wait for the workers until none is left (a crash may leave more
// tasks than the backlog holds), and again every RunnerConfig.Scan. A lease
// that is still renewed belongs to a live worker, in this process or
// another one sharing the store, and is left alone: only tasks whose owner
// stopped renewing are taken over. Such a task is claimed (fenced) and then
//
//   - cancelled, if the client asked to cancel it;
//   - run again, if it never started (token 0), if its handler is
//     Idempotent, or if the handler's last recorded [Stage] says a re-run
//     is safe: fresh (nothing irreversible done; with
//     RunnerConfig.Checkpointing no stage means the same) or resumable
//     (the handler's Checkpoint says how to go on, say the status URL of an
//     accepted operation). Answered input is replayed, not asked again;
//   - failed with error -32603 otherwise: with status message [MsgInDoubt]
//     when the handler recorded that its request may have reached the API,
//     [MsgInterrupted] when nothing is known, [MsgNoHandler] when no
//     handler knows its tool.
//
// So no task stays working once its worker is gone; TTL retention
// ([WorkerStore.Sweep]) removes every task, finished or not, once
// CreatedAt+TTL has passed.
//
// # Notifications
//
// A [Publisher] carries task ids only, after each committed client-visible
// change. A receiver (the mcp layer) does a fresh authorized Get before
// telling anyone anything. [Bus] is the in-process publisher: bounded
// per-subscriber buffers, events dropped for slow subscribers, so publishing
// never blocks a worker; polling stays authoritative.
package tasks
