#!/usr/bin/env bash
# Start a throwaway PostgreSQL server for the tests (Debian's postgresql; installed by scripts/setup.sh).
# Prints the URL to use as COURSE_DB_URL. Idempotent: reuses a running server on the same port.
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
PORT=${PGTEST_PORT:-55432}
DIR=${PGTEST_DIR:-/tmp/autograder-pg}
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
URL="postgresql+psycopg2://autograder:autograder@127.0.0.1:${PORT}/autograder"
run() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
if run "$BIN/pg_ctl" -D "$DIR" status >/dev/null 2>&1; then echo "$URL"; exit 0; fi
rm -rf "$DIR"; mkdir -p "$DIR"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$DIR"
run "$BIN/initdb" -D "$DIR" -U postgres --auth=trust >/dev/null
run "$BIN/pg_ctl" -D "$DIR" -l "$DIR/server.log" -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c max_connections=200" -w start >/dev/null
run "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -qc "CREATE ROLE autograder LOGIN PASSWORD 'autograder' CREATEDB" >/dev/null
run "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -qc "CREATE DATABASE autograder OWNER autograder" >/dev/null
echo "$URL"
