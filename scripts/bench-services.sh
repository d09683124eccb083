#!/usr/bin/env bash
# The services' benchmarks (`rave-bench <service>`) against a throwaway PostgreSQL (part of `make bench`):
#   rave-bench identity: guest logins, token refreshes, ResolveUsers(100), password logins, and guest logins and
#                        refreshes during a password flood — in-process handlers, real PostgreSQL;
#   rave-bench social:   a page of 25 friends by name, follow/unfollow, FriendIds — same.
#   rave-bench gifts:    send to 20, list 25 pending, accept — same.
#   rave-bench wallet:   backed bets 50 × 1 and batches of 50, each run after a `pgbench -N` baseline on the same
#                        server.
#   rave-bench push:     fan-out of one notification to many devices and delivery to a local HTTP/2 sink (nghttpd).
# Each writes .bench/<service>.json (push: .bench/push-fanout.json). Sizes: RAVE_BENCH_SOCIAL_USERS (default 2000) × RAVE_BENCH_FRIENDS (1000),
# RAVE_PUSH_BENCH_DEVICES (default 100000).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

if [ "${1:-}" != "--inside" ]; then
    scripts/install-deps.sh nghttp2-server
    for product in rave-bench ravectl; do
        [ -x ".build/release/$product" ] || { echo "bench-services: build first (make release)" >&2; exit 1; }
    done
    exec scripts/with-postgres.sh "$0" --inside
fi

mkdir -p .bench
base=${RAVE_TEST_POSTGRES_URL%/*}
for service in identity social gifts wallet push; do
    psql -q -d postgres -c "CREATE DATABASE rave_bench_$service"
done
echo "== rave-bench identity"
RAVE_DATABASE_URL="$base/rave_bench_identity" RAVE_BENCH_OUT=.bench/identity.json .build/release/rave-bench identity
echo "== rave-bench social"
RAVE_DATABASE_URL="$base/rave_bench_social" RAVE_BENCH_OUT=.bench/social.json \
    RAVE_BENCH_USERS="${RAVE_BENCH_SOCIAL_USERS:-2000}" RAVE_BENCH_FRIENDS="${RAVE_BENCH_FRIENDS:-1000}" \
    .build/release/rave-bench social
echo "== rave-bench gifts"
RAVE_DATABASE_URL="$base/rave_bench_gifts" RAVE_BENCH_OUT=.bench/gifts.json .build/release/rave-bench gifts
echo "== rave-bench wallet"
RAVE_DATABASE_URL="$base/rave_bench_wallet" RAVE_BENCH_OUT=.bench/wallet.json .build/release/rave-bench wallet

echo "== rave-bench push"
work=$(mktemp -d /tmp/rave-bench-push.XXXXXX)
sink=""
trap '[ -n "$sink" ] && kill "$sink" 2>/dev/null; rm -rf "$work"' EXIT
.build/release/ravectl certs --out "$work" >/dev/null
# The APNs provider-token key: any P-256 key, since the sink does not check the token.
openssl ecparam -genkey -name prime256v1 -noout | openssl pkcs8 -topk8 -nocrypt -out "$work/apns.p8"
sink_port=$(free_port)
nghttpd --echo-upload -n 2 -m 256 -a 127.0.0.1 "$sink_port" "$work/push-key.pem" "$work/push.pem" >/dev/null 2>&1 &
sink=$!
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/"$sink_port") 2>/dev/null && break; sleep 0.1; done
RAVE_DATABASE_URL="$base/rave_bench_push" \
    RAVE_PUSH_APNS_KEY_FILE="$work/apns.p8" RAVE_PUSH_APNS_KEY_ID=BENCHKEY01 RAVE_PUSH_APNS_TEAM_ID=BENCHTEAM1 \
    RAVE_PUSH_APNS_TOPIC=com.example.bench RAVE_PUSH_APNS_URL="https://127.0.0.1:$sink_port" \
    RAVE_PUSH_CA_FILE="$work/ca.pem" RAVE_LOG_LEVEL=warning .build/release/rave-bench push
