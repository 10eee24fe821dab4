#!/usr/bin/env bash
# Regenerate the Kimi CLI interop fixtures and fail if they differ from the committed ones.
#   compat_fixtures/kimi/regenerate.sh            # check (exit 1 on any difference)
#   KIMI_VENV=/path/to/venv compat_fixtures/kimi/regenerate.sh
# Needs a Python >= 3.12 (KIMI_PYTHON, default: a pyenv 3.13/3.12 or python3.13/3.12 on PATH) and
# PyPI access the first time, to install kimi-cli 1.52.0 into $KIMI_VENV (default /tmp/kimi-venv).
# Without either it warns loudly and exits 0 (pytest still checks the committed fixtures).
# Takes ~1 s with the venv in place, ~55 s when it has to create it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${KIMI_VENV:-/tmp/kimi-venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import kimi_cli" 2>/dev/null; then
  py="${KIMI_PYTHON:-}"
  if [ -z "$py" ]; then
    for candidate in "$HOME"/.pyenv/versions/3.13*/bin/python "$HOME"/.pyenv/versions/3.12*/bin/python \
        "$(command -v python3.13 || true)" "$(command -v python3.12 || true)"; do
      if [ -n "$candidate" ] && [ -x "$candidate" ]; then py="$candidate"; break; fi
    done
  fi
  if [ -z "$py" ]; then
    echo "!!! WARNING: no Python >= 3.12 (set KIMI_PYTHON): Kimi fixtures NOT regenerated !!!" >&2
    exit 0
  fi
  "$py" -m venv "$venv"
  if ! "$venv/bin/pip" install --quiet 'kimi-cli==1.52.0'; then
    echo "!!! WARNING: could not install kimi-cli 1.52.0: Kimi fixtures NOT regenerated !!!" >&2
    exit 0
  fi
fi
"$venv/bin/python" "$here/make_fixtures.py"
cd "$repo"
outputs=(compat_fixtures/kimi/kimi_written compat_fixtures/kimi/ours_written
         compat_fixtures/kimi/damaged compat_fixtures/kimi/kimi_limits.json)
if ! git diff --quiet --exit-code -- "${outputs[@]}" || \
   [ -n "$(git ls-files --others --exclude-standard -- "${outputs[@]}")" ]; then
  echo "Kimi fixtures changed after regeneration:" >&2
  git status --short -- "${outputs[@]}" >&2
  exit 1
fi
echo "Kimi fixtures reproduce byte for byte."
