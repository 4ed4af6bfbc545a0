#!/usr/bin/env bash
# bench/run.sh — side-by-side benchmark of one GET (pet by id) through:
#   direct    the demo upstream itself                      (plain HTTP)
#   revproxy  a bare httputil.ReverseProxy in front of it   (plain HTTP)
#   gosdk     a hand-written get_pet tool on the official go-sdk (MCP tools/call, 2026-07-28)
#   mcpgo     the same tool on mark3labs/mcp-go                 (MCP tools/call, 2026-07-28)
#   mcpgo-legacy  the same mcp-go server driven with -proto 2025-11-25 (initialize + session)
#   gateway   mcpgate serve on the demo OpenAPI document  (MCP tools/call getPet) — see GATEWAY below
# at each client count in CLIENTS, and prints rps, p50, p99 and the rps ratio to revproxy.
#
# ROUNDS > 1 repeats the whole sequence of targets that many times, interleaved
# (round 1: every target, round 2: every target, ...), and prints the median of
# each column, then every target's rps ratio to revproxy round by round (the
# same round runs them seconds apart, so a slow spell of a shared machine hits
# both sides of a ratio).
#
# Everything listens on 127.0.0.1 only; every process started here is stopped on exit.
# The machine is shared and small: read the ratios within one run, not absolute numbers.
#
# Usage: bench/run.sh            (from anywhere inside the repository)
# Env:   DUR=3s WARMUP=500ms CLIENTS="1 16 64" ROUNDS=1 PORT_BASE=18080
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DUR=${DUR:-3s}
WARMUP=${WARMUP:-500ms}
ROUNDS=${ROUNDS:-1}
CLIENTS=${CLIENTS:-"1 16 64"}
PORT_BASE=${PORT_BASE:-18080}

GATEWAY_PORT=$PORT_BASE
UPSTREAM_PORT=$((PORT_BASE + 1))
REVPROXY_PORT=$((PORT_BASE + 2))
GOSDK_PORT=$((PORT_BASE + 3))
MCPGO_PORT=$((PORT_BASE + 4))
UPSTREAM=http://127.0.0.1:$UPSTREAM_PORT

BIN=$(mktemp -d "${TMPDIR:-/tmp}/mcpgate-bench.XXXXXX")
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
# out of mcpgate's go.mod); the harness is part of mcpgate itself.
(cd "$ROOT/bench" && go build -o "$BIN/" ./upstream ./revproxy ./gosdk ./mcpgo)
(cd "$ROOT" && go build -o "$BIN/" ./cmd/mcpgate-bench)

port_busy() { curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$1/" ; }

# start NAME PORT CMD...: start a server in the background and wait until it answers.
start() {
	local name=$1 port=$2
	shift 2
	if port_busy "$port"; then
		echo "port $port (for $name) is already in use; set PORT_BASE" >&2
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

start upstream "$UPSTREAM_PORT" "$BIN/upstream" -addr "127.0.0.1:$UPSTREAM_PORT"
start revproxy "$REVPROXY_PORT" "$BIN/revproxy" -addr "127.0.0.1:$REVPROXY_PORT" -upstream "$UPSTREAM"
start gosdk "$GOSDK_PORT" "$BIN/gosdk" -addr "127.0.0.1:$GOSDK_PORT" -upstream "$UPSTREAM"
start mcpgo "$MCPGO_PORT" "$BIN/mcpgo" -addr "127.0.0.1:$MCPGO_PORT" -upstream "$UPSTREAM"

# Targets: name|server process|harness flags. The GET is always pet 1 of the
# demo API. The harness reports the CPU time per request of the server process
# (srv) and of the upstream (up) from /proc, which stays meaningful when the
# shared machine is busy and rps is not.
TARGETS=(
	"direct|upstream|-mode http -url $UPSTREAM/pets/1"
	"revproxy|revproxy|-mode http -url http://127.0.0.1:$REVPROXY_PORT/pets/1"
	"gosdk|gosdk|-mode mcp -url http://127.0.0.1:$GOSDK_PORT/mcp -tool get_pet -args {\"id\":1}"
	"mcpgo|mcpgo|-mode mcp -url http://127.0.0.1:$MCPGO_PORT/mcp -tool get_pet -args {\"id\":1}"
	"mcpgo-legacy|mcpgo|-mode mcp -proto 2025-11-25 -url http://127.0.0.1:$MCPGO_PORT/mcp -tool get_pet -args {\"id\":1}"
)

# ---- GATEWAY: mcpgate serve on the demo document (the tool is getPet) -------
# On by default; GATEWAY=0 leaves it out. GATEWAY_ARGS adds flags (for
# example --check-output); the task store is in memory.
GATEWAY=${GATEWAY:-1}
GATEWAY_ARGS=${GATEWAY_ARGS:-}
start_gateway() {
	(cd "$ROOT" && go build -o "$BIN/" ./cmd/mcpgate)
	# shellcheck disable=SC2086
	start gateway "$GATEWAY_PORT" "$BIN/mcpgate" serve --store memory --log-level warn \
		--spec "$ROOT/demo/openapi.json" --upstream "$UPSTREAM" --addr "127.0.0.1:$GATEWAY_PORT" $GATEWAY_ARGS
	TARGETS+=("gateway|gateway|-mode mcp -url http://127.0.0.1:$GATEWAY_PORT/mcp -tool getPet -args {\"petId\":1}")
}
if [ "$GATEWAY" = 1 ]; then start_gateway; fi
# ------------------------------------------------------------------------------

field() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p" <<<"$2"; }
num() { local v; v=$(field "$1" "$2"); echo "${v:--1}"; }

RESULTS=()
for c in $CLIENTS; do
	for round in $(seq "$ROUNDS"); do
		for t in "${TARGETS[@]}"; do
			IFS='|' read -r name server flags <<<"$t"
			pids=(-pid "srv=${PID_OF[$server]}")
			if [ "$server" != upstream ]; then pids+=(-pid "up=${PID_OF[upstream]}"); fi
			# shellcheck disable=SC2086 # flags are word-split on purpose
			line=$("$BIN/mcpgate-bench" $flags "${pids[@]}" -c "$c" -d "$DUR" -warmup "$WARMUP" -json)
			RESULTS+=("$name $c $(num rps "$line") $(num p50_ms "$line") $(num p99_ms "$line") $(num errors "$line") $(num srv "$line") $(num up "$line") $(num harness "$line") $round")
			printf '  %-13s c=%-3s round %s  %8.0f rps\n' "$name" "$c" "$round" "$(field rps "$line")" >&2
		done
	done
done

echo
echo "bench/run.sh  DUR=$DUR WARMUP=$WARMUP ROUNDS=$ROUNDS  $(date -u +%Y-%m-%dT%H:%MZ)  $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s\n' "${RESULTS[@]}" | awk -v rounds="$ROUNDS" '
	function median(key, col,    n, i, j, t, v) {
		n = cnt[key]
		for (i = 1; i <= n; i++) v[i] = val[key, col, i]
		for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j-1] > v[j]; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
		return n % 2 ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2
	}
	{
		key = $1 SUBSEP $2
		if (!(key in cnt)) { order[++nkeys] = key; name[key] = $1; c[key] = $2 }
		cnt[key]++
		for (col = 3; col <= 9; col++) val[key, col, cnt[key]] = $col
		rpsr[$1, $2, $10] = $3
	}
	END {
		printf "%-13s %3s %8s %8s %8s %6s %8s %11s %9s %10s %10s\n", "target", "c", "rps", "p50 ms", "p99 ms", "errors", "rps x rp", "srv us/req", "x rp cpu", "up us/req", "gen us/req"
		for (k = 1; k <= nkeys; k++) {
			key = order[k]; base = "revproxy" SUBSEP c[key]
			rps = median(key, 3); brps = (base in cnt) ? median(base, 3) : 0
			srv = median(key, 7); bsrv = (base in cnt) ? median(base, 7) : 0
			up = median(key, 8)
			upcol = up < 0 ? "-" : sprintf("%.0f", up)
			printf "%-13s %3d %8.0f %8.3f %8.3f %6d %8.2f %11.0f %9.2f %10s %10.0f\n", name[key], c[key], rps, median(key, 4), median(key, 5), median(key, 6),
				(brps > 0 ? rps / brps : 0), srv, (bsrv > 0 ? srv / bsrv : 0), upcol, median(key, 9)
		}
		print ""
		if (rounds > 1) {
			print "median of " rounds " interleaved rounds. rps x rp by round (same round, seconds apart):"
			for (k = 1; k <= nkeys; k++) {
				key = order[k]
				if (name[key] == "revproxy") continue
				line = sprintf("  %-13s c=%-3d", name[key], c[key])
				for (r = 1; r <= rounds; r++) {
					b = rpsr["revproxy", c[key], r]
					line = line sprintf(" %5.2f", b > 0 ? rpsr[name[key], c[key], r] / b : 0)
				}
				print line
			}
			print ""
		}
		print "rps x rp: rps / revproxy rps at the same c.  srv us/req: CPU of the server process per request"
		print "(for direct: the upstream itself).  x rp cpu: that CPU / revproxy CPU.  up us/req: upstream CPU."
		print "gen us/req: CPU of the load generator (mcpgate-bench) itself."
	}'
