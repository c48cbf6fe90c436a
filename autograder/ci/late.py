"""The late penalty of one notebook graded outside the gradebook (CI, Gradescope): the course's rule
(``course_config.py``: ``late_penalty``, applied by ``scores.late_penalty`` exactly as nbgrader's ``PercentPerDay``
applies it in the gradebook) on the time the submission was made and the assignment's due date.

Which time is the submission's is the caller's to say (``python -m autograder grade --submitted-at``): in the
GitHub workflow, when GitHub received the push of the graded commit (its activity log; a commit's own date is
whatever the student's clock or ``GIT_COMMITTER_DATE`` said); on Gradescope, the submission's ``created_at``.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from autograder import scores, settings
from autograder.ci import times
from autograder.messages import Notice


@dataclass(frozen=True)
class Late:
    """How late one submission was, and what that costs its score."""

    submitted_at: datetime
    due: datetime
    days: int          # started days past the due date (after the grace minutes); 0: on time
    percent: float     # of the score
    points: float      # taken off the score (the course's decimals)

    @classmethod
    def of(cls, score: float, assignment: str, submitted_at: str, due: str | None = None,
           course: settings.Course | None = None) -> "Late":
        """The penalty of ``score`` for ``assignment`` submitted at ``submitted_at`` (ISO 8601 with an offset);
        ``due``: another due date than the course's (an extension, Gradescope's own)."""
        course = course or settings.load()
        submitted = times.parse(submitted_at, "the submission time")
        deadline = times.parse(due, "the due date") if due else times.due_date(assignment, course)
        rule = course.late_penalty
        days, percent, points = scores.late_penalty(score, (submitted - deadline).total_seconds(),
                                                    rule.percent_per_day, rule.grace_minutes, rule.max_percent)
        return cls(submitted, deadline, days, percent, points)

    def net(self, score: float) -> float:
        """``score`` less the penalty (never below 0)."""
        return scores.rounded(max(0.0, score - self.points))

    def to_json(self) -> dict:
        return {"submitted_at": self.submitted_at.isoformat(), "due": self.due.isoformat(), "days": self.days,
                "percent": self.percent, "points": self.points}

    def _fields(self) -> dict:
        return {"submitted": self.submitted_at.isoformat(), "due": self.due.isoformat(), "days": self.days,
                "percent": self.percent, "points": scores.text(self.points)}

    def english(self) -> str:
        return (Notice.LATE if self.days else Notice.ON_TIME).english(**self._fields())

    def korean(self) -> str:
        return (Notice.LATE if self.days else Notice.ON_TIME).korean(**self._fields())
