"""One submission's process, seen from the grader: its life cycle and the notebook's run.

``StudentProcess`` forks the submission's process from a grading lane (``lanes.Lane``), runs the notebook's code
cells one by one, each with its own time limit, and starts a fresh process that replays the cells that ran well
when one ends (a limited number of times per submission, its replay within the submission's deadline). What it
sends and receives goes through ``protocol.Connection`` (one request and its reply, every frame checked); the
graders' calls are ``remote.RemoteCalls``, which the process holds (``calls``) and gives itself as their
``remote.Channel``. The process's output goes to a file this side opened and reads by its
descriptor alone: nothing in the student's scratch folder is opened by path.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from autograder.messages import Reason
from autograder.sandbox.errors import Failure, StudentCodeError
from autograder.sandbox.logs import EventLog, OutputLog
from autograder.sandbox.policy import Limits, Timeouts
from autograder.sandbox.protocol import Connection
from autograder.sandbox.remote import RemoteCalls


@dataclass
class StartReport:
    """What happened when the submission's cells ran: one status per cell and the names they defined."""

    cells: list = field(default_factory=list)
    names: list = field(default_factory=list)


class StudentProcess:
    """One submission's code, running in its own process.

    Args:
        cells: the code cells to run, in order (sources as strings).
        lane: the grading lane whose warm process forks this one (``lanes.shared()``: this process's lane).
        limits: resource limits (default: ``course_config.py``'s, ``policy.Limits.from_course``).
        timeouts: time limits (default: ``course_config.py``'s, ``policy.Timeouts.from_course``): ``cell`` for one
            cell, ``notebook`` for all of them, ``call`` for a call that gives none.
        capture: collect each cell's outputs (at most ``limits.output_kb`` per stream, ``notebook_output_kb`` in all).

    Example:
        >>> proc = StudentProcess(["def f(x):\\n    return x + 1"], lanes.shared())
        >>> proc.calls.call("f", np.zeros(3))["value"]
        array([1., 1., 1.])
    """

    def __init__(self, cells, lane, limits: Limits | None = None, timeouts: Timeouts | None = None,
                 capture: bool = False):
        self.lane = lane
        self.cells = list(cells)
        self.limits = limits or Limits.from_course()
        self.timeouts = timeouts or Timeouts.from_course()
        self.capture = self.limits.output_kb * 1024 if capture else None   # characters kept per stream of a cell
        self.good_cells: list[int] = []
        self.timings: dict[str, float] = {}  # seconds: lane_start (a lane started for this one), notebook
        self.connection: Connection | None = None   # the current process, if one was started
        self._report: StartReport | None = None   # the notebook's run: each cell's status, the names defined
        self.restarts = 0
        self._fatal = None                # why no process is left for this submission (a Message), if none is
        self._deadline: float | None = None  # monotonic time after which no more calls start (``grade_within``)
        self.calls = RemoteCalls(self)    # the graders' requests, and what they cost (broken, timed out, stopped)
        self._output: OutputLog | None = None   # what the current process prints
        self._reviewed: set[str] = set()     # what the processes ended so far reported for the instructor's review
        self.cell_routines: dict[int, set] = {}   # cell -> the watched library routines it ran (not in a call)

    # ------------------------------------------------------------------ life cycle
    def _launch(self) -> None:
        """A process for this submission, forked from the lane's warm process (started first if it is not running).

        Its output goes to a new unlinked file opened here (append only); the request pipe's end here is
        non-blocking, so that a process that stops reading cannot block a write past its deadline."""
        self.close()
        if self.connection is not None:
            self._reviewed |= self.connection.events.reviewed
        if self._output is not None:
            self._output.close()
        self._output = OutputLog()
        request_r, request_w = os.pipe()
        response_r, response_w = os.pipe()
        event_r, event_w = os.pipe()
        try:
            if not self.lane.alive:
                started = time.perf_counter()
                self.lane.start()
                self.timings["lane_start"] = time.perf_counter() - started
            proc = self.lane.fork(request_r, response_w, event_w, self.limits, self._output.fd)
        except BaseException:
            for fd in (request_w, response_r, event_r):
                os.close(fd)
            raise
        finally:
            for fd in (request_r, response_w, event_w):
                os.close(fd)
        os.set_blocking(request_w, False)
        self.connection = Connection(proc, request_w, response_r, EventLog(event_r), self._output, self.limits)

    def _run_cell(self, index: int, timeout: float, capture=None) -> dict:
        header = {"op": "run", "index": index, "source": self.cells[index], "capture": capture}
        events = self.connection.events
        mark = events.mark()
        try:
            reply, _ = self.exchange(header, [], timeout, f"{index + 1}번째 코드 셀")
        finally:   # the watched library routines the cell ran (outside any graded call: for the review list)
            self.cell_routines[index] = set(events.since(mark))
        return reply

    def start(self) -> StartReport:
        """Run the cells one by one, each with its own time limit, all within ``timeouts.notebook`` (and the
        submission's ``deadline`` when one is set).

        A cell that runs past its limit or kills the process (``os._exit``, a segfault) is recorded as failed, a
        fresh process replays the cells that had run well (within the same time limit: a replay that runs out of
        it ends the notebook's run there), and the next cells go on: one bad cell costs the student that cell, not
        the notebook. At most ``total_restarts`` fresh processes are started for one submission. A lane that is not
        running yet is started first: its start (the nursery's imports, seconds on a loaded machine) is not the
        student's time. A ``StudentCodeError`` that leaves no process is recorded (``fatal``) and raised.
        """
        started = time.perf_counter()
        if not self.lane.alive:
            self.lane.start()
            self.timings["lane_start"] = time.perf_counter() - started
        try:
            return self._run_notebook(started)
        except StudentCodeError as exc:
            self._fatal = exc.reason   # every later call fails at once with the same reason
            raise

    def _notebook_deadline(self) -> float:
        """When the notebook's cells (or their replay) must be done: ``timeouts.notebook`` from now, at the latest
        the submission's deadline."""
        return min(time.monotonic() + self.timeouts.notebook, self._deadline or float("inf"))

    def _run_notebook(self, started: float) -> StartReport:
        deadline = self._notebook_deadline()
        self._launch()
        statuses, self.good_cells = [], []
        stopped, budget = None, self.limits.notebook_output_kb * 1024   # outputs kept for the whole notebook
        for index in range(len(self.cells)):
            left = deadline - time.monotonic()
            if stopped is None and left <= 0:
                stopped = StudentCodeError(Failure.TIMEOUT, Reason.NOTEBOOK_TIMEOUT(seconds=self.timeouts.notebook))
            if stopped:   # not run: why, in the words of a cell that failed
                statuses.append({"ok": False, "error": stopped.kind.value, "message": stopped.message})
                continue
            try:
                status = self._run_cell(index, min(self.timeouts.cell, left), self.capture)
            except StudentCodeError as exc:
                status = {"ok": False, "error": exc.kind.value, "message": exc.message}
                try:
                    self._restart(deadline)
                except StudentCodeError as why:
                    stopped, self._fatal = why, why.reason   # no process left: later calls fail at once
            status = _kept(status)
            budget -= _output_size(status)
            if budget < 0 and status.get("outputs"):
                status["outputs"] = [{"output_type": "stream", "name": "stderr",
                                      "text": Reason.OUTPUT_ELIDED.korean() + "\n"}]
            statuses.append(status)
            if status.get("ok"):
                self.good_cells.append(index)
        names = []
        if not self._fatal:
            # within the notebook's time (at least a second of it): the names step calls none of the student's code
            # (``inside.serve._names``), and its own limit stops whatever runs anyway (a finalizer, a thread)
            limit = min(float(self.timeouts.names), max(deadline - time.monotonic(), 1.0))
            names = self.exchange({"op": "names", "limit": limit}, [], limit + self.timeouts.interrupt_grace,
                                   "names")[0].get("names", [])
        self._report = StartReport(cells=statuses, names=[n for n in names if isinstance(n, str)])
        self.timings["notebook"] = time.perf_counter() - started - self.timings.get("lane_start", 0.0)
        return self._report

    def _restart(self, deadline: float) -> None:
        """A fresh process that replays the cells that had run well, all before ``deadline`` (raises
        ``StudentCodeError`` when the submission's restarts are used up or the replay does not fit)."""
        if self.restarts >= self.limits.total_restarts:
            self.close()
            self._fatal = Reason.RESTART_LIMIT(restarts=self.restarts)
            raise StudentCodeError(Failure.CRASHED, self._fatal)
        self.restarts += 1
        self._launch()
        self._replay(deadline)

    def _replay(self, deadline: float) -> None:
        """Run again, in a fresh process, the cells that ran well (their outputs are not needed again), each within
        what is left before ``deadline``."""
        for index in self.good_cells:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise StudentCodeError(Failure.TIMEOUT, Reason.REPLAY_TIMEOUT())
            self._run_cell(index, min(self.timeouts.cell, left))

    def close(self) -> None:
        """End the current process (its whole session) and close this side's pipe ends; the log stays readable."""
        if self.connection is not None:
            self.connection.close()

    def cleanup(self) -> None:
        self.close()
        if self._output is not None:
            self._output.close()
            self._output = None
        if self.lane.alive:
            self.lane.reap()  # processes the submission detached from its session end with it

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()

    def output_tail(self, limit: int = 2000) -> str:
        """The last ``limit`` bytes the process printed, read from this side's descriptor (never by path)."""
        return self._output.tail(limit) if self._output is not None else ""

    @property
    def proc(self):
        """The current process (a lane's ``Child``), or None when none is running."""
        return self.connection.proc if self.connection is not None and not self.connection.closed else None

    def ensure_running(self) -> None:
        """A process to ask (``remote.Channel``): the notebook run first, or a fresh process that replays it after
        the last one ended."""
        if self.connection is not None and self.connection.running:
            return
        if self._fatal:
            raise StudentCodeError(Failure.CRASHED, self._fatal)
        if self._report is None:
            self.start()
            return
        # it ran before and ended: a fresh process replays the cells that had run well, within the deadline
        deadline = self._notebook_deadline()
        try:
            self._restart(deadline)
        except StudentCodeError as exc:
            if time.monotonic() >= deadline:
                self._fatal = exc.reason   # every later call fails at once with the same reason
            raise

    # ------------------------------------------------------------------ requests (``remote.Channel``)
    def within_deadline(self, timeout: float) -> float:
        """``timeout``, cut to what is left of the submission's deadline; past it, no request starts."""
        if self._deadline is None:
            return timeout
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise StudentCodeError(Failure.TIMEOUT, Reason.SUBMISSION_TIMEOUT())
        return min(timeout, left)

    def exchange(self, header, arrays, timeout, what, answering=False):
        """One request and its reply (``protocol.Connection.exchange``), within ``timeout`` and the submission's
        deadline."""
        timeout = self.within_deadline(timeout)
        if self.connection is None:
            raise StudentCodeError(Failure.CRASHED, Reason.NOT_RUNNING())
        return self.connection.exchange(header, arrays, timeout, what, answering)

    # ------------------------------------------------------------------ what the graders read
    @property
    def names(self) -> list[str]:
        """The names the notebook's cells defined (empty before ``start`` or when it could not finish)."""
        return list(self._report.names) if self._report else []

    @property
    def cell_results(self) -> list[dict]:
        """One status per code cell (``ok``, ``error``, ``message``, ``where``, ``outputs``), empty before ``start``."""
        return list(self._report.cells) if self._report else []

    @property
    def fatal(self) -> str | None:
        """Why no process is left for this submission (Korean), or None: every later call fails with it."""
        return self._fatal.korean if self._fatal else None

    def grade_within(self, seconds: float) -> None:
        """From now on, no call starts later than ``seconds`` from now (the submission's time for its graders)."""
        self._deadline = time.monotonic() + seconds

    @property
    def reviewed(self) -> set[str]:
        """What the submission's code did that an instructor should look at, as its processes reported it (made a
        code object or a function from one, replaced a function's code): ``inside.monitor.guard``'s audit hook."""
        return self._reviewed | (self.connection.events.reviewed if self.connection is not None else set())

    @property
    def costs(self) -> dict:
        """Fresh processes started again, calls past their limit, and of those the ones stopped in the process."""
        return {"restarts": self.restarts, "timeouts": self.calls.timed_out, "interrupted": self.calls.interrupted}


def _output_size(status: dict) -> int:
    """Characters of a cell's outputs (texts and images)."""
    outputs = status.get("outputs")
    if not isinstance(outputs, list):
        return 0
    return sum(len(str(v)) for o in outputs if isinstance(o, dict) for v in o.values())


def _kept(status: dict) -> dict:
    """What is kept of a cell's status reply: its verdict, and its outputs only when they were asked for."""
    kept = {k: status[k] for k in ("ok", "error", "message", "where", "outputs") if k in status}
    if isinstance(kept.get("message"), str):
        kept["message"] = kept["message"][:2000]
    if isinstance(kept.get("where"), list):
        kept["where"] = [str(line)[:500] for line in kept["where"][-3:]]
    return kept
