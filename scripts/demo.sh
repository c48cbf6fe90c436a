#!/usr/bin/env bash
# Set up, then run the main job: generate the assignments and grade them through nbgrader.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export KERAS_BACKEND=torch
exec .venv/bin/python -m autograder demo "$@"
