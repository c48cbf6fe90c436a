#!/usr/bin/env bash
# Start a throwaway PostgreSQL server for the tests (Debian's postgresql; installed by scripts/setup.sh).
# Prints the URL to use as COURSE_DB_URL. Idempotent: reuses a running server on the same port.
#   bash scripts/start_postgres.sh          # start (or reuse); prints the URL
#   bash scripts/start_postgres.sh --stop   # stop it and remove its folder
#
# Closed to other local users: the server listens on 127.0.0.1 and its socket in its own data folder (0700,
# owned by the server's account: only that account, and root, can open the socket, and there it must be that
# account: peer authentication); over TCP every role needs its password (scram-sha-256). The password of the
# tests' role is random, made when the server is created, and kept in the data folder next to the URL (0600).
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
PORT=${PGTEST_PORT:-55432}
# The data folder: root's under /var/lib, a user's under their own state folder; never a fixed name in a place
# other users may write (/tmp): whoever makes the name first there owns it, or plants a URL and a pid file in it
# (issue 20: nothing root runs uses a fixed path in a world-writable place).
if [ "$(id -u)" = 0 ]; then DEFAULT_DIR=/var/lib/autograder/postgres
else DEFAULT_DIR=${XDG_STATE_HOME:-$HOME/.local/state}/autograder/postgres; fi
DIR=${PGTEST_DIR:-$DEFAULT_DIR}
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
run() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
SUPER=$([ "$(id -u)" = 0 ] && echo postgres || id -un)   # the superuser is the account the server runs as
PARENT=$(dirname "$DIR")
mkdir -p -m 0755 "$PARENT"
# The folder the data folder is made in: a real folder of root's or of this user's that nobody else may write.
if [ -L "$PARENT" ] || [ -L "$DIR" ] || [ -n "$(find "$PARENT" -maxdepth 0 \( -perm -g+w -o -perm -o+w \) )" ] \
   || ! [ "$(stat -c %u "$PARENT")" = 0 -o "$(stat -c %u "$PARENT")" = "$(id -u)" ]; then
  echo "start_postgres.sh: refusing $DIR: $PARENT is a link, writable by other users or not this user's" \
       "(another user could have made the data folder first); set PGTEST_DIR to a private place" >&2
  exit 2
fi
if [ "${1:-}" = "--stop" ]; then
  run "$BIN/pg_ctl" -D "$DIR" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$DIR"
  exit 0
fi
if run "$BIN/pg_ctl" -D "$DIR" status >/dev/null 2>&1 && run test -r "$DIR/autograder.url"; then
  run cat "$DIR/autograder.url"; exit 0
fi
run "$BIN/pg_ctl" -D "$DIR" -m fast -w stop >/dev/null 2>&1 || true
rm -rf "$DIR"; mkdir -m 0700 -p "$DIR"
[ "$(id -u)" = 0 ] && chown postgres:postgres "$DIR"
PASSWORD=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
run "$BIN/initdb" -D "$DIR" -U "$SUPER" --auth-local=peer --auth-host=scram-sha-256 >/dev/null
run "$BIN/pg_ctl" -D "$DIR" -l "$DIR/server.log" -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c max_connections=200" -w start >/dev/null
run "$BIN/psql" -h "$DIR" -p "$PORT" -U "$SUPER" -qc "CREATE ROLE autograder LOGIN PASSWORD '$PASSWORD' CREATEDB" >/dev/null
run "$BIN/psql" -h "$DIR" -p "$PORT" -U "$SUPER" -qc "CREATE DATABASE autograder OWNER autograder" >/dev/null
URL="postgresql+psycopg2://autograder:${PASSWORD}@127.0.0.1:${PORT}/autograder"
run sh -c "umask 077; echo '$URL' > '$DIR/autograder.url'"
echo "$URL"
