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


def limits():
    """The student's process's resource limits (``COURSE["sandbox"]``, see ``autograder/sandbox/policy.py``)."""
    from autograder.sandbox.policy import Limits

    return Limits.from_course()


def sandboxed() -> bool:
    """True when student code runs in bubblewrap; False only when unsandboxed grading is allowed explicitly.

    Raises ``SandboxUnavailable`` (with the reason) when bubblewrap cannot run and nothing allows that.
    """
    from autograder.sandbox.bubblewrap import SandboxUnavailable, probe

    reason = probe()
    if not reason:
        return True
    if course()["sandbox"].get("allow_unsandboxed"):
        return False
    raise SandboxUnavailable(f"{reason}. Grading refuses to run student code without the sandbox; "
                             "set AUTOGRADER_ALLOW_UNSANDBOXED=1 to allow it explicitly (logged on every result).")
