#!/usr/bin/env bash
# The leaderboards benchmark of `make bench`: the release `leaderboards` (peers off: no names, no friends) on a
# throwaway PostgreSQL, seeded by binary COPY, driven by `ravectl loadtest leaderboards` over mTLS, 50 × 1 in
# flight: my position, around me ±5, top 100, durable submits — RAVE_BENCH_RUNS runs each (default 3) —
# then a restart timed until the service accepts calls again.
#   RAVE_BENCH_LEADERBOARD_USERS  entries in the board (default 1,000,000)
# Results: .bench/leaderboards-<operation>-<run>.json and a summary on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" != "--inside" ]; then
    for product in leaderboards ravectl; do
        [ -x ".build/release/$product" ] || { echo "bench-leaderboards: build first (make release)" >&2; exit 1; }
    done
    exec scripts/with-postgres.sh "$0" --inside
fi

bin=.build/release
users=${RAVE_BENCH_LEADERBOARD_USERS:-1000000}
runs=${RAVE_BENCH_RUNS:-3}
work=$(mktemp -d /tmp/rave-bench-leaderboards.XXXXXX)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p .bench
"$bin/ravectl" certs --out "$work/certs" >/dev/null
psql -q -d postgres -c "CREATE DATABASE rave_bench_leaderboards"
url="${RAVE_TEST_POSTGRES_URL%/*}/rave_bench_leaderboards"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')

start_server() {
    RAVE_DATABASE_URL=$url RAVE_CERT_DIR=$work/certs RAVE_LISTEN=127.0.0.1:$port RAVE_ADMIN_LISTEN=127.0.0.1:0 \
        RAVE_LEADERBOARDS_SOCIAL_ADDRESS=off RAVE_LEADERBOARDS_IDENTITY_ADDRESS=off RAVE_LOG_LEVEL=notice \
        "$bin/leaderboards" >>"$work/server.log" 2>&1 &
    server=$!
    for _ in $(seq 3000); do
        (echo >/dev/tcp/127.0.0.1/"$port") 2>/dev/null && return 0
        sleep 0.1
    done
    cat "$work/server.log" >&2
    exit 1
}

loadtest() {
    "$bin/ravectl" loadtest leaderboards --target "127.0.0.1:$port" --ca "$work/certs/ca.pem" \
        --cert "$work/certs/gateway.pem" --key "$work/certs/gateway-key.pem" --database-url "$url" \
        --users "$users" "$@"
}

start_server
for operation in position around top submit; do
    for run in $(seq "$runs"); do
        echo "== $operation, run $run"
        loadtest --mix "$operation=1" --duration 8 --out ".bench/leaderboards-$operation-$run.json"
    done
done
kill -TERM "$server"
wait "$server" || true
started=$(date +%s.%N)
start_server
echo "restart with $users entries until accepting calls: $(python3 -c "print(round($(date +%s.%N) - $started, 1))") s"
ps -o rss= -p "$server" | awk '{ print "leaderboards RSS after the restart: " $1 " KiB" }'
