#!/usr/bin/env bash
# Set up, then run the package's own tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export KERAS_BACKEND=torch
exec .venv/bin/python -m pytest tests "$@"
