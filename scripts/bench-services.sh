#!/usr/bin/env bash
# The services' own bench modes against a throwaway PostgreSQL (part of `make bench`):
#   identity bench: guest logins, token refreshes, ResolveUsers(100) — in-process handlers, real PostgreSQL;
#   social bench:   a page of 25 friends by name, follow/unfollow, FriendIds — same.
# Each writes .bench/<service>.json. Sizes: RAVE_BENCH_SOCIAL_USERS (default 2000) × RAVE_BENCH_FRIENDS (1000).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" != "--inside" ]; then
    for service in identity social; do
        [ -x ".build/release/$service" ] || { echo "bench-services: build first (make release)" >&2; exit 1; }
    done
    exec scripts/with-postgres.sh "$0" --inside
fi

mkdir -p .bench
base=${RAVE_TEST_POSTGRES_URL%/*}
for service in identity social; do
    psql -q -d postgres -c "CREATE DATABASE rave_bench_$service"
done
echo "== identity bench"
RAVE_DATABASE_URL="$base/rave_bench_identity" RAVE_BENCH_OUT=.bench/identity.json .build/release/identity bench
echo "== social bench"
RAVE_DATABASE_URL="$base/rave_bench_social" RAVE_BENCH_OUT=.bench/social.json \
    RAVE_BENCH_USERS="${RAVE_BENCH_SOCIAL_USERS:-2000}" RAVE_BENCH_FRIENDS="${RAVE_BENCH_FRIENDS:-1000}" \
    .build/release/social bench
