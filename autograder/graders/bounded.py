"""Compute a trusted function apart from the grading process: in a forked child with a memory and a time limit.

The proxies' answers (``isolation.Answers``) are computed from arguments a student chose. Their size is known before
anything is computed (``isolation.need``); a question small enough to be answered in microseconds is answered in
the grading process, a question over ``answer_mb`` is refused, and what lies between is computed here:

* in a child forked from the grading process (it has the arguments and the references already; nothing is
  imported, serialised or sent to it), which
* may map at most ``limit`` bytes more than it inherited (``RLIMIT_AS``: an allocation past it raises
  ``MemoryError`` in the child, never in the grader) and use at most the seconds left to the call in flight
  (``RLIMIT_CPU``, and killed by the grader at ``deadline`` whatever it does), and
* sends its result back raw on a pipe, read straight into arrays allocated here for the shapes and dtypes
  announced (checked against what the sizes said first): the grader holds the result once and nothing more.

A fork costs a few milliseconds: the ~300 questions an honest submission asks are all answered in the grading
process, and this path is for the rare big one (``tests/graders/test_isolation.py``).
"""
from __future__ import annotations

import gc
import json
import math
import os
import resource
import select
import signal
import time

import numpy as np

from autograder.sandbox.inside.memory import allow_more, status

MAX_HEADER = 1 << 16   # the child's announcement of its arrays (dtypes and shapes), at most this many bytes


class Refused(Exception):
    """The child could not give the result: ``why`` is ``"memory"`` (past its limit, or killed) or ``"time"``."""

    def __init__(self, why: str, detail: str = ""):
        super().__init__(f"{why}: {detail}" if detail else why)
        self.why, self.detail = why, detail


class Unanswerable(Exception):
    """The function raised for these arguments (not a limit): the caller falls back as it would in process."""


def compute(function, args, kwargs, *, limit: int, deadline: float, result_bytes: int):
    """``function(*args, **kwargs)`` in a forked child under ``limit`` bytes and until ``deadline`` (monotonic).

    Returns ``(value, peak)``: the result (an array or a tuple of arrays, as the function returned it) and the
    child's peak growth of resident memory in bytes. Raises ``Refused`` when the child ran out of memory, was
    killed, or did not finish in time, ``Unanswerable`` when the function raised anything else, and ``Refused``
    when the child announced more than ``result_bytes`` of results (it never does: the sizes said how much)."""
    if deadline - time.monotonic() <= 0:
        raise Refused("time", "no time left")
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(r)
        os.close(w)
        raise Refused("memory", f"fork: {exc}") from None
    if pid == 0:   # the child
        os.close(r)
        _child(function, args, kwargs, w, limit, deadline)   # never returns
    os.close(w)
    try:
        try:
            return _receive(r, deadline, result_bytes)
        except (EOFError, OSError, ValueError) as exc:   # it ended without a whole result: its exit status says why
            failure = exc
        status = _reap(pid, min(deadline, time.monotonic() + 1.0))
        if status is not None:
            pid = None
        raise _why(status, failure)
    finally:
        if pid is not None:
            _kill(pid)
        os.close(r)


def _child(function, args, kwargs, fd, limit, deadline):
    """The child's whole life: limits, the computation, the result on ``fd``; it ends with ``os._exit`` only."""
    code = 70
    try:
        gc.disable()   # nothing of the grader's is finalised here; refcounting frees the temporaries
        start_rss = _lower_limits(limit, deadline)
        try:
            value = function(*args, **kwargs)
        except MemoryError:
            code = 71
            raise
        except BaseException:  # noqa: BLE001 - the arguments do not fit the function: the caller falls back
            code = 72
            raise
        arrays = [np.ascontiguousarray(a) for a in (value if isinstance(value, tuple) else (value,))]
        header = {"tuple": isinstance(value, tuple), "arrays": [[a.dtype.str, list(a.shape)] for a in arrays],
                  "peak": max(0, status("VmHWM") - start_rss)}
        _write_all(fd, json.dumps(header).encode() + b"\n")
        for a in arrays:
            if a.size:
                _write_all(fd, a.reshape(-1).view(np.uint8))
        code = 0
    except BaseException:  # noqa: BLE001 - the exit status says what happened
        pass
    finally:
        os._exit(code)


def _lower_limits(limit: int, deadline: float) -> int:
    """At most ``limit`` bytes of address space more than now, CPU seconds until ``deadline``; the resident size
    now (after resetting the peak to it)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    allow_more(limit)
    seconds = max(1, math.ceil(deadline - time.monotonic()) + 1)
    cpu_soft, cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)
    used = int(sum(os.times()[:2])) + seconds
    resource.setrlimit(resource.RLIMIT_CPU, (used if cpu_hard < 0 else min(used, cpu_hard), cpu_hard))
    return status("VmRSS")


def _receive(fd, deadline, result_bytes):
    line = b""
    while b"\n" not in line:
        if len(line) >= MAX_HEADER:
            raise ValueError("the announcement is too long")
        line += _read_some(fd, min(4096, MAX_HEADER - len(line)), deadline)
    head, _, rest = line.partition(b"\n")   # the first bytes of the data may have come with it
    header = json.loads(head)
    shapes = [(np.dtype(dtype), tuple(int(n) for n in shape)) for dtype, shape in header["arrays"]]
    if any(dtype.kind not in "biuf" or dtype.itemsize > 8 or any(n < 0 for n in shape) for dtype, shape in shapes):
        raise ValueError("not a plain numeric array")
    total = sum(math.prod(shape) * dtype.itemsize for dtype, shape in shapes)
    if total > result_bytes:
        raise Refused("memory", f"{total} bytes announced, {result_bytes} expected")
    arrays = [np.empty(shape, dtype) for dtype, shape in shapes]
    for array in arrays:
        view = memoryview(array.reshape(-1).view(np.uint8)) if array.size else memoryview(b"")
        got = 0
        if rest:
            got = min(len(rest), len(view))
            view[:got] = rest[:got]
            rest = rest[got:]
        while got < len(view):
            _wait(fd, deadline)
            count = os.readv(fd, [view[got:got + (1 << 20)]])
            if not count:
                raise EOFError("the child ended before its result was sent")
            got += count
    value = tuple(arrays) if header["tuple"] else arrays[0]
    return value, int(header.get("peak", 0))


def _read_some(fd, n, deadline) -> bytes:
    _wait(fd, deadline)
    data = os.read(fd, n)
    if not data:
        raise EOFError("the child ended before its result was sent")
    return data


def _wait(fd, deadline):
    left = deadline - time.monotonic()
    if left <= 0 or not select.select([fd], [], [], left)[0]:
        raise Refused("time")


def _kill(pid) -> None:
    """Kill the child (it may have ended already: it is not reaped yet, so its pid is still its own) and reap it."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


def _reap(pid, until: float) -> int | None:
    """The child's wait status once it has ended (waiting until ``until`` at most), or None while it runs."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() >= until:
            return None
        time.sleep(0.005)


def _why(status, exc) -> Exception:
    if status is None:   # the pipe closed, the child still runs: it is killed; nothing says why
        return Refused("memory", str(exc))
    if os.WIFEXITED(status):
        code = os.WEXITSTATUS(status)
        if code == 72:
            return Unanswerable()
        return Refused("memory", "MemoryError" if code == 71 else f"exit {code}")
    name = signal.Signals(os.WTERMSIG(status)).name if os.WIFSIGNALED(status) else "?"
    return Refused("time" if name == "SIGXCPU" else "memory", f"killed by {name}")


def _write_all(fd, data) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
