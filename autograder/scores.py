"""The score a person reads: a number of points to the course's decimals (``score_decimals`` in ``course_config.py``).

An exercise's score is computed once, where the hidden graders' verdicts become an ``ExerciseResult``
(``grade.py``): the points of its passed tests, rounded to the course's decimals and kept within ``[0, points]``.
Everything after that writes or shows that number as it is: the grade cell (``WriteGradeCells``, which nbgrader's
gradebook reads), the CLI's JSON, the grades CSV, formgrader and the feedback. The late penalty is rounded the same
way, so a net score has no more decimals than its parts.

Rounding is half up on the decimal value (0.4167 -> 0.417, 0.5625 -> 0.563), after the float noise of a sum of
test points is taken off (0.1 + 0.2 is 0.3 here, not 0.30000000000000004).
"""
from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

NOISE_DIGITS = 9   # a sum of test points (each to 6 decimals) is exact to far more digits than a score has


def decimals() -> int:
    """The course's ``score_decimals``."""
    from autograder import settings

    return int(settings.load().score_decimals)


def rounded(value: float, places: int | None = None) -> float:
    """``value`` to ``places`` decimals (default: the course's), half up; not a finite number: 0."""
    if not math.isfinite(value):
        return 0.0
    places = decimals() if places is None else places
    exact = Decimal(f"{value:.{NOISE_DIGITS}f}")
    return float(exact.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)) + 0.0   # no -0.0


def clamped(earned: float, possible: float, places: int | None = None) -> float:
    """The score of ``earned`` points out of ``possible``, rounded, within ``[0, possible]`` (also rounded)."""
    top = rounded(possible, places)
    return min(max(rounded(earned, places), 0.0), top)


def text(value: float) -> str:
    """A score as people read it: no exponent, no trailing zeros (``2.625``, ``14.4``, ``3``)."""
    out = f"{value:.{NOISE_DIGITS}f}".rstrip("0").rstrip(".")
    return "0" if out in ("", "-0") else out
