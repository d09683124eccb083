#!/usr/bin/env bash
# `make run`: the whole stack on this machine. Starts the development PostgreSQL (deploy/local/postgres.sh),
# makes certificates if missing, then supervises every service executable that has been built: each one's
# log lines are prefixed with its name, and a crashed service is restarted with exponential backoff.
# Waits until every /readyz answers, prints the endpoints, and runs until Ctrl-C, which stops everything.
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=.build/release
export RAVE_CERT_DIR=$(pwd)/.run/certs
# How the services find each other locally (DESIGN.md §10 ports): identity checks blocks with social and drives
# merges on every data-owning service; every service sends its events to push and gifts (docs/events.md); the
# wallet asks identity whether an operator transfer's user exists (social, leaderboards and gifts reach identity
# at its default address, 127.0.0.1:7501, too).
export RAVE_IDENTITY_SOCIAL_ADDRESS=${RAVE_IDENTITY_SOCIAL_ADDRESS:-127.0.0.1:7502}
export RAVE_WALLET_IDENTITY_ADDRESS=${RAVE_WALLET_IDENTITY_ADDRESS:-127.0.0.1:7501}
export RAVE_IDENTITY_MERGE_PARTICIPANTS=${RAVE_IDENTITY_MERGE_PARTICIPANTS:-social=127.0.0.1:7502,leaderboards=127.0.0.1:7503,gifts=127.0.0.1:7504,push=127.0.0.1:7505,wallet=127.0.0.1:7506}
export RAVE_EVENT_SINKS=${RAVE_EVENT_SINKS:-push=127.0.0.1:7505,gifts=127.0.0.1:7504}
# Identity's mails (verification and reset codes) go to the development mail sink started below, which writes each
# to .run/mail/<time>-<to>.eml and prints its subject.
export RAVE_IDENTITY_SMTP_URL=${RAVE_IDENTITY_SMTP_URL:-smtp://127.0.0.1:2525}
export RAVE_IDENTITY_SMTP_FROM=${RAVE_IDENTITY_SMTP_FROM:-no-reply@rave.localhost}
mkdir -p .run/logs

deploy/local/postgres.sh start
[ -f "$RAVE_CERT_DIR/ca.pem" ] || "$bin/ravectl" certs --out "$RAVE_CERT_DIR"
# The development PostgreSQL wants a password: libpq reads it from the file postgres.sh generated.
export PGPASSFILE=$(pwd)/.run/pgpass
# Identity seals its signing keys and TOTP secrets with the first key of this file (docs/OPERATIONS.md); made once,
# readable by this user only. Without it nothing sealed opens: identity refuses to start until the file is back
# (or .run/postgres is deleted to start afresh).
export RAVE_SECRET_KEY_FILE=${RAVE_SECRET_KEY_FILE:-$(pwd)/.run/secret-keys}
if [ ! -f "$RAVE_SECRET_KEY_FILE" ]; then
    # The umask must hold where the file is opened: inside the subshell, around the redirection.
    (
        umask 077
        {
            printf '# Keys that seal secrets at rest: "<key id> <base64 of 32 random bytes>"; the first seals new ones.\n'
            printf 'local-%s %s\n' "$(date -u +%Y%m%d%H%M%S)" "$(openssl rand -base64 32)"
        } >"$RAVE_SECRET_KEY_FILE"
    )
fi

# name, protocol port, admin port (DESIGN.md §10); a service runs only if its executable exists.
services=(
    "identity 7501 9401"
    "social 7502 9402"
    "leaderboards 7503 9403"
    "gifts 7504 9404"
    "push 7505 9405"
    "wallet 7506 9406"
    "gateway 7443 9400"
)

pids=()
stopping=false
# Each supervisor writes the pid of the process it runs here, so stopping reaches the processes themselves: a
# supervisor's own trap is not enough when Ctrl-C reached the group first (a process started from a background
# subshell ignores SIGINT, the supervisor's log pipe may be gone).
children=.run/children
rm -rf "$children"
mkdir -p "$children"
stop_all() {
    stopping=true
    echo "stopping…"
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    local running=()
    for file in "$children"/*; do
        [ -f "$file" ] || continue
        local child
        child=$(cat "$file")
        kill -TERM "$child" 2>/dev/null && running+=("$child")
    done
    wait || true
    # The services drain in-flight calls first (at most the shutdown grace period, 30 s by default).
    for child in "${running[@]}"; do
        while kill -0 "$child" 2>/dev/null; do sleep 0.2; done
    done
    echo "stopped (PostgreSQL keeps running: 'make stop' stops it)"
}
trap stop_all INT TERM

# Runs one command forever, restarting it with backoff when it exits unexpectedly.
supervise() {
    local name=$1
    shift
    local backoff=1 child
    trap 'kill -TERM $child 2>/dev/null; wait $child 2>/dev/null; exit 0' TERM
    while true; do
        local started=$SECONDS
        "$@" > >(sed -u "s/^/[$name] /") 2>&1 &
        child=$!
        echo "$child" >"$children/$name"
        wait $child && status=0 || status=$?
        [ $((SECONDS - started)) -gt 30 ] && backoff=1
        echo "[$name] exited with status $status; restarting in ${backoff}s" >&2
        sleep "$backoff"
        backoff=$((backoff < 30 ? backoff * 2 : 30))
    done
}

supervise mail python3 deploy/local/mail-sink.py 2525 .run/mail &
pids+=($!)

started=()
for entry in "${services[@]}"; do
    read -r name port admin <<<"$entry"
    [ -x "$bin/$name" ] || continue
    supervise "$name" "$bin/$name" &
    pids+=($!)
    started+=("$entry")
done
supervise echo "$bin/ravectl" serve-echo --listen 127.0.0.1:7600 \
    --cert "$RAVE_CERT_DIR/identity.pem" --key "$RAVE_CERT_DIR/identity-key.pem" &
pids+=($!)

for entry in "${started[@]}"; do
    read -r name port admin <<<"$entry"
    for _ in $(seq 100); do
        python3 - "$admin" <<'PY' && break
import sys, urllib.request
try:
    urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/readyz", timeout=1)
except Exception:
    sys.exit(1)
PY
        sleep 0.2
    done
done

echo
echo "Rave Backend is running (Ctrl-C stops it):"
echo "  PostgreSQL     127.0.0.1:55432 (user postgres, password in .run/pgpass; data in .run/postgres)"
echo "  secret keys    $RAVE_SECRET_KEY_FILE"
for entry in "${started[@]}"; do
    read -r name port admin <<<"$entry"
    printf '  %-14s 127.0.0.1:%s (TLS), metrics http://127.0.0.1:%s/metrics\n' "$name" "$port" "$admin"
done
echo "  echo           127.0.0.1:7600 (TLS, the protocol's conformance service)"
echo "  certificates   $RAVE_CERT_DIR"
echo "  mail sink      smtp://127.0.0.1:2525 (identity's mails land in .run/mail/*.eml)"
echo
# The demo content (publisher, application, leaderboards, achievements, gift types, games, currency).
demo_app=""
if [ -x "$bin/gateway" ] && [ -x "$bin/identity" ]; then
    demo_app=$(deploy/local/seed.sh "$bin") || echo "could not seed the demo content (see the logs above)" >&2
fi

echo "Try:"
echo "  $bin/ravectl ping 127.0.0.1:7600 --ca $RAVE_CERT_DIR/ca.pem"
if [ -n "$demo_app" ]; then
    echo "  $bin/ravectl login --app $demo_app --device my-device --target 127.0.0.1:7443 --ca $RAVE_CERT_DIR/ca.pem"
    echo "  $bin/ravectl call rave.identity.v1.Identity/GetCurrentUser --json '{}' --ca $RAVE_CERT_DIR/ca.pem"
    echo "  $bin/ravectl call rave.leaderboards.v1.Leaderboards/ListLeaderboards --json '{}' --ca $RAVE_CERT_DIR/ca.pem"
    echo "  $bin/ravectl call rave.wallet.v1.Wallet/ListGames --json '{}' --ca $RAVE_CERT_DIR/ca.pem"
fi
echo "  $bin/ravectl bench rpc --target 127.0.0.1:7600 --ca $RAVE_CERT_DIR/ca.pem --duration 5"
echo
wait
