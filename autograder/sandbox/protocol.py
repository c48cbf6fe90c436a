"""The grader's end of one running student process: its pipes, and one request and its reply at a time.

Nothing that comes back is executed or unpickled, and nothing is trusted: every frame's length, header and arrays
(numeric dtypes only, shape matching the data, at most ``reply_mb`` of float64 in all) are checked against the
limits of ``course_config.py`` before anything is read or converted (``inside.wire.read_frame``), every reply must
answer the request it follows (its number), and no write or read waits past its deadline. A malformed or oversized
reply, a stuck pipe, a request past its time, a crash or an ``os._exit`` ends the process (``close``) and raises a
``StudentCodeError`` saying why.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time

from autograder.messages import Reason
from autograder.sandbox.errors import Failure, StudentCodeError, crash_reason
from autograder.sandbox.inside.wire import FrameError, FrameTooBig, read_frame, write_frame
from autograder.sandbox.logs import EventLog, OutputLog
from autograder.sandbox.policy import Limits


class Connection:
    """One student process as the grader holds it.

    Args:
        proc: the process (a lane's ``Child``: ``pid``, ``poll``, ``wait``, ``kill``).
        request_w: this side's end of the request pipe (non-blocking: a process that stops reading cannot block a
            write past its deadline).
        response_r: this side's end of the response pipe.
        events: the event pipe's reader (``logs.EventLog``): the watched library routines the process ran.
        output: what the process prints (``logs.OutputLog``), read for the reason of a crash.
        limits: the limits a reply is checked against (``reply_mb``).
    """

    def __init__(self, proc, request_w: int, response_r: int, events: EventLog, output: OutputLog, limits: Limits):
        self.proc, self.events, self.output, self.limits = proc, events, output, limits
        self._w, self._r = request_w, response_r
        self.sequence = 0   # the number of the last request (its reply must carry it)
        self.closed = False

    @property
    def running(self) -> bool:
        """Whether the process is there to answer: not ended, and not stopped (SIGSTOP: it would never read)."""
        return not self.closed and self.proc.poll() is None and not _stopped(self.proc.pid)

    def exchange(self, header: dict, arrays, timeout: float, what: str, answering: bool = False):
        """Send one request and read its reply, both within ``timeout`` seconds; returns (reply, its arrays).

        ``answering``: the frame sent answers a proxy's ``callback`` question; it belongs to the request in flight,
        whose number it keeps. A ``callback`` frame read back is a question, not a reply, so it carries no number.
        ``what`` names the request in the message of a timeout."""
        if self.closed:
            raise StudentCodeError(Failure.CRASHED, Reason.NOT_RUNNING())
        if not answering:
            self.sequence += 1
        deadline = time.monotonic() + timeout
        try:
            write_frame(self._w, {**header, "id": self.sequence}, arrays, deadline=deadline)
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
            code = self.proc.wait()
            self.close()
            raise StudentCodeError(Failure.CRASHED, crash_reason(code), self.output.tail()) from exc
        if reply.get("op") != "callback" and reply.get("id") != self.sequence:
            self.close()
            raise StudentCodeError(Failure.PROTOCOL, Reason.UNASKED_REPLY())
        return reply, out

    def close(self) -> None:
        """End the process (its whole session) and close this side's pipe ends; what the event pipe still holds is
        read first (``events.reviewed`` stays readable)."""
        if self.closed:
            return
        self.closed = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, TypeError):
            pass
        self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.events.mark()   # reads what is left in the pipe
        self.events.close()


def _stopped(pid) -> bool:
    """Whether the process is stopped (SIGSTOP): it would never read the next request."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("T", "t")
    except (OSError, IndexError, TypeError):
        return False
