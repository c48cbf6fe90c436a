"""Submitted files read as data: never through a link, never from a FIFO, device, socket or hard-linked file, never
more than a limit.

A submission is data here: nothing of it is executed in this process. A file that is not plain data is refused with
a reason (``refusal``: from its ``lstat``; ``read_submitted``: from the ``fstat`` of the opened file, so nothing can
be swapped in between the check and the read).
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from autograder.messages import Message, Reason

MAX_NOTEBOOK_BYTES = 50 << 20


class NotGradable(Exception):
    """The file cannot be graded at all (not a notebook, unreadable, unknown assignment).

    ``message``: the reason's code and fields (its ``.korean`` for the student); ``str(exc)``: the English for the
    instructor (``text`` where given, else the reason's English)."""

    def __init__(self, message: Message, text: str = ""):
        super().__init__(text or message.english)
        self.message = message


class RefusedFile(NotGradable):
    """A submitted file that is not plain data: a symbolic link, a device, a FIFO, a socket, a hard link."""


def refusal(st: os.stat_result) -> Message | None:
    """Why a submitted file with this ``lstat`` must not be read (``None``: a plain regular file of its own)."""
    if stat.S_ISLNK(st.st_mode):
        return Reason.SYMBOLIC_LINK()
    if stat.S_ISDIR(st.st_mode):
        return Reason.DIRECTORY()
    if not stat.S_ISREG(st.st_mode):
        kind = {stat.S_IFIFO: Reason.FIFO, stat.S_IFSOCK: Reason.SOCKET, stat.S_IFCHR: Reason.DEVICE_FILE,
                stat.S_IFBLK: Reason.DEVICE_FILE}.get(stat.S_IFMT(st.st_mode), Reason.NOT_REGULAR)
        return kind()
    if st.st_nlink > 1:
        return Reason.HARD_LINK(names=st.st_nlink)
    return None


def refused(path, why: Message) -> RefusedFile:
    """The refusal of the submitted file at ``path``, ``why`` being what ``refusal`` found."""
    return RefusedFile(why, f"refusing {path}: {why}")


def read_submitted(path, limit: int = MAX_NOTEBOOK_BYTES) -> bytes:
    """The bytes of a submitted file, read as data only: never through a symbolic link (``O_NOFOLLOW``), never
    from a FIFO, device, socket or hard-linked file (``fstat`` of the opened file, so nothing can be swapped in
    between the check and the read), and never more than ``limit`` bytes."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):   # O_NOFOLLOW met a link as the last part
            raise refused(path, Reason.SYMBOLIC_LINK()) from None
        raise NotGradable(Reason.UNREADABLE(path=path, error=exc.strerror),
                          f"cannot read {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        why = refusal(st)
        if why:
            raise refused(path, why)
        if st.st_size > limit:
            raise NotGradable(Reason.TOO_BIG(path=path, size=st.st_size >> 20, limit=limit >> 20))
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise NotGradable(Reason.GREW_TOO_BIG(path=path, limit=limit >> 20))
        return b"".join(chunks)
    finally:
        os.close(fd)
