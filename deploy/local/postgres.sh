#!/usr/bin/env bash
# The local development PostgreSQL of `make run`: data under .run/postgres, server on 127.0.0.1:55432
# (DESIGN.md §10), run as the `postgres` user when invoked as root.
#
#   deploy/local/postgres.sh start     initdb on first use, start, create the service databases
#   deploy/local/postgres.sh stop
#   deploy/local/postgres.sh status
set -euo pipefail
cd "$(dirname "$0")/../.."

port=${RAVE_LOCAL_POSTGRES_PORT:-55432}
root=$(pwd)/.run
data=$root/postgres
databases=(rave_identity rave_social rave_leaderboards rave_gifts rave_push rave_wallet)
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bindir" ] || { echo "postgres.sh: no PostgreSQL server found (run 'make deps')" >&2; exit 1; }

# The database superuser is always `postgres` (the services' default RAVE_DATABASE_URL uses it), whichever
# operating-system user runs the server.
pg_user=postgres
run_as=()
[ "$(id -u)" -eq 0 ] && run_as=(runuser -u postgres --)

ctl() { "${run_as[@]}" "$bindir/pg_ctl" -D "$data" "$@"; }

case "${1:-}" in
start)
    mkdir -p "$root"
    if [ ! -f "$data/PG_VERSION" ]; then
        mkdir -p "$data"
        [ "$(id -u)" -eq 0 ] && chown postgres: "$data" && chmod 755 "$root"
        "${run_as[@]}" "$bindir/initdb" -D "$data" -U "$pg_user" -A trust -E UTF8 --no-locale >/dev/null
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
    echo "postgres: 127.0.0.1:$port (user $pg_user, data in .run/postgres)"
    ;;
stop)
    [ -f "$data/PG_VERSION" ] && ctl -m fast stop >/dev/null 2>&1 || true
    ;;
status)
    ctl status
    ;;
*)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
