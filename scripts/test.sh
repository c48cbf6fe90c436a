#!/usr/bin/env bash
# Set up, then run the package's own tests, on two workers (pytest-xdist; tests that share fixtures run in one
# worker: tests/conftest.py). More arguments go to pytest: `-m "not hub and not browser and not slow"` is the fast
# lane for development, `-n 0` runs everything in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export KERAS_BACKEND=torch
exec .venv/bin/python -m pytest -n "${TEST_WORKERS:-2}" --no-loadscope-reorder tests "$@"
