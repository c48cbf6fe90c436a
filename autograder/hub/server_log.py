"""What a user's server prints (JupyterLab's log, its kernels' stray output), kept in a log of that user's own: a
pipe whose other end a thread of the hub reads, size-capped, with repeated and rapid lines dropped.

The server's stdout and stderr are the write end of a pipe (``spawner.LimitedSpawner``), never a file of root's: a
student who takes their own server's descriptors (``pidfd_getfd``) holds a pipe into their own log, and can neither
write into the hub's log nor truncate it. The hub reads the pipe at once, always (a server that prints much is
never slowed by its log, nor is another user's server whose errors someone provokes):

* at most ``LINES_PER_S`` lines a second are looked at (a burst of ``BURST`` first); the rest are counted and
  dropped, and the log says how many ("[server log] N lines dropped: ...");
* a line equal to the one before it is counted, not written ("[server log] the line above N times more");
* a line is cut at ``LINE_BYTES``;
* the log file (``<state>/servers/<user>.log``, root's) holds at most ``max_bytes``; past it, it becomes
  ``<user>.log.1`` (the previous one goes) and a new one starts: at most twice ``max_bytes`` per user.
"""
from __future__ import annotations

import os
import select
import threading
import time
from pathlib import Path

LINES_PER_S = 50
BURST = 500
LINE_BYTES = 4096
IDLE_S = 1.0                # a quiet pipe: the notes of what was counted are written after this
NOTE = b"[server log] "


class ServerLog:
    """One server's log: ``fd`` is the pipe's write end to give the server as stdout and stderr; ``started`` closes
    the hub's copy of it once the server has it; the reading thread ends when the server and everything that
    inherited the pipe have ended."""

    def __init__(self, path: Path, max_bytes: int, clock=time.monotonic):
        self.path, self.max_bytes, self.clock = Path(path), int(max_bytes), clock
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        read, self.fd = os.pipe()
        self._read = read
        self._file = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._size = os.fstat(self._file).st_size
        self._tokens, self._refilled = float(BURST), clock()
        self._last: bytes | None = None
        self._repeats = self._dropped = 0
        self._noted = clock()
        self._partial = b""
        self.thread = threading.Thread(target=self._run, name=f"server-log-{self.path.stem}", daemon=True)
        self.thread.start()

    def started(self) -> None:
        """The server holds the write end now (or failed to start): the hub's copy is closed."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    # ------------------------------------------------------------------------------------------ reading
    def _run(self) -> None:
        try:
            while True:
                if not select.select([self._read], [], [], IDLE_S)[0]:
                    self._flush_notes(quiet=True)   # quiet for a while: what was counted is written now
                    continue
                chunk = os.read(self._read, 1 << 16)
                if not chunk:
                    break
                self.take(chunk)
            if self._partial:
                self._line(self._partial)
            self._flush_notes(quiet=True)
        finally:
            os.close(self._read)
            os.close(self._file)

    def take(self, chunk: bytes) -> None:
        """A chunk of the server's output: whole lines looked at while there are tokens, the rest counted."""
        self._refill()
        data = self._partial + chunk
        end = data.rfind(b"\n")
        if end < 0:
            self._partial = data[:LINE_BYTES + 1]           # a line past LINE_BYTES is cut there
            return
        whole, self._partial = data[:end], data[end + 1:end + 2 + LINE_BYTES]
        if self._tokens < 1:                        # over the rate: counted in C, not looked at
            self._dropped += whole.count(b"\n") + 1
            self._flush_notes(repeats=False)
            return
        lines = whole.split(b"\n", int(self._tokens))
        rest = lines.pop() if len(lines) > int(self._tokens) else None   # the lines past the tokens, in one piece
        for line in lines:
            self._tokens -= 1
            self._line(line)
        if rest is not None:
            self._dropped += rest.count(b"\n") + 1
            self._flush_notes(repeats=False)

    def _refill(self) -> None:
        now = self.clock()
        self._tokens = min(float(BURST), self._tokens + (now - self._refilled) * LINES_PER_S)
        self._refilled = now

    def _line(self, line: bytes) -> None:
        if line == self._last:
            self._repeats += 1
            return
        self._flush_notes()
        self._last = line
        self._write(line[:LINE_BYTES] + (b" [...]" if len(line) > LINE_BYTES else b"") + b"\n")

    def _flush_notes(self, quiet: bool = False, repeats: bool = True) -> None:
        """What was counted, written: the repeats of the line before (before another line, ``repeats``), the
        dropped lines at most once a second while output goes on (``quiet``: the pipe is quiet or closed: both at
        once)."""
        drops = self._dropped and (quiet or self.clock() - self._noted >= 1.0)
        if self._repeats and (repeats or quiet or drops):
            self._write(NOTE + f"the line above {self._repeats} times more\n".encode())
            self._repeats = 0
        if drops:
            self._noted = self.clock()
            self._write(NOTE + f"{self._dropped} lines dropped: more than {LINES_PER_S} a second\n".encode())
            self._dropped = 0
            self._last = None

    def _write(self, data: bytes) -> None:
        if self._size + len(data) > self.max_bytes:
            os.close(self._file)
            os.replace(self.path, self.path.with_name(self.path.name + ".1"))
            self._file = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
            self._size = 0
        os.write(self._file, data)
        self._size += len(data)
