#!/usr/bin/env bash
# Starts a local PostgreSQL server for the postgres package's tests and prints
# the DSN to export. Idempotent: each step is skipped when already done.
#
#   eval "$(scripts/postgres.sh)"      # sets MCPGATE_TEST_POSTGRES
#   go test -race ./postgres/...
#
# Steps: install the Debian packages if the server binaries are missing
# (needs root and apt), create the cluster if missing, start it if not
# running, create the role mcpgate (password mcpgate) and the database
# mcpgate_test owned by it. The server listens on 127.0.0.1 and the local
# socket only. Progress goes to stderr; stdout is exactly one line:
#
#   export MCPGATE_TEST_POSTGRES='postgres://mcpgate:mcpgate@127.0.0.1:5432/mcpgate_test?sslmode=disable'
#
# Environment: PGPORT (default 5432) is the port of the cluster it creates
# and of the DSN; PG_CLUSTER (default main) its name.
set -euo pipefail
log() { printf 'postgres.sh: %s\n' "$*" >&2; }

PORT="${PGPORT:-5432}"
CLUSTER="${PG_CLUSTER:-main}"
ROLE=mcpgate
PASSWORD=mcpgate
DB=mcpgate_test

as_postgres() {
  if [[ "$(id -un)" == postgres ]]; then "$@"; else runuser -u postgres -- "$@"; fi
}

# 1. Install.
if ! command -v pg_ctlcluster >/dev/null || [[ -z "$(ls /usr/lib/postgresql 2>/dev/null)" ]]; then
  log "installing postgresql (Debian packages)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
fi
VERSION="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"

# 2. Cluster.
if ! pg_lsclusters -h | awk -v v="$VERSION" -v c="$CLUSTER" '$1 == v && $2 == c { found = 1 } END { exit !found }'; then
  log "creating cluster $VERSION/$CLUSTER on port $PORT"
  pg_createcluster "$VERSION" "$CLUSTER" --port "$PORT" -- --auth-local=peer --auth-host=scram-sha-256 >&2
fi
PORT="$(pg_lsclusters -h | awk -v v="$VERSION" -v c="$CLUSTER" '$1 == v && $2 == c { print $3 }')"

# 3. Start (no systemd needed: pg_ctlcluster runs the server as its owner).
if ! pg_lsclusters -h | awk -v v="$VERSION" -v c="$CLUSTER" '$1 == v && $2 == c && $4 ~ /^online/ { found = 1 } END { exit !found }'; then
  log "starting cluster $VERSION/$CLUSTER"
  install -d -o postgres -g postgres -m 2775 /var/run/postgresql
  pg_ctlcluster "$VERSION" "$CLUSTER" start >&2
fi
for _ in $(seq 1 60); do
  if pg_isready -q -h 127.0.0.1 -p "$PORT"; then break; fi
  sleep 0.5
done
pg_isready -q -h 127.0.0.1 -p "$PORT" || { log "server on 127.0.0.1:$PORT is not ready"; exit 1; }

# 4. Role and database.
psql_admin() { as_postgres psql -X -q -v ON_ERROR_STOP=1 -p "$PORT" -d postgres "$@"; }
if [[ "$(psql_admin -tAc "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'")" != 1 ]]; then
  log "creating role $ROLE"
  psql_admin -c "CREATE ROLE $ROLE LOGIN PASSWORD '$PASSWORD'" >&2
fi
if [[ "$(psql_admin -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]]; then
  log "creating database $DB"
  psql_admin -c "CREATE DATABASE $DB OWNER $ROLE" >&2
fi

DSN="postgres://$ROLE:$PASSWORD@127.0.0.1:$PORT/$DB?sslmode=disable"
PGPASSWORD="$PASSWORD" psql -X -q -h 127.0.0.1 -p "$PORT" -U "$ROLE" -d "$DB" -tAc 'SELECT 1' >/dev/null ||
  { log "cannot connect as $ROLE"; exit 1; }
log "ready: PostgreSQL $VERSION on 127.0.0.1:$PORT"
printf "export MCPGATE_TEST_POSTGRES='%s'\n" "$DSN"
