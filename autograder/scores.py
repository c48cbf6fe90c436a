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


def late_penalty(score: float, seconds_late: float, percent_per_day: float, grace_minutes: float = 0.0,
                 max_percent: float = 100.0) -> tuple[int, float, float]:
    """The course's late rule (``course_config.py``: ``late_penalty``): ``percent_per_day`` of ``score`` for every
    started day past the due date once ``grace_minutes`` are over, at most ``max_percent``. Returns ``(days,
    percent, points)``; the points are rounded like the score they come off (nothing off a zero score or an
    on-time submission: ``(0, 0.0, 0.0)``). nbgrader's ``PercentPerDay`` (``gradebook/late.py``) and CI's grading
    (``ci/late.py``) both apply it.

    Example:
        >>> late_penalty(27, 25 * 3600, 10.0)   # 25 hours late: two started days
        (2, 20.0, 5.4)
    """
    import math

    late = seconds_late - grace_minutes * 60
    if late <= 0 or not score:
        return 0, 0.0, 0.0
    days = math.ceil(late / 86400)
    percent = min(max_percent, percent_per_day * days)
    return days, percent, rounded(score * percent / 100)
