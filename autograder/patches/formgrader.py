"""Formgrader's answers as the course shows them (``autograder.patches``): totals net of late penalties
(``FORMGRADER_TOTALS``: each answer of ``NbGraderAPI`` that carries a score passes through
``autograder.gradebook.late.net_answer``) and the roster's student numbers on submissions (``STUDENT_NUMBERS``)."""
from __future__ import annotations

import inspect

from autograder.patches import FORMGRADER_TOTALS, STUDENT_NUMBERS, install, resolve


def totals_with_late_penalties() -> None:
    """Formgrader's scores net of late penalties (``NbGraderAPI``; idempotent)."""
    for function in FORMGRADER_TOTALS.functions:
        owner, name = resolve(function)
        install(FORMGRADER_TOTALS, owner, name, lambda original, name=name: _net_of_late(name, original))


def _net_of_late(name: str, original):
    from autograder.gradebook.late import LatePenalties, net_answer

    bind = inspect.signature(original).bind

    def method(self, *args, **kwargs):
        answer = original(self, *args, **kwargs)
        with self.gradebook as gb:
            late = LatePenalties.read(gb)
        net_answer(self, name, answer, bind(self, *args, **kwargs).arguments, late)
        return answer

    method.__name__ = name
    method.__doc__ = f"{original.__doc__ or ''}\n\n(Scores net of late penalties: autograder/patches/formgrader.py)"
    return method


def student_numbers() -> None:
    """Each submission formgrader's API answers with names its student's ``lms_user_id`` (``NbGraderAPI``;
    idempotent)."""
    for function in STUDENT_NUMBERS.functions:
        owner, name = resolve(function)
        install(STUDENT_NUMBERS, owner, name, _with_numbers)


def _with_numbers(original):
    def method(self, *args, **kwargs):
        answer = original(self, *args, **kwargs)
        with self.gradebook as gb:
            numbers = {s.id: s.lms_user_id for s in gb.students}
        for entry in answer if isinstance(answer, list) else [answer]:
            entry["lms_user_id"] = numbers.get(entry.get("student"))
        return answer

    method.__name__ = original.__name__
    method.__doc__ = f"{original.__doc__ or ''}\n\n(With the student's lms_user_id: autograder/patches/formgrader.py)"
    return method
