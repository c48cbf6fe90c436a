"""One grading worker of a class run (``autograder.gradebook.batch``): a process forked from the class run's process,
which inherits its imports (``warm_up``), sets up once (``_init_worker``: its own lane, nbgrader's API on the
course's configuration) and then grades one submission after another (``serve_jobs``) with nbgrader's own
``Autograde`` converter in-process, each stopped by an alarm after ``submission_limit()`` seconds and then graded as
the blank release with the reason (``_grade_one``, ``_grade_blank_job``). Its ``Outcome`` goes back to the class
run's process (``autograder.gradebook.crew``)."""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder.gradebook.staging import STAGING, stage_blank
from autograder.messages import Reason
from autograder.sandbox.inside.memory import status


@dataclass
class Outcome:
    student: str
    ok: bool
    seconds: float
    error: str = ""
    notes: list = field(default_factory=list)
    began: float = 0.0   # time.time() when the worker took the job and when it was done
    ended: float = 0.0
    peak_mb: float = 0.0  # how much the worker's peak resident memory grew while it graded this submission
    feedback: str | None = None   # with ``feedback``: "" when the student's feedback was made, else why not
    feedback_seconds: float = 0.0  # and how long its worker took to make it


_API = None


def submission_limit() -> float:
    """Seconds one submission may take in a class run (``policy.Timeouts.class_run``)."""
    from autograder.sandbox.policy import Timeouts

    return Timeouts.from_course().class_run


class OverTime(BaseException):
    """Raised in a worker by its alarm when a submission runs past ``submission_limit()``."""


def warm_up(sandboxed: bool, assignment: str | None = None):
    """The sandbox's nursery started, and what every worker needs imported once in the parent before it forks them
    (``grade.warm_up``, ``assignment``'s graders included; one thread for torch). Returns the nursery."""
    from autograder import grade

    nursery = grade.warm_up(sandboxed, also=("nbgrader.apps", "autograder.gradebook.preprocessors"),
                            assignment=assignment)
    import torch

    torch.set_num_threads(1)  # a worker's tensors are small: threads would only fight the other lanes for cores
    return nursery


def _init_worker(course_dir: str, index: int, db_url: str | None, started: list) -> None:
    """Once per worker: its own lane (fork server and uid; ``started``: the lanes the class run's process started
    before forking it, ``crew.Workers.lanes``), nbgrader's API on the course's config."""
    global _API
    import warnings

    warnings.filterwarnings("ignore", module="nbgrader")  # SQLAlchemy's autoflush notes inside nbgrader's api
    from autograder.sandbox import lanes

    for other in started:   # this worker's copies of the other lanes' sockets: closed, theirs is not our business
        if other.index != index and other.sock is not None:
            other.sock.close()
            other.sock = None
    if index < len(started):
        lanes.adopt(started[index])
    else:   # a worker started again after one died: a lane of its own
        os.environ["AUTOGRADER_LANE"] = str(index)
    from autograder.course import venv_on_path

    venv_on_path()
    os.chdir(course_dir)
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=course_dir).load_config()
    config.CourseDirectory.root = course_dir
    config.CourseDirectory.submitted_directory = str(STAGING)
    if db_url:
        config.CourseDirectory.db_url = db_url
    _API = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    lane = lanes.shared(_sandbox_ok())
    if not lane.alive:
        lane.start()


def _sandbox_ok() -> bool:
    from autograder.sandbox import bubblewrap

    return bubblewrap.sandboxed()


def _grade_one(job) -> Outcome:
    assignment, student, notes = job
    began, start, memory = time.time(), time.perf_counter(), _PeakMemory()
    limit = submission_limit()
    ok, error, over = _autograde_within(assignment, student, limit)
    if over:   # graded as blank instead, with the reason
        notes = list(notes) + _grade_blank(assignment, student, overtime_reason(limit))
        ok, error, _ = _autograde_within(assignment, student, limit)
    return Outcome(student, ok, time.perf_counter() - start, error, notes, began, time.time(), memory.grown_mb())


class _PeakMemory:
    """The growth of this process's peak resident memory from now (``/proc/self/clear_refs`` resets the peak)."""

    def __init__(self):
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")
            self.start = status("VmRSS")
        except OSError:
            self.start = None

    def grown_mb(self) -> float:
        if self.start is None:
            return 0.0
        return round(max(0, status("VmHWM") - self.start) / 2**20, 1)


def overtime_reason(limit: float) -> str:
    return Reason.OVERTIME.korean(limit=limit)


def _autograde_within(assignment: str, student: str, limit: float) -> tuple[bool, str, bool]:
    """nbgrader's autograde of one submission, stopped by an alarm after ``limit`` s: (ok, error, over time)."""
    try:
        return _autograde_alarmed(assignment, student, limit)
    except OverTime:   # the alarm landed between nbgrader's return and its disarming
        return False, "over time", True


def _autograde_alarmed(assignment: str, student: str, limit: float) -> tuple[bool, str, bool]:
    fired, armed = [], [True]

    def alarm(signum, frame):
        if armed:   # raised again every half second: code that catches it (pytest does) is stopped the next time
            fired.append(True)
            raise OverTime()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, limit, 0.5)
    try:
        result = _API.autograde(assignment, student, force=True, create=True)
        ok = bool(result.get("success"))
        error = "" if ok else (result.get("error") or result.get("log") or "")[-3000:]
    except OverTime:
        ok, error = False, "over time"
    except Exception as exc:  # noqa: BLE001 - reported at the end; the class goes on
        ok, error = False, f"{type(exc).__name__}: {exc}"
    finally:
        armed.clear()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return (False, error, True) if fired else (ok, error, False)


def _grade_blank(assignment: str, student: str, reason: str) -> list[str]:
    """Stage every notebook of a submission as the blank release with ``reason`` on top; returns the notes."""
    return stage_blank(Path(_API.coursedir.root), assignment, student, reason)


def _grade_blank_job(job, reason: str) -> Outcome:
    """A submission that could not be graded (its worker was killed at its limit, or ended twice): graded as blank,
    with ``reason`` (Korean) on top."""
    assignment, student, notes = job
    began, start, memory = time.time(), time.perf_counter(), _PeakMemory()
    notes = list(notes) + _grade_blank(assignment, student, reason)
    ok, error, _ = _autograde_within(assignment, student, submission_limit())
    return Outcome(student, ok, time.perf_counter() - start, error, notes, began, time.time(), memory.grown_mb())


def _feedback_one(job) -> tuple[str, str]:
    """nbgrader's ``GenerateFeedback`` of one graded submission, as ``nbgrader generate_feedback --force`` makes it:
    (student, "" when made, else the error)."""
    assignment, student = job
    try:
        result = _API.generate_feedback(assignment, student, force=True)
    except Exception as exc:  # noqa: BLE001 - reported at the end; the class goes on
        return student, f"{type(exc).__name__}: {exc}"
    return student, "" if result.get("success") else (result.get("error") or result.get("log") or "?")[-3000:]


def serve_jobs(conn, course_dir: str, index: int, db_url: str | None, started: list) -> None:
    """A worker's life: set up once (``_init_worker``, on lane ``index`` of ``started``), then do each job sent
    (grade a submission, grade it as blank, make a graded submission's feedback) until told to stop."""
    _init_worker(course_dir, index, db_url, started)
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        kind, job = task
        do = {"grade": _grade_one, "feedback": _feedback_one}.get(kind, lambda job: _grade_blank_job(*job))
        conn.send(do(job))

