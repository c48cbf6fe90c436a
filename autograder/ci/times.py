"""Times of the course as CI reads them: due dates (``course_config.py``: ``due_dates``, e.g.
``"2026-12-07 23:59:00 +0900"``), submission times (ISO 8601, e.g. a push's ``2026-12-08T01:02:03Z``), and the
assignment a scheduled run grades: the one whose due date passed last.

Every time carries its offset: a time without one is refused (which zone was meant cannot be guessed).
"""
from __future__ import annotations

import re
from datetime import datetime, timezone

from autograder import settings

_OFFSET = re.compile(r"^(?P<time>.*\d)\s*(?P<sign>[+-])(?P<hours>\d{2}):?(?P<minutes>\d{2})$")


class TimeError(ValueError):
    """A time that cannot be read (the message says which and why)."""


def parse(text: str, what: str = "time") -> datetime:
    """``text`` as an aware datetime: ISO 8601 (``2026-12-08T01:02:03Z``, ``...+09:00``) or the course's own form
    (``2026-12-07 23:59:00 +0900``).

    Example:
        >>> parse("2026-12-07 23:59:00 +0900").isoformat()
        '2026-12-07T23:59:00+09:00'
    """
    raw = str(text).strip()
    match = _OFFSET.match(raw)
    normal = f"{match['time']}{match['sign']}{match['hours']}:{match['minutes']}" if match else raw
    try:
        when = datetime.fromisoformat(normal.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise TimeError(f"{what} {raw!r} is not a time (write it as 2026-12-07T23:59:00+09:00)") from None
    if when.tzinfo is None:
        raise TimeError(f"{what} {raw!r} has no time zone (add one: +09:00, Z)")
    return when


def due_date(assignment: str, course: settings.Course | None = None) -> datetime:
    """The due date of ``assignment`` in ``course_config.py``."""
    course = course or settings.load()
    if assignment not in course.due_dates:
        raise TimeError(f"{assignment!r} has no due date in {settings.path()} (the assignments: "
                        f"{', '.join(course.assignments)})")
    return parse(course.due_dates[assignment], f"the due date of {assignment}")


def latest_due(now: datetime | None = None, course: settings.Course | None = None) -> str | None:
    """The assignment whose due date passed last at ``now`` (default: now): what a scheduled run grades (again
    every day until the next due date, so that late submissions are graded with their penalty). None before the
    first due date.

    Example:
        >>> latest_due(parse("2026-12-08T00:30:00+09:00"))
        'attention'
    """
    course = course or settings.load()
    now = now or datetime.now(timezone.utc)
    passed = [(due_date(a, course), i, a) for i, a in enumerate(course.assignments) if due_date(a, course) <= now]
    return max(passed)[2] if passed else None
