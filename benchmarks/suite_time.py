"""Where the test suite's time goes, from the JUnit XML of a run (prints numbers).

    .venv/bin/python benchmarks/suite_time.py RUN.xml [OTHER.xml] [--top 25]

A run's XML comes from the README's test command with ``--junitxml`` (``bash .ci/run --junitxml=/tmp/ci.xml``). It
prints the tests' seconds summed per group (the shared groups of ``tests/conftest.py``'s ``work_group``: the hub,
the browser, the sandbox catalogues; the other files by their folder under tests/), then the costliest files and
tests. With a second XML it prints both side by side and the difference (first -> second), so that a change is
measured by the same tests on two clean clones.

A test's seconds include its fixtures' set-up (the first test of a module pays for a module fixture) and are wall
seconds on a machine where two pytest-xdist workers and nbgrader's own suite share two cores: they add up to about
twice the run's wall time, and a busy hour stretches them all.
"""
from __future__ import annotations

import argparse
import signal
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conftest import work_group  # noqa: E402


def group_of(path: str, name: str) -> str:
    """The shared group of ``work_group`` (``hub`` covers tests/hub/ with live/), else the file's folder."""
    order, group = work_group(path, name)
    if order in (0, 1):
        return group
    folder = Path(path).parent.relative_to("tests").as_posix()
    return "tests/" if folder == "." else folder


def read(xml: Path) -> dict[str, tuple[str, str, float]]:
    """``{test id: (its file, its group, seconds)}`` of a JUnit XML file."""
    tests = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        path = case.get("classname", "").replace(".", "/") + ".py"     # tests.graders.test_x -> tests/graders/test_x.py
        name = case.get("name", "")
        tests[f"{path}::{name}"] = (path, group_of(path, name), float(case.get("time") or 0))
    return tests


def totals(tests, key: int) -> Counter:
    summed = Counter()
    for value in tests.values():
        summed[value[key]] += value[2]
    return summed


def table(title: str, runs: list[Counter], top: int) -> None:
    print(f"\n{title}")
    order = sorted(set().union(*runs), key=lambda k: -max(run.get(k, 0.0) for run in runs))[:top]
    for key in order:
        values = [run.get(key, 0.0) for run in runs]
        change = f"  {values[1] - values[0]:+7.1f}" if len(runs) == 2 else ""
        print("  " + "  ".join(f"{v:7.1f}" for v in values) + change + f"  {key}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="one or two JUnit XML files of the suite")
    parser.add_argument("--top", type=int, default=25, help="how many files and tests to list")
    args = parser.parse_args(argv)
    if len(args.runs) > 2:
        parser.error("one run, or two to compare")
    missing = [str(p) for p in args.runs if not p.is_file()]
    if missing:
        parser.error(f"no such file: {', '.join(missing)}")
    runs = [read(p) for p in args.runs]
    for path, tests in zip(args.runs, runs, strict=True):
        print(f"{path}: {len(tests)} tests, {sum(t[2] for t in tests.values()):.0f} s summed")
    table("seconds per group", [totals(t, 1) for t in runs], top=100)
    table(f"the {args.top} costliest files", [totals(t, 0) for t in runs], args.top)
    table(f"the {args.top} costliest tests", [Counter({k: v[2] for k, v in t.items()}) for t in runs], args.top)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)     # `| head` ends the listing quietly
    sys.exit(main())
