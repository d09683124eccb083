#!/usr/bin/env python3
"""The "against Redis" table of `make bench`: each of our rows next to the Redis row of the same run.

Reads what the earlier steps wrote to .bench/ (redis.json from scripts/bench-redis.sh, rpc.json from scripts/bench.sh,
leaderboards-*.json from scripts/bench-leaderboards.sh), prints one line per row with both throughputs, the ratio and
both servers' CPU per call, and writes .bench/against-redis.json. A row whose measurement is missing says so.
"""
import glob
import json
import statistics
import sys


def load(path):
    try:
        with open(path) as file:
            return json.load(file)
    except (OSError, ValueError):
        return None


def leaderboards(operation):
    """Median throughput and service CPU per call of the runs of one operation, or None."""
    runs = [load(path) for path in sorted(glob.glob(f".bench/leaderboards-{operation}-[0-9]*.json"))]
    runs = [run for run in runs if run and operation in run.get("operations", {})]
    if not runs:
        return None
    throughput = statistics.median(run["operations"][operation]["throughput_per_second"] for run in runs)
    cpu = [run["cpu_us_per_call"]["service"] for run in runs if "cpu_us_per_call" in run]
    return {"throughput": throughput, "cpu": statistics.median(cpu) if cpu else None,
            "postgres_cpu": statistics.median(run["cpu_us_per_call"]["postgres"] for run in runs
                                              if "cpu_us_per_call" in run) if cpu else None}


def main():
    redis = (load(".bench/redis.json") or {}).get("rows", {})
    rpc = (load(".bench/rpc.json") or {}).get("configurations", {})

    def ours_rpc(name):
        row = rpc.get(name)
        if not row:
            return None
        return {"throughput": row["median_throughput_calls_per_second"],
                "cpu": row.get("median_server_cpu_us_per_call")}

    table = [
        ("small calls, 50 connections × 1", "ping-50x1", "echo 50 × 1", ours_rpc("50x1"), 1.0),
        ("multiplexed", "ping-16xP16", "echo 16 × 64", ours_rpc("16x64"), 1.0),
        ("rank of a player, 1M entries", "zrevrank-1m", "my position", leaderboards("position"), 1.5),
        ("score write", "zadd", "durable submit", leaderboards("submit"), 1.0),
    ]
    rows = []
    print("against Redis (same run; server CPU per call is the server process's user + system time / calls):")
    for title, redis_name, ours_name, ours, goal in table:
        theirs = redis.get(redis_name)
        if not theirs or not ours:
            missing = "Redis" if not theirs else "ours"
            print(f"  {title}: not measured ({missing} missing)")
            rows.append({"row": title, "measured": False})
            continue
        ratio = ours["throughput"] / theirs["requests_per_second"]
        cpu = f"{ours['cpu']:.2f}" if ours.get("cpu") is not None else "?"
        extra = f" + PostgreSQL {ours['postgres_cpu']:.1f}" if ours.get("postgres_cpu") is not None else ""
        print(f"  {title}: Redis {redis_name} {theirs['requests_per_second']:,.0f}/s, ours ({ours_name}) "
              f"{ours['throughput']:,.0f}/s = {ratio:.2f}× (goal ≥ {goal}×: {'met' if ratio >= goal else 'not met'}); "
              f"server CPU µs/call Redis {theirs['server_cpu_us_per_request']:.2f} / ours {cpu}{extra}")
        rows.append({"row": title, "measured": True, "redis": theirs, "ours": ours, "ratio": ratio, "goal": goal})
    json.dump({"benchmark": "against-redis", "rows": rows}, open(".bench/against-redis.json", "w"), indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
