"""nbgrader integration: the hidden graders' verdict written into each exercise's grade cell.

Placed before ``SaveAutoGrades`` in ``c.Autograde.autograde_preprocessors`` (see ``course_config.py``). For each
autograded code cell ``test_<exercise>`` it replaces the outputs with the Korean per-test report (a stdout
stream) and an ``execute_result`` whose ``text/plain`` is the score, clamped to ``[0, points]``. nbgrader 0.9
reads the score from that first ``execute_result``; an error output or a stderr stream would give 0, and a
value above the cell's points would abort the whole submission, hence the clamping and the plain number.
"""
from __future__ import annotations

import math
import os

from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor
import json
from pathlib import Path

from traitlets import Integer, Unicode, default

from autograder.collect import exercises_of
from autograder.feedback.report import exercise_report
from autograder.grade import grade_notebook, grade_submission


def cell_score(points: float, earned: float, possible: float) -> float:
    """The cell's score: its points scaled by the share of hidden tests passed, in [0, points]."""
    if not possible or not math.isfinite(earned):
        return 0.0
    score = points * earned / possible
    return min(max(math.floor(score * 100 + 1e-9) / 100, 0.0), float(points))


def format_score(score: float) -> str:
    return f"{score:g}"


class HiddenGraders(NbGraderPreprocessor):
    """Grade the notebook with the hidden graders and write the verdicts into its grade cells."""

    seed = Integer(None, allow_none=True, help="Seed of the graders' random inputs (default: $AUTOGRADER_SEED, "
                   "else fresh per notebook).").tag(config=True)
    results_dir = Unicode(".autograder/results", help="Where each graded notebook's full result (JSON) is kept for "
                          "the instructor's report, relative to the course directory.").tag(config=True)

    @default("seed")
    def _seed_from_environment(self):
        value = os.environ.get("AUTOGRADER_SEED")
        return int(value) if value else None

    def preprocess(self, nb, resources):
        assignment = resources.get("nbgrader", {}).get("assignment")
        notebook = resources.get("nbgrader", {}).get("notebook", "")
        if not assignment or not exercises_of(assignment):
            self.log.warning("No hidden graders for assignment %r; grade cells keep nbgrader's own outputs", assignment)
            return nb, resources
        from autograder.gradebook.execute import RESOURCE_KEY

        started = resources.pop(RESOURCE_KEY, None)
        if started is not None:  # SandboxedExecute ran the notebook: grade that very process
            submission, process, errors = started
            result = grade_submission(submission, self.seed, started=(process, errors))
        else:
            result = grade_notebook(nb, f"{notebook}.ipynb", assignment, self.seed)
        by_name = {e.name: e for e in result.exercises}
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type != "code" or not meta.get("grade") or meta.get("solution"):
                continue
            exercise = by_name.get(meta.get("grade_id", "").removeprefix("test_"))
            if exercise is None:
                continue
            score = cell_score(float(meta.get("points", 0)), exercise.score, exercise.max_score)
            cell.outputs = [
                new_output("stream", name="stdout", text=exercise_report(exercise, result.notebook_errors) + "\n"),
                new_output("execute_result", data={"text/plain": format_score(score)},
                           execution_count=cell.get("execution_count")),
            ]
        self.log.info("Hidden graders: %s/%s on %s (seed %s, %.1f s)", result.score, result.max_score,
                      notebook, result.seed, result.seconds)
        student = resources.get("nbgrader", {}).get("student")
        if student and self.results_dir:
            path = Path(self.results_dir) / assignment / student / f"{notebook}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(result.to_json(), ensure_ascii=False, indent=1), encoding="utf-8")
        return nb, resources
