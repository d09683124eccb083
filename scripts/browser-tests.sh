#!/usr/bin/env bash
# The browser tests (Tests/Browser, part of `make test`): Selenium drives headless Chromium against a whole stack
# started by scripts/with-stack.sh from the built executables (RAVE_LOCAL_BIN, default .build/debug): the demo
# game played by two guests, the browser SDK's shared refresh and retries, a CORS refusal, and the web console used by
# an operator of each role. Screenshots of each step go to .test-output/demo/ and .test-output/console/. Needs python3-selenium, chromium and chromium-driver (`make deps`).
#
#   scripts/browser-tests.sh [-k PATTERN]      (unittest's: only the tests whose names match)
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's python3-selenium belongs to Debian's Python (another python3 may come first on PATH).
python=${RAVE_BROWSER_PYTHON:-/usr/bin/python3}
"$python" -c 'import selenium' 2>/dev/null ||
    { echo "browser-tests: $python cannot import selenium (make deps installs python3-selenium)" >&2; exit 1; }
for program in "${RAVE_CHROMIUM:-/usr/bin/chromium}" "${RAVE_CHROMEDRIVER:-/usr/bin/chromedriver}"; do
    [ -x "$program" ] || { echo "browser-tests: $program is missing (make deps installs chromium, chromium-driver)" >&2; exit 1; }
done

rm -rf .test-output/demo .test-output/console
# A low per-user rate, so that test_sdk can make the gateway refuse calls as not processed (RESOURCE_EXHAUSTED
# with Retry-After) and watch the SDK retry them; the demo's players stay well inside it.
export RAVE_GATEWAY_USER_RATE=${RAVE_GATEWAY_USER_RATE:-10} RAVE_GATEWAY_USER_BURST=${RAVE_GATEWAY_USER_BURST:-30}
status=0
scripts/with-stack.sh timeout --kill-after=10 "${RAVE_BROWSER_TEST_TIMEOUT:-300}" \
    "$python" -m unittest discover --start-directory Tests/Browser --pattern 'test_*.py' --verbose "$@" || status=$?
for directory in .test-output/demo .test-output/console; do
    if [ -d "$directory" ]; then echo "browser-tests: screenshots in $directory/"; fi
done
exit "$status"
