"""Formgrader's totals net of late penalties (``FORMGRADER_TOTALS`` in ``autograder.patches``): each answer of
``NbGraderAPI`` that carries a score passes through ``autograder.gradebook.late.net_answer``."""
from __future__ import annotations

import inspect

from autograder.patches import FORMGRADER_TOTALS, install, resolve


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
