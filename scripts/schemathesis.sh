#!/usr/bin/env bash
# Property-based tests of a running gateway's HTTP/JSON front door against docs/openapi.json, with schemathesis
# from .venv (`make deps`): every documented operation is called with generated requests (RAVE_SCHEMATHESIS_EXAMPLES
# per operation, default 20), and each answer must not be a server error (5xx), must have a documented content
# type, and must match the document's schema for its status.
#
#   scripts/schemathesis.sh BASE_URL CA_FILE        e.g. https://127.0.0.1:8443 .run/certs/ca.pem
#
# Player operations carry a guest's access token, signed in first with GuestLogin for the application in
# RAVE_APP_ID (default: .run/demo-app-id, which `make run` seeds). Admin operations go without the admin
# certificate unless RAVE_ADMIN_CERT and RAVE_ADMIN_KEY name one (they then create publishers, apps, boards, …).
# Left out: the Echo service (a protocol test service, not deployed) and the calls that end the guest's session.
# Extra arguments go to `schemathesis run` (e.g. --seed 1, --include-tag Wallet).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 2 ]; then
    echo "usage: scripts/schemathesis.sh BASE_URL CA_FILE [schemathesis run options]" >&2
    exit 2
fi
base=${1%/}
ca=$2
shift 2
[ -x .venv/bin/schemathesis ] || { echo "schemathesis.sh: .venv/bin/schemathesis is missing; run 'make deps'" >&2; exit 1; }
app=${RAVE_APP_ID:-$(cat .run/demo-app-id 2>/dev/null || true)}
[ -n "$app" ] || { echo "schemathesis.sh: set RAVE_APP_ID to an application's id (or seed .run/demo-app-id)" >&2; exit 1; }

login=$(curl --silent --show-error --fail-with-body --cacert "$ca" -X POST \
    "$base/v1/rave.identity.v1.Identity/GuestLogin" -H 'Content-Type: application/json' \
    -d "{\"appId\": \"$app\", \"device\": {\"deviceId\": \"schemathesis-$(date +%s)-$$\"}}") || {
    echo "schemathesis.sh: GuestLogin failed: $login" >&2
    exit 1
}
token=$(.venv/bin/python -c 'import json, sys; print(json.load(sys.stdin)["tokens"]["accessToken"])' <<<"$login")

admin=()
if [ -n "${RAVE_ADMIN_CERT:-}" ]; then
    admin=(--request-cert "$RAVE_ADMIN_CERT" --request-cert-key "${RAVE_ADMIN_KEY:?RAVE_ADMIN_KEY names the admin key}")
fi

exec .venv/bin/schemathesis run docs/openapi.json --url "$base" --tls-verify "$ca" \
    --header "Authorization: Bearer $token" "${admin[@]}" \
    --checks not_a_server_error,response_schema_conformance,content_type_conformance \
    --max-examples "${RAVE_SCHEMATHESIS_EXAMPLES:-20}" \
    --exclude-tag Echo --exclude-operation-id Identity_Logout --exclude-operation-id Identity_RevokeSession \
    "$@"
