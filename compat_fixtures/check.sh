#!/usr/bin/env bash
# Regenerate every fixture from the pinned TypeScript packages into a temporary directory and
# fail if anything differs from the committed fixtures/ (drift in the TS packages or in the
# generators). Without node/npm it says so loudly and exits 0: pytest still verifies the
# committed fixtures.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "!!! WARNING: node/npm not found: fixtures NOT regenerated; only the committed ones are verified !!!" >&2
  exit 0
fi
cd "$here"
npm ci --no-audit --no-fund --loglevel=error
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
node generate.mjs "$out" >/dev/null
if ! diff -r "$out" fixtures >/tmp/fixture-drift.diff 2>&1; then
  echo "Fixture drift: regenerated fixtures differ from compat_fixtures/fixtures (first lines):" >&2
  head -40 /tmp/fixture-drift.diff >&2
  exit 1
fi
echo "fixtures: regenerated $(ls "$out" | wc -l) suite files from the pinned TS packages; identical to the committed ones"
