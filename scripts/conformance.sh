#!/usr/bin/env bash
# Build conformance/everything-server, start it on a free loopback port, run
# the official MCP conformance suite against it (conformance/run.sh, which
# installs the pinned suite and Node 22 from npm on first use), stop it.
#
#   scripts/conformance.sh [run.sh options]     e.g. -x '^tasks-'  or  -v 2025-11-25
#
# Prints run.sh's table; the last line is `conformance: N passed, M failed`.
# Exit code: run.sh's (0 when no selected scenario failed).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BIN="$(mktemp -d)/everything-server"
go build -o "$BIN" ./conformance/everything-server
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 3001)"
LOG="$(dirname "$BIN")/server.log"
"$BIN" -addr "127.0.0.1:$PORT" >"$LOG" 2>&1 &
PID=$!
trap 'kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true' EXIT
rc=0
conformance/run.sh --wait 20 "$@" "http://127.0.0.1:$PORT/mcp" || rc=$?
if ! kill -0 "$PID" 2>/dev/null; then
  echo "conformance.sh: the fixture server died during the run; its log:" >&2
  cat "$LOG" >&2
  rc=1
fi
exit "$rc"
