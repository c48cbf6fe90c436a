"""The course's settings, read from ``course_config.py`` (the one place they are declared)."""
from __future__ import annotations

import dataclasses
import os
import runpy
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class ConfigError(ValueError):
    """``course_config.py`` sets something the course cannot use; the message (English, for the instructor) says
    what and where."""


def path() -> Path:
    """The course's ``course_config.py`` ($COURSE_CONFIG, else the repository root next to this package)."""
    return Path(os.environ.get("COURSE_CONFIG", ROOT / "course_config.py"))


@cache
def course() -> dict:
    """``COURSE`` of ``course_config.py`` (``path()``)."""
    return runpy.run_path(str(path()))["COURSE"]


def section(name: str, record):
    """The dataclass ``record`` built from ``COURSE[name]``, each field from the key of its name.

    Every key must be a field and every field a key: a key that nothing reads (a typo, or a setting that no longer
    exists) or a field without its key is a ``ConfigError``, never silently dropped or defaulted.

    Example:
        >>> section("timeouts", policy.Timeouts).cell
        8
    """
    values = course().get(name)
    if not isinstance(values, dict):
        raise ConfigError(f"{path()}: COURSE[{name!r}] is missing or not a dict")
    names = [f.name for f in dataclasses.fields(record)]
    unknown, missing = sorted(set(values) - set(names)), [n for n in names if n not in values]
    if unknown or missing:
        problems = ([f"sets {', '.join(map(repr, unknown))}, which nothing reads"] if unknown else []) + \
                   ([f"lacks {', '.join(map(repr, missing))}"] if missing else [])
        raise ConfigError(f"{path()}: COURSE[{name!r}] {' and '.join(problems)} (its settings: {', '.join(names)}; "
                          f"read by {record.__module__}.{record.__qualname__})")
    return record(**values)
