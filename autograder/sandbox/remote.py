"""The grader's requests to the student's process: its calls, and the student's objects that stay there.

``RemoteCalls`` (held by ``process.StudentProcess`` as its ``calls``; the process is its ``Channel``, the one
exchange of frames it asks through) sends one request with its limits (``request``), answers the questions the
proxies ask while the student's code runs, gives the request the watched library routines that ran while it was in
flight, and decodes the reply; ``call``, ``graded_call`` and ``call_with_memory`` are the calls the graders make with
it. Values cross in the one wire format of ``inside.values`` (``encode_value``, ``decode_value`` are the grader's
side of it); an object the student's function returns stays in the student's process and is a ``Remote`` here.
"""
from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Protocol

import numpy as np

from autograder.messages import Reason
from autograder.sandbox.errors import Failure, StudentCodeError, from_reply
from autograder.sandbox.inside import memory, values

if TYPE_CHECKING:
    from autograder.sandbox.policy import Timeouts
    from autograder.sandbox.protocol import Connection


class Channel(Protocol):
    """What the requests need of the student's process (``process.StudentProcess`` is one)."""

    timeouts: Timeouts                 # ``call``: a request's limit when it gives none; ``interrupt_grace``
    connection: Connection | None      # the current process: its ``events`` (the watch's reports), ``proc``

    def ensure_running(self) -> None:
        """A process to ask: started, or started again after it ended (raises ``StudentCodeError`` when none can
        be)."""

    def within_deadline(self, timeout: float) -> float:
        """``timeout``, cut to what is left of the submission's deadline (raises past it)."""

    def exchange(self, header: dict, arrays: list, timeout: float, what: str,
                 answering: bool = False) -> tuple[dict, list]:
        """One frame each way with the current process, within ``timeout`` and the submission's deadline."""

    def close(self) -> None:
        """End the current process."""


class RemoteCalls:
    """The requests to one submission's process, through its ``channel``; it keeps what they cost: ``broken``
    (function -> why it is not called again: its first hang or crash's reason), ``timed_out`` (calls that ran past
    their limit) and ``interrupted`` (of those, the ones the process's own alarm stopped: it lived on)."""

    def __init__(self, channel: Channel):
        self.channel = channel
        self.broken: dict = {}
        self.timed_out = 0
        self.interrupted = 0

    def request(self, header: dict, arrays=(), timeout: float | None = None, answer=None) -> dict:
        """Send one request; returns the decoded reply (``value`` decoded, ``events``: the watched library routines
        that ran while it was in flight).

        While the student's code runs, it may ask for reference results (``callback`` frames from the proxies of
        ``inside.proxies.Isolated``): ``answer(header, arrays, deadline) -> (header, arrays)`` gives them, by the
        call's deadline (without it, every such question is refused). A call past ``timeout`` is stopped by the
        process's own alarm (it lives on) or else killed ``timeouts.interrupt_grace`` later.

        A function whose call ran past its time limit or ended the process is recognised once: it is not called
        again, and its later calls fail at once with the same message, so one broken exercise cannot use up the
        time of the others; and no call starts after the submission's deadline.
        """
        key = header.get("target") if isinstance(header.get("target"), str) else "<object>"
        if key in self.broken:
            raise StudentCodeError(Failure.BROKEN, self.broken[key])
        channel = self.channel
        timeout = timeout or channel.timeouts.call
        timeout = channel.within_deadline(timeout)
        channel.ensure_running()
        events = channel.connection.events
        mark = events.mark()
        what = header.get("op", "")
        limited = header.get("op") in ("call", "get", "getattr", "len")   # what may run the student's code
        if limited:
            header = {**header, "limit": timeout}   # the student's process stops it itself at its limit (SIGALRM)
        deadline = time.monotonic() + timeout + (channel.timeouts.interrupt_grace if limited else 0)
        try:
            reply, out = channel.exchange(header, list(arrays), deadline - time.monotonic(), what)
            reply, out = self._answer_callbacks(reply, out, answer, deadline, timeout, what)
            if limited and reply.get("error") == "Timeout":   # inside.serve.Timeout
                self.interrupted += 1  # the call stopped at its limit; the process lives on, nothing to replay
                raise StudentCodeError(Failure.TIMEOUT, Reason.CALL_TIMEOUT(seconds=timeout))
        except StudentCodeError as exc:
            if (exc.kind in (Failure.TIMEOUT, Failure.CRASHED, Failure.PROTOCOL)
                    and header.get("op") in ("call", "getattr", "len", "get")):
                if exc.kind is Failure.TIMEOUT:
                    self.timed_out += 1
                    exc = StudentCodeError(Failure.TIMEOUT, Reason.CALL_TIMEOUT(seconds=timeout), exc.detail)
                self.broken[key] = exc.reason
                raise exc from None
            raise
        # Attribution on this side: every watched routine that ran while this request was in flight (its reply's
        # conversion to arrays included) belongs to it, whichever of the student's functions called it.
        reply["events"] = sorted(set(events.since(mark)))
        if events.tampered:
            raise StudentCodeError(Failure.TAMPERED, Reason.EVENTS_TAMPERED(what=events.tampered))
        if not reply.get("ok"):
            raise from_reply(reply)
        reply["value"] = self._bind(decode_value(reply.get("value"), out))
        if "observed" in reply:   # what watched instances hold: their arrays are in the same frame (None: unreadable)
            try:
                reply["observed"] = decode_value(reply["observed"], out)
            except StudentCodeError:
                reply["observed"] = None
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
                self.channel.close()
                raise StudentCodeError(Failure.TIMEOUT, Reason.CALL_TIMEOUT(seconds=timeout))
            reply, out = self.channel.exchange(response, arrays, left, what, answering=True)
        return reply, out

    def _bind(self, value):
        """Turn handles of a reply into ``Remote`` objects of this process."""
        if isinstance(value, RemoteRef):
            return Remote(self, value.handle, value.type_name)
        if isinstance(value, (tuple, list)):
            return type(value)(self._bind(v) for v in value)
        return value

    # ------------------------------------------------------------------ the calls
    def graded_call(self, target, args, kwargs, *, timeout: float | None = None, isolate=(), answer=None,
                    memory_mb: int | None = None, observe=()) -> dict:
        """A grader's call, its whole reply returned (``value``, ``events``, ``seconds``, ``asked``; ``peak_mb`` with
        ``memory_mb``; ``observed`` with ``observe``). ``timeout``: its limit (default ``timeouts.call``);
        ``isolate``: the student's functions that are proxies during the call, answered by ``answer`` (see
        ``request``); ``memory_mb``: see ``call_with_memory``; ``observe``: the notebook's given classes whose
        instances made during the call report what they hold when it returns (``inside.observed``: their keys and
        values, as arrays)."""
        options = {"timeout": timeout, "isolate": isolate, "answer": answer, "observe": observe}
        if memory_mb is None:
            return self._call(target, args, kwargs, **options)
        return self._call_with_memory(memory_mb, target, args, kwargs, **options)

    def call(self, target, *args, method: str | None = None, **kwargs) -> dict:
        """Call a student's function (by name) or a method of a remote object; returns the reply (``value``: plain
        values)."""
        return self._call(target, args, kwargs, method)

    def _call(self, target, args, kwargs, method=None, memory_mb=None, timeout=None, isolate=(),
              answer=None, observe=()) -> dict:
        """One call. ``isolate``: names of the student's functions that are proxies during the call (their
        results come from ``answer``, see ``request``); ``observe``: given classes whose instances are reported;
        ``timeout``: this call's limit (default ``timeouts.call``)."""
        arrays: list = []
        header = {"op": "call", "target": _target(target), "method": method, "memory_mb": memory_mb,
                  "args": encode_value(list(args), arrays), "kwargs": encode_value(dict(kwargs), arrays)}
        if isolate:
            header["isolate"] = sorted(isolate)
        if observe:
            header["observe"] = sorted(observe)
        return self.request(header, arrays, timeout, answer)

    def call_with_memory(self, memory_mb: int, target, *args, **kwargs) -> dict:
        """Like ``call``, allowing at most ``memory_mb`` MiB beyond what the process holds now.

        The student's process lowers its own soft address-space limit for the call (an allocation past it raises
        ``MemoryError``), and the peak memory is measured from this side (``/proc/PID/clear_refs`` and ``VmHWM``,
        and the rise above its lowest point while the call runs, ``Growth``: memory freed at the call's start and
        allocated again counts), so a process that raises its soft limit again is still caught. What the call writes
        to its scratch folder, a tmpfs whose pages are memory but no process's resident size, counts with it
        (``Growth`` samples its usage). The student's code cannot fork, spawn or exec (``inside.monitor.guard``'s
        audit hook), so this process's peak is its whole tree's: no child can hold the memory instead. The reply
        carries ``peak_mb``.
        """
        return self._call_with_memory(memory_mb, target, args, kwargs)

    def _call_with_memory(self, memory_mb: int, target, args, kwargs, **options) -> dict:
        """``call_with_memory`` with ``_call``'s options (timeout, isolate, answer)."""
        self.channel.ensure_running()
        proc = self.channel.connection.proc
        pid = proc.pid
        with open(f"/proc/{pid}/clear_refs", "w") as fh:
            fh.write("5")  # reset the peak resident size (VmHWM) to the current one
        rss = memory.status("VmRSS", pid)
        opener = getattr(proc, "open_tmpfs", None)
        with Growth(pid, opener() if opener is not None else None) as growth:
            reply = self._call(target, args, kwargs, memory_mb=memory_mb, **options)
        reply["peak_mb"] = max(memory.status("VmHWM", pid) - rss, growth.most) / (1 << 20)
        return reply


class Remote:
    """A student's object that stays in the student's process (e.g. a ``KVCache``).

    Its requests go through ``_requester(header, arrays) -> reply`` when the graders set one (their limits and
    time budget), straight to the process otherwise.
    """

    def __init__(self, calls: RemoteCalls, handle: int, type_name: str):
        self._calls, self._handle, self.type_name = calls, handle, type_name
        self._requester = None

    def _request(self, header: dict, arrays=()) -> dict:
        if self._requester is None:
            return self._calls.request(header, arrays)
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


class RemoteRef:
    """A handle in a decoded reply, turned into a ``Remote`` by ``RemoteCalls`` (which knows the process)."""

    def __init__(self, handle: int, type_name: str):
        self.handle, self.type_name = handle, type_name


def _target(target):
    return {"h": target._handle} if isinstance(target, Remote) else target


# ----------------------------------------------------------------------------------------------- the grader's values
def encode_value(value, arrays):
    """The grader's inputs in the wire format (``inside.values.encode``): its arrays as they are, numpy scalars as
    Python numbers, the student's objects it holds (``Remote``) as their handles."""
    return values.encode(value, arrays, _grader_value)


def _grader_value(value, arrays):
    """What ``values.encode`` leaves to the grader's side (not plain data)."""
    if isinstance(value, Remote):
        return {"h": value._handle}
    if isinstance(value, np.ndarray):
        arrays.append(value)
        return {"a": len(arrays) - 1}
    if isinstance(value, np.generic):
        return encode_value(value.item(), arrays)
    if isinstance(value, np.random.Generator):   # sent as its state: the student draws what the grader would
        return {"g": encode_value(dict(value.bit_generator.state), arrays)}
    if isinstance(value, tuple):
        return encode_value(tuple(value), arrays)
    if isinstance(value, list):
        return encode_value(list(value), arrays)
    if isinstance(value, dict):
        return {"d": {k: encode_value(v, arrays) for k, v in value.items()}}
    return value   # as JSON takes it (or refuses it)


def decode_value(value, arrays):
    """The student's reply as plain Python/numpy values (``inside.values.decode``): arrays numeric only, handles as
    ``RemoteRef``; raises ``StudentCodeError`` for a value the wire format does not have."""
    try:
        return values.decode(value, lambda index: _numeric(arrays[index]), RemoteRef)
    except values.UnknownValue:
        raise StudentCodeError(Failure.PROTOCOL, Reason.UNKNOWN_VALUE()) from None


def _numeric(array):
    if array.dtype.kind not in "biuf":
        raise StudentCodeError(Failure.TYPE, Reason.NOT_NUMERIC(dtype=array.dtype))
    return array


class Growth:
    """How far the memory of process ``pid`` rose above its lowest point so far (``most``, bytes), sampled from this
    side every millisecond while the block runs: its resident size and, given ``tmpfs`` (a descriptor of its scratch
    tmpfs, ``lanes.Child.open_tmpfs``; closed here), what its files there hold.

    ``VmHWM`` minus the size at the start misses a call that frees memory it held before (a ballast) and then
    allocates as much: the peak never passes the starting size. Measured from its lowest point, the call's own
    allocations count whatever it freed first. A tmpfs's pages are memory too, but no process's resident size: a
    call that writes the full mask to files and reads it back a block at a time held it all the same. Nothing the
    student's process does changes what is read here (``/proc/PID/statm``, opened by this process, and the tmpfs's
    usage, ``fstatvfs``).
    """

    INTERVAL = 0.001

    def __init__(self, pid: int, tmpfs: int | None = None):
        self.pid, self.most, self._stop, self._tmpfs = pid, 0, threading.Event(), tmpfs
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._thread = threading.Thread(target=self._sample, name=f"memory-{pid}", daemon=True)

    def __enter__(self):
        try:
            self._fd = os.open(f"/proc/{self.pid}/statm", os.O_RDONLY)
        except OSError:
            self._fd = None
            self._close_tmpfs()
            return self
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._fd is not None:
            self._stop.set()
            self._thread.join()
            os.close(self._fd)
        self._close_tmpfs()

    def _close_tmpfs(self):
        if self._tmpfs is not None:
            os.close(self._tmpfs)
            self._tmpfs = None

    def _files(self) -> int:
        """Bytes the scratch tmpfs holds (0 without one)."""
        if self._tmpfs is None:
            return 0
        try:
            usage = os.fstatvfs(self._tmpfs)
        except OSError:
            return 0
        return (usage.f_blocks - usage.f_bfree) * usage.f_frsize

    def _sample(self):
        low = None
        while True:
            try:
                held = int(os.pread(self._fd, 256, 0).split()[1]) * self._page + self._files()
            except (OSError, IndexError, ValueError):   # the process is gone
                return
            low = held if low is None else min(low, held)
            self.most = max(self.most, held - low)
            if self._stop.wait(self.INTERVAL):
                return
