"""What a student's process reports to the grader besides its replies: the library routines it ran (``EventLog``)
and what it printed (``OutputLog``), each on a descriptor only the grader holds."""
from __future__ import annotations

import fcntl
import os
import tempfile
import threading

from autograder.messages import Reason
from autograder.sandbox.inside.watched import LABELS, REVIEWS


class EventLog:
    """The trusted end of the student process's event pipe: which watched library routines ran, and when.

    The student's process writes one line per use of a routine the forbidden-routine rule watches, at the moment
    it runs (``inside.monitor.guard``), and keeps no record of its own; lines starting ``review:`` report, once
    each, what an instructor should look at (a code object or function made, a function's code replaced) and are
    collected in ``reviewed``. A thread here drains the pipe as lines arrive (so a notebook that calls softmax a
    million times never blocks on a full pipe); ``since(mark)`` first reads what is left, so a reply's events are
    all in once the reply has arrived (they were written before it). What is kept is the set of routines of each
    stretch between two marks, never a line per use: a flood of lines (the student's code can write to the pipe)
    costs this side nothing but the reading. The pipe closed while the process still answers, or a line that is
    not one the monitor writes (``watched.LABELS``, ``watched.REVIEWS``), is tampering (``tampered``).
    """

    MAX_LINE = 200

    def __init__(self, fd: int):
        self.fd, self.tampered = fd, ""
        self.reviewed: set[str] = set()   # what the student's code did that an instructor should look at
        self._stretches: list[set] = [set()]   # the routines reported between two marks (the last: since the last)
        self._partial, self._eof, self._lock = b"", False, threading.Lock()
        os.set_blocking(fd, False)
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._drain_forever, name="autograder-events", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        """Read what is there now (the lock held)."""
        while not self._eof:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self._eof = True
                return
            *lines, self._partial = (self._partial + chunk).split(b"\n")
            self._partial = self._partial[-self.MAX_LINE:]
            for line in set(lines):
                text = line.decode("ascii", "replace")
                if text in LABELS:
                    self._stretches[-1].add(text)
                elif text.startswith(REVIEW) and text[len(REVIEW):] in REVIEWS:
                    self.reviewed.add(text[len(REVIEW):])
                elif not self.tampered:
                    self.tampered = Reason.EVENTS_GARBLED.korean()

    def _drain_forever(self) -> None:
        import select

        while not self._eof:
            try:
                ready, _, _ = select.select([self.fd, self._wake_r], [], [])
            except (OSError, ValueError):
                return
            if self._wake_r in ready:
                return
            with self._lock:
                self._read()

    def mark(self) -> int:
        """Start a new stretch (what was reported before belongs to the ones before it); its number."""
        with self._lock:
            self._read()
            self._stretches.append(set())
            return len(self._stretches) - 1

    def since(self, mark: int) -> list[str]:
        """The routines reported since ``mark`` (each once, sorted); sets ``tampered`` when the pipe was closed by
        the student."""
        with self._lock:
            self._read()
            if self._eof and not self.tampered:
                self.tampered = Reason.EVENTS_CLOSED.korean()
            return sorted(set().union(*self._stretches[mark:]))

    def close(self) -> None:
        os.write(self._wake_w, b"x")
        self._thread.join(timeout=5)
        for fd in (self.fd, self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass


REVIEW = "review:"   # a line that reports what an instructor should review (``inside.monitor.guard``'s audit hook)


class OutputLog:
    """What one student process prints: a new unlinked file opened here (append only), handed to the process as its
    stdout and stderr and read back by this side's descriptor alone (nothing in the scratch folder is opened by
    path)."""

    def __init__(self):
        with tempfile.TemporaryFile(prefix="autograder-output-") as log:
            self.fd = os.dup(log.fileno())
        fcntl.fcntl(self.fd, fcntl.F_SETFL, fcntl.fcntl(self.fd, fcntl.F_GETFL) | os.O_APPEND)

    def tail(self, limit: int = 2000) -> str:
        """The last ``limit`` bytes printed."""
        try:
            size = os.fstat(self.fd).st_size
            data = os.pread(self.fd, limit, max(0, size - limit))
        except OSError:
            return ""
        return data.decode("utf-8", "replace")

    def close(self) -> None:
        os.close(self.fd)
