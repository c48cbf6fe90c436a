"""The trusted side of the sandbox: starts the student's process, sends inputs, receives plain values.

Nothing that comes back is executed or unpickled, and nothing is trusted: every frame's length, header and arrays
(numeric dtypes only, shape matching the data, at most ``reply_mb`` of float64 in all) are checked against the
limits of ``course_config.py`` before anything is read or converted, every reply must answer the request it
follows, and no write or read waits past its deadline. A malformed or oversized reply, a stuck pipe, a call that
takes too long, a crash or an ``os._exit`` ends the process with a Korean message for that submission; the next
call starts a fresh one (a limited number of times per submission, its replay of the cells within the
submission's deadline). The process's output goes to a file this side opened and reads by its descriptor alone:
nothing in the student's scratch folder is opened by path.
"""
from __future__ import annotations

import math
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field

import numpy as np

from autograder.messages import Reason
from autograder.sandbox.errors import Failure, StudentCodeError, crash_reason, from_reply
from autograder.sandbox.inside.wire import FrameError, FrameTooBig, read_frame, write_frame
from autograder.sandbox.logs import EventLog, OutputLog
from autograder.sandbox.policy import Limits


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
        startup_timeout: seconds allowed for running all cells (default: ``COURSE["timeouts"]["startup"]``).
        call_timeout: seconds allowed for one call (default: ``COURSE["timeouts"]["call"]``).
        capture: collect each cell's outputs, at most this many characters per stream (None: do not).
        cell_timeout: seconds allowed for one cell (default: ``COURSE["timeouts"]["cell"]``).

    Example:
        >>> proc = StudentProcess(["def f(x):\\n    return x + 1"], lanes.shared())
        >>> proc.call("f", np.zeros(3))["value"]
        array([1., 1., 1.])
    """

    def __init__(self, cells, lane, limits: Limits | None = None, startup_timeout: float | None = None,
                 call_timeout: float | None = None, capture: int | None = None, cell_timeout: float | None = None):
        from autograder import settings

        timeouts = settings.course()["timeouts"]
        self.lane = lane
        self.capture = capture
        self.cells = list(cells)
        self.limits = limits or Limits.from_course()
        self.startup_timeout = timeouts["startup"] if startup_timeout is None else startup_timeout
        self.call_timeout = timeouts["call"] if call_timeout is None else call_timeout
        self.cell_timeout = timeouts["cell"] if cell_timeout is None else cell_timeout
        self.good_cells: list[int] = []
        self.timings: dict[str, float] = {}  # seconds: lane_start (a lane started for this one), notebook
        self.proc: subprocess.Popen | None = None
        self._report: StartReport | None = None   # the notebook's run: each cell's status, the names defined
        self.restarts = 0
        self._fatal = None                # why no process is left for this submission (a Message), if none is
        self.broken: dict = {}            # function -> why it is not called again (its first hang or crash's reason)
        self._deadline: float | None = None  # monotonic time after which no more calls start (``grade_within``)
        self.timeouts = 0                 # calls that ran past their limit
        self.interrupted = 0              # of those, the ones its own alarm stopped (the process lived on)
        self._output: OutputLog | None = None   # what the current process prints
        self._w = self._r = None
        self._sequence = 0                 # number of the last request (its reply must carry it)
        self.events: EventLog | None = None  # what the guarded kernels report, on a pipe only this side reads
        self._reviewed: set[str] = set()     # what the processes ended so far reported for the instructor's review

    # ------------------------------------------------------------------ life cycle
    def _launch(self) -> None:
        """A process for this submission, forked from the lane's warm process (started first if it is not running).

        Its output goes to a new unlinked file opened here (append only); the request pipe's end here is
        non-blocking, so that a process that stops reading cannot block a write past its deadline."""
        self.close()
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
            self.proc = self.lane.fork(request_r, response_w, event_w, self.limits, self._output.fd)
        except BaseException:
            for fd in (request_w, response_r, event_r):
                os.close(fd)
            raise
        finally:
            for fd in (request_r, response_w, event_w):
                os.close(fd)
        os.set_blocking(request_w, False)
        self._w, self._r = request_w, response_r
        self.events = EventLog(event_r)

    def _run_cell(self, index: int, timeout: float, capture=None) -> dict:
        header = {"op": "run", "index": index, "source": self.cells[index], "capture": capture}
        reply, _ = self._exchange(header, [], timeout, f"{index + 1}번째 코드 셀")
        return reply

    def start(self) -> StartReport:
        """Run the cells one by one, each with its own time limit, all within ``startup_timeout`` (and the
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

    def _run_notebook(self, started: float) -> StartReport:
        deadline = time.monotonic() + self.startup_timeout
        if self._deadline is not None:
            deadline = min(deadline, self._deadline)
        self._launch()
        statuses, self.good_cells = [], []
        stopped, budget = None, self.limits.output_kb * 1024 * 16   # outputs kept for the whole notebook
        for index in range(len(self.cells)):
            left = deadline - time.monotonic()
            if stopped is None and left <= 0:
                stopped = Reason.NOTEBOOK_TIMEOUT(seconds=self.startup_timeout)
            if stopped:
                statuses.append({"ok": False, "error": "Timeout", "message": stopped.korean})
                continue
            try:
                status = self._run_cell(index, min(self.cell_timeout, left), self.capture)
            except StudentCodeError as exc:
                status = {"ok": False, "error": exc.kind.value, "message": exc.message}
                try:
                    self._restart(deadline)
                except StudentCodeError as why:
                    stopped = self._fatal = why.reason   # no process left: later calls fail at once
            status = _kept(status)
            budget -= _output_size(status)
            if budget < 0 and status.get("outputs"):
                status["outputs"] = [{"output_type": "stream", "name": "stderr",
                                      "text": Reason.OUTPUT_ELIDED.korean() + "\n"}]
            statuses.append(status)
            if status.get("ok"):
                self.good_cells.append(index)
        names = [] if self._fatal else self._exchange({"op": "names"}, [], 30, "names")[0].get("names", [])
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
            self._run_cell(index, min(self.cell_timeout, left))

    def close(self) -> None:
        """End the current process (its whole session) and close this side's pipe ends; the log stays readable."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError, TypeError):
                pass
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            self.proc = None
        for fd in (self._w, self._r):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._w = self._r = None
        if self.events is not None:
            self.events.mark()   # reads what is left in the pipe
            self._reviewed |= self.events.reviewed
            self.events.close()
            self.events = None

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

    def _ensure_running(self) -> None:
        if self.proc is not None and self.proc.poll() is None and not _stopped(self.proc.pid):
            return
        if self._fatal:
            raise StudentCodeError(Failure.CRASHED, self._fatal)
        if self._report is None:
            self.start()
            return
        # it ran before and ended: a fresh process replays the cells that had run well, within the deadline
        deadline = time.monotonic() + self.startup_timeout
        if self._deadline is not None:
            deadline = min(deadline, self._deadline)
        try:
            self._restart(deadline)
        except StudentCodeError as exc:
            if time.monotonic() >= deadline:
                self._fatal = exc.reason   # every later call fails at once with the same reason
            raise

    # ------------------------------------------------------------------ requests
    def _within_deadline(self, timeout: float) -> float:
        """``timeout``, cut to what is left of the submission's deadline; past it, no request starts."""
        if self._deadline is None:
            return timeout
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise StudentCodeError(Failure.TIMEOUT, Reason.SUBMISSION_TIMEOUT())
        return min(timeout, left)

    def _exchange(self, header, arrays, timeout, what, answering=False):
        """Send one request and read its reply, both within ``timeout`` (and the submission's deadline).

        ``answering``: the frame sent answers a proxy's ``callback`` question (``_answer_callbacks``); it belongs to
        the request in flight, whose number it keeps. A ``callback`` frame read back is a question, not a reply, so
        it carries no request number."""
        timeout = self._within_deadline(timeout)
        if self.proc is None or self._w is None:
            raise StudentCodeError(Failure.CRASHED, Reason.NOT_RUNNING())
        if not answering:
            self._sequence += 1
        deadline = time.monotonic() + timeout
        try:
            write_frame(self._w, {**header, "id": self._sequence}, arrays, deadline=deadline)
            reply, out = read_frame(self._r, deadline=deadline, max_bytes=self.limits.reply_bytes,
                                    max_elements=self.limits.reply_elements)
        except TimeoutError:
            self.close()
            raise StudentCodeError(Failure.TIMEOUT, Reason.WAIT_TIMEOUT(seconds=timeout, what=what)) from None
        except FrameTooBig as exc:
            self.close()
            raise StudentCodeError(Failure.PROTOCOL, Reason.REPLY_TOO_BIG(
                size_mb=exc.size / (1 << 20), limit_mb=self.limits.reply_mb)) from exc
        except FrameError as exc:
            self.close()
            raise StudentCodeError(Failure.PROTOCOL, Reason.MALFORMED_REPLY(error=exc)) from exc
        except (EOFError, OSError) as exc:
            code = self.proc.wait() if self.proc else None
            self.close()
            raise StudentCodeError(Failure.CRASHED, crash_reason(code), self.output_tail()) from exc
        if reply.get("op") != "callback" and reply.get("id") != self._sequence:
            self.close()
            raise StudentCodeError(Failure.PROTOCOL, Reason.UNASKED_REPLY())
        return reply, out

    def request(self, header: dict, arrays=(), timeout: float | None = None, answer=None) -> dict:
        """Send one request; returns the decoded reply (``value`` decoded, ``events``: the watched library routines
        that ran while it was in flight).

        While the student's code runs, it may ask for reference results (``callback`` frames from the proxies of
        ``inside.proxies.Isolated``): ``answer(header, arrays, deadline) -> (header, arrays)`` gives them, by the
        call's deadline (without it, every such question is refused). A call past ``timeout`` is stopped by the
        process's own alarm (it lives on) or else killed ``INTERRUPT_GRACE`` later.

        A function whose call ran past its time limit or ended the process is recognised once: it is not called
        again, and its later calls fail at once with the same message, so one broken exercise cannot use up the
        time of the others; and no call starts after the submission's deadline.
        """
        key = header.get("target") if isinstance(header.get("target"), str) else "<object>"
        if key in self.broken:
            raise StudentCodeError(Failure.BROKEN, self.broken[key])
        timeout = timeout or self.call_timeout
        timeout = self._within_deadline(timeout)
        self._ensure_running()
        mark = self.events.mark()
        what = header.get("op", "")
        limited = header.get("op") == "call"
        if limited:
            header = {**header, "limit": timeout}   # the student's process stops the call itself at its limit (SIGALRM)
        deadline = time.monotonic() + timeout + (INTERRUPT_GRACE if limited else 0)
        try:
            reply, out = self._exchange(header, list(arrays), deadline - time.monotonic(), what)
            reply, out = self._answer_callbacks(reply, out, answer, deadline, timeout, what)
            if limited and reply.get("error") == "TimeLimit":
                self.interrupted += 1  # the call stopped at its limit; the process lives on, nothing to replay
                raise StudentCodeError(Failure.TIMEOUT, Reason.CALL_TIMEOUT(seconds=timeout))
        except StudentCodeError as exc:
            if (exc.kind in (Failure.TIMEOUT, Failure.CRASHED, Failure.PROTOCOL)
                    and header.get("op") in ("call", "getattr", "len", "get")):
                if exc.kind is Failure.TIMEOUT:
                    self.timeouts += 1
                    exc = StudentCodeError(Failure.TIMEOUT, Reason.CALL_TIMEOUT(seconds=timeout), exc.detail)
                self.broken[key] = exc.reason
                raise exc from None
            raise
        # Attribution on this side: every watched routine that ran while this request was in flight (its reply's
        # conversion to arrays included) belongs to it, whichever of the student's functions called it.
        reply["events"] = sorted(set(self.events.since(mark)))
        if self.events.tampered:
            raise StudentCodeError(Failure.TAMPERED, Reason.EVENTS_TAMPERED(what=self.events.tampered))
        if not reply.get("ok"):
            raise from_reply(reply)
        reply["value"] = self._bind(decode_value(reply.get("value"), out))
        return reply

    def _answer_callbacks(self, reply, out, answer, deadline, timeout, what):
        """Answer the student's questions for reference results until the real reply comes. The answers count as
        the call's time and end by its ``deadline`` (``answer(header, arrays, deadline)``: a big one is computed
        apart and stopped there), so a call that asks cannot hold the grader longer than the call may take."""
        while reply.get("op") == "callback":
            if answer is None:
                response, arrays = {"ok": False, "error": "RuntimeError",
                                    "message": Reason.NO_REFERENCE_NOW.korean()}, []
            else:
                response, arrays = answer(reply, out, deadline)
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise StudentCodeError(Failure.TIMEOUT, Reason.CALL_TIMEOUT(seconds=timeout))
            reply, out = self._exchange(response, arrays, left, what, answering=True)
        return reply, out

    def _bind(self, value):
        """Turn handles of a reply into ``Remote`` objects of this process."""
        if isinstance(value, RemoteRef):
            return Remote(self, value.handle, value.type_name)
        if isinstance(value, (tuple, list)):
            return type(value)(self._bind(v) for v in value)
        return value

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

    @property
    def deadline(self) -> float | None:
        """The monotonic time after which no call starts (``grade_within``), or None."""
        return self._deadline

    def grade_within(self, seconds: float) -> None:
        """From now on, no call starts later than ``seconds`` from now (the submission's time for its graders)."""
        self._deadline = time.monotonic() + seconds

    @property
    def reviewed(self) -> set[str]:
        """What the submission's code did that an instructor should look at, as its processes reported it (made a
        code object or a function from one, replaced a function's code): ``inside.monitor.guard``'s audit hook."""
        return self._reviewed | (self.events.reviewed if self.events is not None else set())

    @property
    def costs(self) -> dict:
        """Fresh processes started again, calls past their limit, and of those the ones stopped in the process."""
        return {"restarts": self.restarts, "timeouts": self.timeouts, "interrupted": self.interrupted}

    def graded_call(self, target, args, kwargs, *, timeout: float | None = None, isolate=(), answer=None,
                    memory_mb: int | None = None) -> dict:
        """A grader's call, its whole reply returned (``value``, ``events``, ``seconds``, ``asked``; ``peak_mb`` with
        ``memory_mb``). ``timeout``: its limit (default ``call_timeout``); ``isolate``: the student's functions that
        are proxies during the call, answered by ``answer`` (see ``request``); ``memory_mb``: see
        ``call_with_memory``."""
        options = {"timeout": timeout, "isolate": isolate, "answer": answer}
        if memory_mb is None:
            return self._call(target, args, kwargs, **options)
        return self._call_with_memory(memory_mb, target, args, kwargs, **options)

    def call(self, target, *args, method: str | None = None, **kwargs):
        """Call a student's function (by name) or a method of a remote object; returns plain values."""
        return self._call(target, args, kwargs, method)

    def _call(self, target, args, kwargs, method=None, memory_mb=None, timeout=None, isolate=(),
              answer=None) -> dict:
        """One call. ``isolate``: names of the student's functions that are proxies during the call (their
        results come from ``answer``, see ``request``); ``timeout``: this call's limit (default ``call_timeout``)."""
        arrays: list = []
        header = {"op": "call", "target": _target(target), "method": method, "memory_mb": memory_mb,
                  "args": encode_value(list(args), arrays), "kwargs": encode_value(dict(kwargs), arrays)}
        if isolate:
            header["isolate"] = sorted(isolate)
        return self.request(header, arrays, timeout, answer)

    def call_with_memory(self, memory_mb: int, target, *args, **kwargs):
        """Like ``call``, allowing at most ``memory_mb`` MiB beyond what the process holds now.

        The student's process lowers its own soft address-space limit for the call (an allocation past it raises
        ``MemoryError``), and the peak resident memory is measured from this side (``/proc/PID/clear_refs`` and
        ``VmHWM``), so a process that raises its soft limit again is still caught. The student's code cannot fork,
        spawn or exec (``inside.monitor.guard``'s audit hook), so this process's peak is its whole tree's: no child can
        hold the memory instead. The reply carries ``peak_mb``.
        """
        return self._call_with_memory(memory_mb, target, args, kwargs)

    def _call_with_memory(self, memory_mb: int, target, args, kwargs, **options) -> dict:
        """``call_with_memory`` with ``_call``'s options (timeout, isolate, answer)."""
        self._ensure_running()
        pid = self.proc.pid
        with open(f"/proc/{pid}/clear_refs", "w") as fh:
            fh.write("5")  # reset the peak resident size (VmHWM) to the current one
        rss = _status(pid, "VmRSS")
        reply = self._call(target, args, kwargs, memory_mb=memory_mb, **options)
        reply["peak_mb"] = (_status(pid, "VmHWM") - rss) / (1 << 20)
        return reply


INTERRUPT_GRACE = 1.0  # seconds a call has to stop after its limit (its process's alarm) before the process is killed


class Remote:
    """A student's object that stays in the student's process (e.g. a ``KVCache``).

    Its requests go through ``_requester(header, arrays) -> reply`` when the graders set one (their limits and
    time budget), straight to the process otherwise.
    """

    def __init__(self, process: StudentProcess, handle: int, type_name: str):
        self._process, self._handle, self.type_name = process, handle, type_name
        self._requester = None

    def _request(self, header: dict, arrays=()) -> dict:
        if self._requester is None:
            return self._process.request(header, arrays)
        return self._requester(header, list(arrays))

    def __getattr__(self, attr):
        if attr.startswith("_"):
            raise AttributeError(attr)
        reply = self._request({"op": "getattr", "target": {"h": self._handle}, "attr": attr})
        if reply.get("callable"):
            return lambda *args, **kwargs: self._method(attr, args, kwargs)
        return reply["value"]

    def _method(self, attr: str, args, kwargs):
        arrays: list = []
        header = {"op": "call", "target": {"h": self._handle}, "method": attr, "memory_mb": None,
                  "args": encode_value(list(args), arrays), "kwargs": encode_value(dict(kwargs), arrays)}
        return self._request(header, arrays)["value"]

    def __len__(self):
        value = self._request({"op": "len", "target": {"h": self._handle}})["value"]
        return int(value)


def _target(target):
    return {"h": target._handle} if isinstance(target, Remote) else target


def encode_value(value, arrays):
    """Trusted inputs into the wire format."""
    if isinstance(value, Remote):
        return {"h": value._handle}
    if isinstance(value, np.ndarray):
        arrays.append(value)
        return {"a": len(arrays) - 1}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return {"t": [encode_value(v, arrays) for v in value]}
    if isinstance(value, list):
        return {"l": [encode_value(v, arrays) for v in value]}
    if isinstance(value, dict):
        return {"d": {k: encode_value(v, arrays) for k, v in value.items()}}
    if isinstance(value, float) and not math.isfinite(value):
        return {"f": repr(value)}
    return value


class RemoteRef:
    """A handle in a decoded reply, turned into a ``Remote`` by ``Student`` (which knows the process)."""

    def __init__(self, handle: int, type_name: str):
        self.handle, self.type_name = handle, type_name


def decode_value(value, arrays):
    """The student's reply as plain Python/numpy values; arrays numeric only."""
    if isinstance(value, dict):
        if "a" in value:
            array = arrays[int(value["a"])]
            if array.dtype.kind not in "biuf":
                raise StudentCodeError(Failure.TYPE, Reason.NOT_NUMERIC(dtype=array.dtype))
            return array
        if "t" in value:
            return tuple(decode_value(v, arrays) for v in value["t"])
        if "l" in value:
            return [decode_value(v, arrays) for v in value["l"]]
        if "d" in value:
            return {str(k): decode_value(v, arrays) for k, v in value["d"].items()}
        if "f" in value:
            return float(value["f"])
        if "h" in value:
            return RemoteRef(int(value["h"]), str(value.get("type", "object")))
        raise StudentCodeError(Failure.PROTOCOL, Reason.UNKNOWN_VALUE())
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise StudentCodeError(Failure.PROTOCOL, Reason.UNKNOWN_VALUE())


def _output_size(status: dict) -> int:
    """Characters of a cell's outputs (texts and images)."""
    outputs = status.get("outputs")
    if not isinstance(outputs, list):
        return 0
    return sum(len(str(v)) for o in outputs if isinstance(o, dict) for v in o.values())


def _stopped(pid) -> bool:
    """Whether the process is stopped (SIGSTOP): it would never read the next request."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("T", "t")
    except (OSError, IndexError, TypeError):
        return False


def _kept(status: dict) -> dict:
    """What is kept of a cell's status reply: its verdict, and its outputs only when they were asked for."""
    kept = {k: status[k] for k in ("ok", "error", "message", "where", "outputs") if k in status}
    if isinstance(kept.get("message"), str):
        kept["message"] = kept["message"][:2000]
    if isinstance(kept.get("where"), list):
        kept["where"] = [str(line)[:500] for line in kept["where"][-3:]]
    return kept


def _status(pid: int, field: str) -> int:
    """A size from ``/proc/PID/status`` (VmSize, VmRSS, VmHWM) in bytes."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0
