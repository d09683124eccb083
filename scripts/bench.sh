#!/usr/bin/env bash
# `make bench`: release build, then
#   1. RPC over TLS 1.3: `ravectl serve-echo` in one process, `ravectl bench rpc` in another, Echo with a
#      32-byte payload, at 50 connections × 1 in flight and 16 × 64; 3 runs each, medians.
#   2. PostgreSQL client vs pgbench on the same throwaway server (scripts/bench-postgres.sh), if present.
#   3. Every service's benchmark in `rave-bench` (scripts/bench-services.sh), leaderboards under `ravectl loadtest`
#      (scripts/bench-leaderboards.sh), the leaderboards rank index alone (`rave-bench leaderboards`) and the
#      gateway against stand-in backends (`rave-bench gateway`).
# Results: a human summary on stdout, machine-readable JSON in .bench/.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${RAVE_BENCH_RUNS:-3}
duration=${RAVE_BENCH_DURATION:-10}
swift build -c release --product ravectl -q
ravectl=.build/release/ravectl
mkdir -p .bench
certs=$(mktemp -d /tmp/rave-bench-certs.XXXXXX)
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$certs"
}
trap cleanup EXIT

"$ravectl" certs --out "$certs" >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
"$ravectl" serve-echo --listen "127.0.0.1:$port" --cert "$certs/identity.pem" --key "$certs/identity-key.pem" \
    2>.bench/serve-echo.log &
server_pid=$!
for _ in $(seq 50); do "$ravectl" ping "127.0.0.1:$port" --ca "$certs/ca.pem" >/dev/null 2>&1 && break; sleep 0.1; done

bench_rpc() {
    local name=$1 connections=$2 in_flight=$3
    for run in $(seq "$runs"); do
        echo "== rpc $name run $run/$runs: $connections connections × $in_flight in flight, ${duration}s"
        "$ravectl" bench rpc --target "127.0.0.1:$port" --ca "$certs/ca.pem" --connections "$connections" \
            --in-flight "$in_flight" --duration "$duration" --payload 32 --out ".bench/rpc-$name-$run.json" |
            grep -v '^\[' || true
    done
}
bench_rpc 50x1 50 1
bench_rpc 16x64 16 64

python3 - "$runs" <<'PY'
import json, statistics, sys
runs = int(sys.argv[1])
summary = {"benchmark": "rpc", "runs": runs, "configurations": {}}
for name in ("50x1", "16x64"):
    results = [json.load(open(f".bench/rpc-{name}-{i}.json")) for i in range(1, runs + 1)]
    median = sorted(results, key=lambda r: r["throughput_calls_per_second"])[len(results) // 2]
    summary["configurations"][name] = {
        "median_throughput_calls_per_second": median["throughput_calls_per_second"],
        "all_throughputs": [r["throughput_calls_per_second"] for r in results],
        "median_run_latency_us": median["latency_us"],
        "parameters": median["parameters"],
    }
    print(f"rpc {name}: median {median['throughput_calls_per_second']} calls/s "
          f"(runs: {[r['throughput_calls_per_second'] for r in results]}), "
          f"p99 {median['latency_us']['p99']} µs")
json.dump(summary, open(".bench/rpc.json", "w"), indent=2)
PY

kill "$server_pid" && wait "$server_pid" 2>/dev/null || true
server_pid=""

if [ -x scripts/bench-postgres.sh ]; then
    scripts/bench-postgres.sh
fi

# rave-bench holds the services' benchmarks; the service executables are what bench-leaderboards.sh starts.
for product in rave-bench identity leaderboards gateway; do
    swift build -c release --product "$product" -q
done
scripts/bench-services.sh
scripts/bench-leaderboards.sh
echo "== rave-bench leaderboards (the rank index alone, in memory)"
RAVE_BENCH_OUT=.bench/leaderboards-index.json .build/release/rave-bench leaderboards
echo "== rave-bench gateway (stand-in backends, in one process)"
RAVE_BENCH_OUT=.bench/gateway.json .build/release/rave-bench gateway
