#!/usr/bin/env bash
# Set up everything the course package needs on a fresh machine (idempotent).
# Creates .venv with the pinned dependencies and installs the autograder package into it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(cat requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r requirements.txt
  .venv/bin/pip install -q --no-deps -e .
  echo "$want" > "$stamp"
fi
echo "setup: $(.venv/bin/python -c 'import torch, keras, nbgrader; print(f"torch {torch.__version__}, keras {keras.__version__}, nbgrader {nbgrader.__version__}")')"
