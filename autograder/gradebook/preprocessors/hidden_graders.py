"""nbgrader integration: the hidden graders judge the submission in the process ``SandboxedExecute`` ran it in.

Placed after ``SandboxedExecute`` in ``c.Autograde.autograde_preprocessors`` (see ``course_config.py``). It takes
the live process out of ``resources`` (:class:`~autograder.gradebook.preprocessors.handoff.RanInSandbox`), runs
the assignment's hidden pytest graders against it and hands the result on
(:class:`~autograder.gradebook.preprocessors.handoff.Graded`) to ``WriteGradeCells`` and ``SaveGradeResult``. It
changes no cell itself, and never runs the notebook on its own: without ``SandboxedExecute`` before it, it stops
with a configuration error.
"""
from __future__ import annotations

import os

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Integer, default

from autograder.grade import grade_submission
from autograder.gradebook.preprocessors.handoff import Graded, RanInSandbox
from autograder.graders.registry import exercises_of


class HiddenGraders(NbGraderPreprocessor):
    """Grade the notebook with the hidden graders, in the sandboxed process ``SandboxedExecute`` started."""

    seed = Integer(None, allow_none=True, help="Seed of the graders' random inputs (default: $AUTOGRADER_SEED, "
                   "else fresh per notebook).").tag(config=True)

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
        ran = RanInSandbox.take(resources, type(self).__name__)   # the process SandboxedExecute ran the cells in
        result = grade_submission(ran.submission, self.seed, ran=ran)
        self.log.info("Hidden graders: %s/%s on %s (seed %s, %.1f s)", result.score, result.max_score,
                      notebook, result.seed, result.seconds)
        Graded(result).put(resources)
        return nb, resources
