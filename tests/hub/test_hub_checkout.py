"""A10 (issue 20): the hub never starts from a checkout whose answer key students can read.

The checkout holds the hidden graders, the solutions and (after a demo) grades. ``python -m autograder hub``
copies what the hub needs into the grading account's private home; the checkout itself must be closed to other
users. The read is made from a student's own Unix account (``su``), not assumed from mode bits.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

STUDENT = "hubops-a10"


@pytest.fixture()
def student():
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("needs root and useradd: the read is made from a student's own Unix account")
    subprocess.run(["userdel", "--remove", STUDENT], capture_output=True)
    subprocess.run(["useradd", "--create-home", "--user-group", "--shell", "/bin/bash", STUDENT], check=True)
    yield STUDENT
    subprocess.run(["userdel", "--remove", STUDENT], capture_output=True)


@pytest.fixture()
def checkout():
    """A checkout as `git clone` leaves it with umask 022: folders 0755, files 0644, in a folder others may
    search."""
    root = Path(tempfile.mkdtemp(prefix="hubops-checkout-"))
    os.chmod(root, 0o755)
    for rel, text in {"autograder/graders/attention/test_softmax.py": "EXPECTED = 42\n",
                      "solutions/attention/attention.ipynb": "{}\n", "release/attention/attention.ipynb": "{}\n",
                      "course_config.py": "COURSE = {}\n"}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            os.chmod(Path(dirpath) / d, 0o755)
        for f in filenames:
            os.chmod(Path(dirpath) / f, 0o644)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def student_reads(user: str, path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["su", "-s", "/bin/bash", user, "-c", f"cat {path}"], capture_output=True, text=True)


def hub_command(root: Path, monkeypatch, capsys) -> tuple[int, str, list]:
    """``python -m autograder hub`` (its main) run from ``root``; set-up replaced by a recorder: nothing is made."""
    from autograder import settings
    from autograder.hub import command, firewall, server

    started = []
    monkeypatch.setenv("COURSE_CONFIG", str(settings.ROOT / "course_config.py"))    # the course's, not the copy's
    monkeypatch.setattr(settings, "ROOT", root)
    monkeypatch.setattr(command, "setup", lambda *a, **k: started.append("setup") or {})
    monkeypatch.setattr(server, "start", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("stop here")))
    monkeypatch.setattr(server, "running_pid", lambda layout: None)
    monkeypatch.setattr(server, "stop_leftovers", lambda layout: None)
    monkeypatch.setattr(firewall, "remove", lambda layout: None)          # a hub of the course's may run here
    args = argparse.Namespace(stop=False, students=1, port=8000, ip="127.0.0.1", namespace=None)
    code = command.main(args)
    return code, capsys.readouterr().err, started


def test_hub_refuses_a_checkout_students_can_read(student, checkout, monkeypatch, capsys):
    grader = checkout / "autograder" / "graders" / "attention" / "test_softmax.py"
    read = student_reads(student, grader)
    assert read.returncode == 0 and "EXPECTED = 42" in read.stdout, read.stderr    # the exposure is real

    code, err, started = hub_command(checkout, monkeypatch, capsys)
    assert started == [], "the hub was set up from a checkout its students can read"
    assert code == 2 and "refusing to start" in err and f"chmod o-rwx {checkout}" in err, err


def test_hub_starts_from_a_closed_checkout(student, checkout, monkeypatch, capsys):
    os.chmod(checkout, 0o750)                                # what the refusal tells the instructor to do
    grader = checkout / "autograder" / "graders" / "attention" / "test_softmax.py"
    read = student_reads(student, grader)
    assert read.returncode != 0 and "Permission denied" in read.stderr, read.stdout

    code, err, started = hub_command(checkout, monkeypatch, capsys)
    assert started == ["setup"] and "refusing" not in err, err


def test_a_readable_file_under_a_closed_folder_is_not_exposed(checkout):
    """Mode bits read as the kernel reads them: a file others may read is private when a folder above it is
    closed to them, and exposed when only listing (not searching) is closed."""
    from autograder.hub.command import readable_by_others

    assert readable_by_others(checkout) is not None
    os.chmod(checkout / "autograder", 0o750)
    os.chmod(checkout / "solutions", 0o750)
    assert readable_by_others(checkout) == checkout / "course_config.py"
    os.chmod(checkout / "course_config.py", 0o640)
    assert readable_by_others(checkout) is None
    os.chmod(checkout / "solutions", 0o711)                  # not listable, but a known name can be opened
    assert readable_by_others(checkout) == checkout / "solutions" / "attention" / "attention.ipynb"
