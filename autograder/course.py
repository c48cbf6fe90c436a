"""Instructor commands around nbgrader: regenerate release/ and solutions/; helpers for scratch courses.

``python -m autograder build`` regenerates ``release/`` and ``solutions/`` from ``source/`` with the real
``nbgrader generate_assignment`` and ``nbgrader generate_solution``.
The demo class (``python -m autograder demo``) lives in ``autograder/demo``.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from autograder import settings

ROOT = settings.ROOT
COURSE_FILES = ("course_config.py", "nbgrader_config.py")


def venv_on_path() -> str:
    """$PATH with this interpreter's bin folder first: nbgrader's own code runs ``alembic heads`` from there for a
    new gradebook wherever ``patches.GRADEBOOK_HEAD`` is not installed or falls back (more than one head)."""
    bin_dir = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if bin_dir not in path.split(os.pathsep):
        path = f"{bin_dir}{os.pathsep}{path}"
        os.environ["PATH"] = path
    return path


def nbgrader(*args, cwd: Path, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run a real nbgrader command (the one installed next to this interpreter)."""
    exe = Path(sys.executable).with_name("nbgrader")
    venv_on_path()
    full_env = {**os.environ, "KERAS_BACKEND": "torch", **(env or {})}
    bin_dir = str(exe.parent)
    if bin_dir not in full_env.get("PATH", "").split(os.pathsep):
        full_env["PATH"] = f"{bin_dir}{os.pathsep}{full_env.get('PATH', '')}"
    proc = subprocess.run([str(exe), *args], cwd=cwd, env=full_env, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def scratch_course(where: Path, assignments=None) -> Path:
    """A course directory at ``where`` with the configs and ``source/`` (and its own SQLite gradebook)."""
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    for name in COURSE_FILES:
        shutil.copy(ROOT / name, where / name)
    for assignment in assignments or settings.load().assignments:
        shutil.copytree(ROOT / "source" / assignment, where / "source" / assignment)
    return where


class NoCourse(ValueError):
    """The folder a command was given (or run in) holds no course: the message says what is missing and where."""


def gradebook_url(course_dir: Path, db_url: str | None = None) -> str:
    """The gradebook of the course at ``course_dir``: ``db_url``, else ``$COURSE_DB_URL``, else its ``gradebook.db``.
    A SQLite gradebook that does not exist is ``NoCourse`` (nbgrader would make an empty one there: a command run
    outside the course folder would then report an empty class)."""
    url = db_url or os.environ.get("COURSE_DB_URL") or f"sqlite:///{Path(course_dir).resolve() / 'gradebook.db'}"
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).is_file():
        raise NoCourse(f"no gradebook at {url.removeprefix('sqlite:///')}: run the command in the course folder "
                       f"(cd into it: the folder with nbgrader_config.py and gradebook.db) or give --course-dir")
    return url


def course_env(course_dir: Path) -> dict:
    return {"COURSE_DB_URL": f"sqlite:///{course_dir / 'gradebook.db'}",
            "COURSE_EXCHANGE": str(course_dir / "exchange")}


def generate(course_dir: Path, assignment: str, solution: bool = True) -> None:
    """``nbgrader generate_assignment`` (release/ and the gradebook's record) and, with ``solution``,
    ``generate_solution`` (solutions/, the notebook executed in a kernel: 10-20 s an assignment)."""
    env = course_env(course_dir)
    nbgrader("generate_assignment", assignment, "--force", cwd=course_dir, env=env)
    if solution:
        nbgrader("generate_solution", assignment, "--force", cwd=course_dir, env=env)


def build(assignments=None) -> None:
    """Regenerate ``release/`` and ``solutions/`` of the repository from ``source/``."""
    assignments = assignments or settings.load().assignments
    work = ROOT / "build" / "course"
    scratch_course(work, assignments)
    for assignment in assignments:
        start = time.perf_counter()
        generate(work, assignment)
        for folder in ("release", "solutions"):
            target = ROOT / folder / assignment
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(work / folder / assignment, target)
        print(f"build: {assignment}: release/ and solutions/ regenerated ({time.perf_counter() - start:.1f} s)")


def autograde(course_dir: Path, assignment: str, students: dict[str, Path], extra=()) -> None:
    """Put each student's notebook into ``submitted/`` and run ``nbgrader autograde`` on them."""
    for student, notebook in students.items():
        target = course_dir / "submitted" / student / assignment
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(notebook, target / f"{assignment}.ipynb")
    nbgrader("autograde", assignment, "--create", "--force", *extra, cwd=course_dir, env=course_env(course_dir))


def scores(course_dir: Path, assignment: str) -> dict[str, tuple[float, float]]:
    """(score, max_score) per student from the gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(course_env(course_dir)["COURSE_DB_URL"]) as gb:
        return {s.student.id: (s.score, s.max_score) for s in gb.assignment_submissions(assignment)}
