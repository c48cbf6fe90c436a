"""What the instructor's similarity report costs and finds on the demo class (prints numbers).

    .venv/bin/python benchmarks/similarity.py [--runs 3] [--course-dir DIR] [--out benchmarks/results/similarity.txt]

Each as the median of --runs fresh interpreters on this machine:
  * library: reading and fingerprinting the library routines of the forbidden rules (once per process);
  * per assignment: ``similarity.compare_class`` on the demo class's code (built as the demo builds it, no grading),
    with what it lists (student pairs, library matches, students with answer-key code);
  * --course-dir: ``similarity.for_course`` on a graded course directory (e.g. the demo's, after
    ``python -m autograder demo``), reading its autograded notebooks: what the demo's "similarity" timing adds.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ONE_RUN = r"""
import json, sys, time
import nbformat
from autograder.demo import submissions
from autograder.feedback import similarity
from autograder.graders import registry

out = {}
start = time.perf_counter()
similarity.library()
out["library"] = time.perf_counter() - start
for assignment in registry.coded_assignments():
    names = registry.exercises_of(assignment)
    code = submissions.class_code(assignment)
    cells = lambda folder: [c.source for c in nbformat.read(f"{folder}/{assignment}/{assignment}.ipynb", 4).cells
                            if c.cell_type == "code"]
    start = time.perf_counter()
    report = similarity.compare_class(assignment, code, cells("release"), names, cells("source"),
                                      [(m.id, m.source) for m in registry.mistakes_of(assignment)],
                                      similarity.Options.from_course())
    out[assignment] = time.perf_counter() - start
    out[assignment + " found"] = similarity.summary(report)
if len(sys.argv) > 1:
    start = time.perf_counter()
    similarity.for_course(sys.argv[1], registry.coded_assignments())
    out["for_course"] = time.perf_counter() - start
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--course-dir", default="")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "similarity.txt"))
    args = parser.parse_args()
    env = {**os.environ, "KERAS_BACKEND": "torch"}
    runs = [json.loads(subprocess.run([sys.executable, "-c", ONE_RUN, *([args.course_dir] if args.course_dir else [])],
                                      cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout)
            for _ in range(args.runs)]
    lines = [f"# benchmarks/similarity.py, {dt.date.today()}, {platform.node()}, {os.cpu_count()} cores, "
             f"load average {os.getloadavg()[0]:.1f}, median of {args.runs} runs"]
    for key in runs[0]:
        values = [r[key] for r in runs]
        if isinstance(values[0], float):
            lines.append(f"{key:24} {statistics.median(values):6.2f} s   ({', '.join(f'{v:.2f}' for v in values)})")
        else:
            lines.append(f"{key:24} {values[0]}")
    text = "\n".join(lines)
    print(text)
    Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
