#!/usr/bin/env bash
# The whole test suite with coverage; ends with one "N passed, N failed" line for CI logs.
set -o pipefail
out=$(mktemp)
npx c8 --reporter=text-summary --reporter=text --include='api/**' --include='shared/**' --include='workers/**' --include='scripts/**' \
  ava "$@" 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
passed=$(grep -oE '([0-9]+) tests? passed' "$out" | tail -1 | grep -oE '^[0-9]+' || true)
failed=$(grep -oE '([0-9]+) (tests?|known failure)s? failed' "$out" | tail -1 | grep -oE '^[0-9]+' || true)
rm -f "$out"
echo "ava: ${passed:-0} passed, ${failed:-0} failed"
exit "$status"
