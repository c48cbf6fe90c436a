"""The class run's workers, from the class run's process (``autograder.gradebook.batch``): their lanes started
(``Workers.start_lanes``; the pool holds them), each worker started by a fork (``Workers.start``; it serves jobs
with ``autograder.gradebook.worker``), given one job at a time on its pipe, watched (``collect``: a worker that ends
while it grades is replaced and the submission graded again, then as blank with the true reason; one past its limit +
``kill_grace`` is killed), asked for the graded students' feedback (``collect_feedback``) and stopped
(``Workers.stop``, ``Workers.close_lanes``)."""
from __future__ import annotations

import multiprocessing
import signal
import time

from autograder.gradebook.worker import Outcome, overtime_reason, serve_jobs, submission_limit
from autograder.messages import Reason


class Worker:
    """One grading worker: a process forked from this one (it inherits the imports) that grades one job at a time,
    sent on its own pipe (``worker.serve_jobs``); ``job`` is the one it grades now, since ``began``."""

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
    """The class run's workers and their lanes: the lanes started (``start_lanes``), the workers started
    (``start``), replaced when one ends (``replace``), stopped (``stop``), the lanes closed (``close_lanes``).

    ``lanes``: the lanes this process started, one per worker (index ``i`` is worker ``i``'s), the replacements'
    appended; a worker forked from here gets the list as it is then and adopts its own lane from it."""

    def __init__(self, course_dir: str, db_url: str | None, sandboxed: bool = True, nursery=None):
        self.course_dir, self.db_url = course_dir, db_url
        self.sandboxed, self.nursery = sandboxed, nursery
        self.context = multiprocessing.get_context("fork")   # the workers inherit this process's imports
        self.all: list[Worker] = []
        self.lanes: list = []
        self.started = 0

    def start_lanes(self, count: int) -> str:
        """A lane for each of ``count`` workers, forked from the nursery where it can (where it cannot, the worker
        starts its lane on its own); returns why the nursery could not, or ""."""
        from autograder.sandbox import lanes

        self.lanes[:] = [lanes.Lane(self.sandboxed, index, nursery=self.nursery) for index in range(count)]
        for lane in self.lanes:
            lane.start(alone=False)
        return next((lane.fallback for lane in self.lanes if lane.fallback), "")

    def release_lanes(self) -> None:
        """This process's copies of the lanes' sockets closed: the workers hold the lanes now."""
        for lane in self.lanes:
            if lane.sock is not None:
                lane.sock.close()
                lane.sock = None

    def close_lanes(self) -> None:
        for lane in self.lanes:
            lane.close()
        self.lanes.clear()

    def start(self, index: int) -> Worker:
        ours, theirs = self.context.Pipe()
        process = self.context.Process(target=serve_jobs,
                                       args=(theirs, self.course_dir, index, self.db_url, self.lanes), daemon=True)
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
        lane = lanes.Lane(self.sandboxed, len(self.lanes), nursery=self.nursery)
        lane.start(alone=False)
        self.lanes.append(lane)
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


RETRIES = 1   # a submission whose worker ended while grading it is graded again this many times, in a fresh one


def collect(crew: Workers, jobs, outcomes: list, start: float, progress) -> None:
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


def collect_feedback(crew: Workers, assignment: str, students: list[str],
                     seconds: dict | None = None) -> dict[str, str]:
    """Each graded student's feedback (nbgrader's ``GenerateFeedback``), made by the workers that graded the class,
    one student per idle worker: student -> "" when made, else why not (and into ``seconds``, where given: student ->
    the seconds its worker took). A worker that ends, or takes longer than a submission's limit + ``kill_grace``, is
    replaced and that student's feedback reported missing with the reason."""
    from multiprocessing.connection import wait

    from autograder.sandbox.policy import Timeouts

    tasks, made = list(students), {}
    hard = submission_limit() + Timeouts.from_course().kill_grace
    while len(made) < len(students):
        for worker in crew.all:
            if worker.job is None and tasks and worker.alive and not worker.killed:
                worker.give("feedback", (assignment, tasks.pop(0)))
        wait([w.conn for w in crew.all if w.job is not None] + [w.process.sentinel for w in crew.all], timeout=1.0)
        for worker in list(crew.all):
            if worker.job is not None and worker.conn.poll():
                try:
                    student, error = worker.conn.recv()
                    made[student], worker.job = error, None
                    if seconds is not None:
                        seconds[student] = time.time() - worker.began
                except (EOFError, OSError):
                    pass   # it ended while it answered: below
            if worker.job is not None and time.time() - worker.began > hard and not worker.killed:
                worker.process.kill()
                worker.killed = True
            if not worker.alive:
                if worker.job is not None:
                    worker.process.join(timeout=5)
                    why = "over time" if worker.killed else _why_it_ended(worker.process.exitcode, -1).english
                    made[worker.job[1]], worker.job = f"its worker ended ({why})", None
                crew.replace(worker)
    return made


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
