"""nbgrader integration: the instructor's review list kept in the autograded notebook, for formgrader's view.

Placed after ``HiddenGraders`` in ``c.Autograde.autograde_preprocessors`` (see ``course_config.py``). It writes the
result's review list (``GradeResult.review``: the escape hatches the submission's code names or its process used,
which the sandbox cannot block; ``autograder/graders/review.py``) into the notebook's metadata,
``metadata["autograder"]["review"]``, always: an empty list where there is nothing to look at, so that whatever the
submitted notebook carried under that key is replaced. Formgrader's manual-grading view (the template
``autograder-formgrade``) shows it on top of the submission; the students' feedback page does not. Nothing here
changes a grade.
"""
from __future__ import annotations

from nbgrader.preprocessors import NbGraderPreprocessor

from autograder.gradebook.preprocessors.handoff import Graded
from autograder.graders.registry import exercises_of

KEY = "autograder"   # the notebook metadata's key of what the course keeps in an autograded notebook


def review_of(nb) -> list[str]:
    """The review list kept in an autograded notebook (``[]`` where none was kept or it is not a list of text)."""
    kept = nb.get("metadata", {}).get(KEY)
    items = kept.get("review") if isinstance(kept, dict) else None
    return [str(item) for item in items] if isinstance(items, list) else []


class RecordReview(NbGraderPreprocessor):
    """Keep the hidden graders' review list (from ``HiddenGraders``) in the autograded notebook's metadata."""

    def preprocess(self, nb, resources):
        nb.metadata.pop(KEY, None)   # nothing of the submitted notebook's own under the course's key
        assignment = resources.get("nbgrader", {}).get("assignment")
        if not assignment or not exercises_of(assignment):
            return nb, resources
        result = Graded.find(resources, type(self).__name__).result
        nb.metadata[KEY] = {"review": [str(item) for item in result.review]}
        return nb, resources
