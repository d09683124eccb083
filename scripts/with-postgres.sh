#!/usr/bin/env bash
# Runs a command against a throwaway PostgreSQL cluster: initdb in a temporary directory
# (as the `postgres` user when run as root, since the server refuses root), a free port,
# fsync on. The cluster is removed when the command ends, fails, or is interrupted.
#
# The command sees RAVE_TEST_POSTGRES_URL (a superuser connection URL to database `postgres`),
# plus PGHOST/PGPORT/PGUSER so psql works without arguments.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bindir" ] || { echo "with-postgres: no PostgreSQL server found (run 'make deps')" >&2; exit 1; }

workdir=$(mktemp -d /tmp/rave-pg.XXXXXX)
chmod 755 "$workdir"
run_as=()
pg_user=$(id -un)
if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$workdir"
    run_as=(runuser -u postgres --)
    pg_user=postgres
fi

port=$(free_port)

cleanup() {
    "${run_as[@]}" "$bindir/pg_ctl" -D "$workdir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$workdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"${run_as[@]}" "$bindir/initdb" -D "$workdir/data" -U "$pg_user" -A trust -E UTF8 --no-locale >"$workdir/initdb.log" 2>&1 ||
    { cat "$workdir/initdb.log" >&2; exit 1; }
# Connections: the system tests run whole stacks side by side (six services with pools and listeners each), and
# 300 was reached once they numbered a dozen; a refused connection fails a test for no reason of its own.
"${run_as[@]}" "$bindir/pg_ctl" -D "$workdir/data" -l "$workdir/server.log" -w -t 60 start \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$workdir -c fsync=on \
        -c max_connections=1000 -c shared_buffers=256MB" >/dev/null ||
    { cat "$workdir/server.log" >&2; exit 1; }

export RAVE_TEST_POSTGRES_URL="postgresql://$pg_user@127.0.0.1:$port/postgres"
export RAVE_TEST_POSTGRES_DATADIR="$workdir/data"
export RAVE_TEST_POSTGRES_CTL="${run_as[*]} $bindir/pg_ctl"
export PGHOST=127.0.0.1 PGPORT=$port PGUSER=$pg_user
echo "with-postgres: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port"
"$@"
