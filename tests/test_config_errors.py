"""A broken ``course_config.py`` stops nbgrader loudly instead of letting it grade without the course's settings.

traitlets logs an exception raised while loading a config file and runs on without it (nbgrader leaves
``raise_config_file_errors`` off): with a syntax error in ``course_config.py``, ``nbgrader autograde`` graded with
nbgrader's defaults (no sandbox, no hidden graders, no sanitiser of students' HTML). ``nbgrader_config.py`` turns
every error of loading it, and a missing file, into a SystemExit that traitlets does not catch. (The intact
config is loaded by every other nbgrader test.)

A setting that nothing reads is an error too (issue 24): a key of ``COURSE["sandbox"]`` or ``COURSE["timeouts"]``
that is no field of the record built from the section (``policy.Limits``, ``policy.Timeouts``), a typo such as
``memory_limit_mb`` for ``memory_mb``, used to vanish and leave the limit at its value.
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



@pytest.mark.parametrize("section, key", [("sandbox", "memory_limit_mb"), ("timeouts", "cell_seconds")])
def test_a_setting_that_nothing_reads_is_an_error(course, tmp_path, section, key):
    """``python -m autograder grade`` refuses a course_config.py whose ``section`` sets ``key`` (no field of its
    record): exit 2, and the message names the file, the section and the key."""
    from tests.helpers import minimal

    config = course / "course_config.py"
    text = config.read_text()
    opening = f'    "{section}": {{\n'
    assert opening in text
    config.write_text(text.replace(opening, opening + f'        "{key}": 1,\n', 1))
    notebook = minimal.write(minimal.notebook(), tmp_path / "attention.ipynb")
    env = {**os.environ, "COURSE_CONFIG": str(config), "KERAS_BACKEND": "torch"}
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(notebook)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert str(config) in proc.stderr and f"COURSE[{section!r}]" in proc.stderr and repr(key) in proc.stderr, \
        proc.stderr[-2000:]
