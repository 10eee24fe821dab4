#!/usr/bin/env bash
# Regenerate the Kimi CLI interop fixtures and fail if they differ from the committed ones.
#   compat_fixtures/kimi/regenerate.sh            # check (exit 1 on any difference)
#   KIMI_VENV=/path/to/venv compat_fixtures/kimi/regenerate.sh
# Needs a Python >= 3.12 (KIMI_PYTHON, default: the newest pyenv 3.12+/3.13 or python3.13) and
# PyPI access the first time, to install kimi-cli 1.52.0 into $KIMI_VENV (default /tmp/kimi-venv).
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
  [ -n "$py" ] || { echo "need Python >= 3.12 for kimi-cli (set KIMI_PYTHON)" >&2; exit 2; }
  "$py" -m venv "$venv"
  "$venv/bin/pip" install --quiet 'kimi-cli==1.52.0'
fi
"$venv/bin/python" "$here/make_fixtures.py"
cd "$repo"
if ! git diff --quiet --exit-code -- compat_fixtures/kimi || \
   [ -n "$(git ls-files --others --exclude-standard compat_fixtures/kimi)" ]; then
  echo "Kimi fixtures changed after regeneration:" >&2
  git status --short -- compat_fixtures/kimi >&2
  exit 1
fi
echo "Kimi fixtures reproduce byte for byte."
