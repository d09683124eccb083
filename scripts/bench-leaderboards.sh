#!/usr/bin/env bash
# The leaderboards benchmark of `make bench`: the release `leaderboards` (peers off: no names, no friends) on a
# throwaway PostgreSQL, seeded by binary COPY, driven by `ravectl loadtest leaderboards` over mTLS, 50 × 1 in
# flight: my position, around me ±5, top 100, durable submits — RAVE_BENCH_RUNS runs each (default 3) —
# then, when identity and the gateway are built too, "my position" through the gateway and directly in one run
# (`ravectl loadtest --gateway`: one guest per connection, signed in through the gateway) and over the gateway's
# HTTP/JSON front door (wrk over HTTP/1.1 keep-alive, h2load over HTTP/2; .bench/front-door-<run>.json), then a
# restart timed
# until the service accepts calls again.
#   RAVE_BENCH_LEADERBOARD_USERS       entries in the board (default 1,000,000)
#   RAVE_BENCH_LEADERBOARD_OPERATIONS  the operations measured (default "position around top submit")
#   RAVE_BENCH_BIN                     where the release binaries are (default .build/release)
# After each run the service's CPU time per call (user + system) is printed: with other work on the cores it is
# the figure to compare.
# Results: .bench/leaderboards-<operation>-<run>.json (-compare-<run>-gateway/-direct.json) and a summary on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

if [ "${1:-}" != "--inside" ]; then
    for product in leaderboards ravectl; do
        [ -x "${RAVE_BENCH_BIN:-.build/release}/$product" ] ||
            { echo "bench-leaderboards: build first (make release)" >&2; exit 1; }
    done
    exec scripts/with-postgres.sh "$0" --inside
fi

bin=${RAVE_BENCH_BIN:-.build/release}
users=${RAVE_BENCH_LEADERBOARD_USERS:-1000000}
operations=${RAVE_BENCH_LEADERBOARD_OPERATIONS:-position around top submit}
runs=${RAVE_BENCH_RUNS:-3}
work=$(mktemp -d /tmp/rave-bench-leaderboards.XXXXXX)
server=""
stack=()
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; for pid in "${stack[@]}"; do kill "$pid" 2>/dev/null; done; rm -rf "$work"' EXIT
mkdir -p .bench
"$bin/ravectl" certs --out "$work/certs" >/dev/null
psql -q -d postgres -c "CREATE DATABASE rave_bench_leaderboards"
url="${RAVE_TEST_POSTGRES_URL%/*}/rave_bench_leaderboards"
port=$(free_port)

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

timer=()
loadtest() {
    ${timer[@]+"${timer[@]}"} "$bin/ravectl" loadtest leaderboards --target "127.0.0.1:$port" --ca "$work/certs/ca.pem" \
        --cert "$work/certs/gateway.pem" --key "$work/certs/gateway-key.pem" --database-url "$url" \
        --users "$users" "$@"
}

# Transactions committed in the benchmark's database so far (a group commit of submits is one).
commits() { psql -At -d rave_bench_leaderboards -c "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"; }

# Clock ticks of user + system time the service, and PostgreSQL's processes, have used so far.
server_ticks() { cpu_ticks "$server"; }
postgres_ticks() {
    local postmaster
    postmaster=$(head -n 1 "$RAVE_TEST_POSTGRES_DATADIR/postmaster.pid")
    # The postmaster's own time plus that of its reaped children (fields 16, 17), so backends that exit during a
    # run still count, plus the live children's.
    { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$postmaster/stat"
        cat $(pgrep -P "$postmaster" | sed 's|.*|/proc/&/stat|') 2>/dev/null | awk '{ print $14 + $15 }'; } |
        awk '{ total += $1 } END { print total }'
}

start_server
echo "== seeding"
loadtest --mix position=1 --warmup 0 --duration 1 --out "$work/seeding.json" | grep -v '^\['
for operation in $operations; do
    for run in $(seq "$runs"); do
        echo "== $operation, run $run"
        out=.bench/leaderboards-$operation-$run.json
        commits_before=$(commits)
        before=$(server_ticks)
        before_postgres=$(postgres_ticks)
        # The load tester shares the cores, so its CPU is reported too (`time` writes user and system seconds).
        echo "0 0" >"$work/tester-time"
        [ -x /usr/bin/time ] && timer=(/usr/bin/time -f '%U %S' -o "$work/tester-time")
        loadtest --mix "$operation=1" --duration 8 --out "$out"
        timer=()
        ticks=$(( $(server_ticks) - before ))
        ticks_postgres=$(( $(postgres_ticks) - before_postgres ))
        tester_seconds=$(awk '{ print $1 + $2 }' "$work/tester-time")
        run_commits=$(( $(commits) - commits_before ))
        python3 -c "import json; result = json.load(open('$out')); \
calls = max(1, sum(second['calls'] for second in result['timeline'])); \
result['cpu_us_per_call'] = {'service': $ticks * 10_000 / calls, 'postgres': $ticks_postgres * 10_000 / calls, \
    'load_tester': $tester_seconds * 1_000_000 / calls}; \
json.dump(result, open('$out', 'w'), indent=2); \
print(f'CPU per call (user + system, warm-up included): service {$ticks * 10_000 / calls:.1f} µs, ' \
      f'PostgreSQL {$ticks_postgres * 10_000 / calls:.1f} µs, load tester {$tester_seconds * 1_000_000 / calls:.1f} µs; ' \
      f'{$run_commits} commits, {calls / max(1, $run_commits):.1f} calls per commit')"
    done
done
# Through the gateway and directly, as the same guests: identity for the logins, the gateway in front of both, its
# rate limits lifted (every simulated player comes from 127.0.0.1, and the per-user limit would cap each one).
if [ -x "$bin/identity" ] && [ -x "$bin/gateway" ] && [[ " $operations " == *" position "* ]]; then
    psql -q -d postgres -c "CREATE DATABASE rave_bench_identity"
    { read -r identity_port; read -r gateway_port; read -r http_port; } < <(free_ports 3)
    # Identity seals its signing keys with the first key of this file (docs/OPERATIONS.md, "Secrets at rest").
    (umask 077; printf 'bench %s\n' "$(openssl rand -base64 32)" >"$work/secret-keys")
    RAVE_SECRET_KEY_FILE=$work/secret-keys RAVE_DATABASE_URL=${url%/*}/rave_bench_identity RAVE_CERT_DIR=$work/certs RAVE_LISTEN=127.0.0.1:$identity_port \
        RAVE_ADMIN_LISTEN=127.0.0.1:0 RAVE_IDENTITY_SOCIAL_ADDRESS=127.0.0.1:9 RAVE_LOG_LEVEL=error \
        "$bin/identity" >>"$work/identity.log" 2>&1 &
    stack+=($!)
    RAVE_CERT_DIR=$work/certs RAVE_LISTEN=127.0.0.1:$gateway_port RAVE_ADMIN_LISTEN=127.0.0.1:0 RAVE_LOG_LEVEL=error \
        RAVE_GATEWAY_HTTP_LISTEN=127.0.0.1:$http_port RAVE_GATEWAY_IDENTITY_ADDRESSES=127.0.0.1:$identity_port RAVE_GATEWAY_LEADERBOARDS_ADDRESSES=127.0.0.1:$port \
        RAVE_GATEWAY_ADDRESS_RATE=10000000 RAVE_GATEWAY_ADDRESS_BURST=10000000 RAVE_GATEWAY_USER_RATE=10000000 \
        RAVE_GATEWAY_USER_BURST=10000000 "$bin/gateway" >>"$work/gateway.log" 2>&1 &
    stack+=($!)
    for _ in $(seq 600); do (echo >/dev/tcp/127.0.0.1/"$gateway_port") 2>/dev/null && break; sleep 0.1; done
    admin=(--target "127.0.0.1:$gateway_port" --ca "$work/certs/ca.pem" --cert "$work/certs/admin.pem"
        --key "$work/certs/admin-key.pem")
    json_field() { python3 -c "import json, sys; print(json.load(sys.stdin)$1)"; }
    # The gateway answers once its health checks found identity; until then the first call may be refused.
    for _ in $(seq 50); do
        publisher=$(XDG_CONFIG_HOME=$work "$bin/ravectl" call rave.identity.v1.IdentityAdmin/CreatePublisher \
            --json '{"name": "Load test"}' "${admin[@]}" 2>/dev/null |
            json_field '["publisher"]["publisherId"]' 2>/dev/null) && break
        sleep 0.2
    done
    [ -n "${publisher:-}" ] || { tail -n 5 "$work/identity.log" "$work/gateway.log" >&2; exit 1; }
    app=$(XDG_CONFIG_HOME=$work "$bin/ravectl" call rave.identity.v1.IdentityAdmin/CreateApplication \
        --json "{\"publisherId\": \"$publisher\", \"name\": \"Load test\"}" "${admin[@]}" |
        json_field '["application"]["appId"]')
    for run in $(seq "$runs"); do
        echo "== position through the gateway and directly, run $run"
        loadtest --app "$app" --gateway "127.0.0.1:$gateway_port" --mix position=1 --duration 8 \
            --out ".bench/leaderboards-compare-$run.json" | grep -v '^\['
    done
    # The HTTP/JSON front door of the same gateway, in the same run: "my position" (GetLeaderboard) of one guest
    # over HTTP/1.1 keep-alive (wrk) and HTTP/2 (h2load), 50 connections as above, against the binary port's rate
    # through the gateway.
    if command -v wrk >/dev/null; then
        front=https://127.0.0.1:$http_port/v1
        token=$(curl -sS --cacert "$work/certs/ca.pem" -H 'Content-Type: application/json' \
            -d "{\"appId\": \"$app\", \"device\": {\"deviceId\": \"bench-http\"}}" \
            "$front/rave.identity.v1.Identity/GuestLogin" | json_field '["tokens"]["accessToken"]')
        curl -sS --cacert "$work/certs/ca.pem" -H "Authorization: Bearer $token" -d '{"leaderboardKey": "loadtest-1",
            "score": "1000"}' "$front/rave.leaderboards.v1.Leaderboards/SubmitScore" >/dev/null
        cat >"$work/position.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"leaderboardKey": "loadtest-1"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $token"
LUA
        for run in $(seq "$runs"); do
            echo "== position over the HTTP/JSON front door (HTTP/1.1 keep-alive, wrk, 50 connections), run $run"
            wrk -t 2 -c 50 -d 8s --latency -s "$work/position.lua" \
                "$front/rave.leaderboards.v1.Leaderboards/GetLeaderboard" >"$work/wrk.txt"
            grep -E "Requests/sec|Non-2xx|Socket errors| 50%| 99%" "$work/wrk.txt"
            : >"$work/h2load.txt"
            if command -v h2load >/dev/null; then
                echo '{"leaderboardKey": "loadtest-1"}' >"$work/position.json"
                h2load -c 50 -m 1 -D 8 --warm-up-time 1 -H 'content-type: application/json' \
                    -H "authorization: Bearer $token" -d "$work/position.json" \
                    "$front/rave.leaderboards.v1.Leaderboards/GetLeaderboard" >"$work/h2load.txt"
                grep -E "finished in|status codes" "$work/h2load.txt"
            fi
            python3 -c "import json, re
http1 = float(re.search(r'Requests/sec:\s+([0-9.]+)', open('$work/wrk.txt').read()).group(1))
h2 = re.search(r'finished in [^,]+, ([0-9.]+) req/s', open('$work/h2load.txt').read())
http2 = float(h2.group(1)) if h2 else None
binary = json.load(open('.bench/leaderboards-compare-$run-gateway.json'))['operations']['position']['throughput_per_second']
json.dump({'http1_calls_per_second': http1, 'http2_calls_per_second': http2, 'binary_calls_per_second': binary,
           'http1_ratio': http1 / binary, 'http2_ratio': http2 / binary if http2 else None},
          open('.bench/front-door-$run.json', 'w'), indent=2)
print(f'front door HTTP/1.1 {http1:,.0f}/s ({http1 / binary:.2f}x), HTTP/2 '
      + (f'{http2:,.0f}/s ({http2 / binary:.2f}x)' if http2 else 'not measured')
      + f'; binary port through the gateway {binary:,.0f}/s (run $run)')"
        done
    fi
fi
psql -At -d rave_bench_leaderboards -c "SELECT 'score updates: ' || n_tup_upd || ', of them HOT (no index entries): ' \
    || n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'scores'"
kill -TERM "$server"
wait "$server" || true
started=$(date +%s.%N)
start_server
echo "restart with $users entries until accepting calls: $(python3 -c "print(round($(date +%s.%N) - $started, 1))") s"
ps -o rss= -p "$server" | awk '{ print "leaderboards RSS after the restart: " $1 " KiB" }'
