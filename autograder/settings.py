"""The course's settings, read from ``course_config.py`` (the one place they are declared)."""
from __future__ import annotations

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
