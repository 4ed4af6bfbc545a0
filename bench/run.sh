#!/usr/bin/env bash
# bench/run.sh — side-by-side benchmark of one GET (pet by id) through:
#   direct        the demo upstream itself                          (plain HTTP)
#   revproxy      a bare httputil.ReverseProxy in front of it        (plain HTTP) — the base
#   gosdk         a hand-written get_pet tool on the official go-sdk (MCP tools/call, 2026-07-28)
#   mcpgo         the same tool on mark3labs/mcp-go                  (MCP tools/call, 2026-07-28)
#   mcpgo-legacy  the same mcp-go server driven with -proto 2025-11-25 (initialize + session)
#   gateway       mcpgate serve on the demo OpenAPI document, with its GC headroom (gctune)
#   gateway-gogc  the same with Go's default GC (--gc-headroom=-1)
# each with the caller's bearer token (which the upstream requires), at each
# client count in CLIENTS, ROUNDS times, and prints the report of
# `mcpgate-bench report`: per target and client count the medians over the
# rounds (rps, p50, p99, CPU per request of the server, the upstream and the
# load generator from /proc, allocations per request and collections per
# second from the server's Go metrics), and the median and spread (min–max,
# rounds won) of the per-round ratios to revproxy.
#
# Rounds are interleaved: round 1 runs every target once, then round 2 ...,
# each round starting one target further down the list, so a ratio compares
# two runs of one round, seconds apart, and no target always follows the
# same one. The machine is shared and small: read ratios within one run, and
# CPU per request rather than rps when the load average (printed) is high.
#
# Everything listens on 127.0.0.1 only; every process started here is stopped on exit.
#
# Usage: bench/run.sh            (from anywhere inside the repository)
# Env:   DUR=3s WARMUP=500ms CLIENTS="1 16 64" ROUNDS=5 PORT_BASE=18080
#        GCTUNE=both|on|off   which gateway targets run: gateway (gctune), gateway-gogc, or both
#        GATEWAY=0            leave mcpgate out;  GATEWAY_ARGS="--check-output" adds flags to it
#        ONLY="gateway-gogc"  run only these targets (and revproxy, the base)
#        RAW=file             keep the runs' JSON lines there (re-read with mcpgate-bench report FILE)
#        PROFILE=dir          build mcpgate with -tags pprof and save, for every gateway run, a CPU
#                             profile and the allocation profiles before and after it into dir
#        BASE=rev             also run mcpgate as built from git revision rev (gateway-base,
#                             gateway-gogc-base), side by side with the working tree's
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DUR=${DUR:-3s}
WARMUP=${WARMUP:-500ms}
ROUNDS=${ROUNDS:-5}
CLIENTS=${CLIENTS:-"1 16 64"}
PORT_BASE=${PORT_BASE:-18080}
GATEWAY=${GATEWAY:-1}
GATEWAY_ARGS=${GATEWAY_ARGS:-}
GCTUNE=${GCTUNE:-both}
ONLY=${ONLY:-}
PROFILE=${PROFILE:-}
BASE=${BASE:-}

case "$GCTUNE" in on | off | both) ;; *)
	echo "bench/run.sh: GCTUNE=$GCTUNE: want on, off or both" >&2
	exit 2
	;;
esac
if [ -n "$PROFILE" ]; then
	if ! [[ "$DUR" =~ ^[0-9]+s$ ]]; then
		echo "bench/run.sh: PROFILE needs DUR in whole seconds (e.g. 5s), not $DUR" >&2
		exit 2
	fi
	mkdir -p "$PROFILE"
	PROFILE=$(cd "$PROFILE" && pwd)
fi

GATEWAY_PORT=$PORT_BASE
UPSTREAM_PORT=$((PORT_BASE + 1))
REVPROXY_PORT=$((PORT_BASE + 2))
GOSDK_PORT=$((PORT_BASE + 3))
MCPGO_PORT=$((PORT_BASE + 4))
GATEWAY_GOGC_PORT=$((PORT_BASE + 5))
BASE_GATEWAY_PORT=$((PORT_BASE + 6))
BASE_GATEWAY_GOGC_PORT=$((PORT_BASE + 7))
UPSTREAM=http://127.0.0.1:$UPSTREAM_PORT
# The bench servers serve their Go metrics on a port of their own (PORT+10);
# mcpgate has them at /metrics. pprof (PROFILE) listens on PORT+20.
metrics_url() { echo "http://127.0.0.1:$(($1 + 10))/metrics"; }

BIN=$(mktemp -d "${TMPDIR:-/tmp}/mcpgate-bench.XXXXXX")
RAW=${RAW:-$BIN/runs.jsonl}
: >"$RAW"
PIDS=()
declare -A PID_OF
cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$BIN"
}
trap cleanup EXIT INT TERM

echo "building into $BIN ..." >&2
# The comparison servers are the nested module bench/ (their MCP libraries stay
# out of mcpgate's go.mod); the harness and mcpgate are mcpgate's own module.
(cd "$ROOT/bench" && go build -o "$BIN/" ./upstream ./revproxy ./gosdk ./mcpgo)
(cd "$ROOT" && go build -o "$BIN/" ./cmd/mcpgate-bench)
if [ "$GATEWAY" = 1 ]; then
	tags=()
	if [ -n "$PROFILE" ]; then tags=(-tags pprof); fi
	(cd "$ROOT" && go build "${tags[@]}" -o "$BIN/" ./cmd/mcpgate)
	if [ -n "$BASE" ]; then
		echo "building mcpgate at $BASE ($(git -C "$ROOT" rev-parse --short "$BASE")) ..." >&2
		mkdir -p "$BIN/base-src" "$BIN/base"
		git -C "$ROOT" archive "$BASE" | tar -x -C "$BIN/base-src"
		(cd "$BIN/base-src" && go build -o "$BIN/base/" ./cmd/mcpgate)
	fi
fi

port_busy() { curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$1/"; }

# start NAME PORT CMD...: start a server in the background and wait until it answers.
start() {
	local name=$1 port=$2
	shift 2
	if port_busy "$port" || port_busy $((port + 10)); then
		echo "port $port or $((port + 10)) (for $name) is already in use; set PORT_BASE" >&2
		exit 1
	fi
	"$@" 2>"$BIN/$name.log" &
	PIDS+=($!)
	PID_OF[$name]=$!
	for _ in $(seq 100); do
		port_busy "$port" && return 0
		sleep 0.1
	done
	echo "$name did not start on port $port:" >&2
	cat "$BIN/$name.log" >&2
	exit 1
}

# bench_server NAME PORT: one of the comparison servers, with its metrics listener.
bench_server() {
	local name=$1 port=$2
	shift 2
	start "$name" "$port" "$BIN/$name" -addr "127.0.0.1:$port" -metrics "127.0.0.1:$((port + 10))" "$@"
}
# Every request carries a bearer token, which the upstream requires and every
# target forwards: mcpgate's per-call work on the caller's credential is part
# of what is measured.
TOKEN=bench-token
bench_server upstream "$UPSTREAM_PORT" -tokens "$TOKEN=bench"
bench_server revproxy "$REVPROXY_PORT" -upstream "$UPSTREAM"
bench_server gosdk "$GOSDK_PORT" -upstream "$UPSTREAM"
bench_server mcpgo "$MCPGO_PORT" -upstream "$UPSTREAM"

# Targets: name|server process|port of its pprof listener (gateways, with
# PROFILE)|harness flags. The GET is always pet 1 of the demo API.
TARGETS=(
	"direct|upstream||-mode http -url $UPSTREAM/pets/1 -metrics srv=$(metrics_url "$UPSTREAM_PORT")"
	"revproxy|revproxy||-mode http -url http://127.0.0.1:$REVPROXY_PORT/pets/1 -metrics srv=$(metrics_url "$REVPROXY_PORT")"
	"gosdk|gosdk||-mode mcp -url http://127.0.0.1:$GOSDK_PORT/mcp -tool get_pet -args {\"id\":1} -metrics srv=$(metrics_url "$GOSDK_PORT")"
	"mcpgo|mcpgo||-mode mcp -url http://127.0.0.1:$MCPGO_PORT/mcp -tool get_pet -args {\"id\":1} -metrics srv=$(metrics_url "$MCPGO_PORT")"
	"mcpgo-legacy|mcpgo||-mode mcp -proto 2025-11-25 -url http://127.0.0.1:$MCPGO_PORT/mcp -tool get_pet -args {\"id\":1} -metrics srv=$(metrics_url "$MCPGO_PORT")"
)

# ---- mcpgate serve on the demo document (the tool is getPet) ----------------
# The task store is in memory. gateway keeps mcpgate's default GC headroom
# (package gctune); gateway-gogc runs with Go's default collector.
# The per-call log line is off (--log-level warn), as no other target logs.
# start_gateway NAME PORT BINARY [FLAGS...]
start_gateway() {
	local name=$1 port=$2 binary=$3 pprof=
	shift 3
	local env=()
	if [ -n "$PROFILE" ] && [ "$binary" = "$BIN/mcpgate" ]; then
		pprof=$((port + 20))
		env=(env "PPROF_ADDR=127.0.0.1:$pprof")
	fi
	# shellcheck disable=SC2086 # GATEWAY_ARGS is word-split on purpose
	start "$name" "$port" "${env[@]}" "$binary" serve --store memory --log-level warn \
		--spec "$ROOT/demo/openapi.json" --upstream "$UPSTREAM" --addr "127.0.0.1:$port" "$@" $GATEWAY_ARGS
	TARGETS+=("$name|$name|$pprof|-mode mcp -url http://127.0.0.1:$port/mcp -tool getPet -args {\"petId\":1} -metrics srv=http://127.0.0.1:$port/metrics")
}
if [ "$GATEWAY" = 1 ]; then
	if [ "$GCTUNE" != off ]; then start_gateway gateway "$GATEWAY_PORT" "$BIN/mcpgate"; fi
	if [ "$GCTUNE" != on ]; then start_gateway gateway-gogc "$GATEWAY_GOGC_PORT" "$BIN/mcpgate" --gc-headroom=-1; fi
	if [ -n "$BASE" ] && [ "$GCTUNE" != off ]; then start_gateway gateway-base "$BASE_GATEWAY_PORT" "$BIN/base/mcpgate"; fi
	if [ -n "$BASE" ] && [ "$GCTUNE" != on ]; then
		start_gateway gateway-gogc-base "$BASE_GATEWAY_GOGC_PORT" "$BIN/base/mcpgate" --gc-headroom=-1
	fi
fi
# ------------------------------------------------------------------------------

if [ -n "$ONLY" ]; then
	kept=()
	for t in "${TARGETS[@]}"; do
		name=${t%%|*}
		if [ "$name" = revproxy ] || [[ " $ONLY " == *" $name "* ]]; then kept+=("$t"); fi
	done
	TARGETS=("${kept[@]}")
fi

# profile_start NAME C ROUND PPROF_PORT: start a CPU profile of the run about
# to begin and take the allocation profile before it; profile_end takes the
# one after it and waits for the CPU profile.
profile_start() {
	local base="$PROFILE/$1-c$2-r$3"
	curl -s -o "$base.allocs0.pb.gz" "http://127.0.0.1:$4/debug/pprof/allocs"
	curl -s -o "$base.cpu.pb.gz" "http://127.0.0.1:$4/debug/pprof/profile?seconds=${DUR%s}" &
	PROFILING=$!
}
profile_end() {
	curl -s -o "$PROFILE/$1-c$2-r$3.allocs1.pb.gz" "http://127.0.0.1:$4/debug/pprof/allocs"
	wait "$PROFILING" || true
}

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
for c in $CLIENTS; do
	for round in $(seq "$ROUNDS"); do
		n=${#TARGETS[@]}
		for i in $(seq 0 $((n - 1))); do
			IFS='|' read -r name server pprof flags <<<"${TARGETS[$(((i + round - 1) % n))]}"
			pids=(-pid "srv=${PID_OF[$server]}")
			if [ "$server" != upstream ]; then pids+=(-pid "up=${PID_OF[upstream]}"); fi
			profiling=
			if [ -n "$PROFILE" ] && [ -n "$pprof" ]; then profiling=1; fi
			if [ -n "$profiling" ]; then profile_start "$name" "$c" "$round" "$pprof"; fi
			# shellcheck disable=SC2086 # flags are word-split on purpose
			line=$("$BIN/mcpgate-bench" $flags "${pids[@]}" -header "Authorization: Bearer $TOKEN" -c "$c" -d "$DUR" -warmup "$WARMUP" \
				-label "$name" -round "$round" -json)
			if [ -n "$profiling" ]; then profile_end "$name" "$c" "$round" "$pprof"; fi
			echo "$line" >>"$RAW"
			printf '  %-13s c=%-3s round %s  %8.0f rps\n' "$name" "$c" "$round" \
				"$(sed -n 's/.*"rps":\([0-9.e+-]*\).*/\1/p' <<<"$line")" >&2
		done
	done
done

echo
echo "bench/run.sh  DUR=$DUR WARMUP=$WARMUP ROUNDS=$ROUNDS GCTUNE=$GCTUNE${GATEWAY_ARGS:+ GATEWAY_ARGS=$GATEWAY_ARGS}${BASE:+ BASE=$BASE}  $(date -u +%Y-%m-%dT%H:%MZ)"
echo "mcpgate at $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- . 2>/dev/null || echo ' (with uncommitted changes)')"
echo "$(nproc) cores; load average (1, 5, 15 min) at the start $LOAD_START, at the end $(cut -d' ' -f1-3 /proc/loadavg)"
"$BIN/mcpgate-bench" report -base revproxy "$RAW"
if [ -n "$PROFILE" ]; then
	echo
	echo "profiles in $PROFILE: go tool pprof -top NAME.cpu.pb.gz;"
	echo "  go tool pprof -sample_index=alloc_space -top -base NAME.allocs0.pb.gz NAME.allocs1.pb.gz"
fi
