"""``python -m autograder grade``'s refusals: exit 2 and one line that says why, a file that cannot be graded first.

The command starts the sandbox's nursery before its own imports (its keras import is the longest part of a grading),
so it learns whether bubblewrap works before it reads the notebook; what it says keeps the order a user expects: a
file that cannot be graded is said to be so whatever the machine, then a machine without the sandbox.
"""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

from autograder import cli, settings  # noqa: E402
from autograder.sandbox import bubblewrap  # noqa: E402

import minimal  # noqa: E402 - tests/ is on sys.path (tests/conftest.py)


@pytest.fixture()
def no_sandbox(monkeypatch):
    """A machine where bubblewrap cannot run, in a course that does not allow grading without it."""
    monkeypatch.setattr(bubblewrap, "probe", lambda: "no bubblewrap here")
    monkeypatch.setitem(settings.course()["sandbox"], "allow_unsandboxed", False)


def test_a_file_that_cannot_be_graded_is_said_first(no_sandbox, tmp_path, capsys):
    broken = tmp_path / "attention.ipynb"
    broken.write_text("{ not a notebook", encoding="utf-8")
    assert cli.main(["grade", str(broken)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "bubblewrap" not in err, err


def test_a_machine_without_the_sandbox_grades_nothing(no_sandbox, tmp_path, capsys):
    notebook = minimal.write(minimal.notebook(), tmp_path / "attention.ipynb")
    assert cli.main(["grade", str(notebook)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: no bubblewrap here") and "AUTOGRADER_ALLOW_UNSANDBOXED" in captured.err
    assert "total" not in captured.out, captured.out
