#!/usr/bin/env bash
# The leaderboards restart measurement on its own: the board of `scripts/bench-leaderboards.sh` (seeded by
# `ravectl loadtest leaderboards`' binary COPY, RAVE_BENCH_LEADERBOARD_USERS entries, default 10,000,000) on a
# throwaway PostgreSQL, then the release `leaderboards` of each directory in RAVE_BENCH_BINS (default
# .build/release) started, timed until it accepts calls, its RSS read, and stopped with SIGTERM — the binaries
# interleaved, RAVE_BENCH_RUNS rounds (default 3), so machine load falls on each alike. The first directory's
# ravectl seeds. Prints one line per start, with the service's CPU time, PostgreSQL's (counted as its backends
# are reaped, so part of one start's can land in the next: a rough figure), and the load average;
# the per-board "index loaded" log line (reading and build phases) follows each.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

bins=${RAVE_BENCH_BINS:-.build/release}
if [ "${1:-}" != "--inside" ]; then
    for bin in $bins; do
        [ -x "$bin/leaderboards" ] || { echo "bench-leaderboards-restart: no $bin/leaderboards" >&2; exit 1; }
    done
    exec scripts/with-postgres.sh "$0" --inside
fi

users=${RAVE_BENCH_LEADERBOARD_USERS:-10000000}
runs=${RAVE_BENCH_RUNS:-3}
first_bin=${bins%% *}
work=$(mktemp -d /tmp/rave-bench-restart.XXXXXX)
server=""
trap 'status=$?; [ "$status" = 0 ] || tail -n 20 "$work/server.log" >&2; [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
"$first_bin/ravectl" certs --out "$work/certs" >/dev/null
psql -q -d postgres -c "CREATE DATABASE rave_bench_leaderboards"
url="${RAVE_TEST_POSTGRES_URL%/*}/rave_bench_leaderboards"
port=$(free_port)

# In a session of its own (setsid): a signal to this script's process group, which also holds the PostgreSQL
# wrapper, once ended a measurement when a server stopped.
start_server() {
    RAVE_DATABASE_URL=$url RAVE_CERT_DIR=$work/certs RAVE_LISTEN=127.0.0.1:$port RAVE_ADMIN_LISTEN=127.0.0.1:0 \
        RAVE_LEADERBOARDS_SOCIAL_ADDRESS=off RAVE_LEADERBOARDS_IDENTITY_ADDRESS=off RAVE_LOG_LEVEL=info \
        setsid "$1/leaderboards" >"$work/server.log" 2>&1 &
    server=$!
    for _ in $(seq 6000); do
        (echo >/dev/tcp/127.0.0.1/"$port") 2>/dev/null && return 0
        sleep 0.05
    done
    cat "$work/server.log" >&2
    exit 1
}

# A server that is gone already (killed from outside) is reported by the caller, not here.
stop_server() {
    kill -TERM "$server" 2>/dev/null || true
    wait "$server" || true
    server=""
}

postgres_ticks() {
    local postmaster
    postmaster=$(head -n 1 "$RAVE_TEST_POSTGRES_DATADIR/postmaster.pid")
    { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$postmaster/stat"
        cat $(pgrep -P "$postmaster" | sed 's|.*|/proc/&/stat|') 2>/dev/null | awk '{ print $14 + $15 }'; } |
        awk '{ total += $1 } END { print total }'
}

start_server "$first_bin"
echo "== seeding $users entries"
"$first_bin/ravectl" loadtest leaderboards --target "127.0.0.1:$port" --ca "$work/certs/ca.pem" \
    --cert "$work/certs/gateway.pem" --key "$work/certs/gateway-key.pem" --database-url "$url" \
    --users "$users" --mix position=1 --warmup 0 --duration 1 --out "$work/seeding.json" | grep -v '^\[' | tail -n 3
stop_server
psql -q -d rave_bench_leaderboards -c "VACUUM ANALYZE scores"
# One unmeasured start per binary: the table's pages in the page cache for all alike.
for bin in $bins; do
    start_server "$bin"
    stop_server
done
for run in $(seq "$runs"); do
    for bin in $bins; do
        before_postgres=$(postgres_ticks)
        started=$(date +%s.%N)
        start_server "$bin"
        seconds=$(python3 -c "print(f'{$(date +%s.%N) - $started:.2f}')")
        if ! rss=$(ps -o rss= -p "$server" | awk '{ printf "%d", $1 / 1024 }') || [ -z "$rss" ] ||
            ! cpu=$(cpu_ticks "$server" 2>/dev/null); then
            echo "run $run $bin: leaderboards exited right after it began to accept calls (not counted)"
            tail -n 5 "$work/server.log"
            stop_server
            continue
        fi
        postgres=$(( $(postgres_ticks) - before_postgres ))
        echo "run $run $bin: restart with $users entries until accepting calls: $seconds s, RSS $rss MiB," \
            "service CPU $(python3 -c "print($cpu / 100)") s, PostgreSQL CPU $(python3 -c "print($postgres / 100)") s," \
            "load $(cut -d ' ' -f 1-3 /proc/loadavg)"
        grep -o 'index loaded.*' "$work/server.log" | head -n 3 || true
        stop_server
    done
done
