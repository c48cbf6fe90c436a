"""The graders of the course: which assignments have graders, and which exercises each one grades."""
from __future__ import annotations

from pathlib import Path

GRADERS = Path(__file__).parent


def exercises_of(assignment: str) -> list[str]:
    """Names of the graded exercises of an assignment, from its grader modules (``test_<exercise>.py``)."""
    folder = GRADERS / assignment
    return sorted(p.stem[len("test_"):] for p in folder.glob("test_*.py"))


def known_assignments() -> list[str]:
    return sorted({p.parent.name for p in GRADERS.glob("*/test_*.py")})
