"""What the worst submissions cost: the grading time of the costly faults of ``tests/sandbox/live/catalogue.COSTS``
(prints numbers), with the course's own timeouts, each graded in this process as ``python -m autograder grade``
does (the lane's warm fork server).

    .venv/bin/python benchmarks/worst_case.py [--only ID,...] [--honest] [--out FILE]
    .venv/bin/python benchmarks/worst_case.py --bounds [--only ID,...] [--out FILE]
    .venv/bin/python benchmarks/worst_case.py --class [--only ID,...] [--out FILE]

For each: wall seconds in all, and the notebook (cells) and graders phases; the score. ``--honest`` adds the answer
key. Runs unchanged against an older checkout of the package (for a before/after): it needs only
``grade_notebook`` and the catalogue's builders.

``--bounds``: the submissions that a step left unbounded before it started (``catalogue.BOUNDS``: a frame's header,
a cell's source, the notebook's JSON, a value's conversion, the names step), each graded as ``python -m autograder
grade FILE`` does in a process of its own (``--grade-one``), after the honest answer keys of its assignment: the
wall seconds and the grading process's peak resident memory (VmHWM, MiB), and their excess over the honest
submission's. The student's own process (its memory limit) is not counted. Runs against an older checkout too:
copy this file and ``tests/sandbox/live/catalogue.py`` there.

``--class``: the same submissions and an honest one per assignment graded as a class on a scratch course
(``autograde --feedback``, 2 workers), then the instructor's report: each submission's seconds and its worker's
memory growth, the size of its feedback page, the parent's memory growth, the report's seconds and peak memory.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))   # the repository: tests.*
os.environ.setdefault("KERAS_BACKEND", "torch")

from tests.sandbox.live import catalogue  # noqa: E402
from tests.helpers import notebooks  # noqa: E402

from autograder.grade import grade_notebook  # noqa: E402


def grade_one(path: str, assignment: str) -> None:
    """Grade one file as the CLI does, in this process; print its seconds, peak memory and score as JSON."""
    from autograder import cli

    out = path + ".json"
    start = time.perf_counter()
    rc = cli.main(["grade", path, "--assignment", assignment, "--seed", "1", "--json", out])
    seconds = time.perf_counter() - start
    with open("/proc/self/status") as fh:
        peak = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024
    score = json.loads(Path(out).read_text()) if rc == 0 and os.path.exists(out) else {}
    print(json.dumps({"rc": rc, "seconds": seconds, "peak_mb": peak, "score": score.get("score"),
                      "max_score": score.get("max_score")}), flush=True)


def bounds(only: set) -> list[str]:
    """``--bounds``: each entry of ``catalogue.BOUNDS`` graded in a process of its own, after its honest baseline."""
    solution = notebooks.solution_notebook("attention")
    ctx = catalogue.Context(solution=solution, release=None, other_assignment=None, graders=[], gpu_refs=[],
                            gradebook="", submission="", course="", marker="")
    folder = Path(tempfile.mkdtemp(prefix="worst_case_"))
    cases = [("honest attention", "attention", solution), ("honest quiz", "quiz", notebooks.solution_notebook("quiz"))]
    cases += [(f"{label}: {e.id}", assignment, e.build(ctx)) for label, assignment, e in catalogue.BOUNDS
              if not only or e.id in only]
    lines, baseline = [], {}
    cases.insert(0, ("warm-up (not shown)", "attention", solution))   # the first grading pays the disk's cold caches
    for name, assignment, built in cases:
        path = folder / name.split(":")[-1].strip().replace(" ", "_").strip("()") / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True)
        if isinstance(built, bytes):
            path.write_bytes(built)
        else:
            import nbformat

            nbformat.write(built, str(path))
        run = subprocess.run([sys.executable, __file__, "--grade-one", str(path), assignment], capture_output=True,
                             text=True, env={**os.environ, "KERAS_BACKEND": "torch"})
        last = (run.stdout.strip().splitlines() or ["{}"])[-1]
        try:
            got = json.loads(last)
        except ValueError:
            got = {}
        if name.startswith("warm-up"):
            continue
        if not got:
            line = f"{name:42s} no result (exit {run.returncode}): {run.stderr.strip()[-300:]}"
        else:
            base = baseline.setdefault(assignment, got) if name.startswith("honest") else baseline[assignment]
            why = run.stderr.strip().splitlines()[-1][:90] if run.stderr.strip() else ""
            score = (f"score {got['score']:g}/{got['max_score']:g}" if got.get("score") is not None
                     else f"not graded (exit {got['rc']}: {why})")
            line = (f"{name:42s} {got['seconds']:6.1f} s ({got['seconds'] - base['seconds']:+6.1f})  "
                    f"{got['peak_mb']:7.0f} MiB ({got['peak_mb'] - base['peak_mb']:+6.0f})  {score}")
        print(line, flush=True)
        lines.append(line)
    return lines


def class_one(course_dir: str, assignment: str) -> None:
    """Grade a class's ``assignment`` with its feedback (``autograde --feedback``, 2 workers) in this process (the
    parent); print each submission's seconds and its worker's memory growth, and this process's, as JSON."""
    from autograder.gradebook.batch import autograde_class

    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    before = _status("VmRSS")
    start = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        outcomes = autograde_class(Path(course_dir), assignment, workers=2, progress=quiet, feedback=True)
    print(json.dumps({"seconds": time.perf_counter() - start, "parent_mb": _status("VmHWM") - before,
                      "outcomes": [{"student": o.student, "ok": o.ok, "seconds": o.seconds, "peak_mb": o.peak_mb,
                                    "notes": [str(n)[:120] for n in o.notes]} for o in outcomes]}), flush=True)


def cli_peak(argv: list[str]) -> None:
    """One command of the CLI in this process; print its seconds and this process's peak memory (MiB) as JSON."""
    from autograder import cli

    start = time.perf_counter()
    rc = cli.main(argv)
    print(json.dumps({"rc": rc, "seconds": time.perf_counter() - start, "peak_mb": _status("VmHWM")}), flush=True)


def _status(field: str) -> float:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(field + ":")) / 1024


def _child(*args) -> dict:
    run = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                         env={**os.environ, "KERAS_BACKEND": "torch"})
    try:
        return json.loads((run.stdout.strip().splitlines() or ["{}"])[-1])
    except ValueError:
        return {"error": run.stderr.strip()[-400:]}


def class_run(only: set) -> list[str]:
    """``--class``: the same submissions, each with an honest student, graded as a class (``autograde --feedback``,
    2 workers: each submission's seconds and its worker's memory growth, the parent's growth), then the
    instructor's report (``python -m autograder report``: its seconds and peak memory), on a scratch course."""
    import nbformat

    from autograder import course

    solution = notebooks.solution_notebook("attention")
    ctx = catalogue.Context(solution=solution, release=None, other_assignment=None, graders=[], gpu_refs=[],
                            gradebook="", submission="", course="", marker="")
    work = course.scratch_course(Path(tempfile.mkdtemp(prefix="worst_case_class_")) / "course", ["attention", "quiz"])
    students = {"honest": ("honest", "attention", solution),
                "honest_quiz": ("honest", "quiz", notebooks.solution_notebook("quiz"))}
    students.update({e.id: (label, assignment, e.build(ctx)) for label, assignment, e in catalogue.BOUNDS
                     if not only or e.id in only})
    for assignment in ("attention", "quiz"):
        course.generate(work, assignment, solution=False)
    for student, (_, assignment, built) in students.items():
        path = work / "submitted" / student / assignment / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True)
        if isinstance(built, bytes):
            path.write_bytes(built)
        else:
            nbformat.write(built, str(path))
    lines = []
    for assignment in ("attention", "quiz"):
        got = _child("--class-one", str(work), assignment)
        if "outcomes" not in got:
            lines.append(f"{assignment}: no result: {got.get('error', '')}")
            continue
        lines.append(f"class of {assignment}: {len(got['outcomes'])} submissions, {got['seconds']:.1f} s, "
                     f"the parent's memory +{got['parent_mb']:.0f} MiB")
        for o in got["outcomes"]:
            label = students[o["student"]][0]
            html = work / "feedback" / o["student"] / assignment / f"{assignment}.html"
            size = f"feedback {html.stat().st_size / 1e6:.1f} MB" if html.exists() else "no feedback"
            lines.append(f"  {label + ': ' + o['student']:40s} {o['seconds']:6.1f} s  worker +{o['peak_mb']:5.0f} MiB"
                         f"  {size}{'  ' + o['notes'][0] if o['notes'] else ''}")
    got = _child("--cli-peak", "report", "--course-dir", str(work), "attention", "quiz")
    lines.append(f"report (attention, quiz): {got.get('seconds', 0):.1f} s, peak {got.get('peak_mb', 0):.0f} MiB"
                 + (f" ERROR {got['error']}" if "error" in got else ""))
    for line in lines:
        print(line, flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    parser.add_argument("--honest", action="store_true")
    parser.add_argument("--bounds", action="store_true")
    parser.add_argument("--class", dest="class_run", action="store_true")
    parser.add_argument("--grade-one", nargs=2, metavar=("FILE", "ASSIGNMENT"))
    parser.add_argument("--class-one", nargs=2, metavar=("COURSE_DIR", "ASSIGNMENT"))
    parser.add_argument("--cli-peak", nargs=argparse.REMAINDER)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if args.grade_one:
        grade_one(*args.grade_one)
        return
    if args.class_one:
        class_one(*args.class_one)
        return
    if args.cli_peak:
        cli_peak(args.cli_peak)
        return
    if args.bounds or args.class_run:
        only = set(filter(None, args.only.split(",")))
        lines = bounds(only) if args.bounds else class_run(only)
        if args.out:
            Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
        return
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
