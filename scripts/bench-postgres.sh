#!/usr/bin/env bash
# PostgreSQL client benchmark against pgbench on the same throwaway server (see docs/BENCHMARKS.md).
#
# Starts a cluster with scripts/with-postgres.sh, then 3 runs each of `pgbench -S -c 16 -j 2 -T 10` (after
# `pgbench -i -s 10`) and `ravectl bench postgres` (prepared selects, pipelined inserts, COPY); prints the
# medians and writes them with every run to .bench/postgres.json. Build first: `make release`.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" != "--inside" ]; then
    [ -x .build/release/ravectl ] || { echo "bench-postgres: build first (make release)" >&2; exit 1; }
    exec scripts/with-postgres.sh "$0" --inside
fi

runs=${RAVE_BENCH_RUNS:-3}
duration=${RAVE_BENCH_DURATION:-10}
mkdir -p .bench
work=$(mktemp -d /tmp/rave-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

pgbench -i -s 10 -q postgres >"$work/pgbench-init.log" 2>&1 || { cat "$work/pgbench-init.log" >&2; exit 1; }
for run in $(seq "$runs"); do
    pgbench -S -c 16 -j 2 -T "$duration" postgres 2>/dev/null |
        awk '/^tps = / { print $3 }' >>"$work/pgbench-tps"
    .build/release/ravectl bench postgres --url "$RAVE_TEST_POSTGRES_URL" --connections 16 \
        --duration "$duration" --json "$work/ravectl-$run.json" >/dev/null
    echo "bench-postgres: run $run/$runs done (pgbench $(tail -n 1 "$work/pgbench-tps") tps)"
done

python3 - "$work" "$runs" <<'PY'
import json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
pgbench = [float(line) for line in open(f"{work}/pgbench-tps") if line.strip()]
results = [json.load(open(f"{work}/ravectl-{run}.json")) for run in range(1, runs + 1)]
def median(path):
    values = []
    for result in results:
        value = result
        for key in path:
            value = value[key]
        values.append(value)
    return statistics.median(values)
summary = {
    "pgbench_select_tps": statistics.median(pgbench),
    "select_rows_per_second": median(["selects", "rowsPerSecond"]),
    "select_p50_us": median(["selects", "latency", "p50"]),
    "select_p99_us": median(["selects", "latency", "p99"]),
    "pipelined_insert_rows_per_second": median(["pipelinedInserts", "rowsPerSecond"]),
    "copy_rows_per_second": median(["copy", "rowsPerSecond"]),
}
summary["select_vs_pgbench"] = summary["select_rows_per_second"] / summary["pgbench_select_tps"]
targets = {"select_vs_pgbench": 0.8, "pipelined_insert_rows_per_second": 50_000, "copy_rows_per_second": 500_000}
for name, value in summary.items():
    mark = "" if name not in targets else ("  ok" if value >= targets[name] else f"  BELOW target {targets[name]:,}")
    print(f"{name:36} {value:14,.2f}{mark}")
json.dump({"name": "postgres", "median": summary, "targets": targets, "baseline": {"pgbench_tps": pgbench},
           "runs": results}, open(".bench/postgres.json", "w"), indent=2)
print("bench-postgres: wrote .bench/postgres.json")
PY
