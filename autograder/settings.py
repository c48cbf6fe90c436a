"""The course's settings, read from ``course_config.py`` (the one place they are declared)."""
from __future__ import annotations

import dataclasses
import os
import runpy
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@cache
def course() -> dict:
    """``COURSE`` of ``course_config.py`` ($COURSE_CONFIG, else the repository root next to this package)."""
    path = Path(os.environ.get("COURSE_CONFIG", ROOT / "course_config.py"))
    return runpy.run_path(str(path))["COURSE"]


def section(name: str, record):
    """The dataclass ``record`` built from ``COURSE[name]``: each field from the key of its name."""
    names = {f.name for f in dataclasses.fields(record)}
    return record(**{key: value for key, value in course()[name].items() if key in names})
