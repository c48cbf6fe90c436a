"""One submission's grading time on the hub's set-up: as root vs as the non-root grading account (prints numbers).

    sudo .venv/bin/python benchmarks/hub_grading_time.py [--runs 3] [--out benchmarks/results/hub_grading_time.txt]

Needs `python -m autograder hub` to have set the machine up once (the grading account, its course copy, the
students' environment); the hub itself need not run. The submission is the released `attention` notebook with
`softmax` solved (student id `hub-bench` in the grading account's copy). Each number is the median of --runs:
  * root grade: `python -m autograder grade` as root, from the repository's .venv (the nursery with namespaces);
  * grader grade: the same command as the grading account, in the students' environment with the course copy on
    PYTHONPATH (non-root: bubblewrap with user namespaces);
  * grader autograde: `nbgrader autograde attention --student hub-bench --force` as the grading account, the code
    path that formgrader's Autograde button runs (in its server process; tests/hub/live prints that button's time).
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402

from autograder.hub import provision  # noqa: E402
from autograder.hub.layout import Layout  # noqa: E402

def submission(layout: Layout) -> Path:
    source = nbformat.read(str(layout.course_dir / "source" / "attention" / "attention.ipynb"), 4)
    solution = [c.source for c in source.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "solution_softmax"]
    nb = nbformat.read(str(layout.course_dir / "release" / "attention" / "attention.ipynb"), 4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "solution_softmax":
            cell.source = solution[0]           # the instructor's softmax (nbgrader's solution markers are comments)
    target = layout.course_dir / "submitted" / "hub-bench" / "attention" / "attention.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(target))
    for path in (target, target.parent, target.parent.parent):
        shutil.chown(path, layout.grader, layout.grader)
    return target


def remove(layout: Layout) -> None:
    """The benchmark's student leaves no trace in the course (formgrader would list it)."""
    for folder in ("submitted", "autograded", "feedback"):
        shutil.rmtree(layout.course_dir / folder / "hub-bench", ignore_errors=True)
    provision.gradebook_students(layout, remove=["hub-bench"])


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "hub_grading_time.txt"))
    args = parser.parse_args()
    assert os.geteuid() == 0, "run as root (it runs commands as the grading account)"
    layout = Layout.for_course()
    assert layout.course_dir.exists(), "run `python -m autograder hub` once first"
    notebook = submission(layout)
    env = provision.grader_env(layout)

    def root_grade():
        subprocess.run([sys.executable, "-m", "autograder", "grade", str(notebook)], check=True, capture_output=True,
                       cwd=ROOT, env={**os.environ, "KERAS_BACKEND": "torch"})

    def grader_grade():
        provision.as_user(layout.grader, [str(layout.python), "-m", "autograder", "grade", str(notebook)], layout,
                          cwd=layout.course_dir, env=env)

    def grader_autograde():
        provision.as_user(layout.grader, [str(layout.python), "-m", "nbgrader", "autograde", "attention",
                                          "--student", "hub-bench", "--create", "--force"], layout,
                          cwd=layout.course_dir, env=env)

    rows = []
    try:
        for name, fn in (("root grade", root_grade), ("grader grade", grader_grade),
                         ("grader autograde", grader_autograde)):
            times = [timed(fn) for _ in range(args.runs)]
            rows.append(f"{name:18s} median {statistics.median(times):6.2f} s  runs: "
                        + ", ".join(f"{t:.2f}" for t in times))
            print(rows[-1], flush=True)
    finally:
        remove(layout)
    load = os.getloadavg()
    header = (f"# benchmarks/hub_grading_time.py, {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, "
              f"{platform.node()}, {os.cpu_count()} cores, load average {load[0]:.1f} at the end")
    Path(args.out).write_text(header + "\n" + "\n".join(rows) + "\n")
    print(header)


if __name__ == "__main__":
    main()
