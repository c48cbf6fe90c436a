"""The catalogue of realistic mistakes (mutants); each exercise lists its own in ``exercises/<exercise>.py``.

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

from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class Mistake:
    id: str          # e.g. "softmax_wrong_axis"
    exercise: str    # the contract's function name
    title: str       # Korean, short: what is wrong
    hint: str        # Korean: how to find and fix it
    source: str      # a complete student-style definition of `exercise` with the mistake
    diagnosable: bool = True   # False when its output equals the reference on ordinary inputs

    def function(self):
        return _compile(self)


@cache
def _compile(mistake: Mistake):
    from autograder.graders import references

    namespace = references.namespace()
    exec(compile(mistake.source, f"<mistake {mistake.id}>", "exec"), namespace)
    return namespace[mistake.exercise]


def of_assignment(assignment: str) -> list[Mistake]:
    """The mistakes of an assignment's exercises, in the order of its notebook."""
    from autograder.graders import exercises

    return [m for module in exercises.of_assignment(assignment) for m in module.MISTAKES]


@cache
def catalogue() -> tuple[Mistake, ...]:
    """Every mistake of every assignment."""
    from autograder.graders import exercises

    return tuple(m for assignment in exercises.ASSIGNMENTS for m in of_assignment(assignment))


def for_exercise(exercise: str) -> list[Mistake]:
    return [m for m in catalogue() if m.exercise == exercise and m.diagnosable]
