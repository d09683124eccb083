#!/usr/bin/env bash
# Runs every test target of Package.swift, one target per `swift test` process, one after another.
#
# Tests inside a target run in parallel (Swift Testing's default); targets run in turn so that the heavy
# suites of one (10,000 TLS connections, a million slot spins) do not starve the timing-sensitive ones of
# another on a 2-core machine. Expects a finished `swift build --build-tests`; extra arguments go to
# `swift test`. Prints per-target results and a closing "N passed, N failed" line.
set -uo pipefail
cd "$(dirname "$0")/.."

mapfile -t targets < <(grep -A1 '\.testTarget(' Package.swift | sed -n 's/.*name: "\([A-Za-z0-9_]*\)".*/\1/p')
[ ${#targets[@]} -gt 0 ] || { echo "run-tests: no test targets found in Package.swift" >&2; exit 1; }

log_dir=$(mktemp -d /tmp/rave-tests.XXXXXX)
passed=0
failed=0
failed_targets=()
for target in "${targets[@]}"; do
    started=$SECONDS
    # A hung target must not eat CI's whole time budget: stop it after RAVE_TEST_TARGET_TIMEOUT seconds.
    timeout --kill-after=30 "${RAVE_TEST_TARGET_TIMEOUT:-900}" \
        swift test --skip-build --filter "^$target\." "$@" >"$log_dir/$target.log" 2>&1
    status=$?
    [ $status -eq 124 ] && echo "$target: stopped after ${RAVE_TEST_TARGET_TIMEOUT:-900} s" >>"$log_dir/$target.log"
    # Swift Testing's closing line: "✔ Test run with 12 tests in 3 suites passed after …" (or "✘ … failed …").
    summary=$(grep -E 'Test run with [0-9]+ tests?' "$log_dir/$target.log" | tail -n 1)
    count=$(sed -n 's/.*Test run with \([0-9]*\) test.*/\1/p' <<<"$summary")
    count=${count:-0}
    if [ $status -eq 0 ] && [ "$count" -gt 0 ]; then
        passed=$((passed + count))
        printf '%-22s %4d tests passed (%ds)\n' "$target" "$count" $((SECONDS - started))
    else
        failing=$(grep -cE '^✘ Test .* failed after' "$log_dir/$target.log" || true)
        failed=$((failed + (failing > 0 ? failing : 1)))
        passed=$((passed + (count > failing ? count - failing : 0)))
        failed_targets+=("$target")
        printf '%-22s FAILED (exit %d, %ds); log:\n' "$target" "$status" $((SECONDS - started))
        grep -E '^✘|error:|Fatal error|Caught error' "$log_dir/$target.log" | head -n 60
    fi
done

echo
if [ ${#failed_targets[@]} -gt 0 ]; then
    echo "failing targets: ${failed_targets[*]} (full logs in $log_dir)"
else
    rm -rf "$log_dir"
fi
echo "$passed passed, $failed failed"
[ ${#failed_targets[@]} -eq 0 ]
