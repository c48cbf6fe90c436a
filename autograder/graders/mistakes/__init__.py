"""The catalogue of realistic mistakes (mutants), one module per assignment.

Each mistake is the source of a student-style function with one known error. The same source serves twice:
the package's tests put it into a notebook in place of the solution and check that the exercise loses points;
the graders run it on the failing case's inputs to name the mistake in the feedback (``compare._diagnose``).
Inside the graders a mistake's function runs with the float64 reference functions of ``references.py`` as
its helpers (``softmax``, ``scaled_dot_product_attention``, ...), in the trusted process: it is our code.
"""
from __future__ import annotations

import importlib
import pkgutil
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


@cache
def catalogue() -> tuple[Mistake, ...]:
    """Every mistake of every assignment module in this package."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        found.extend(getattr(module, "MISTAKES", []))
    return tuple(found)


def for_exercise(exercise: str) -> list[Mistake]:
    return [m for m in catalogue() if m.exercise == exercise and m.diagnosable]
