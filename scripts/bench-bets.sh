#!/usr/bin/env bash
# Batches of bets end to end (part of `make bench`): guests sending batches of 50 PlaceBet calls through the real
# gateway into the real wallet and PostgreSQL (`ravectl loadtest bets`, 16 connections × 1 batch in flight), against
# two baselines of the same run on the same PostgreSQL: the wallet's own batch rate in process (`rave-bench wallet`,
# 16 batches of 50 in flight, no network) and `pgbench -N -c 16 -j 2` (which rave-bench wallet runs before each of
# its runs). The whole stack is started from the release executables by scripts/with-stack.sh.
#
# Writes .bench/bets-<run>.json (each load test), .bench/wallet-inprocess.json (the baselines) and .bench/bets.json
# (medians and ratios). Settings: RAVE_BENCH_RUNS (default 3), RAVE_BENCH_SECONDS (each load test, default 8),
# RAVE_BENCH_BIN (default .build/release).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${RAVE_BENCH_BIN:-.build/release}
for product in ravectl rave-bench gateway identity wallet; do
    [ -x "$bin/$product" ] || { echo "bench-bets: $bin/$product is missing; build first (make release)" >&2; exit 1; }
done
mkdir -p .bench
# One address sends everything, and each guest sends far more than a player would: the limits would be measured.
export RAVE_GATEWAY_ADDRESS_RATE=10000000 RAVE_GATEWAY_ADDRESS_BURST=10000000 \
    RAVE_GATEWAY_USER_RATE=10000000 RAVE_GATEWAY_USER_BURST=10000000
export RAVE_LOCAL_BIN=$bin RAVE_LOG_LEVEL=warning RAVE_BENCH_BIN=$bin
export RAVE_BENCH_RUNS=${RAVE_BENCH_RUNS:-3} RAVE_BENCH_SECONDS=${RAVE_BENCH_SECONDS:-8}

# shellcheck disable=SC2016 # expanded by the inner shell, inside the stack
scripts/with-stack.sh bash -c '
    set -euo pipefail
    export PGPASSFILE=$RAVE_STACK_DIR/pgpass
    url=postgresql://postgres@127.0.0.1:$RAVE_LOCAL_POSTGRES_PORT
    psql -q -d "$url/postgres" -c "CREATE DATABASE rave_bench_wallet"
    echo "== the wallet in process: batches of 50, 16 in flight, after pgbench -N each run"
    RAVE_DATABASE_URL=$url/rave_bench_wallet RAVE_BENCH_SECONDS=5 RAVE_BENCH_OUT=.bench/wallet-inprocess.json \
        "$RAVE_BENCH_BIN/rave-bench" wallet
    for run in $(seq "$RAVE_BENCH_RUNS"); do
        echo "== batches of 50 bets through the gateway, 16 connections x 1, run $run"
        "$RAVE_BENCH_BIN/ravectl" loadtest bets --gateway "$RAVE_STACK_GATEWAY" --app "$RAVE_STACK_APP_ID" \
            --ca "$RAVE_STACK_CA" --admin-cert "$RAVE_STACK_ADMIN_CERT" --admin-key "$RAVE_STACK_ADMIN_KEY" \
            --connections 16 --duration "$RAVE_BENCH_SECONDS" --out ".bench/bets-$run.json" | grep -v "^\["
    done
'

python3 - "$RAVE_BENCH_RUNS" <<'PY'
import json, statistics, sys
runs = int(sys.argv[1])
gateway = [json.load(open(f".bench/bets-{run}.json"))["bets_per_second"] for run in range(1, runs + 1)]
baseline = json.load(open(".bench/wallet-inprocess.json"))
# rave-bench wallet counts a batch's bets as its calls.
in_process = [run["batches"]["calls_per_second"] for run in baseline["runs"]]
pgbench = [run["pgbench_tps"] for run in baseline["runs"]]
summary = {
    "gateway_bets_per_second": gateway, "in_process_bets_per_second": in_process, "pgbench_n_tps": pgbench,
    "ratio_to_in_process": statistics.median(gateway) / statistics.median(in_process),
    "ratio_to_pgbench_n": statistics.median(gateway) / statistics.median(pgbench),
}
json.dump(summary, open(".bench/bets.json", "w"), indent=2)
print(f"bets through the gateway {statistics.median(gateway):,.0f}/s (median of {runs}): "
      f"{summary['ratio_to_in_process']:.2f}x the wallet in process ({statistics.median(in_process):,.0f}/s), "
      f"{summary['ratio_to_pgbench_n']:.1f}x pgbench -N ({statistics.median(pgbench):,.0f} tps)")
PY
