"""``python -m autograder grade``'s refusals: exit 2 and one line that says why, a file that cannot be graded first.

The command starts the sandbox's nursery before its own imports (its keras import is the longest part of a grading),
so it learns whether bubblewrap works before it reads the notebook; what it says keeps the order a user expects: a
file that cannot be graded is said to be so whatever the machine, then a machine without the sandbox. Its warm-up
imports the assignment's graders the way their pytest session does, so that the first session reuses them.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

from autograder import cli, settings  # noqa: E402
from autograder.sandbox import bubblewrap  # noqa: E402

from tests.helpers import minimal  # noqa: E402


@pytest.fixture()
def no_sandbox(monkeypatch, course_setting):
    """A machine where bubblewrap cannot run, in a course that does not allow grading without it."""
    monkeypatch.setattr(bubblewrap, "probe", lambda: "no bubblewrap here")
    course_setting("sandbox", allow_unsandboxed=False)


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


WARM_THEN_GRADE = """
import json, sys
from autograder.grade import grade_submission, warm_up
from autograder.sandbox import bubblewrap
from autograder.submission.notebook import collect_file
warm_up(bubblewrap.sandboxed(), assignment="attention")
before = set(sys.modules)
result = grade_submission(collect_file(sys.argv[1], "attention"), 5)
print(json.dumps([result.score, sorted(set(sys.modules) - before)]))
"""


def test_the_first_session_finds_the_graders_imported(tmp_path):
    notebook = minimal.write(minimal.notebook(), tmp_path / "attention.ipynb")
    proc = subprocess.run([sys.executable, "-c", WARM_THEN_GRADE, str(notebook)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    score, imported = json.loads(proc.stdout.splitlines()[-1])
    assert score > 0
    late = [name for name in imported if "test_" in name or name.startswith(("_pytest", "autograder.graders", "pdb"))]
    assert late == [], f"the first grading session imported {late}: warm_up(assignment=...) should have"


def test_a_grader_module_that_does_not_import_is_left_to_the_session(monkeypatch):
    import _pytest.pathlib

    from autograder import grade

    tried = []

    def broken(path, **options):
        tried.append(path.name)
        raise SyntaxError("a broken grader module")

    monkeypatch.setattr(_pytest.pathlib, "import_path", broken)
    grade._import_graders("attention")   # the session imports it again and reports it, as it always did
    assert "test_softmax.py" in tried and len(tried) == len(list((grade.GRADERS / "attention").glob("test_*.py")))


def test_the_command_ends_its_sandbox_and_says_everything_before_it_exits(tmp_path):
    """``python -m autograder`` leaves without the interpreter's teardown (``cli.exit_now``): what an exit must do
    is still done. The exit status is the command's (1: below ``--fail-under``), the table on a pipe arrives whole,
    the JSON file is complete, and the sandbox's nursery and lanes are ended with their folder removed (its
    ``atexit`` handlers ran)."""
    notebook = minimal.write(minimal.notebook(), tmp_path / "attention.ipynb")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    # stdout on a pipe is block-buffered (unless $PYTHONUNBUFFERED says otherwise): the table, far shorter than the
    # buffer, gets out only by a flush
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}, "TMPDIR": str(scratch)}
    command = ["grade", str(notebook), "--json", str(tmp_path / "r.json"), "--fail-under", "1000"]
    proc = subprocess.run([sys.executable, "-m", "autograder", *command], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "is below --fail-under 1000: exit status 1" in proc.stderr, proc.stderr[-2000:]   # says why
    result = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    total = [line for line in proc.stdout.splitlines() if line.startswith("total")]
    assert result["score"] > 0 and len(total) == 1 and proc.stdout.endswith("\n"), proc.stdout[-500:]
    left = [p.name for p in scratch.iterdir() if p.name.startswith("autograder-")]   # torch keeps a cache there too
    assert left == [], f"the nursery's folder was left behind: its atexit handler did not run ({left})"
    alive = subprocess.run(["pgrep", "-f", str(scratch)], capture_output=True, text=True).stdout.split()
    assert alive == [], f"sandbox processes outlived the command: {alive}"


@pytest.mark.parametrize("case", ["thread-still-running", "status-out-of-range"])
def test_the_command_exits_as_the_interpreter_does_when_it_cannot_do_the_same(case):
    """Where ``exit_now`` cannot do what the interpreter's exit does (wait for a thread that is not a daemon; a
    status that is not 0-255), it raises ``SystemExit`` and lets the interpreter exit as before."""
    import threading

    release = threading.Event()
    worker = threading.Thread(target=release.wait, daemon=False)
    if case == "thread-still-running":
        worker.start()
    try:
        with pytest.raises(SystemExit) as exit_:
            cli.exit_now(3 if case == "thread-still-running" else 256)
    finally:
        release.set()
        if worker.is_alive():
            worker.join()
    assert exit_.value.code == (3 if case == "thread-still-running" else 256)


# ------------------------------------------------------------------------------------- what CI reads of a notebook
# A notebook's text in the command's output, its JUnit and Gradescope files (workflow commands, control characters):
# tests/test_ci.py grades such a notebook as Gradescope runs the command (test_the_gradescope_package_grades_...).


# ------------------------------------------------------------------------------------- the notebook's assignment
@pytest.mark.parametrize("name, assignment", [("kv_cache.ipynb", None), ("attention.ipynb", "kv_cache"),
                                              ("handed_in.ipynb", "kv_cache"), ("kv_cache.ipynb", "attention")])
def test_a_notebook_of_another_assignment_is_refused(no_sandbox, root, tmp_path, capsys, name, assignment):
    """A finished attention notebook handed in as kv_cache.ipynb (or graded with ``--assignment kv_cache``) is not
    graded against kv_cache's graders and maximum; the file's name and ``--assignment`` must not disagree either."""
    notebook = tmp_path / name
    notebook.write_bytes((root / "solutions" / "attention" / "attention.ipynb").read_bytes())
    assert cli.main(["grade", str(notebook), *(["--assignment", assignment] if assignment else [])]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: its cells are those of the assignment") and "bubblewrap" not in err, err


@pytest.mark.parametrize("name, assignment", [("attention.ipynb", None), ("attention (1).ipynb", "attention"),
                                              ("attention.ipynb", "attention")])
def test_a_notebook_of_its_own_assignment_is_graded(no_sandbox, root, tmp_path, capsys, name, assignment):
    """Where the cells, the name and ``--assignment`` agree, the check lets it through (to the missing sandbox)."""
    notebook = tmp_path / name
    notebook.write_bytes((root / "solutions" / "attention" / "attention.ipynb").read_bytes())
    assert cli.main(["grade", str(notebook), *(["--assignment", assignment] if assignment else [])]) == 2
    assert capsys.readouterr().err.startswith("error: no bubblewrap here")


def test_an_unknown_assignment_is_refused_with_the_known_ones(no_sandbox, root, tmp_path, capsys):
    notebook = tmp_path / "attention.ipynb"
    notebook.write_bytes((root / "solutions" / "attention" / "attention.ipynb").read_bytes())
    assert cli.main(["grade", str(notebook), "--assignment", "atention"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown assignment 'atention' (did you mean 'attention'?)")
    assert ", ".join(settings.load().assignments) in err and "bubblewrap" not in err
