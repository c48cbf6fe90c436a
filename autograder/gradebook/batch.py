"""Grade a whole assignment with N worker processes: ``python -m autograder autograde ASSIGNMENT``.

Keras is imported twice per grading run, never per submission or per worker: once by this process (then
forked into the workers, which run the hidden graders) and once, at the same time on the other core, by the
sandbox's nursery (then forked into each lane's fork server, which forks each submission's process; see
``autograder.sandbox.lanes``). Each worker is one warm grading lane: it runs nbgrader's own ``Autograde``
converter in-process (the course's preprocessors: the sandboxed execution and the hidden graders) for one student
after another. Workers and student processes run one thread each, so N workers use N cores without
oversubscribing them. ``--shard i/n`` grades the
students whose stable hash falls in shard i, so several machines can split a class against one PostgreSQL
gradebook. A failure in one submission is reported at the end and never stops the run.

Submissions are never changed: they are copied into a staging folder (``.autograder/staging``) that nbgrader
reads (``autograder.gradebook.staging``). A notebook that cannot be graded at all (not JSON, truncated, not UTF-8,
too big, or another assignment's notebook) is staged as the blank release with a Korean note at the top, so that
the student gets a 0 with the reason in the feedback instead of no grade at all.

Every submission is bounded in time, whatever it does: a worker stops grading a submission still running after
``notebook + submission + grace`` seconds (``Timeouts.class_run``; an alarm in the worker) and grades it as the
blank release with a Korean note instead; a worker that does not stop ``kill_grace`` s later is killed by this process
(and replaced by another), and the submission is graded as blank by another worker. A worker that ends while it
grades a submission (the kernel's OOM killer, any signal, an exit) is seen at once and replaced, and the submission
is graded again in the fresh worker, then, if that one ends too, as blank with the true reason (memory, the signal,
the exit code). One submission never stalls the class.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder.gradebook.staging import STAGING, stage, stage_blank
from autograder.messages import Reason


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


def shard_of(student: str, shards: int) -> int:
    """A student's shard in 1..shards, stable across machines and class lists."""
    return int(hashlib.sha256(student.encode()).hexdigest(), 16) % shards + 1


def parse_shard(text: str | None) -> tuple[int, int]:
    if not text:
        return 1, 1
    index, total = (int(x) for x in text.split("/"))
    if not 1 <= index <= total:
        raise ValueError(f"--shard {text}: expected i/n with 1 <= i <= n")
    return index, total


def submitted_students(course_dir: Path, assignment: str) -> list[str]:
    return sorted(p.parent.name for p in (course_dir / "submitted").glob(f"*/{assignment}") if p.is_dir())


# --------------------------------------------------------------------------------------------- workers
_API = None
_LANES: list = []      # lanes started by the parent before forking the workers (one per worker)


def submission_limit() -> float:
    """Seconds one submission may take in a class run (``policy.Timeouts.class_run``)."""
    from autograder.sandbox.policy import Timeouts

    return Timeouts.from_course().class_run


class OverTime(BaseException):
    """Raised in a worker by its alarm when a submission runs past ``submission_limit()``."""


def _warm_up(sandboxed: bool):
    """The sandbox's nursery started, and what every worker needs imported once in the parent before it forks them
    (``grade.warm_up``; one thread for torch). Returns the nursery."""
    from autograder.grade import warm_up

    nursery = warm_up(sandboxed, also=("nbgrader.apps", "autograder.gradebook.preprocessors"))
    import torch

    torch.set_num_threads(1)  # a worker's tensors are small: threads would only fight the other lanes for cores
    return nursery


def _init_worker(course_dir: str, index: int, db_url: str | None) -> None:
    """Once per worker: its own lane (fork server and uid), nbgrader's API on the course's config."""
    global _API
    import warnings

    warnings.filterwarnings("ignore", module="nbgrader")  # SQLAlchemy's autoflush notes inside nbgrader's api
    from autograder.sandbox import lanes

    for other in _LANES:   # this worker's copies of the other lanes' sockets: closed, theirs is not our business
        if other.index != index and other.sock is not None:
            other.sock.close()
            other.sock = None
    if index < len(_LANES):
        lanes.adopt(_LANES[index])
    else:   # a worker started again after one died: a lane of its own
        os.environ["AUTOGRADER_LANE"] = str(index)
    from autograder.course import venv_on_path

    venv_on_path()  # nbgrader's gradebook runs alembic from the venv
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
            self.start = _status_kb("VmRSS")
        except OSError:
            self.start = None

    def grown_mb(self) -> float:
        if self.start is None:
            return 0.0
        return round(max(0, _status_kb("VmHWM") - self.start) / 1024, 1)


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        return next((int(line.split()[1]) for line in fh if line.startswith(field + ":")), 0)


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


def autograde_class(course_dir: Path, assignment: str, workers: int | None = None, shard: str | None = None,
                    students: list[str] | None = None, progress=sys.stderr, db_url: str | None = None) -> list[Outcome]:
    """Grade every (or the given) submitted student of ``assignment`` in this shard with ``workers`` lanes.

    ``db_url`` overrides the gradebook of the course's configuration (``$COURSE_DB_URL`` does too)."""
    course_dir = Path(course_dir).resolve()
    index, total = parse_shard(shard)
    everyone = students or submitted_students(course_dir, assignment)
    mine = [s for s in everyone if shard_of(s, total) == index]
    from autograder.sandbox import bubblewrap

    sandboxed = bubblewrap.sandboxed()  # refuse before starting anything when the sandbox cannot run
    from autograder.sandbox import lanes

    if not mine:
        print(f"{assignment}: no submissions to grade" + (f" in shard {index}/{total}" if total > 1 else ""),
              file=progress)
        return []
    start, began = time.perf_counter(), time.time()
    phases = {}
    nursery = _warm_up(sandboxed)   # its keras import runs while this process does its own
    phases["imports"] = time.perf_counter() - start
    jobs = [(assignment, s, stage(course_dir, assignment, s)) for s in mine]
    workers = max(1, min(workers or os.cpu_count() or 1, len(jobs)))
    outcomes: list[Outcome] = []
    phases["stage"] = time.perf_counter() - start - phases["imports"]
    _LANES[:] = [lanes.Lane(sandboxed, index, nursery=nursery) for index in range(workers)]
    for lane in _LANES:
        lane.start(alone=False)   # where the nursery cannot make it, the worker starts its lane on its own
    phases["lanes"] = time.perf_counter() - start - phases["stage"] - phases["imports"]
    fallback = next((lane.fallback for lane in _LANES if lane.fallback), "")
    if fallback:
        print(f"note: each lane imports keras on its own ({fallback.splitlines()[0]})", file=progress)
    crew = Workers(str(course_dir), db_url, sandboxed, nursery)
    try:
        for index in range(workers):
            crew.start(index)
        for lane in _LANES:   # the workers hold the lanes now
            if lane.sock is not None:
                lane.sock.close()
                lane.sock = None
        _collect(crew, jobs, outcomes, start, progress)
    finally:
        crew.stop()
        for lane in _LANES:
            lane.close()
        _LANES.clear()
    print(file=progress)
    failed = [o for o in outcomes if not o.ok]
    wall = time.perf_counter() - start
    run = run_summary(outcomes, workers, wall, began, phases)
    print(f"{assignment}: {len(outcomes) - len(failed)}/{len(jobs)} graded in {wall:.1f} s "
          f"with {workers} worker(s)" + (f", shard {index}/{total}" if total > 1 else "")
          + f" (start-up {run['startup']:.1f} s, then {run['per_submission_median']:.2f} s a submission per worker)",
          file=progress)
    runs = course_dir / ".autograder" / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    name = f"{assignment}.json" if total == 1 else f"{assignment}-shard{index}of{total}.json"
    (runs / name).write_text(json.dumps(run, indent=1), encoding="utf-8")
    for outcome in outcomes:
        for note in outcome.notes:
            print(f"  {outcome.student}: {note}", file=progress)
    for outcome in failed:
        print(f"  FAILED {outcome.student}: {outcome.error.strip().splitlines()[-1] if outcome.error else '?'}",
              file=progress)
    return outcomes


class Worker:
    """One grading worker: a process forked from this one (it inherits the imports) that grades one job at a time,
    sent on its own pipe (``_serve_jobs``); ``job`` is the one it grades now, since ``began``."""

    def __init__(self, index: int, process, conn):
        self.index, self.process, self.conn = index, process, conn
        self.job, self.kind, self.began = None, "", 0.0
        self.killed = False   # by this side: it takes no more jobs and is replaced once it has ended
        self.oom_kills = -1   # the machine's count of OOM kills when it took its job

    def give(self, kind: str, job) -> None:
        self.job, self.kind, self.began = job, kind, time.time()
        self.conn.send((kind, job))

    @property
    def alive(self) -> bool:
        return self.process.is_alive()


class Workers:
    """The class run's workers: started (``start``), replaced when one ends (``replace``), stopped (``stop``)."""

    def __init__(self, course_dir: str, db_url: str | None, sandboxed: bool = True, nursery=None):
        self.course_dir, self.db_url = course_dir, db_url
        self.sandboxed, self.nursery = sandboxed, nursery
        self.context = multiprocessing.get_context("fork")   # the workers inherit this process's imports
        self.all: list[Worker] = []
        self.started = 0

    def start(self, index: int) -> Worker:
        ours, theirs = self.context.Pipe()
        process = self.context.Process(target=_serve_jobs, args=(theirs, self.course_dir, index, self.db_url),
                                       daemon=True)
        process.start()
        theirs.close()
        self.started += 1
        worker = Worker(index, process, ours)
        self.all.append(worker)
        return worker

    def replace(self, worker: Worker) -> Worker:
        """A new worker in place of one that ended, with a new lane (the one it replaces ended with it): forked from
        the nursery here when it can be (seconds faster than a lane that imports keras on its own)."""
        from autograder.sandbox import lanes

        worker.process.join(timeout=5)
        worker.conn.close()
        self.all.remove(worker)
        lane = lanes.Lane(self.sandboxed, len(_LANES), nursery=self.nursery)
        lane.start(alone=False)
        _LANES.append(lane)
        fresh = self.start(lane.index)
        if lane.sock is not None:   # the worker holds it now
            lane.sock.close()
            lane.sock = None
        return fresh

    def stop(self) -> None:
        for worker in self.all:
            try:
                worker.conn.send(None)
            except OSError:
                pass
        for worker in self.all:
            worker.process.join(timeout=10)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(timeout=5)
            worker.conn.close()
        self.all.clear()


def _serve_jobs(conn, course_dir: str, index: int, db_url: str | None) -> None:
    """A worker's life: set up once (``_init_worker``), then grade each job sent until told to stop."""
    _init_worker(course_dir, index, db_url)
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        kind, job = task
        conn.send(_grade_one(job) if kind == "grade" else _grade_blank_job(*job))


RETRIES = 1   # a submission whose worker ended while grading it is graded again this many times, in a fresh one


def _collect(crew: Workers, jobs, outcomes: list, start: float, progress) -> None:
    """Give the jobs to the workers and gather the outcomes as they come.

    A worker that ends while it grades a submission (the kernel's OOM killer, any signal, an exit) is seen at once
    (its sentinel) and replaced; the submission is graded again in a fresh worker (``RETRIES`` times), then as blank
    with the true reason (memory, the signal, the exit code). A worker whose submission runs past its limit +
    ``kill_grace`` (its alarm did not stop it) is killed, and the submission graded as blank with that reason."""
    from multiprocessing.connection import wait

    from autograder.sandbox.policy import Timeouts

    tasks = [("grade", job) for job in jobs]
    ended: dict = {}      # student -> times its worker ended while grading it
    hard = submission_limit() + Timeouts.from_course().kill_grace
    while len(outcomes) < len(jobs):
        for worker in crew.all:
            if worker.job is None and tasks and worker.alive and not worker.killed:
                worker.give(*tasks.pop(0))
                worker.oom_kills = _oom_kills()
        busy = [w for w in crew.all if w.job is not None]
        wait([w.conn for w in busy] + [w.process.sentinel for w in crew.all], timeout=1.0)
        for worker in list(crew.all):
            if worker.job is not None and worker.conn.poll():
                try:
                    outcome = worker.conn.recv()
                except (EOFError, OSError):
                    outcome = None
                if outcome is not None:
                    worker.job = None
                    _record(outcome, outcomes, jobs, start, progress)
            if not worker.alive:
                if worker.job is not None:
                    worker.process.join(timeout=5)
                    why = _why_it_ended(worker.process.exitcode, worker.oom_kills)
                    job = worker.job
                    student = job[1] if worker.kind == "grade" else job[0][1]
                    ended[student] = ended.get(student, 0) + 1
                    if worker.kind == "grade" and ended[student] <= RETRIES:
                        note = f"the grading worker ended ({why.english}); graded again in a fresh worker"
                        tasks.insert(0, ("grade", (job[0], job[1], list(job[2]) + [note])))
                    elif worker.kind == "grade":
                        tasks.insert(0, ("blank", (job, why.korean)))
                    else:   # the blank placeholder's grading itself ended: the submission is lost, with the reason
                        _record(Outcome(student, False, 0.0, f"its blank placeholder's worker ended: {why.english}",
                                        list(job[0][2])), outcomes, jobs, start, progress)
                crew.replace(worker)
        now = time.time()
        for worker in crew.all:
            if worker.job is not None and worker.kind == "grade" and now - worker.began > hard:
                try:
                    worker.process.kill()   # replaced once it has ended
                except OSError:
                    pass
                worker.killed = True
                tasks.append(("blank", (worker.job, overtime_reason(submission_limit()))))
                worker.job = None


def _oom_kills() -> int:
    """How many processes the kernel's OOM killer has ended on this machine so far (``/proc/vmstat``), or -1."""
    try:
        with open("/proc/vmstat") as fh:
            return next((int(line.split()[1]) for line in fh if line.startswith("oom_kill ")), -1)
    except OSError:
        return -1


def _why_it_ended(exitcode, oom_kills_before: int):
    """Why a worker ended, as a code of the catalogue: memory when it was killed (SIGKILL) while the kernel's OOM
    killer ended a process (``/proc/vmstat``), else the signal or the exit code."""
    if exitcode is not None and exitcode < 0:
        number = -exitcode
        if number == signal.SIGKILL and oom_kills_before >= 0 and _oom_kills() > oom_kills_before:
            return Reason.WORKER_MEMORY()
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = str(number)
        return Reason.WORKER_SIGNAL(signal=name)
    return Reason.WORKER_EXIT(code=exitcode)


def _record(outcome: Outcome, outcomes: list, jobs: list, start: float, progress) -> None:
    outcomes.append(outcome)
    done, elapsed = len(outcomes), time.perf_counter() - start
    rate = done / elapsed if elapsed else 0.0
    left = (len(jobs) - done) / rate if rate else 0.0
    mark = "" if outcome.ok else "  (실패)"
    print(f"\r[{done}/{len(jobs)}] {rate * 60:.1f}/min, 남은 시간 약 {left:.0f}s — {outcome.student}"
          f"{mark}    ", end="", file=progress, flush=True)


def run_summary(outcomes: list[Outcome], workers: int, wall: float, began: float, phases: dict) -> dict:
    """Where a class run's time went (kept in ``.autograder/runs/<assignment>.json``)."""
    import statistics

    first = min((o.began for o in outcomes), default=began)
    last = max((o.ended for o in outcomes), default=began)
    return {
        "workers": workers, "submissions": len(outcomes), "wall": round(wall, 3),
        "startup": round(first - began, 3),   # staging, imports, lanes, forking the workers (until the first job)
        **{f"startup_{k}": round(v, 3) for k, v in phases.items()},
        "grading": round(last - first, 3),
        "after_last": round(wall - (last - began), 3),   # handing back, closing the lanes
        "per_submission_median": round(statistics.median(o.seconds for o in outcomes), 3) if outcomes else 0.0,
        "per_submission_max": round(max((o.seconds for o in outcomes), default=0.0), 3),
        "worker_memory_max_mb": max((o.peak_mb for o in outcomes), default=0.0),   # growth of a worker's peak
    }
