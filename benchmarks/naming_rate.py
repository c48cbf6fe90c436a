"""How often the feedback names the mistake: the family mutants of ``benchmarks/family_mutants.py`` graded by the
hidden graders (in this process, ``tests/helpers/inprocess.py``: the same graders and diagnosis, no sandbox).

For each mutant: caught (its exercise lost points), named (the exercise's diagnosis holds one of the catalogue ids
that name it), or named wrongly (a diagnosis, but not one of those). Prints one line per mutant and the rates.

    .venv/bin/python benchmarks/naming_rate.py [--seed N]

Run it against an older checkout (PYTHONPATH=<checkout> with its own catalogue) to compare.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "torch")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))   # the repository: tests.helpers, benchmarks.family_mutants


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=20240611)
    args = parser.parse_args()

    from tests.helpers import inprocess
    from tests.helpers import notebooks
    from benchmarks.family_mutants import MUTANTS

    from autograder.graders import registry

    base = {}
    for assignment in registry.coded_assignments():
        base[assignment] = inprocess.notebook_code(notebooks.solution_notebook(assignment), assignment)
    assignment_of = {exercise.name: exercise.assignment for exercise in registry.RECORDS.values()}

    start = time.perf_counter()
    caught = named = wrong = 0
    lines = []
    for exercise, family, ids, source in MUTANTS:
        assignment = assignment_of[exercise]
        result = inprocess.grade(assignment, inprocess.namespace(base[assignment], source), seed=args.seed)
        score, top, diagnosis = result[exercise]
        lost = score < top
        good = lost and bool(set(diagnosis) & ids)
        caught += lost
        named += good
        wrong += lost and bool(diagnosis) and not good
        fate = ("named" if good else "NAMED WRONGLY " + ",".join(diagnosis) if diagnosis else "not named") if lost \
            else "not caught"
        lines.append(f"  {exercise:<29} {family:<45} {score:g}/{top:g}  {fate}")
    print("\n".join(lines))
    print(f"{len(MUTANTS)} family mutants: caught {caught}, named {named}/{caught} "
          f"({100 * named / max(caught, 1):.0f} %), named wrongly {wrong} "
          f"({time.perf_counter() - start:.0f} s, seed {args.seed})")


if __name__ == "__main__":
    main()
