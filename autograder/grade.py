"""Grade one submission: collect -> sandbox -> graders. No gradebook is touched here.

``grade_notebook`` is what the CLI, the nbgrader preprocessor and the tests call; ``warm_up`` is what every grading
command does once before its first submission. The graders (torch, keras, the references) are imported by
``warm_up`` or by the first grading, not by importing this module: a command starts the sandbox's nursery first.
"""
from __future__ import annotations

import contextlib
import gc
import importlib
import io
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from autograder import scores
from autograder.graders.registry import GRADERS, exercises_of
from autograder.messages import Notice
from autograder.sandbox import bubblewrap, lanes, nursery
from autograder.sandbox.policy import Limits, Timeouts
from autograder.sandbox.errors import StudentCodeError
from autograder.sandbox.process import StudentProcess
from autograder.submission.notebook import Submission, collect, release_code

if TYPE_CHECKING:
    from autograder.graders.plugin import GradingSession, Student, TestResult


@dataclass
class ExerciseResult:
    name: str
    score: float        # the one score a person reads (``scores``: the course's decimals, within [0, max_score])
    max_score: float
    tests: list[TestResult]
    notes: list = field(default_factory=list)   # Korean: other exercises whose mistakes this one would inherit

    @property
    def diagnosis(self) -> list:
        seen = {}
        for test in self.tests:
            for mistake in test.diagnosis:
                seen.setdefault(mistake.id, mistake)
        return list(seen.values())


@dataclass
class GradeResult:
    assignment: str
    notebook: str
    seed: int
    exercises: list[ExerciseResult]
    notebook_errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    timings: dict = field(default_factory=dict)   # lane_start, notebook, graders (seconds)
    review: list[str] = field(default_factory=list)  # for the instructor only: escape hatches the code names or used
    costs: dict = field(default_factory=dict)     # restarts, timeouts (calls past their limit), interrupted (of those),
                                                  # answer_mb (the most a child computing a proxy's answer grew)
    refused: str = ""   # why the notebook could not be graded at all (nothing of it ran; every exercise 0)

    @property
    def score(self) -> float:
        return scores.rounded(sum(e.score for e in self.exercises))

    @property
    def max_score(self) -> float:
        return scores.rounded(sum(e.max_score for e in self.exercises))

    def exercise(self, name: str) -> ExerciseResult:
        return next(e for e in self.exercises if e.name == name)

    def to_json(self) -> dict:
        return {
            "assignment": self.assignment, "notebook": self.notebook, "seed": self.seed,
            "score": self.score, "max_score": self.max_score,
            "exercises": [{
                "name": e.name, "score": e.score, "max_score": e.max_score,
                "tests": [{"name": t.name, "passed": t.passed, "points": t.points, "message": t.message,
                           "seconds": round(t.seconds, 3)} for t in e.tests],
                "diagnosis": [{"id": m.id, "title": m.title, "hint": m.hint} for m in e.diagnosis],
                "notes": list(e.notes),
            } for e in self.exercises],
            "notebook_errors": self.notebook_errors,
            "review": self.review,
            "seconds": round(self.seconds, 3),
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "costs": dict(self.costs),
            **({"refused": self.refused} if self.refused else {}),
        }


@dataclass
class RanInSandbox:
    """A submission whose code cells ran in ``process``, which is still alive for the hidden graders; ``errors`` are
    the notebook's errors (Korean, shown to the student). What ``start_student`` returns and ``grade_submission``
    grades (nbgrader's preprocessors hand it over: ``gradebook.preprocessors.handoff``)."""

    submission: Submission
    process: StudentProcess
    errors: list[str]


UNSANDBOXED = Notice.UNSANDBOXED.korean()


def new_seed() -> int:
    return secrets.randbelow(2**31)


GRADER_MODULES = ("keras", "autograder.graders.compare", "autograder.graders.references",
                  "autograder.graders.plugin", "autograder.graders.review", "autograder.graders.isolation",
                  "autograder.graders.conftest", "autograder.graders.gpu_checks", "autograder.graders.gpu_refs.store")


def _pytest_plugins() -> list[str]:
    """pytest's own plugin modules and what a session start imports with them (``pdb``, ``faulthandler``): imported
    by ``warm_up``, not by a process's first grading session (benchmarks/results/speed.md, "the grading process")."""
    import _pytest.config

    names = (*getattr(_pytest.config, "essential_plugins", ()), *getattr(_pytest.config, "default_plugins", ()))
    return [f"_pytest.{name}" for name in dict.fromkeys(names)] + ["_pytest._argcomplete", "faulthandler", "pdb"]


# How ``run_graders``'s session imports the grader modules, and so how ``_import_graders`` must (the module names
# depend on it): one value for both, or the session would import them again under other names.
IMPORT_MODE = "importlib"


def _import_graders(assignment: str) -> None:
    """The assignment's grader modules, imported the way ``run_graders``'s session imports them (``IMPORT_MODE``
    under ``GRADERS``): its collection finds them in ``sys.modules`` and reuses them, as every later session of a
    process does. Anything pytest does not offer, and a module that does not import, is left to the session itself
    (which reports a broken grader module as it always did)."""
    try:
        from _pytest.pathlib import import_path
    except ImportError:
        return
    for path in sorted((GRADERS / assignment).glob("test_*.py")):
        try:
            import_path(path, mode=IMPORT_MODE, root=GRADERS, consider_namespace_packages=False)
        except Exception:  # noqa: BLE001 - the session imports it again and says what is wrong
            continue


def warm_up(sandboxed: bool, also=(), assignment: str | None = None) -> nursery.Nursery | None:
    """Get this process ready to grade: start the sandbox's nursery, import what the hidden graders run on (torch,
    keras, the references, the plugin, pytest's own plugins), the modules ``also`` names and ``assignment``'s grader
    modules, and freeze what is imported.

    The nursery's imports (numpy, torch, keras, in the sandbox) run while this process does its own: both imports of
    keras at the same time on two cores instead of one after the other. ``gc.freeze()`` keeps the imports out of
    every later collection (forked workers share their pages; exiting does not walk keras's and torch's objects);
    the collector is off while they import (its automatic collections walked them again and again), and on again
    after, as it was (the costs measured: benchmarks/results/speed.md, "the grading process"). Every grading command
    calls it once, before its first submission: ``python -m autograder grade``, ``autograde`` (before it forks its
    workers) and the first submission of a plain ``nbgrader autograde``.
    Returns the nursery (None when ``$AUTOGRADER_NURSERY=0``).

    Example:
        >>> warm_up(bubblewrap.sandboxed())
        >>> result = grade_submission(collect_file("attention.ipynb"))
    """
    started = nursery.shared(sandboxed)
    collecting = gc.isenabled()
    gc.disable()   # as in the nursery (``inside.lane._warm``): what is imported is frozen, not walked while importing
    try:
        for name in (*GRADER_MODULES, *_pytest_plugins(), *also):
            importlib.import_module(name)
        if assignment is not None:
            _import_graders(assignment)
    finally:
        gc.freeze()
        if collecting:
            gc.enable()
    return started


def run_graders(assignment: str, student: Student, seed: int, select: str | None = None) -> GradingSession:
    """Run the assignment's hidden pytest graders in this process against ``student``, on one torch thread
    (``select``: only the tests a pytest ``-k`` expression keeps, for the package's own tests; their points stay
    those of the whole grader).

    The graders' tensors are small (most torch kernels split no work under 32,768 elements), and the student's
    sandboxed process answers their calls on the other core: a second torch thread only spins against it when other
    work holds the cores, and gains nothing on an idle machine (benchmarks/results/speed.md, "the grading
    process"). A class run's workers are on one thread already (``gradebook.worker.warm_up``).
    """
    import torch

    from autograder.graders.plugin import GradingSession

    torch.set_num_threads(1)
    session = GradingSession(student, seed)
    args = [str(GRADERS / assignment), "-c", str(GRADERS / "pytest.ini"), "--rootdir", str(GRADERS),
            # no plugin of another package (anyio, xdist, platformdirs): importing them was most of a process's
            # first session, and none of them has a say in a grade
            "--disable-plugin-autoload",
            "-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:warnings", "-p", "no:logging",
            # these two run gc.collect() five times at the end of every session (with keras loaded: seconds)
            "-p", "no:unraisableexception", "-p", "no:threadexception", "--assert=plain",
            f"--import-mode={IMPORT_MODE}"] + (["-k", select] if select else [])
    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = pytest.main(args, plugins=[session])
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise RuntimeError(f"the graders of {assignment!r} did not run (pytest exit {code}): {out.getvalue()[-2000:]}")
    return session


def start_student(submission: Submission, capture: bool = False) -> RanInSandbox:
    """Run the submission's code cells in its sandboxed process (``capture``: keep each cell's outputs too, within
    ``Limits.output_kb``)."""
    sandboxed = bubblewrap.sandboxed()
    process = StudentProcess(submission.code_cells, lanes.shared(sandboxed), Limits.from_course(),
                             Timeouts.from_course(), capture=capture)
    errors: list[str] = [] if sandboxed else [UNSANDBOXED]
    try:
        report = process.start()
        errors += [_cell_error(i, s) for i, s in enumerate(report.cells) if not s.get("ok")]
    except StudentCodeError as exc:   # the process recorded it: every later call fails with this reason
        errors += [Notice.NOTEBOOK_FAILED.korean(message=exc.message)]
    return RanInSandbox(submission, process, errors)


def grade_submission(submission: Submission, seed: int | None = None, ran: RanInSandbox | None = None,
                     select: str | None = None) -> GradeResult:
    """Run the submission's code in the sandbox (unless it ran already: ``ran``, from ``start_student``) and the
    hidden graders against it (``select``: only the tests a pytest ``-k`` expression keeps, as ``run_graders``; for
    the package's own tests: the result holds only those, each with its points in the whole grader)."""
    from autograder.graders import review as escape_hatches
    from autograder.graders.plugin import Student

    seed = new_seed() if seed is None else int(seed)
    start = time.perf_counter()
    ran = ran or start_student(submission)
    process, errors = ran.process, ran.errors
    process.grade_within(process.timeouts.submission)
    try:
        student = Student(process, submission.code_cells, process.timeouts, submission.assignment)
        graders_start = time.perf_counter()
        session = run_graders(submission.assignment, student, seed, select)
        timings = {**process.timings, "graders": time.perf_counter() - graders_start}
        costs = {**process.costs, "answer_mb": round(student.answer_peak / (1 << 20), 1)}
    finally:
        process.cleanup()
    review = [*escape_hatches.review_items(submission.code_cells),
              *escape_hatches.runtime_review_items(process.reviewed),
              *escape_hatches.notebook_time_items(process.cell_routines, submission.code_cells,
                                                  release_code(submission.assignment)),
              *escape_hatches.isolation_review(process.lane.isolation_gap)]
    results = [t for nodeid, t in session.results.items() if nodeid not in session.deselected]
    # The assignment's exercises in the registry's order; those declared by a marker rather than a module (the
    # quiz's questions) after them, in the order their tests ran. Each scored the same way (``exercise_result``).
    names = [*exercises_of(submission.assignment), *dict.fromkeys(t.exercise for t in results)]
    exercises = [exercise_result(name, [t for t in results if t.exercise == name]) for name in dict.fromkeys(names)]
    exercises = [e for e in exercises if e.tests]
    _add_dependency_notes(exercises, submission, student)
    return GradeResult(submission.assignment, Path(submission.path).name, seed, exercises, errors,
                       time.perf_counter() - start, timings, review, costs)


def exercise_result(name: str, tests: list[TestResult]) -> ExerciseResult:
    """An exercise's result: the points of its passed ``tests`` as the one score (``scores.clamped``)."""
    possible = sum(t.points for t in tests)
    return ExerciseResult(name, scores.clamped(sum(t.points for t in tests if t.passed), possible),
                          scores.rounded(possible), tests)


def _add_dependency_notes(exercises: list[ExerciseResult], submission: Submission, student: Student) -> None:
    """Each exercise graded with the reference in place of the other contract functions it calls says which of
    the student's own ones would make it wrong in the real notebook (those that lost points)."""
    from autograder.graders import isolation

    lost = {e.name for e in exercises if e.score < e.max_score}
    contract = {e.name for e in exercises} | set(isolation.REFERENCES)
    for exercise in exercises:
        calls = isolation.calls_in_source(exercise.name, submission.code_cells, contract, submission.assignment)
        calls |= student.asked.get(exercise.name, set())
        exercise.notes = isolation.dependency_notes(exercise.name, calls - {exercise.name}, lost)


def grade_notebook(nb, path: str = "", assignment: str | None = None, seed: int | None = None,
                   select: str | None = None) -> GradeResult:
    """Grade a notebook node (as read by nbformat); ``select`` as ``grade_submission``'s."""
    return grade_submission(collect(nb, path, assignment), seed, select=select)


def _cell_error(index: int, status: dict) -> str:
    where = status.get("where") or []
    line = f" ({where[-1]})" if where else ""
    return Notice.CELL_ERROR.korean(cell=index + 1, error=status.get("error"), message=status.get("message", "")[:300],
                                    where=line)
