"""A broken ``course_config.py`` stops nbgrader loudly instead of letting it grade without the course's settings.

traitlets logs an exception raised while loading a config file and runs on without it (nbgrader leaves
``raise_config_file_errors`` off): with a syntax error in ``course_config.py``, ``nbgrader autograde`` graded with
nbgrader's defaults (no sandbox, no hidden graders, no sanitiser of students' HTML). ``nbgrader_config.py`` turns
every error of loading it, and a missing file, into a SystemExit that traitlets does not catch. (The intact
config is loaded by every other nbgrader test.)
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def nbgrader(course: Path) -> subprocess.CompletedProcess:
    """A real nbgrader command that reads the course's config and needs nothing else (an empty gradebook)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    for name in ("COURSE_DB_URL", "COURSE_ID", "COURSE_CONFIG"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "nbgrader", "db", "student", "list"], cwd=course, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture()
def course(tmp_path):
    for name in ("nbgrader_config.py", "course_config.py"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize("breakage", ["syntax error", "missing"])
def test_a_broken_course_config_stops_nbgrader(course, breakage):
    config = course / "course_config.py"
    if breakage == "syntax error":
        config.write_text(config.read_text() + "\nCOURSE = {\n")
    else:
        config.unlink()
    proc = nbgrader(course)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "nbgrader stops rather than grade without the course's settings" in proc.stderr, proc.stderr[-2000:]
    assert str(config) in proc.stderr
    if breakage == "syntax error":
        assert "SyntaxError" in proc.stderr and "line " in proc.stderr      # where, for the instructor to fix

