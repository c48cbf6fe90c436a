"""The catalogue of realistic mistakes (mutants), built from the exercise records (``exercises/<exercise>.py``).

Each mistake is the source of a student-style function with one known error, defined as a student might write it
in the solution cell (numpy, calling the other contract functions and the notebook's helpers where a student
would). The same source serves twice: the package's tests put it into a notebook in place of the solution and check
that the exercise loses points and, for the diagnosable ones, that the feedback names it; the graders run it on the
failing case's inputs to name the mistake in the feedback (``diagnosis.py``). Inside the graders a mistake's
function runs with the float64 reference functions of ``references.py`` as its helpers (``softmax``,
``scaled_dot_product_attention``, ...), in the trusted process: it is our code.

How the graders match them with a wrong result (on the failing call, as an exact integer, by replaying a whole
scenario on a trusted cache): ``diagnosis.py``.
"""
from __future__ import annotations

from functools import cache

from autograder.graders import registry
from autograder.graders.exercises import Mistake

__all__ = ["Mistake", "catalogue", "for_exercise", "of_assignment"]


def of_assignment(assignment: str) -> list[Mistake]:
    """The mistakes of an assignment's exercises (``registry.of_assignment``'s order, each exercise's in its own)."""
    return [m for exercise in registry.of_assignment(assignment) for m in exercise.mistakes]


@cache
def catalogue() -> tuple[Mistake, ...]:
    """Every mistake of every exercise."""
    return tuple(m for exercise in registry.RECORDS.values() for m in exercise.mistakes)


def for_exercise(exercise: str) -> list[Mistake]:
    return [m for m in catalogue() if m.exercise == exercise and m.diagnosable]
