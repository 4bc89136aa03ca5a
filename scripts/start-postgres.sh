#!/usr/bin/env bash
# Start a throw-away PostgreSQL server on loopback for the test-suite and print its URL.
# Installs Debian's postgresql if missing (needs root). Usage: eval "$(scripts/start-postgres.sh)"
set -euo pipefail
PORT=${SEQBENCH_PG_PORT:-55432}
DATA=${SEQBENCH_PG_DATA:-/tmp/seqbench-pg}
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >&2
fi
BIN=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)")
RUN_AS=()
if [ "$(id -u)" = 0 ]; then RUN_AS=(runuser -u postgres --); fi
if ! "${RUN_AS[@]}" "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
  rm -rf "$DATA" && mkdir -p "$DATA"
  [ "$(id -u)" = 0 ] && chown postgres "$DATA"
  "${RUN_AS[@]}" "$BIN/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 >/dev/null
  "${RUN_AS[@]}" "$BIN/pg_ctl" -D "$DATA" -l "$DATA/log" -w \
    -o "-p $PORT -c listen_addresses=127.0.0.1 -k $DATA" start >/dev/null
fi
psql_as_postgres() {
  "${RUN_AS[@]}" "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -qtA "$@"
}
# The tests connect as a role that is not a superuser and owns only its database, so that no
# statement `seqbench query` lets through could run COPY ... TO PROGRAM or touch other databases.
psql_as_postgres -c "SELECT 1 FROM pg_roles WHERE rolname = 'seqbench'" | grep -q 1 ||
  psql_as_postgres -c "CREATE ROLE seqbench LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE" >&2
psql_as_postgres -c "SELECT 1 FROM pg_database WHERE datname = 'seqbench_test'" | grep -q 1 ||
  "${RUN_AS[@]}" "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres -O seqbench seqbench_test
psql_as_postgres -c "ALTER DATABASE seqbench_test OWNER TO seqbench" >&2
psql_as_postgres -d seqbench_test -c "ALTER SCHEMA public OWNER TO seqbench" >&2
echo "export SEQBENCH_TEST_PG_URL=postgresql+psycopg://seqbench@127.0.0.1:$PORT/seqbench_test"
# the server's superuser, for the tests that create a reader role and checksum every table
echo "export SEQBENCH_TEST_PG_ADMIN_URL=postgresql+psycopg://postgres@127.0.0.1:$PORT/seqbench_test"
