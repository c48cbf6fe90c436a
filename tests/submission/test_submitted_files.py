"""Submitted files are data (issue 13, points 4 and 8): links, FIFOs, device files and hard links are refused,
never followed as root; the assignment is found from the notebook's cells, whatever the file is called. Plain
``nbgrader autograde`` and ``generate_feedback`` on a class with links: tests/test_nbgrader.py (its graded course).

Run as root, as grading runs: the secret below is a root-only file that a submission links to."""
from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
from contextlib import contextmanager

import nbformat
import pytest

from autograder.submission.files import NotGradable, RefusedFile
from autograder.submission.notebook import collect_file, detect_assignment, read_notebook
from autograder.gradebook import staging
from autograder.messages import Notice, Reason

SECRET = "TOP-SECRET-4d1f9c"   # what a root-only file holds; must never appear where a student can read it
ASSIGNMENTS = ["attention", "kv_cache", "decoder", "modern", "quiz"]


@contextmanager
def deadline(seconds: int):
    """A read that blocks (a FIFO opened without O_NONBLOCK) fails the test instead of hanging it."""
    def fail(*_):
        raise TimeoutError(f"blocked for {seconds} s")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture
def secret(tmp_path):
    path = tmp_path / "root-only" / "shadow"
    path.parent.mkdir()
    path.write_text(SECRET)
    path.chmod(0o600)
    return path


def make_odd_files(folder, root, secret):
    """One of each kind of file a student may hand in that is not plain data, all named like the notebook."""
    folder.mkdir(parents=True, exist_ok=True)
    key = root / "solutions" / "attention" / "attention.ipynb"
    (folder / "symlink.ipynb").symlink_to(key)
    (folder / "to_secret.ipynb").symlink_to(secret)
    os.mkfifo(folder / "fifo.ipynb")
    shutil.copy(key, folder / "original.ipynb")
    os.link(folder / "original.ipynb", folder / "hardlink.ipynb")
    return {"symlink.ipynb": "symbolic link", "to_secret.ipynb": "symbolic link", "fifo.ipynb": "FIFO",
            "hardlink.ipynb": "hard link", "original.ipynb": "hard link"}


# ------------------------------------------------------------------------------------------------ reading
def test_links_fifos_and_hard_links_are_refused(tmp_path, root, secret):
    expected = make_odd_files(tmp_path / "sub", root, secret)
    for name, kind in expected.items():
        with deadline(10), pytest.raises(RefusedFile, match=kind):
            read_notebook(tmp_path / "sub" / name)
    alone = tmp_path / "alone.ipynb"
    shutil.copy(root / "solutions" / "attention" / "attention.ipynb", alone)
    assert read_notebook(alone).cells   # a plain file of its own is read as before


def test_device_files_are_refused(tmp_path):
    device = tmp_path / "zero.ipynb"
    try:
        os.mknod(device, stat.S_IFCHR | 0o644, os.makedev(1, 5))   # /dev/zero: an endless read
    except PermissionError:
        pytest.skip("cannot create a device file here (not root, or no CAP_MKNOD)")
    with deadline(10), pytest.raises(RefusedFile, match="device file"):
        read_notebook(device)


# ------------------------------------------------------------------------------------------------ detection
@pytest.mark.parametrize("folder", ["release", "solutions"])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_assignment_is_detected_from_the_cells_not_the_name(root, tmp_path, assignment, folder):
    renamed = tmp_path / f"{assignment} (1).ipynb"
    shutil.copy(root / folder / assignment / f"{assignment}.ipynb", renamed)
    assert detect_assignment(read_notebook(renamed), str(renamed)) == assignment
    for other in ASSIGNMENTS:   # a name that says another assignment does not fool it either
        assert detect_assignment(read_notebook(renamed), f"{other}.ipynb") == assignment


def test_the_assignments_are_those_of_course_config(root, tmp_path, course_setting):
    """A notebook belongs to one of course_config.py's assignments: one that the course does not list is not
    found from its cells nor from its name."""
    quiz = tmp_path / "quiz.ipynb"
    shutil.copy(root / "release" / "quiz" / "quiz.ipynb", quiz)
    assert detect_assignment(read_notebook(quiz), str(quiz)) == "quiz"
    course_setting(assignments=["attention", "kv_cache", "decoder"])
    with pytest.raises(NotGradable) as caught:
        detect_assignment(read_notebook(quiz), str(quiz))
    assert caught.value.message.code is Reason.NO_ASSIGNMENT


def test_a_notebook_cut_inside_a_korean_character_is_a_cut_notebook_not_another_encoding(tmp_path):
    """A file cut in the middle (an interrupted upload) often ends inside a multi-byte character of the Korean
    text: it is named as what it is, a file whose JSON ends too early, not a file in another encoding; a file in
    another encoding (CP949) is still named so."""
    data = json.dumps({"cells": [{"cell_type": "markdown", "source": "어텐션"}]}, ensure_ascii=False).encode()
    cut = data[: data.index("텐".encode()) + 1]                    # one byte into a three-byte character
    (tmp_path / "cut.ipynb").write_bytes(cut)
    with pytest.raises(NotGradable) as caught:
        read_notebook(tmp_path / "cut.ipynb")
    assert caught.value.message.code is Reason.NOT_A_NOTEBOOK, caught.value.message
    (tmp_path / "cp949.ipynb").write_bytes(data.decode().encode("cp949"))
    with pytest.raises(NotGradable) as caught:
        read_notebook(tmp_path / "cp949.ipynb")
    assert caught.value.message.code is Reason.NOT_UTF8, caught.value.message


def test_a_notebook_without_any_assignment_cells_is_not_gradable(tmp_path):
    path = tmp_path / "notes.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), str(path))
    with pytest.raises(NotGradable, match="no known assignment"):
        collect_file(path)


# ------------------------------------------------------------------------------------------------ the CLI
def cli(*args, cwd, timeout=600):
    return subprocess.run([sys.executable, "-m", "autograder", "grade", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_cli_refuses_links_and_special_files_with_exit_2(tmp_path, root, secret):
    expected = make_odd_files(tmp_path / "sub", root, secret)
    for name, kind in expected.items():
        proc = cli(tmp_path / "sub" / name, cwd=root, timeout=120)   # refused before anything starts
        assert proc.returncode == 2, (name, proc.stdout[-2000:], proc.stderr[-2000:])
        assert kind in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert SECRET not in proc.stdout + proc.stderr


@pytest.mark.slow
def test_cli_grades_a_renamed_quiz(tmp_path, root):
    renamed = tmp_path / "quiz (1).ipynb"
    shutil.copy(root / "solutions" / "quiz" / "quiz.ipynb", renamed)
    proc = cli(renamed, "--json", tmp_path / "r.json", cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["assignment"] == "quiz" and result["score"] == result["max_score"] > 0, result["score"]


# ------------------------------------------------------------------------------------------------ staging
def test_stage_copies_plain_files_only(tmp_path, root, secret):
    course_dir = tmp_path / "course"
    shutil.copytree(root / "release" / "attention", course_dir / "release" / "attention")
    honest = course_dir / "submitted" / "honest" / "attention"
    honest.mkdir(parents=True)
    shutil.copy(root / "solutions" / "attention" / "attention.ipynb", honest / "attention.ipynb")
    linker = course_dir / "submitted" / "linker" / "attention"
    linker.mkdir(parents=True)
    (linker / "attention.ipynb").symlink_to(honest / "attention.ipynb")   # another student's notebook
    (linker / "notes.txt").symlink_to(secret)
    (linker / "dir").symlink_to(secret.parent)
    os.mkfifo(linker / "pipe")
    (linker / "data.txt").write_text("mine")
    hard = course_dir / "submitted" / "hard" / "attention"
    hard.mkdir(parents=True)
    shutil.copy(root / "solutions" / "attention" / "attention.ipynb", tmp_path / "elsewhere.ipynb")
    os.link(tmp_path / "elsewhere.ipynb", hard / "attention.ipynb")

    assert staging.stage(course_dir, "attention", "honest") == []
    with deadline(30):
        notes = staging.stage(course_dir, "attention", "linker")
    staged = course_dir / staging.STAGING / "linker" / "attention"
    assert sorted(p.name for p in staged.iterdir()) == ["attention.ipynb", "data.txt"]
    assert all(not p.is_symlink() for p in staged.rglob("*"))
    nb = read_notebook(staged / "attention.ipynb")
    # the blank release with the Korean reason
    assert nb.cells[0].source == Notice.NOT_GRADED.korean(notebook="attention.ipynb",
                                                          reason=Reason.SYMBOLIC_LINK.korean())
    assert nb.cells[1:] == nbformat.read(str(root / "release" / "attention" / "attention.ipynb"), 4).cells
    assert {n.split(":")[0] for n in notes} == {"attention.ipynb", "notes.txt", "dir", "pipe"}, notes
    assert not any(SECRET in p.read_text() for p in staged.rglob("*") if p.is_file())

    notes = staging.stage(course_dir, "attention", "hard")   # a second name of a file elsewhere: the same
    assert Reason.HARD_LINK.korean() in read_notebook(
        course_dir / staging.STAGING / "hard" / "attention" / "attention.ipynb").cells[0].source, notes
    assert os.stat(hard / "attention.ipynb").st_nlink == 2   # no submitted file is changed
    assert (linker / "attention.ipynb").is_symlink() and stat.S_ISFIFO(os.lstat(linker / "pipe").st_mode)


def test_a_class_run_reads_each_notebook_once(tmp_path, root, monkeypatch):
    """Staging reads a submitted notebook once (the copy; the check parses those bytes, not the copy again), and
    nbgrader's reader of the staged notebook reads it once (its check's bytes are what it converts, nbconvert does
    not open it again), with the same notebook and resources as nbconvert's own ``from_filename``."""
    from nbconvert.exporters import NotebookExporter

    from autograder.gradebook import files
    from autograder.submission import files as submitted_files
    from autograder.submission import notebook

    course_dir = tmp_path / "course"
    shutil.copytree(root / "release" / "attention", course_dir / "release" / "attention")
    folder = course_dir / "submitted" / "s1" / "attention"
    folder.mkdir(parents=True)
    text = (root / "solutions" / "attention" / "attention.ipynb").read_text(encoding="utf-8")
    (folder / "attention.ipynb").write_bytes(text.replace("\n", "\r\n").encode())   # as saved on Windows
    reads = []
    real = submitted_files.read_submitted

    def counted(path, *args, **kwargs):
        reads.append(os.path.basename(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(submitted_files, "read_submitted", counted)
    monkeypatch.setattr(notebook, "read_submitted", counted)
    assert staging.stage(course_dir, "attention", "s1") == []
    assert reads == ["attention.ipynb"]

    staged = str(course_dir / staging.STAGING / "s1" / "attention" / "attention.ipynb")
    ours = files.SubmittedNotebookExporter()
    monkeypatch.setattr(files, "read_submitted", counted)
    opened = []
    real_open = open

    def watched_open(path, *args, **kwargs):
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", watched_open)
    reads.clear()
    output, resources = ours.from_filename(staged, {"nbgrader": {}})
    assert reads == ["attention.ipynb"] and staged not in opened
    monkeypatch.undo()
    assert (output, resources) == NotebookExporter().from_filename(staged, {"nbgrader": {}})


# ------------------------------------------------------------------------------------------------ nbgrader collect
def test_exchange_collect_copies_links_as_links(tmp_path, secret):
    """A student can write straight into the exchange's inbound folder; collecting (as root) must not copy what
    a link there points to, and an inbound folder that is itself a link is not collected."""
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange.default.collect import ExchangeCollect

    from autograder.patches.files import harden_nbgrader

    harden_nbgrader()
    inbound = tmp_path / "inbound" / "eve+attention+2026-12-01"
    inbound.mkdir(parents=True)
    (inbound / "attention.ipynb").symlink_to(secret)
    (inbound / "notes").symlink_to(secret.parent)
    collect = ExchangeCollect(coursedir=CourseDirectory(root=str(tmp_path)))
    collect.do_copy(str(inbound), str(tmp_path / "submitted" / "eve"))
    copied = tmp_path / "submitted" / "eve"
    assert (copied / "attention.ipynb").is_symlink() and (copied / "notes").is_symlink()
    assert oct(secret.stat().st_mode & 0o777) == "0o600"   # the link's target is not chmod-ed either
    linked = tmp_path / "inbound" / "mallory+attention+2026-12-01"
    linked.symlink_to(secret.parent, target_is_directory=True)
    collect.do_copy(str(linked), str(tmp_path / "submitted" / "mallory"))
    assert not (tmp_path / "submitted" / "mallory").exists()


def test_groupshared_collect_leaves_the_modes_of_nbgrader(tmp_path, secret):
    """With ``CourseDirectory.groupshared`` (several graders share the course folder through a group) the collected
    folder and every folder in it are setgid and group-writable (2770 added, as nbgrader's own collect makes them), its
    files group-writable (660 added), and a link's target keeps its mode."""
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange.default.collect import ExchangeCollect

    from autograder.patches.files import harden_nbgrader

    harden_nbgrader()
    inbound = tmp_path / "inbound" / "eve+attention+2026-12-01"
    (inbound / "data").mkdir(parents=True)
    (inbound / "attention.ipynb").write_text("{}")
    (inbound / "data" / "x.txt").write_text("x")
    (inbound / "shadow").symlink_to(secret)
    for path, mode in ((inbound, 0o755), (inbound / "data", 0o700), (inbound / "attention.ipynb", 0o644)):
        path.chmod(mode)
    collect = ExchangeCollect(coursedir=CourseDirectory(root=str(tmp_path), groupshared=True))
    collect.do_copy(str(inbound), str(tmp_path / "submitted" / "eve"))
    copied = tmp_path / "submitted" / "eve"
    modes = {p: oct(os.lstat(copied / p).st_mode & 0o7777) for p in (".", "data", "attention.ipynb", "data/x.txt")}
    assert modes == {".": "0o2775", "data": "0o2770", "attention.ipynb": "0o664", "data/x.txt": "0o664"}, modes
    assert (copied / "shadow").is_symlink() and oct(secret.stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("message", [Reason.SYMBOLIC_LINK(), Reason.HARD_LINK(names=2), Reason.FIFO(),
                                     Reason.DEVICE_FILE(), Reason.TOO_BIG(path="/s/a.ipynb", size=100, limit=50),
                                     Reason.GREW_TOO_BIG(path="/s/a.ipynb", limit=50)], ids=str)
def test_students_read_the_reason_in_korean(message):
    reason = message.korean
    words = [w for w in reason.replace("(", " ").replace(")", " ").replace(",", " ").split() if w.isascii()]
    assert set(words) <= {"MB", "FIFO", "100", "50"}, reason
