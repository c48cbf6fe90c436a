"""The course's exercises, one record each, and every list built from them.

An exercise is three things (docs/authoring.md): its grader ``graders/<assignment>/test_<exercise>.py``, its record
``graders/exercises/<exercise>.py`` (``EXERCISE = Exercise(...)``: assignment, points, forbidden rule, mistakes,
callees, answer) and its notebook cells. Everything else is read from the records here: the exercises and points of
an assignment, the forbidden-routine rule of a function (``record``), the catalogue of mistakes (``mistakes.py``),
the proxies' table (``isolation.py``).

Importing this module reads every record. An assignment whose answers are not code (the quiz: its folder holds
``answer_key.py``, one entry per question) has graders and no exercise records.
"""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from autograder.graders import exercises
from autograder.graders.exercises import Exercise

GRADERS = Path(__file__).parent
RECORDS_DIR = GRADERS / "exercises"


class RegistryError(RuntimeError):
    """The exercise records and the graders do not fit: grading stops instead of grading without a rule."""


def exercises_of(assignment: str) -> list[str]:
    """Names of the graded exercises of an assignment, from its grader modules (``test_<exercise>.py``)."""
    folder = GRADERS / assignment
    return sorted(p.stem[len("test_"):] for p in folder.glob("test_*.py"))


def record(name: str) -> Exercise:
    """The record of the exercise ``name``; ``RegistryError`` for a name without one (fail closed)."""
    try:
        return RECORDS[name]
    except KeyError:
        raise RegistryError(f"`{name}` has no exercise record ({RECORDS_DIR / name}.py): a grader may call only "
                            "the exercises of the registry") from None


def of_assignment(assignment: str) -> list[Exercise]:
    """The records of an assignment's exercises, by name (none for the quiz)."""
    return [r for r in RECORDS.values() if r.assignment == assignment]


def coded_assignments() -> list[str]:
    """The assignments whose exercises are code (those with records), sorted."""
    return sorted({r.assignment for r in RECORDS.values()})


def _records() -> dict[str, Exercise]:
    records = {}
    for info in sorted(pkgutil.iter_modules(exercises.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{exercises.__name__}.{info.name}")
        found = getattr(module, "EXERCISE", None)
        if not isinstance(found, Exercise) or found.name != info.name:
            raise RegistryError(f"{RECORDS_DIR / info.name}.py: it must end with EXERCISE = Exercise({info.name!r}, "
                                "assignment=..., points=..., forbidden=..., mistakes=...)")
        records[found.name] = found
    return records


RECORDS: dict[str, Exercise] = _records()
