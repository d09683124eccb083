#!/usr/bin/env bash
# Checks deploy/ (part of `make test`): the systemd unit verifies with systemd-analyze for every executable and
# its hardening scores "OK" (exposure ≤ 2.0); the Kubernetes manifests parse as YAML and hold together
# (scripts/check_manifests.py); every RAVE_ variable the deployment files set is one the code reads.
set -euo pipefail
cd "$(dirname "$0")/.."

services=(identity social leaderboards gifts push wallet gateway)

if command -v systemd-analyze >/dev/null; then
    root=$(mktemp -d /tmp/rave-systemd.XXXXXX)
    trap 'rm -rf "$root"' EXIT
    # An offline root: the distribution's units (targets the unit orders against), ours, and stand-in
    # executables, so verification does not depend on what is installed on this machine.
    mkdir -p "$root/usr/lib/systemd" "$root/etc/systemd/system" "$root/usr/local/bin" "$root/etc/rave" "$root/bin"
    printf '#!/bin/sh\n' >"$root/bin/kill"
    chmod +x "$root/bin/kill"
    cp -a /lib/systemd/system "$root/usr/lib/systemd/"
    cp deploy/systemd/rave@.service "$root/etc/systemd/system/"
    cp deploy/systemd/env/*.env "$root/etc/rave/"
    for service in "${services[@]}"; do
        [ -f "deploy/systemd/env/$service.env" ] || { echo "check-deploy: no env file for $service" >&2; exit 1; }
        printf '#!/bin/sh\n' >"$root/usr/local/bin/$service"
        chmod +x "$root/usr/local/bin/$service"
        systemd-analyze verify --root="$root" "rave@$service.service"
        systemd-analyze security --offline=yes --root="$root" --threshold=20 "rave@$service.service" >/dev/null ||
            { echo "check-deploy: rave@$service.service hardening exposure above 2.0" >&2; exit 1; }
    done
    echo "check-deploy: systemd unit verified for ${#services[@]} executables"
else
    echo "check-deploy: systemd-analyze not installed; unit not verified" >&2
fi

python3 scripts/check_manifests.py deploy/k8s "${services[@]}"

# Every RAVE_ variable set in deploy/ must be read somewhere in the code (catches typos that would be ignored).
unknown=0
while read -r variable; do
    if ! grep -rqF "\"$variable\"" Shared Services; then
        # Families read by prefix: RAVE_GATEWAY_<SERVICE>_ADDRESSES, RAVE_OIDC_<PROVIDER>_<FIELD>.
        case $variable in
        RAVE_GATEWAY_*_ADDRESSES | RAVE_OIDC_*_JWKS | RAVE_OIDC_*_AUDIENCE | RAVE_OIDC_*_ISSUER) continue ;;
        esac
        echo "check-deploy: $variable is set in deploy/ but no code reads it" >&2
        unknown=1
    fi
done < <(grep -rhoE '\bRAVE_[A-Z0-9_]+\b' deploy/systemd deploy/k8s | sort -u)
[ "$unknown" -eq 0 ]
echo "check-deploy: every RAVE_ variable in deploy/ is read by the code"
