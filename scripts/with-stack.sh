#!/usr/bin/env bash
# Runs a command against a whole throwaway stack, started as `make run` starts it (deploy/local/run.sh: a
# PostgreSQL of its own, certificates, every built executable under its supervisor, the seed) but in a temporary
# directory and on free loopback ports. Waits until every service is ready and the demo content is seeded, runs
# the command, then stops everything and removes the directory (also when the command fails or the script is
# interrupted), and exits with the command's status.
#
#   scripts/with-stack.sh CMD [ARG…]
#
# The command sees:
#   RAVE_STACK_URL         the gateway's HTTPS front door, https://127.0.0.1:<port> (/demo/, /sdk/, /v1/…)
#   RAVE_STACK_GATEWAY     the gateway's binary protocol address, 127.0.0.1:<port>
#   RAVE_STACK_CA          the CA certificate every server certificate chains to
#   RAVE_STACK_GATEWAY_CERT  the gateway's server certificate (PEM)
#   RAVE_STACK_ADMIN_CERT, RAVE_STACK_ADMIN_KEY  the admin client certificate and key (operator calls)
#   RAVE_STACK_APP_ID      the seeded demo application's id
#   RAVE_STACK_DIR         the stack's state directory (logs/, children/<name> holding each process's pid)
#   RAVE_STACK_BIN         the executables' directory
#
# Settings: RAVE_LOCAL_BIN (executables; default .build/debug, what `make test` builds), RAVE_STACK_KEEP=1 keeps the
# directory afterwards (its path is printed), RAVE_STACK_START_TIMEOUT (seconds until ready, default 180). Any other
# RAVE_ variable set by the caller reaches every process (e.g. RAVE_GATEWAY_USER_RATE).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."

[ $# -gt 0 ] || { echo "usage: scripts/with-stack.sh CMD [ARG…]" >&2; exit 2; }

bin=$(cd "${RAVE_LOCAL_BIN:-.build/debug}" 2>/dev/null && pwd) ||
    { echo "with-stack: no ${RAVE_LOCAL_BIN:-.build/debug}; build first (swift build)" >&2; exit 1; }
for executable in ravectl identity gateway; do
    [ -x "$bin/$executable" ] || { echo "with-stack: $bin/$executable is missing; build first (swift build)" >&2; exit 1; }
done

workdir=$(mktemp -d /tmp/rave-stack.XXXXXX)
# PostgreSQL runs as the postgres user when this runs as root: it must reach its data directory below.
chmod 755 "$workdir"
state=$workdir/state
export RAVE_LOCAL_DIR=$state RAVE_LOCAL_BIN=$bin
mapfile -t ports < <(free_ports 18)
next=0
for name in IDENTITY SOCIAL LEADERBOARDS GIFTS PUSH WALLET GATEWAY; do
    export "RAVE_LOCAL_${name}_PORT=${ports[next]}" "RAVE_LOCAL_${name}_ADMIN_PORT=${ports[next + 1]}"
    next=$((next + 2))
done
RAVE_LOCAL_ECHO_PORT=${ports[14]}
RAVE_LOCAL_POSTGRES_PORT=${ports[15]}
RAVE_GATEWAY_HTTP_LISTEN=127.0.0.1:${ports[16]}
RAVE_LOCAL_MAIL_PORT=${ports[17]}
export RAVE_LOCAL_ECHO_PORT RAVE_LOCAL_POSTGRES_PORT RAVE_GATEWAY_HTTP_LISTEN RAVE_LOCAL_MAIL_PORT
# Stopping waits for in-flight calls; a test stack has nothing worth 30 s.
export RAVE_SHUTDOWN_GRACE=${RAVE_SHUTDOWN_GRACE:-1s}

stack_pid=""
# shellcheck disable=SC2317 # reached through the trap
cleanup() {
    local status=$?
    if [ -n "$stack_pid" ] && kill -0 "$stack_pid" 2>/dev/null; then
        kill -TERM "$stack_pid" 2>/dev/null || true
        wait "$stack_pid" 2>/dev/null || true
    fi
    deploy/local/postgres.sh stop >/dev/null 2>&1 || true
    if [ -n "${RAVE_STACK_KEEP:-}" ]; then
        echo "with-stack: kept $workdir" >&2
    else
        rm -rf "$workdir"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$state"
log=$workdir/stack.log
deploy/local/run.sh >"$log" 2>&1 &
stack_pid=$!

started=$SECONDS
until [ -s "$state/ready" ]; do
    if ! kill -0 "$stack_pid" 2>/dev/null; then
        echo "with-stack: the stack stopped while starting; its log ends:" >&2
        tail -n 40 "$log" >&2
        exit 1
    fi
    if [ $((SECONDS - started)) -ge "${RAVE_STACK_START_TIMEOUT:-180}" ]; then
        echo "with-stack: not ready after ${RAVE_STACK_START_TIMEOUT:-180} s; the log ends:" >&2
        tail -n 40 "$log" >&2
        exit 1
    fi
    sleep 0.2
done
if [ "$(cat "$state/ready")" != ready ]; then
    echo "with-stack: the stack started but the demo content was not seeded; the log ends:" >&2
    tail -n 40 "$log" >&2
    exit 1
fi
# run.sh waits for each /readyz a while and then goes on; here every service that started must be ready.
for name in IDENTITY SOCIAL LEADERBOARDS GIFTS PUSH WALLET GATEWAY; do
    lower=$(tr '[:upper:]' '[:lower:]' <<<"$name")
    [ -x "$bin/$lower" ] || continue
    admin_port_variable=RAVE_LOCAL_${name}_ADMIN_PORT
    if ! python3 - "${!admin_port_variable}" <<'PY'; then
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/readyz", timeout=2)
PY
        echo "with-stack: $lower is not ready; its log ends:" >&2
        grep -F "[$lower]" "$log" | tail -n 40 >&2
        exit 1
    fi
done

export RAVE_STACK_URL=https://$RAVE_GATEWAY_HTTP_LISTEN
export RAVE_STACK_GATEWAY=127.0.0.1:$RAVE_LOCAL_GATEWAY_PORT
export RAVE_STACK_CA=$state/certs/ca.pem
export RAVE_STACK_GATEWAY_CERT=$state/certs/gateway.pem
export RAVE_STACK_ADMIN_CERT=$state/certs/admin.pem
export RAVE_STACK_ADMIN_KEY=$state/certs/admin-key.pem
RAVE_STACK_APP_ID=$(cat "$state/demo-app-id")
export RAVE_STACK_APP_ID
export RAVE_STACK_DIR=$state RAVE_STACK_BIN=$bin
echo "with-stack: ready in $((SECONDS - started)) s: $RAVE_STACK_URL (binary $RAVE_STACK_GATEWAY), app $RAVE_STACK_APP_ID"

status=0
"$@" || status=$?
if [ "$status" -ne 0 ]; then
    echo "with-stack: $1 exited with status $status; the stack's log ends:" >&2
    tail -n 30 "$log" >&2
fi
exit "$status"
