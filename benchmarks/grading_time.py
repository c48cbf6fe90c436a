"""Grading time per submission, beside the floor of a bare `python -c "import keras"` (prints numbers).

    .venv/bin/python benchmarks/grading_time.py [--runs 3] [--assignment attention]
        [--out benchmarks/results/grading_time.txt]

Measures, each as the median of --runs runs on this machine:
  * floor: a fresh interpreter importing keras (torch backend);
  * cli: `python -m autograder grade <answer key>` (a fresh interpreter: graders + sandboxed student process), each
    run right after a floor run (paired), with the median of the pairs' ratios;
  * nbgrader: `nbgrader autograde` of one submission (kernel execution + hidden graders + gradebook).
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder import course  # noqa: E402


def timed(cmd, **kwargs) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, **kwargs)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--assignment", default="attention")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "grading_time.txt"),
                        help="where the printed numbers are kept too (empty: nowhere)")
    args = parser.parse_args()
    env = {**os.environ, "KERAS_BACKEND": "torch"}
    a = args.assignment
    key = ROOT / "solutions" / a / f"{a}.ipynb"

    floor, cli = [], []
    for _ in range(args.runs):   # paired: each cli run right after its floor run, so both see the same machine
        floor.append(timed([sys.executable, "-c", "import keras"], env=env))
        cli.append(timed([sys.executable, "-m", "autograder", "grade", str(key), "--seed", "1"], env=env))
    ratios = [c / f for c, f in zip(cli, floor, strict=True)]

    work = course.scratch_course(Path(tempfile.mkdtemp()) / "course", [a])
    course.generate(work, a)
    nbg = []
    for _ in range(args.runs):
        start = time.perf_counter()
        course.autograde(work, a, {"student": key})
        nbg.append(time.perf_counter() - start)

    med = statistics.median
    lines = [
        f"grading time per submission — {dt.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.platform()}",
        f"assignment {a}, {args.runs} runs each (median, seconds)",
        f"  floor  python -c 'import keras'        {med(floor):6.2f}",
        f"  cli    python -m autograder grade       {med(cli):6.2f}   ({med(cli) / med(floor):.2f}x the floor; "
        f"median of the {args.runs} pairs' ratios {med(ratios):.2f}x)",
        f"  nbgrader autograde (one submission)     {med(nbg):6.2f}   ({med(nbg) / med(floor):.2f}x the floor)",
    ]
    print("\n".join(lines))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")

if __name__ == "__main__":
    main()
