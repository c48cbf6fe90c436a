"""Grade the same class twice, side by side: stock nbgrader vs this package's full pipeline (prints numbers).

    .venv/bin/python benchmarks/class_throughput.py [--students 24] [--out benchmarks/results/class_throughput.txt]

* stock: a course with nbgrader's default configuration; the course's notebooks with their visible checks as plain
  in-kernel asserts, no hidden graders, no sandbox; `nbgrader autograde attention` (one process, one kernel per
  submission).
* package: the full pipeline (bubblewrap sandbox, warm zygote per lane, hidden pytest graders, stored GPU
  references, feedback reports), `python -m autograder autograde attention --workers 1` and `--workers 2`.

It checks that the package's scores equal grading each submission alone (same seed), and prints both wall
times, the ratio, the per-submission median, the speed-up from 1 to 2 workers and where the package's time goes.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402

from autograder import course  # noqa: E402
from autograder.demo import roster, submissions  # noqa: E402

SEED = "20261129"
STOCK_CONFIG = """c = get_config()
c.CourseDirectory.course_id = "stock"
c.CourseDirectory.db_url = "sqlite:///gradebook.db"
c.Execute.timeout = 120
"""


def build_class(course_dir: Path, n: int) -> list[str]:
    """Submissions of `attention` for n students (complete, partial and wrong ones; no unreadable files)."""
    release = nbformat.read(str(course_dir / "release" / "attention" / "attention.ipynb"), as_version=4)
    source = nbformat.read(str(ROOT / "source" / "attention" / "attention.ipynb"), as_version=4)
    plans = [s.plans["attention"] for s in roster.ROSTER if s.plans["attention"] not in ("broken",)]
    ids = []
    for i in range(n):
        student = f"s{i:03d}"
        target = course_dir / "submitted" / student / "attention"
        target.mkdir(parents=True, exist_ok=True)
        nbformat.write(submissions.build(plans[i % len(plans)], release, source), str(target / "attention.ipynb"))
        ids.append(student)
    return ids


def gradebook_scores(db: Path) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{db}") as gb:
        return {s.student.id: round(s.score, 4) for s in gb.assignment_submissions("attention")}


def timed(cmd, cwd, env) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return time.perf_counter() - start


def stock_run(work: Path, n: int, env: dict) -> tuple[float, dict]:
    stock = work / "stock"
    (stock / "source").mkdir(parents=True)
    shutil.copytree(ROOT / "source" / "attention", stock / "source" / "attention")
    (stock / "nbgrader_config.py").write_text(STOCK_CONFIG)
    course.nbgrader("generate_assignment", "attention", "--force", cwd=stock, env=env)
    build_class(stock, n)
    seconds = timed([str(Path(sys.executable).with_name("nbgrader")), "autograde", "attention", "--create"],
                    stock, env)
    return seconds, gradebook_scores(stock / "gradebook.db")


def package_run(work: Path, n: int, workers: int, env: dict) -> tuple[float, dict, Path]:
    pkg = course.scratch_course(work / f"package{workers}", ["attention"])
    course.generate(pkg, "attention")
    build_class(pkg, n)
    env = {**env, **course.course_env(pkg), "AUTOGRADER_SEED": SEED}
    seconds = timed([sys.executable, "-m", "autograder", "autograde", "attention", "--workers", str(workers)],
                    pkg, env)
    return seconds, gradebook_scores(pkg / "gradebook.db"), pkg


def alone_scores(pkg: Path, ids: list[str]) -> dict:
    """Each submission graded alone, through the CLI's code path with the same seed (each exercise's score
    rounded down to 0.01 as the gradebook's cell scores are)."""
    from autograder.grade import grade_notebook
    from autograder.gradebook.preprocessor import cell_score

    out = {}
    for student in ids:
        path = pkg / "submitted" / student / "attention" / "attention.ipynb"
        result = grade_notebook(nbformat.read(str(path), as_version=4), str(path), "attention", seed=int(SEED))
        out[student] = round(sum(cell_score(e.max_score, e.score, e.max_score) for e in result.exercises), 4)
    return out


def breakdown(pkg: Path) -> dict:
    rows = [json.loads(p.read_text()) for p in (pkg / ".autograder" / "results" / "attention").glob("*/*.json")]
    parts = {}
    for key in ("notebook", "graders"):
        parts[key] = statistics.median(r["timings"].get(key, 0.0) for r in rows)
    parts["lane start (once per worker)"] = max(r["timings"].get("lane_start", 0.0) for r in rows)
    return parts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=24)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "class_throughput.txt"))
    args = parser.parse_args()
    env = {**os.environ, "KERAS_BACKEND": "torch"}
    work = Path(tempfile.mkdtemp(prefix="throughput-"))
    n = args.students

    floor = statistics.median(timed([sys.executable, "-c", "import keras"], work, env) for _ in range(3))
    stock_seconds, stock_scores = stock_run(work, n, env)
    one_seconds, one_scores, pkg1 = package_run(work, n, 1, env)
    two_seconds, two_scores, pkg2 = package_run(work, n, 2, env)
    alone = alone_scores(pkg2, sorted(two_scores))
    same = one_scores == two_scores == alone
    differing = {s: (one_scores.get(s), two_scores.get(s), alone.get(s)) for s in alone
                 if not one_scores.get(s) == two_scores.get(s) == alone.get(s)}
    parts = breakdown(pkg1)

    lines = [
        f"class throughput benchmark — {dt.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
        f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}, "
        f"{platform.platform()}",
        f"class: {n} submissions of `attention` (complete, partial and wrong)",
        f"floor: python -c 'import keras' = {floor:.2f} s",
        "",
        f"stock nbgrader autograde (kernel per submission, in-kernel asserts): {stock_seconds:7.1f} s "
        f"({stock_seconds / n:.2f} s per submission)",
        f"package, 1 worker (sandbox, hidden graders, GPU references):      {one_seconds:7.1f} s "
        f"({one_seconds / n:.2f} s per submission)",
        f"package, 2 workers:                                                {two_seconds:7.1f} s "
        f"({two_seconds / n:.2f} s per submission)",
        f"ratio package(2 workers) / stock: {two_seconds / stock_seconds:.3f}   "
        f"(target <= 0.333)",
        f"speed-up 1 -> 2 workers: {one_seconds / two_seconds:.2f}x   (target >= 1.8)",
        f"scores identical to grading each submission alone: {same}"
        + (f"  differing (1 worker, 2 workers, alone): {differing}" if differing else ""),
        f"mean score: stock {statistics.mean(stock_scores.values()):.2f} (visible checks only), "
        f"package {statistics.mean(two_scores.values()):.2f}",
        "",
        "where the package's time goes (1 worker, per submission, median):",
        *[f"  {k:32s} {v:6.2f} s" for k, v in parts.items()],
        f"  {'nbgrader + gradebook writes':32s} "
        f"{(one_seconds - parts['lane start (once per worker)']) / n - parts['notebook'] - parts['graders']:6.2f} s",
    ]
    text = "\n".join(lines)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text + "\n", encoding="utf-8")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
