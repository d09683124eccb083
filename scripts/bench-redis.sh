#!/usr/bin/env bash
# The Redis baseline of `make bench`: Redis over TLS on the same machine, measured in the same run as our servers,
# so every ratio compares two servers under the same conditions (docs/BENCHMARKS.md, "Against Redis").
#
# Starts `redis-server` with TLS on a free loopback port (no persistence: Redis's writes here are memory only), with
# a throwaway CA and certificate from `ravectl certs`, and runs `redis-benchmark` for each row:
#   ping-50x1       PING, 50 connections, 1 in flight             (ours: Echo 50 × 1, scripts/bench.sh)
#   ping-16xP16     PING, 16 connections, pipelined 16 deep        (ours: Echo 16 × 64)
#   zrevrank-1m     ZREVRANK of a random member of a 1,000,000-member sorted set, 50 × 1
#                   (ours: "my position" on a 1M board, scripts/bench-leaderboards.sh)
#   zadd            ZADD of a random member, 50 × 1                (ours: a durable submit)
# For each: requests/s, p50 and p99 (redis-benchmark's), and the server's CPU per request (user + system time of the
# redis-server process over the row, from /proc, divided by the requests). Writes .bench/redis.json.
#
# RAVE_BENCH_REDIS_REQUESTS scales the request counts (default 1: ~300,000 requests per unpipelined row).
# RAVE_BENCH_REDIS_ROWS names the rows to run (default all four, e.g. "zadd" right before a submit benchmark).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || {
    echo "bench-redis: redis-server and redis-benchmark are missing (make deps installs them)" >&2
    exit 1
}
scale=${RAVE_BENCH_REDIS_REQUESTS:-1}
rows=" ${RAVE_BENCH_REDIS_ROWS:-ping-50x1 ping-16xP16 zrevrank-1m zadd} "
ravectl=.build/release/ravectl
[ -x "$ravectl" ] || swift build -c release --product ravectl -q
mkdir -p .bench
work=$(mktemp -d /tmp/rave-bench-redis.XXXXXX)
redis_pid=""
cleanup() {
    [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

"$ravectl" certs --out "$work/certs" >/dev/null
port=$(free_port)
redis-server --port 0 --bind 127.0.0.1 --tls-port "$port" \
    --tls-cert-file "$work/certs/identity.pem" --tls-key-file "$work/certs/identity-key.pem" \
    --tls-ca-cert-file "$work/certs/ca.pem" --tls-auth-clients no \
    --save '' --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
redis_pid=$!
tls=(--tls --cacert "$work/certs/ca.pem" -h 127.0.0.1 -p "$port")
for _ in $(seq 50); do redis-cli "${tls[@]}" PING >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli "${tls[@]}" PING >/dev/null || { cat "$work/redis.log" >&2; exit 1; }

# A 1,000,000-member sorted set, named as redis-benchmark's __rand_int__ spells numbers (12 digits).
[[ $rows == *" zrevrank-1m "* ]] && python3 - <<'PY' | redis-cli "${tls[@]}" --pipe >/dev/null
import random, sys
out = sys.stdout.buffer
rng = random.Random(1)
for i in range(1_000_000):
    member = b"m:%012d" % i
    score = b"%d" % rng.randrange(10_000_000)
    out.write(b"*4\r\n$4\r\nZADD\r\n$5\r\nboard\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(score), score, len(member), member))
PY
[[ $rows != *" zrevrank-1m "* ]] || [ "$(redis-cli "${tls[@]}" ZCARD board)" = 1000000 ] || { echo "bench-redis: seeding the sorted set failed" >&2; exit 1; }

# row NAME REQUESTS redis-benchmark-arguments...: one line of JSON per row into $work/rows.
row() {
    local name=$1 requests=$2
    shift 2
    [[ $rows == *" $name "* ]] || return 0
    local before after
    before=$(cpu_ticks "$redis_pid")
    redis-benchmark "${tls[@]}" -n "$requests" --csv "$@" >"$work/$name.csv"
    after=$(cpu_ticks "$redis_pid")
    python3 - "$name" "$requests" "$((after - before))" "$work/$name.csv" "$(getconf CLK_TCK)" >>"$work/rows" <<'PY'
import csv, json, sys
name, requests, ticks, path, hertz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
rows = list(csv.DictReader(open(path)))
result = rows[-1]
print(json.dumps({
    "name": name, "requests": requests,
    "requests_per_second": float(result["rps"]),
    "p50_ms": float(result["p50_latency_ms"]), "p99_ms": float(result["p99_latency_ms"]),
    "server_cpu_us_per_request": ticks * 1_000_000 / hertz / requests,
}))
PY
}

echo "== Redis $(redis-server --version | sed 's/.*v=\([0-9.]*\).*/\1/') over TLS, on 127.0.0.1:$port"
row ping-50x1 $((300000 * scale)) -c 50 -t ping_mbulk
row ping-16xP16 $((3000000 * scale)) -c 16 -P 16 -t ping_mbulk
row zrevrank-1m $((300000 * scale)) -c 50 -r 1000000 ZREVRANK board 'm:__rand_int__'
row zadd $((300000 * scale)) -c 50 -r 1000000 ZADD board2 '__rand_int__' 'm:__rand_int__'

python3 - "$work/rows" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
for r in rows:
    print(f"redis {r['name']}: {r['requests_per_second']:,.0f} requests/s, p50 {r['p50_ms']} ms, "
          f"p99 {r['p99_ms']} ms, server CPU {r['server_cpu_us_per_request']:.2f} µs/request")
json.dump({"benchmark": "redis", "rows": {r["name"]: r for r in rows}}, open(".bench/redis.json", "w"), indent=2)
PY
