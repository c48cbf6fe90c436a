#!/usr/bin/env bash
# Set up, then run the package's own tests on two pytest-xdist workers (tests that share fixtures in one worker:
# tests/conftest.py; TEST_WORKERS=0 runs them in one process). More arguments go to pytest: `-m "not hub and not
# browser and not slow"` is the fast lane for development; a file or test among them (`tests/test_cli.py`) runs
# instead of all of them (pyproject.toml's testpaths: tests/, where no path is given).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export KERAS_BACKEND=torch
# One thread for torch's and numpy's pools in the tests' processes and what they start (the sandbox's student processes
# have theirs from sandbox/policy.py): two workers on two cores, threads that spin between small ops only take CPU
# from the other worker (benchmarks/results/speed.md, "One thread a process")
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" \
  MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
# pytest-xdist turns a misspelt path into "no tests ran": name it, with what its folder holds
for arg in "$@"; do
  path=${arg%%::*}
  case "$path" in
    tests|tests/*|*.py)
      if [ ! -e "$path" ]; then
        folder=$(dirname "$path")
        echo "test.sh: no such file or folder: $path" >&2
        [ -d "$folder" ] && echo "  in $folder: $(cd "$folder" && ls -d test_*.py */ 2>/dev/null | tr '\n' ' ')" >&2
        exit 4
      fi ;;
  esac
done
exec .venv/bin/python -m pytest -n "${TEST_WORKERS:-2}" --no-loadscope-reorder "$@"
