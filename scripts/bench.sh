#!/usr/bin/env bash
# `make bench`: release build, then
#   0. Redis over TLS on the same machine (scripts/bench-redis.sh), the baseline of step 4's table;
#   1. RPC over TLS 1.3: `ravectl serve-echo` in one process, `ravectl bench rpc` in another, Echo with a
#      32-byte payload, at 50 connections × 1 in flight and 16 × 64; 3 runs each, medians.
#   2. PostgreSQL client vs pgbench on the same throwaway server (scripts/bench-postgres.sh), if present.
#   3. Every service's benchmark in `rave-bench` (scripts/bench-services.sh), leaderboards under `ravectl loadtest`
#      (scripts/bench-leaderboards.sh), the leaderboards rank index alone (`rave-bench leaderboards`) and the
#      gateway against stand-in backends (`rave-bench gateway`), and batches of bets through the whole stack
#      against the wallet in process and pgbench -N (scripts/bench-bets.sh);
#   4. our rows next to Redis's of this run, with both servers' CPU per call (scripts/bench-against-redis.py).
# Results: a human summary on stdout, machine-readable JSON in .bench/.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

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

# Redis over TLS on the same machine, measured in this run: the baseline of the "against Redis" table below.
scripts/bench-redis.sh
"$ravectl" certs --out "$certs" >/dev/null
port=$(free_port)
"$ravectl" serve-echo --listen "127.0.0.1:$port" --cert "$certs/identity.pem" --key "$certs/identity-key.pem" \
    2>.bench/serve-echo.log &
server_pid=$!
for _ in $(seq 50); do "$ravectl" ping "127.0.0.1:$port" --ca "$certs/ca.pem" >/dev/null 2>&1 && break; sleep 0.1; done

bench_rpc() {
    local name=$1 connections=$2 in_flight=$3 before out
    for run in $(seq "$runs"); do
        echo "== rpc $name run $run/$runs: $connections connections × $in_flight in flight, ${duration}s"
        out=.bench/rpc-$name-$run.json
        before=$(cpu_ticks "$server_pid")
        "$ravectl" bench rpc --target "127.0.0.1:$port" --ca "$certs/ca.pem" --connections "$connections" \
            --in-flight "$in_flight" --duration "$duration" --payload 32 --out "$out" |
            grep -v '^\[' || true
        python3 - "$out" "$(( $(cpu_ticks "$server_pid") - before ))" "$(getconf CLK_TCK)" <<'PY'
import json, sys
path, ticks, hertz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
result = json.load(open(path))
result["server_cpu_us_per_call"] = ticks * 1_000_000 / hertz / max(1, result["calls"])
json.dump(result, open(path, "w"), indent=2)
print(f"server CPU per call: {result['server_cpu_us_per_call']:.2f} µs")
PY
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
        "median_server_cpu_us_per_call": statistics.median(r["server_cpu_us_per_call"] for r in results),
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

# rave-bench holds the services' benchmarks; the service executables are what bench-leaderboards.sh and
# bench-bets.sh (the whole stack) start.
for product in rave-bench identity social leaderboards gifts push wallet gateway; do
    swift build -c release --product "$product" -q
done
scripts/bench-services.sh
scripts/bench-leaderboards.sh
echo "== rave-bench leaderboards (the rank index alone, in memory)"
RAVE_BENCH_OUT=.bench/leaderboards-index.json .build/release/rave-bench leaderboards
echo "== rave-bench gateway (stand-in backends, in one process)"
RAVE_BENCH_OUT=.bench/gateway.json .build/release/rave-bench gateway
scripts/bench-bets.sh
scripts/bench-against-redis.py
