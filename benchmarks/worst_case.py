"""What the worst submissions cost: the grading time of the costly faults of ``tests/sandbox/catalogue.COSTS``
(prints numbers), with the course's own timeouts, each graded in this process as ``python -m autograder grade``
does (the lane's warm fork server).

    .venv/bin/python benchmarks/worst_case.py [--only ID,...] [--honest] [--out FILE]

For each: wall seconds in all, and the notebook (cells) and graders phases; the score. ``--honest`` adds the answer
key. Runs unchanged against an older checkout of the package (for a before/after): it needs only
``grade_notebook`` and the catalogue's builders.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "sandbox")]
os.environ.setdefault("KERAS_BACKEND", "torch")

import catalogue  # noqa: E402
import notebooks  # noqa: E402

from autograder.grade import grade_notebook  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    parser.add_argument("--honest", action="store_true")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    solution = notebooks.solution_notebook("attention")
    ctx = catalogue.Context(solution=solution, release=None, other_assignment=None, graders=[], gpu_refs=[],
                            gradebook="", submission="", course="", marker="")
    cases = [("honest", solution)] if args.honest else []
    only = set(filter(None, args.only.split(",")))
    cases += [(c.entry.id, c.entry.build(ctx)) for c in catalogue.COSTS if not only or c.entry.id in only]
    lines = []
    for name, nb in cases:
        start = time.perf_counter()
        result = grade_notebook(nb, "attention.ipynb", "attention", seed=1)
        seconds = time.perf_counter() - start
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in result.timings.items())
        line = f"{name:32s} {seconds:6.1f} s  ({phases})  score {result.score:g}/{result.max_score:g}"
        print(line, flush=True)
        lines.append(line)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
