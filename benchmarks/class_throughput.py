"""Grade the same class twice, side by side: stock nbgrader vs this package's full pipeline (prints numbers).

    .venv/bin/python benchmarks/class_throughput.py [--students 24] [--scaling-students 96]
        [--out benchmarks/results/class_throughput.txt]

* stock: a course with nbgrader's default configuration; the course's notebooks with their visible checks as plain
  in-kernel asserts, no hidden graders, no sandbox; `nbgrader autograde attention` (one process, one kernel per
  submission).
* package: the full pipeline (bubblewrap sandbox, one warm nursery and a fork server per lane, hidden pytest graders,
  stored GPU references, feedback reports), `python -m autograder autograde attention --workers 1` and `--workers 2`.

It checks that the package's scores equal grading each submission alone (same seed), and prints both wall
times, the ratio, the per-submission median, the speed-up from 1 to 2 workers and where the package's time goes.
It also measures how far two workers can go on this machine: two 1-worker classes graded at the same time, with
nothing shared, show how much two busy cores slow each other down; with the start-up that one worker pays,
that gives the largest speed-up from 1 to 2 workers any pipeline with this start-up could show here.
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
    students = [s for s in roster.ROSTER if s.plans["attention"] not in ("broken",)]
    ids = []
    for i in range(n):
        student = f"s{i:03d}"
        target = course_dir / "submitted" / student / "attention"
        target.mkdir(parents=True, exist_ok=True)
        built = submissions.notebook_for(students[i % len(students)], "attention", release, source)
        nbformat.write(built, str(target / "attention.ipynb"))
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


def package_course(where: Path, n: int, env: dict) -> tuple[Path, dict]:
    """A course with the `attention` assignment generated and n submissions, and the environment to grade it."""
    pkg = course.scratch_course(where, ["attention"])
    course.generate(pkg, "attention")
    build_class(pkg, n)
    return pkg, {**env, **course.course_env(pkg), "AUTOGRADER_SEED": SEED}


def autograde_command(workers: int) -> list[str]:
    return [sys.executable, "-m", "autograder", "autograde", "attention", "--workers", str(workers)]


def package_run(work: Path, n: int, workers: int, env: dict) -> tuple[float, dict, Path]:
    pkg, env = package_course(work / f"package{workers}", n, env)
    seconds = timed(autograde_command(workers), pkg, env)
    return seconds, gradebook_scores(pkg / "gradebook.db"), pkg


def side_by_side(work: Path, n: int, env: dict) -> tuple[float, float]:
    """How much two busy cores slow each other down on this machine, with nothing shared between them.

    Grades n submissions with 1 worker alone, then two other such classes (separate courses, lanes, nurseries
    and gradebooks) at the same time. Returns the per-submission median alone and side by side (mean of both).
    """
    alone_pkg, alone_env = package_course(work / "alone", n, env)
    timed(autograde_command(1), alone_pkg, alone_env)
    courses = [package_course(work / f"side{i}", n, env) for i in range(2)]
    procs = [subprocess.Popen(autograde_command(1), cwd=pkg, env=e, stdout=subprocess.DEVNULL,
                              stderr=(pkg / "autograde.log").open("w")) for pkg, e in courses]
    for proc, (pkg, _) in zip(procs, courses, strict=True):
        if proc.wait() != 0:
            raise RuntimeError(f"side-by-side run failed:\n{(pkg / 'autograde.log').read_text()[-3000:]}")
    alone = json.loads((alone_pkg / ".autograder" / "runs" / "attention.json").read_text())
    together = [json.loads((pkg / ".autograder" / "runs" / "attention.json").read_text()) for pkg, _ in courses]
    return alone["per_submission_median"], statistics.mean(r["per_submission_median"] for r in together)


def alone_scores(pkg: Path, ids: list[str]) -> dict:
    """Each submission graded alone, through the CLI's code path with the same seed (its score is what the
    gradebook's cells add up to)."""
    from autograder.grade import grade_notebook

    out = {}
    for student in ids:
        path = pkg / "submitted" / student / "attention" / "attention.ipynb"
        result = grade_notebook(nbformat.read(str(path), as_version=4), str(path), "attention", seed=int(SEED))
        out[student] = result.score
    return out


def breakdown(pkg: Path, wall: float) -> tuple[dict, dict]:
    """Where the package's time went: once per run, and per submission (medians over the class)."""
    rows = [json.loads(p.read_text()) for p in (pkg / ".autograder" / "results" / "attention").glob("*/*.json")]
    run = json.loads((pkg / ".autograder" / "runs" / "attention.json").read_text())
    once = {
        "interpreter start, CLI imports, exit": wall - run["wall"],
        "staging the submissions": run["startup_stage"],
        "imports: keras, nbgrader, graders": run["startup_imports"],
        "lanes forked from the nursery": run["startup_lanes"],
        "workers forked, until the first job": run["startup"] - run["startup_stage"] - run["startup_imports"]
        - run["startup_lanes"],
        "after the last submission": run["after_last"],
    }
    notebook = statistics.median(r["timings"].get("notebook", 0.0) for r in rows)
    graders = statistics.median(r["timings"].get("graders", 0.0) for r in rows)
    each = {
        "notebook run in the sandbox (fork incl.)": notebook,
        "hidden graders (pytest, keras, refs)": graders,
        "nbgrader + gradebook writes": run["per_submission_median"] - notebook - graders,
        "all (median per submission)": run["per_submission_median"],
    }
    return once, each


def steady(pkg: Path) -> float:
    """Seconds from the first submission taken to the last one done."""
    return json.loads((pkg / ".autograder" / "runs" / "attention.json").read_text())["grading"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=24)
    parser.add_argument("--scaling-students", type=int, default=96,
                        help="also time 1 and 2 workers (package only) on a class this size; 0: skip")
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
    scaling = []
    if args.scaling_students:
        big = args.scaling_students
        scaling = [package_run(work / f"scaling{big}", big, w, env)[0] for w in (1, 2)]
    alone_median, side_median = side_by_side(work / "side", n // 2, env)
    slowdown = side_median / alone_median
    work1 = steady(pkg1)                  # 1 worker: first job to last
    start1 = one_seconds - work1          # and everything else: interpreter, imports, lanes, exit
    bound = (start1 + work1) / (start1 + work1 * slowdown / 2)
    once, each = breakdown(pkg1, one_seconds)
    once2, each2 = breakdown(pkg2, two_seconds)

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
        f"speed-up 1 -> 2 workers: {one_seconds / two_seconds:.2f}x   (target >= 1.8); after the start-up "
        f"(first job to last): {work1 / steady(pkg2):.2f}x",
        f"two 1-worker runs side by side (own course, nursery, lanes and gradebook each; {n // 2} submissions "
        f"each): per-submission median {alone_median:.2f} s alone -> {side_median:.2f} s "
        f"(+{slowdown * 100 - 100:.0f} %)",
        f"  => the most 2 workers can gain here: {bound:.2f}x on this class with its {start1:.1f} s of start-up, "
        f"{2 / slowdown:.2f}x with no start-up at all",
        *([f"speed-up 1 -> 2 workers on a class of {args.scaling_students} (package only): {scaling[0]:.1f} s -> "
           f"{scaling[1]:.1f} s = {scaling[0] / scaling[1]:.2f}x"] if scaling else []),
        f"scores identical to grading each submission alone: {same}"
        + (f"  differing (1 worker, 2 workers, alone): {differing}" if differing else ""),
        f"mean score: stock {statistics.mean(stock_scores.values()):.2f} (visible checks only), "
        f"package {statistics.mean(two_scores.values()):.2f}",
        "",
        "where the package's time goes (seconds; 1 worker | 2 workers):",
        "  once per run (the nursery imports keras in the sandbox alongside the imports below):",
        *[f"    {k:44s} {v:6.2f} | {once2[k]:6.2f}" for k, v in once.items()],
        "  per submission (median; the 2 workers' submissions run side by side):",
        *[f"    {k:44s} {v:6.2f} | {each2[k]:6.2f}" for k, v in each.items()],
    ]
    text = "\n".join(lines)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text + "\n", encoding="utf-8")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
