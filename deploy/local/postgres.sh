#!/usr/bin/env bash
# The local development PostgreSQL of `make run`: data under .run/postgres, server on 127.0.0.1:55432
# (DESIGN.md §10), run as the `postgres` user when invoked as root.
#
# Every connection needs a password (scram-sha-256 for TCP and the Unix socket alike): the first start generates
# one into .run/pgpass (mode 0600, libpq's password-file format), which `make run` hands the services as
# PGPASSFILE. A cluster made by an earlier version of this script (trust authentication) gets its password and
# pg_hba.conf the same way on its next start.
#
#   deploy/local/postgres.sh start     initdb on first use, start, create the service databases
#   deploy/local/postgres.sh stop
#   deploy/local/postgres.sh status
set -euo pipefail
cd "$(dirname "$0")/../.."

port=${RAVE_LOCAL_POSTGRES_PORT:-55432}
# run.sh's state directory (scripts/with-stack.sh runs a throwaway one elsewhere).
root=${RAVE_LOCAL_DIR:-$(pwd)/.run}
data=$root/postgres
databases=(rave_identity rave_social rave_leaderboards rave_gifts rave_push rave_wallet)
# shellcheck disable=SC2012 # the directories are PostgreSQL's versions: digits only
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bindir" ] || { echo "postgres.sh: no PostgreSQL server found (run 'make deps')" >&2; exit 1; }

# The database superuser is always `postgres` (the services' default RAVE_DATABASE_URL uses it), whichever
# operating-system user runs the server.
pg_user=postgres
run_as=()
[ "$(id -u)" -eq 0 ] && run_as=(runuser -u postgres --)

ctl() { "${run_as[@]}" "$bindir/pg_ctl" -D "$data" "$@"; }

passfile=$root/pgpass
export PGPASSFILE=$passfile

# The password, in libpq's password-file format (libpq ignores the file unless only its owner can read it).
new_password() {
    (umask 077 && printf '*:*:*:%s:%s\n' "$pg_user" "$(openssl rand -hex 24)" >"$passfile")
}

# Sets the password and replaces trust authentication with scram-sha-256, with the server stopped (single-user
# mode reads the statement from stdin, so the password never appears in a process list or the server log).
require_password() {
    ctl status >/dev/null 2>&1 && ctl -m fast stop >/dev/null
    printf "ALTER ROLE %s PASSWORD '%s';\n" "$pg_user" "$(cut -d: -f5 "$passfile")" |
        "${run_as[@]}" "$bindir/postgres" --single -c log_checkpoints=off -c log_min_messages=warning -D "$data" postgres >/dev/null
    "${run_as[@]}" tee "$data/pg_hba.conf" >/dev/null <<'HBA'
# Written by deploy/local/postgres.sh: every connection needs the password of .run/pgpass.
local   all   all                  scram-sha-256
host    all   all   127.0.0.1/32   scram-sha-256
host    all   all   ::1/128        scram-sha-256
HBA
}

case "${1:-}" in
start)
    mkdir -p "$root"
    if [ ! -f "$data/PG_VERSION" ]; then
        mkdir -p "$data"
        [ "$(id -u)" -eq 0 ] && chown postgres: "$data" && chmod 755 "$root"
        # Trust only until require_password below, which runs before the server first starts.
        "${run_as[@]}" "$bindir/initdb" -D "$data" -U "$pg_user" -A trust -E UTF8 --no-locale >/dev/null
    fi
    # A new password file (first start, or the file was deleted) or a cluster still on trust: (re)set the password.
    if [ ! -s "$passfile" ]; then
        new_password
        require_password
    elif grep -Eq '^[[:space:]]*(local|host)[^#]*[[:space:]]trust([[:space:]]|$)' "$data/pg_hba.conf"; then
        require_password
    fi
    if ! ctl status >/dev/null 2>&1; then
        ctl -l "$data/server.log" -w -t 60 start \
            -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$data" >/dev/null
    fi
    for database in "${databases[@]}"; do
        exists=$(psql -h 127.0.0.1 -p "$port" -U "$pg_user" -d postgres -Atc \
            "SELECT 1 FROM pg_database WHERE datname = '$database'")
        [ "$exists" = 1 ] || psql -h 127.0.0.1 -p "$port" -U "$pg_user" -d postgres -qc "CREATE DATABASE $database"
    done
    echo "postgres: 127.0.0.1:$port (user $pg_user, password in $passfile, data in $data)"
    ;;
stop)
    if [ -f "$data/PG_VERSION" ]; then ctl -m fast stop >/dev/null 2>&1 || true; fi
    ;;
status)
    ctl status
    ;;
*)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
