"""nbgrader integration: the hidden graders' verdict written into each exercise's grade cell.

Placed after ``HiddenGraders`` and before ``SaveAutoGrades`` in ``c.Autograde.autograde_preprocessors`` (see
``course_config.py``). For each autograded code cell ``test_<exercise>`` it replaces the outputs with the Korean
per-test report (a stdout stream) and an ``execute_result`` whose ``text/plain`` is the exercise's score as the
grading computed it (``autograder.scores``: the course's decimals, within ``[0, points]``), written, not computed
again. nbgrader 0.9 reads the score from that first ``execute_result``; an error output or a stderr stream would
give 0, and a value above the cell's points would abort the whole submission, hence the plain number and the
cell's points as its bound.
"""
from __future__ import annotations

from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor

from autograder import scores
from autograder.report import exercise_report
from autograder.gradebook.preprocessors.handoff import Graded
from autograder.graders.registry import exercises_of
from autograder.submission.notebook import is_grade_cell


class WriteGradeCells(NbGraderPreprocessor):
    """Write each exercise's Korean report and score (from ``HiddenGraders``) into its grade cell."""

    def preprocess(self, nb, resources):
        assignment = resources.get("nbgrader", {}).get("assignment")
        if not assignment or not exercises_of(assignment):
            return nb, resources   # nothing graded (HiddenGraders said so): nbgrader's own outputs stay
        result = Graded.find(resources, type(self).__name__).result
        by_name = {e.name: e for e in result.exercises}
        for cell in nb.cells:
            if not is_grade_cell(cell):
                continue
            meta = cell.metadata.get("nbgrader", {})
            exercise = by_name.get(meta.get("grade_id", "").removeprefix("test_"))
            if exercise is None:
                continue
            # The exercise's points are its grade cell's (the registry and tests/graders/test_<assignment>_graders.py
            # keep them equal); the cell's points stay the bound nbgrader needs all the same.
            score = min(exercise.score, float(meta.get("points", 0)))
            cell.outputs = [
                new_output("stream", name="stdout", text=exercise_report(exercise, result.notebook_errors) + "\n"),
                new_output("execute_result", data={"text/plain": scores.text(score)},
                           execution_count=cell.get("execution_count")),
            ]
        return nb, resources
