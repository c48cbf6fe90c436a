"""The graded-notebook cache of the graders' tests (tests/graders/test_<assignment>_graders.py).

Each grading runs a notebook's code in a student process, so a notebook is graded once per test session and its
result shared by every test that asks for it: ``cache.graded(name, build)``. The n-th notebook graded gets the seed
``base_seed + n`` (``step`` 0: every one the same seed). Independent mistakes share a notebook
(``mistake_groups``: two go together only when neither exercise uses the other), so a failure cannot leak from one
to the other. ``report`` prints what each grading cost and the summary lines the tests add (visible without -s).
"""
from __future__ import annotations

import time

from tests.helpers import notebooks

from autograder.grade import GradeResult, grade_notebook


class GradingCache:
    def __init__(self, assignment: str, base_seed: int, step: int = 1):
        self.assignment, self.base_seed, self.step = assignment, base_seed, step
        self.results: dict[str, GradeResult] = {}
        self.summary: dict[str, list[str]] = {}   # "gradings", and what the tests add ("mistakes", ...)
        self.groups: list[list] = []
        self.group_of: dict[str, int] = {}

    def graded(self, name: str, build, select: str | None = None) -> GradeResult:
        """Grade the notebook ``build()`` once per test session (``name`` identifies it; ``select``: only the graders'
        tests a pytest ``-k`` expression keeps, the same every time ``name`` is asked for)."""
        if name not in self.results:
            seed = self.base_seed + self.step * len(self.results)
            start = time.perf_counter()
            self.results[name] = grade_notebook(build(), f"{self.assignment}.ipynb", self.assignment, seed=seed,
                                                select=select)
            self.summary.setdefault("gradings", []).append(f"{name}: seed {seed}, "
                                                           f"{time.perf_counter() - start:.1f} s"
                                                           + (f", -k {select!r}" if select else ""))
        return self.results[name]

    def mistake_groups(self, mistakes, dependencies_of, solution) -> list[list]:
        """Pack ``mistakes`` into notebooks of independent mistakes (``notebooks.independent_groups``) built on
        ``solution``; ``graded_group(i)`` grades the i-th."""
        self.groups = notebooks.independent_groups(mistakes, dependencies_of)
        self.group_of = {m.id: i for i, group in enumerate(self.groups) for m in group}
        self.solution = solution
        return self.groups

    def graded_group(self, index: int, select: str | None = None) -> GradeResult:
        group = self.groups[index]
        return self.graded(f"mistakes-{index}",
                           lambda: notebooks.with_code(self.solution, {m.exercise: m.source for m in group}), select)

    def report(self, request, title: str, keys=("mistakes",)) -> None:
        """Write the gradings and the tests' summary lines ``keys`` to the terminal, past pytest's capture."""
        lines = [f"{title}: {len(self.results)} notebooks graded"]
        lines += [f"  {x}" for x in self.summary.get("gradings", [])]
        for key in keys:
            lines += self.summary.get(key, [])
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        capture = request.config.pluginmanager.get_plugin("capturemanager")
        if reporter is None or capture is None:
            print("\n".join(lines))
            return
        with capture.global_and_fixture_disabled():
            reporter.write_line("")
            for line in lines:
                reporter.write_line(line)


def failures(result: GradeResult, exercise: str | None = None) -> list[str]:
    return [f"{e.name}::{t.name}: {t.message}" for e in result.exercises if exercise in (None, e.name)
            for t in e.tests if not t.passed]


def scores(result: GradeResult) -> dict:
    return {e.name: e.score for e in result.exercises}
