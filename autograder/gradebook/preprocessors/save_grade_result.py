"""nbgrader integration: each graded notebook's full result kept as JSON for the instructor's report.

Placed after ``HiddenGraders`` in ``c.Autograde.autograde_preprocessors`` (see ``course_config.py``). It writes
``<results_dir>/<assignment>/<student>/<notebook>.json`` (``GradeResult.to_json()``: every test's verdict and
message, the diagnosis, timings and costs), from which the instructor's report counts the most frequent mistakes
(``autograder.feedback.instructor``). The notebook is unchanged.
"""
from __future__ import annotations

import json
from pathlib import Path

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from autograder.gradebook.preprocessors.handoff import Graded
from autograder.graders.registry import exercises_of

RESULTS_DIR = ".autograder/results"   # where SaveGradeResult keeps each graded notebook's result (course dir)


class SaveGradeResult(NbGraderPreprocessor):
    """Save the hidden graders' full result of the notebook (from ``HiddenGraders``) as JSON."""

    results_dir = Unicode(RESULTS_DIR, help="Where each graded notebook's full result (JSON) is kept for "
                          "the instructor's report, relative to the course directory "
                          "(empty: not kept).").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources.get("nbgrader", {})
        assignment, student = info.get("assignment"), info.get("student")
        if not assignment or not exercises_of(assignment) or not student or not self.results_dir:
            return nb, resources
        result = Graded.find(resources, type(self).__name__).result
        path = Path(self.results_dir) / assignment / student / f"{info.get('notebook', '')}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result.to_json(), ensure_ascii=False, indent=1), encoding="utf-8")
        return nb, resources
