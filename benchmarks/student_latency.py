"""What a student waits for in Jupyter: kernel start to "all cells done", and each visible check (prints numbers).

    .venv/bin/python benchmarks/student_latency.py [--runs 1] [--assignment attention ...] [--variant blank|solved]

For each assignment, two notebooks run top to bottom in a fresh kernel, cell by cell, through jupyter_client
(the protocol JupyterLab uses; errors do not stop the run, as if the student ran every cell):
  * blank:  release/<a>/<a>.ipynb as ``nbgrader generate_assignment`` writes it (the stubs: every visible check
            fails at once with the Korean "not implemented" verdict);
  * solved: source/<a>/<a>.ipynb (the instructor's solutions: every visible check runs to the end and passes).
Reported per notebook (median of --runs): kernel start until it answers, the first code cell (the imports of
numpy/torch/keras/matplotlib), kernel start until all cells are done, and every grade cell's time (the visible
checks; they should answer in well under a second each after the imports).
The kernel is the course kernel "attention-course" where scripts/install_kernel.sh installed it, else this
interpreter's ipykernel with KERAS_BACKEND=torch (the same thing).
"""
from __future__ import annotations

import argparse
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

import nbformat  # noqa: E402
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

from autograder import course, settings  # noqa: E402

KERNEL = "attention-course"


def kernel_manager() -> tuple[KernelManager, str]:
    try:
        KernelSpecManager().get_kernel_spec(KERNEL)
        return KernelManager(kernel_name=KERNEL), f"{KERNEL} (kernelspec)"
    except NoSuchKernel:
        # ipykernel's own "python3" spec; jupyter_client runs it with this interpreter
        return KernelManager(kernel_name="python3"), "python3 with KERAS_BACKEND=torch (course kernel not installed)"


def run_notebook(path: Path) -> dict:
    """Run every code cell of ``path`` in a fresh kernel; times in seconds."""
    nb = nbformat.read(str(path), as_version=4)
    km, _ = kernel_manager()
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    env["KERAS_BACKEND"] = "torch"
    start = time.perf_counter()
    km.start_kernel(env=env, cwd=str(path.parent), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=120)
        ready = time.perf_counter() - start
        cells, first = [], None
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            errors = []
            t0 = time.perf_counter()
            reply = kc.execute_interactive(
                cell.source, stop_on_error=False, timeout=300,
                output_hook=lambda msg, errors=errors: (errors.append(msg["content"]["evalue"])
                                                        if msg["msg_type"] == "error" else None))
            seconds = time.perf_counter() - t0
            first = seconds if first is None else first
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade"):
                ok = reply["content"]["status"] == "ok"
                verdict = "pass" if ok else ("not implemented" if any("아직" in e for e in errors) else "fail")
                cells.append((meta["grade_id"], seconds, verdict))
        total = time.perf_counter() - start
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return {"ready": ready, "imports": first, "total": total, "checks": cells}


def notebooks(assignments, variants) -> dict[tuple[str, str], Path]:
    work = course.scratch_course(Path(tempfile.mkdtemp(prefix="student-latency-")) / "course", assignments)
    env = course.course_env(work)
    found = {}
    for a in assignments:
        if "blank" in variants:
            course.nbgrader("generate_assignment", a, "--force", cwd=work, env=env)
            found[a, "blank"] = work / "release" / a / f"{a}.ipynb"
        if "solved" in variants:
            found[a, "solved"] = work / "source" / a / f"{a}.ipynb"
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--assignment", action="append", help="default: every assignment of the course")
    parser.add_argument("--variant", action="append", choices=["blank", "solved"], help="default: both")
    args = parser.parse_args()
    assignments = args.assignment or settings.course()["assignments"]
    variants = args.variant or ["blank", "solved"]
    med = statistics.median

    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
    print(f"kernel: {kernel_manager()[1]}; {args.runs} run(s) per notebook, medians, seconds")
    summary = []
    for (a, variant), path in notebooks(assignments, variants).items():
        runs = [run_notebook(path) for _ in range(args.runs)]
        checks = {}
        for run in runs:
            for grade_id, seconds, verdict in run["checks"]:
                checks.setdefault(grade_id, ([], verdict))[0].append(seconds)
        times = {g: med(s) for g, (s, _) in checks.items()}
        print(f"\n{a} ({variant}): kernel ready {med(r['ready'] for r in runs):.2f}, "
              f"imports cell {med(r['imports'] for r in runs):.2f}, "
              f"kernel start -> all cells done {med(r['total'] for r in runs):.2f}")
        for grade_id, (_, verdict) in checks.items():
            print(f"    {grade_id:40s} {times[grade_id] * 1000:8.1f} ms   {verdict}")
        if times:
            slowest = max(times, key=times.get)
            summary.append((a, variant, med(r["total"] for r in runs), len(times), med(times.values()),
                            times[slowest], slowest))
    print("\nsummary: notebook, kernel start -> all cells done, visible checks (count, median, slowest)")
    for a, variant, total, n, median, slowest, name in summary:
        print(f"  {a:9s} {variant:6s} {total:6.2f} s   {n:2d} checks   median {median * 1000:7.1f} ms   "
              f"slowest {slowest * 1000:7.1f} ms ({name})")


if __name__ == "__main__":
    main()
