#!/usr/bin/env bash
# Start a local PostgreSQL for the store tests and print its URL on stdout (all else to stderr).
#   export CURSOR_TEST_POSTGRES_URL="$(.ci/postgres.sh)"
# Idempotent: installs Debian's postgresql only if missing, creates the cluster, role and database
# only if missing, and leaves an already running server alone. Needs root.
set -euo pipefail

PG_USER="${PG_USER:-cursor}"
PG_PASSWORD="${PG_PASSWORD:-cursor}"
PG_DB="${PG_DB:-cursor_test}"
PG_PORT="${PG_PORT:-5432}"
CLUSTER=main

log() { echo "postgres.sh: $*" >&2; }

if ! command -v pg_ctlcluster >/dev/null || [ -z "$(ls /usr/lib/postgresql 2>/dev/null)" ]; then
    log "installing postgresql"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q postgresql >&2 || { apt-get update -q >&2 && apt-get install -y -q postgresql >&2; }
fi

VERSION="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
if ! pg_lsclusters -h | awk -v v="$VERSION" -v c="$CLUSTER" '$1 == v && $2 == c {found=1} END {exit !found}'; then
    log "creating cluster $VERSION/$CLUSTER on port $PG_PORT"
    pg_createcluster --port "$PG_PORT" "$VERSION" "$CLUSTER" >&2
fi
if ! pg_ctlcluster "$VERSION" "$CLUSTER" status >/dev/null 2>&1; then
    log "starting cluster $VERSION/$CLUSTER"
    pg_ctlcluster "$VERSION" "$CLUSTER" start >&2
fi
PORT="$(pg_conftool -s "$VERSION" "$CLUSTER" show port)"

for _ in $(seq 50); do
    pg_isready -q -h 127.0.0.1 -p "$PORT" && break
    sleep 0.1
done
pg_isready -h 127.0.0.1 -p "$PORT" >&2

psql_admin() { runuser -u postgres -- psql -p "$PORT" -v ON_ERROR_STOP=1 -qtA "$@"; }

if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '$PG_USER'")" != 1 ]; then
    log "creating role $PG_USER"
    psql_admin -c "CREATE ROLE \"$PG_USER\" LOGIN PASSWORD '$PG_PASSWORD'" >&2
fi
if [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'")" != 1 ]; then
    log "creating database $PG_DB"
    psql_admin -c "CREATE DATABASE \"$PG_DB\" OWNER \"$PG_USER\"" >&2
fi

echo "postgresql://$PG_USER:$PG_PASSWORD@127.0.0.1:$PORT/$PG_DB"
