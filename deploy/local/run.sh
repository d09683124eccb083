#!/usr/bin/env bash
# `make run`: the whole stack on this machine. Starts the development PostgreSQL (deploy/local/postgres.sh),
# makes certificates if missing, then supervises every service executable that has been built: each one's
# log lines are prefixed with its name, and a crashed service is restarted with exponential backoff.
# Waits until every /readyz answers, prints the endpoints, and runs until Ctrl-C, which stops everything.
#
# The defaults are DESIGN.md §10's. scripts/with-stack.sh runs this same script elsewhere: RAVE_LOCAL_DIR (state,
# default .run), RAVE_LOCAL_BIN (executables, default .build/release), RAVE_LOCAL_<NAME>_PORT and
# RAVE_LOCAL_<NAME>_ADMIN_PORT (each service's ports; NAME is IDENTITY, …, GATEWAY, and ECHO for the port only),
# RAVE_LOCAL_POSTGRES_PORT (postgres.sh). After seeding it writes <state>/ready: "ready", or "not seeded" when the
# seed failed (the demo app's id is in <state>/demo-app-id).
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=${RAVE_LOCAL_BIN:-.build/release}
export RAVE_LOCAL_DIR=${RAVE_LOCAL_DIR:-$(pwd)/.run}
state=$RAVE_LOCAL_DIR
postgres_port=${RAVE_LOCAL_POSTGRES_PORT:-55432}
# The port of a service: RAVE_LOCAL_<NAME>_PORT, else DESIGN.md §10's.
port() {
    local variable
    variable="RAVE_LOCAL_$(tr '[:lower:]' '[:upper:]' <<<"$1")_PORT"
    echo "${!variable:-$2}"
}
identity=127.0.0.1:$(port identity 7501)
social=127.0.0.1:$(port social 7502)
leaderboards=127.0.0.1:$(port leaderboards 7503)
gifts=127.0.0.1:$(port gifts 7504)
push=127.0.0.1:$(port push 7505)
wallet=127.0.0.1:$(port wallet 7506)
gateway=127.0.0.1:$(port gateway 7443)
echo_address=127.0.0.1:$(port echo 7600)
rm -f "$state/ready"
export RAVE_CERT_DIR=$state/certs
# How the services find each other locally: identity checks blocks with social and drives merges on every
# data-owning service; every service sends its events to push and gifts (docs/events.md); social, leaderboards,
# gifts, push and the wallet ask identity (the wallet whether an operator transfer's user exists; every one which
# publisher an operator's application belongs to), leaderboards and gifts ask social; the gateway routes to each.
export RAVE_IDENTITY_SOCIAL_ADDRESS=${RAVE_IDENTITY_SOCIAL_ADDRESS:-$social}
export RAVE_PUSH_IDENTITY_ADDRESS=${RAVE_PUSH_IDENTITY_ADDRESS:-$identity}
export RAVE_WALLET_IDENTITY_ADDRESS=${RAVE_WALLET_IDENTITY_ADDRESS:-$identity}
export RAVE_SOCIAL_IDENTITY_ADDRESS=${RAVE_SOCIAL_IDENTITY_ADDRESS:-$identity}
export RAVE_GIFTS_IDENTITY_ADDRESS=${RAVE_GIFTS_IDENTITY_ADDRESS:-$identity}
export RAVE_GIFTS_SOCIAL_ADDRESS=${RAVE_GIFTS_SOCIAL_ADDRESS:-$social}
export RAVE_LEADERBOARDS_IDENTITY_ADDRESS=${RAVE_LEADERBOARDS_IDENTITY_ADDRESS:-$identity}
export RAVE_LEADERBOARDS_SOCIAL_ADDRESS=${RAVE_LEADERBOARDS_SOCIAL_ADDRESS:-$social}
export RAVE_IDENTITY_MERGE_PARTICIPANTS=${RAVE_IDENTITY_MERGE_PARTICIPANTS:-social=$social,leaderboards=$leaderboards,gifts=$gifts,push=$push,wallet=$wallet}
export RAVE_EVENT_SINKS=${RAVE_EVENT_SINKS:-push=$push,gifts=$gifts}
export RAVE_GATEWAY_IDENTITY_ADDRESSES=${RAVE_GATEWAY_IDENTITY_ADDRESSES:-$identity}
export RAVE_GATEWAY_SOCIAL_ADDRESSES=${RAVE_GATEWAY_SOCIAL_ADDRESSES:-$social}
export RAVE_GATEWAY_LEADERBOARDS_ADDRESSES=${RAVE_GATEWAY_LEADERBOARDS_ADDRESSES:-$leaderboards}
export RAVE_GATEWAY_GIFTS_ADDRESSES=${RAVE_GATEWAY_GIFTS_ADDRESSES:-$gifts}
export RAVE_GATEWAY_PUSH_ADDRESSES=${RAVE_GATEWAY_PUSH_ADDRESSES:-$push}
export RAVE_GATEWAY_WALLET_ADDRESSES=${RAVE_GATEWAY_WALLET_ADDRESSES:-$wallet}
# The gateway's HTTP/JSON front door (docs/gateway.md), with the demo game, the browser SDK and the web console as
# static files.
export RAVE_GATEWAY_HTTP_LISTEN=${RAVE_GATEWAY_HTTP_LISTEN-127.0.0.1:8443}
export RAVE_GATEWAY_HTTP_STATIC=${RAVE_GATEWAY_HTTP_STATIC-/demo/=Clients/demo,/sdk/=Clients/web,/console/=Clients/console}
# Identity's mails (verification and reset codes) go to the development mail sink started below, which writes each
# to $state/mail/<time>-<to>.eml and prints its subject.
mail_sink=127.0.0.1:$(port mail 2525)
export RAVE_IDENTITY_SMTP_URL=${RAVE_IDENTITY_SMTP_URL:-smtp://$mail_sink}
export RAVE_IDENTITY_SMTP_FROM=${RAVE_IDENTITY_SMTP_FROM:-no-reply@rave.localhost}
mkdir -p "$state/logs"

deploy/local/postgres.sh start
[ -f "$RAVE_CERT_DIR/ca.pem" ] || "$bin/ravectl" certs --out "$RAVE_CERT_DIR"
# The development PostgreSQL wants a password: libpq reads it from the file postgres.sh generated.
export PGPASSFILE=$state/pgpass
# Identity seals its signing keys and TOTP secrets with the first key of this file (docs/OPERATIONS.md); made once,
# readable by this user only. Without it nothing sealed opens: identity refuses to start until the file is back
# (or the state's postgres directory is deleted to start afresh).
export RAVE_SECRET_KEY_FILE=${RAVE_SECRET_KEY_FILE:-$state/secret-keys}
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

# name, protocol port, admin port; a service runs only if its executable exists.
services=()
for entry in "identity 7501 9401" "social 7502 9402" "leaderboards 7503 9403" "gifts 7504 9404" "push 7505 9405" \
    "wallet 7506 9406" "gateway 7443 9400"; do
    read -r name rpc admin <<<"$entry"
    services+=("$name $(port "$name" "$rpc") $(port "${name}_admin" "$admin")")
done

pids=()
# Each supervisor writes the pid of the process it runs here, so stopping reaches the processes themselves: a
# supervisor's own trap is not enough when Ctrl-C reached the group first (a process started from a background
# subshell ignores SIGINT, the supervisor's log pipe may be gone).
children=$state/children
rm -rf "$children"
mkdir -p "$children"
stop_all() {
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

supervise mail python3 deploy/local/mail-sink.py "${mail_sink##*:}" "$state/mail" &
pids+=($!)

started=()
for entry in "${services[@]}"; do
    read -r name port admin <<<"$entry"
    [ -x "$bin/$name" ] || continue
    settings=(RAVE_LISTEN="127.0.0.1:$port" RAVE_ADMIN_LISTEN="127.0.0.1:$admin")
    [ "$name" = gateway ] || settings+=(RAVE_DATABASE_URL="postgresql://postgres@127.0.0.1:$postgres_port/rave_$name")
    supervise "$name" env "${settings[@]}" "$bin/$name" &
    pids+=($!)
    started+=("$entry")
done
supervise echo "$bin/ravectl" serve-echo --listen "$echo_address" \
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
echo "  PostgreSQL     127.0.0.1:$postgres_port (user postgres, password in $state/pgpass; data in $state/postgres)"
echo "  secret keys    $RAVE_SECRET_KEY_FILE"
for entry in "${started[@]}"; do
    read -r name port admin <<<"$entry"
    printf '  %-14s 127.0.0.1:%s (TLS), metrics http://127.0.0.1:%s/metrics\n' "$name" "$port" "$admin"
done
if [ -x "$bin/gateway" ] && [ -n "$RAVE_GATEWAY_HTTP_LISTEN" ]; then
    printf '  %-14s https://%s/ (HTTP/JSON front door; demo https://%s/demo/, trust %s)\n' "gateway http" \
        "$RAVE_GATEWAY_HTTP_LISTEN" "$RAVE_GATEWAY_HTTP_LISTEN" "$RAVE_CERT_DIR/ca.pem"
fi
echo "  echo           $echo_address (TLS, the protocol's conformance service)"
echo "  certificates   $RAVE_CERT_DIR"
echo "  mail sink      smtp://$mail_sink (identity's mails land in $state/mail/*.eml)"
echo
# The demo content (publisher, application, leaderboards, achievements, gift types, games, currency).
demo_app=""
if [ -x "$bin/gateway" ] && [ -x "$bin/identity" ]; then
    demo_app=$(deploy/local/seed.sh "$bin") || echo "could not seed the demo content (see the logs above)" >&2
fi

echo "Try:"
echo "  $bin/ravectl ping $echo_address --ca $RAVE_CERT_DIR/ca.pem"
if [ -n "$demo_app" ]; then
    echo "  $bin/ravectl login --app $demo_app --device my-device --target $gateway --ca $RAVE_CERT_DIR/ca.pem"
    echo "  $bin/ravectl call rave.identity.v1.Identity/GetCurrentUser --json '{}' --ca $RAVE_CERT_DIR/ca.pem"
    echo "  $bin/ravectl call rave.leaderboards.v1.Leaderboards/ListLeaderboards --json '{}' --ca $RAVE_CERT_DIR/ca.pem"
    echo "  $bin/ravectl call rave.wallet.v1.Wallet/ListGames --json '{}' --ca $RAVE_CERT_DIR/ca.pem"
    if [ -n "$RAVE_GATEWAY_HTTP_LISTEN" ]; then
        echo "  curl --cacert $RAVE_CERT_DIR/ca.pem -H 'Content-Type: application/json' \\"
        echo "    -d '{\"appId\": \"$demo_app\", \"device\": {\"deviceId\": \"curl-1\"}}' \\"
        echo "    https://$RAVE_GATEWAY_HTTP_LISTEN/v1/rave.identity.v1.Identity/GuestLogin"
        echo "  the demo game: https://$RAVE_GATEWAY_HTTP_LISTEN/demo/?app=$demo_app" \
            "(your browser must trust $RAVE_CERT_DIR/ca.pem)"
        echo "  the web console: https://$RAVE_GATEWAY_HTTP_LISTEN/console/?app=$demo_app" \
            "(an operator account logs in: Clients/console/README.md)"
    fi
fi
echo "  $bin/ravectl bench rpc --target $echo_address --ca $RAVE_CERT_DIR/ca.pem --duration 5"
echo
if [ -n "$demo_app" ]; then echo ready >"$state/ready"; else echo "not seeded" >"$state/ready"; fi
wait
