"""Max error of the solutions, the alternative implementations and every catalogue mistake against each stored
reference output (backend x dtype), with the verdict under the tolerance policy (prints a table).

    .venv/bin/python benchmarks/gpu_reference_errors.py
"""
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))   # the repository: scripts.gpu_refs, tests.*

from autograder.graders.gpu_refs import store  # noqa: E402
from scripts.gpu_refs import audit  # noqa: E402
from tests.graders.test_gpu_tolerance_policy import correct_implementations  # noqa: E402


def table(rows, title):
    cols = sorted({(r.backend, r.dtype) for r in rows})
    worst = defaultdict(lambda: (0.0, 0.0))
    for r in rows:
        key = (r.implementation, r.backend, r.dtype)
        worst[key] = max(worst[key], (r.ratio, r.max_error))
    print(f"\n{title}: max |error| over the cases (verdict: ok = within tolerance on every case, FAIL = caught)")
    print("implementation".ljust(36) + "".join(f"{b}/{d}"[:18].rjust(19) for b, d in cols))
    for impl in sorted({r.implementation for r in rows}):
        cells = []
        for b, d in cols:
            ratio, err = worst.get((impl, b, d), (None, None))
            cells.append("".rjust(19) if ratio is None else f"{err:9.2e} {'ok' if ratio <= 1 else 'FAIL':>4}".rjust(19))
        print(impl[:35].ljust(36) + "".join(cells))


def main():
    print("device:", store.load_cases()[0].references[0].device)
    table(audit.audit(correct_implementations()), "correct implementations")
    table(audit.audit(audit.mistakes_by_exercise()), "catalogue mistakes")


if __name__ == "__main__":
    main()
