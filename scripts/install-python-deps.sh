#!/usr/bin/env bash
# Installs the Python tools of scripts/python-requirements.txt into .venv (git-ignored), with pip from the
# package index pip is configured for. Quick when .venv already holds exactly those requirements.
set -euo pipefail
cd "$(dirname "$0")/.."

requirements=scripts/python-requirements.txt
stamp=.venv/installed-requirements.txt
if [ -x .venv/bin/python ] && cmp -s "$requirements" "$stamp"; then exit 0; fi

# Debian's python3 (with python3-venv from `make deps`) when there is one, else whichever python3 is first.
python=/usr/bin/python3
[ -x "$python" ] || python=python3
echo "Installing Python tools into .venv: $(grep -v '^#' "$requirements" | tr '\n' ' ')"
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$requirements"
cp "$requirements" "$stamp"
