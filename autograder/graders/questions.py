"""The quiz question record: everything the package knows about one auto-graded question, declared once.

An assignment whose answers are not code (the quiz) keeps its key in ``graders/<assignment>/answer_key.py``:
``QUESTIONS``, one ``Question`` per variable ``q1``, ``q2``, ... of the notebook, and ``WRITTEN``, one ``Written`` per
written answer graded by hand. ``registry.py`` reads the key at import like the exercise records and stops, naming
it, at a question that is not well formed, a gap in the numbering or a name given twice.

Example::

    Question("q3", kind="number", answer=64, atol=0.0, points=1.0, topic_ko="멀티헤드의 차원",
             explanation_ko="512 / 8 = 64 ...")
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["CHOICES", "KINDS", "Question", "QuestionError", "Written"]

KINDS = ("choice", "number")
CHOICES = ("A", "B", "C", "D")   # the letters of a multiple-choice question's options
NAME = re.compile(r"q[1-9][0-9]*")


class QuestionError(ValueError):
    """A question of the key that is not well formed: the key's module stops at import, naming it."""


@dataclass(frozen=True)
class Question:
    """One auto-graded quiz question.

    Args:
        name: the notebook's variable that holds the answer (``"q1"``) and the question's grade cell id.
        kind: ``"choice"`` (the answer is one of the letters ``CHOICES``; the grader ignores case and surrounding
            spaces) or ``"number"`` (right when |submitted - answer| <= atol).
        answer: the key: a letter for a choice, an int or a float for a number.
        points: its grade cell's points.
        topic_ko: what it is about, shown with a wrong answer.
        explanation_ko: the worked answer, shown only in the feedback after grading.
        atol: a number's tolerance, the one the question states to the student; 0.0 (exact) unless given, and
            always 0.0 for a choice.

    Raises:
        QuestionError: naming the question, for a name that is not ``q<number>``, an unknown kind, a key that is
            not of its kind, a negative, non-finite or (for a choice) non-zero tolerance, points that are not
            positive or an empty text.
    """

    name: str
    kind: str
    answer: str | int | float
    points: float
    topic_ko: str
    explanation_ko: str
    atol: float = 0.0

    def __post_init__(self):
        def refuse(why: str):
            raise QuestionError(f"quiz question {self.name!r}: {why}")

        if not isinstance(self.name, str) or not NAME.fullmatch(self.name):
            refuse("its name must be q1, q2, ... (the notebook's variable)")
        if self.kind not in KINDS:
            refuse(f"kind must be one of {KINDS}, not {self.kind!r}")
        if self.kind == "choice" and self.answer not in CHOICES:
            refuse(f"a choice's answer must be one of the letters {CHOICES}, not {self.answer!r}")
        if self.kind == "number" and (isinstance(self.answer, bool) or not isinstance(self.answer, (int, float))
                                      or not math.isfinite(self.answer)):
            refuse(f"a number's answer must be a finite int or float, not {self.answer!r}")
        if (isinstance(self.atol, bool) or not isinstance(self.atol, (int, float)) or not math.isfinite(self.atol)
                or self.atol < 0):
            refuse(f"atol must be a finite number >= 0, not {self.atol!r}")
        if self.kind == "choice" and self.atol != 0:
            refuse("a choice has no tolerance (atol must be 0.0)")
        if isinstance(self.points, bool) or not isinstance(self.points, (int, float)) or not self.points > 0:
            refuse(f"points must be positive (its grade cell's points), not {self.points!r}")
        for field in ("topic_ko", "explanation_ko"):
            if not isinstance(getattr(self, field), str) or not getattr(self, field).strip():
                refuse(f"{field} must be a non-empty string")


@dataclass(frozen=True)
class Written:
    """A written answer (a markdown cell) graded by hand in formgrader.

    Args:
        name: its grade cell id (``"written_1"``).
        points: its grade cell's points.
        topic_ko: what it is about.

    Raises:
        QuestionError: naming it, for an empty name or topic, or points that are not positive.
    """

    name: str
    points: float
    topic_ko: str

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise QuestionError(f"written answer {self.name!r}: its name must be its grade cell id")
        if isinstance(self.points, bool) or not isinstance(self.points, (int, float)) or not self.points > 0:
            raise QuestionError(f"written answer {self.name!r}: points must be positive, not {self.points!r}")
        if not isinstance(self.topic_ko, str) or not self.topic_ko.strip():
            raise QuestionError(f"written answer {self.name!r}: topic_ko must be a non-empty string")
