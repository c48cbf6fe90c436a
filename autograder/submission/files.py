"""Submitted files read as data: never through a link, never from a FIFO, device, socket or hard-linked file, never
more than a limit.

A submission is data here: nothing of it is executed in this process. A file that is not plain data is refused with
a reason (``refusal``: from its ``lstat``; ``read_submitted``: from the ``fstat`` of the opened file, so nothing can
be swapped in between the check and the read).

``copy_plain_tree`` copies a submission's plain files that way (a class run's staging, nbgrader's copies into
``autograded/`` and ``feedback/``); ``placeholder`` is the blank release notebook with the Korean reason that stands
in for a notebook that cannot be graded.
"""
from __future__ import annotations

import errno
import fnmatch
import os
import stat
from pathlib import Path

import nbformat

from autograder.messages import Message, Notice, Reason

MAX_NOTEBOOK_BYTES = 50 << 20
MAX_FILE_BYTES = MAX_NOTEBOOK_BYTES   # an extra file of a submission bigger than this is not copied


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


def copy_plain_tree(source: Path, target: Path, exclude=(), only=None, limit: int = MAX_FILE_BYTES,
                    keep: dict[str, bytes] | None = None) -> list[tuple[str, Message]]:
    """Copy the plain files under ``source`` to ``target`` without following any link; returns the files left
    out as (relative path, reason; ``str()`` of it in English). ``exclude``: globs of names not copied (and not
    reported); ``only``: if given, the names (at the top) that are copied, nothing else; ``keep``: names (at the
    top) whose bytes the caller wants, each given the bytes copied of it (so that a caller reads a notebook once,
    not again from the copy)."""
    skipped: list[tuple[str, Message]] = []
    why = refusal(os.lstat(source))
    if why and why.code is not Reason.DIRECTORY:
        return [(".", why)]
    target.mkdir(parents=True, exist_ok=True)
    for entry in sorted(os.scandir(source), key=lambda e: e.name):
        rel = entry.name
        if any(fnmatch.fnmatch(rel, pattern) for pattern in exclude) or (only is not None and rel not in only):
            continue
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            skipped += [(f"{rel}/{r}" if r != "." else rel, w)
                        for r, w in copy_plain_tree(Path(entry.path), target / rel, exclude, None, limit)]
            continue
        try:
            data = read_submitted(entry.path, limit)
        except NotGradable as exc:
            skipped.append((rel, exc.message))
            continue
        fd = os.open(target / rel, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if keep is not None and rel in keep:
            keep[rel] = data
    return skipped


def placeholder(course_dir: Path, assignment: str, notebook: str, reason: str) -> nbformat.NotebookNode:
    """The blank release notebook with a Korean note saying why the submission could not be graded."""
    nb = nbformat.read(str(course_dir / "release" / assignment / notebook), as_version=4)
    note = nbformat.v4.new_markdown_cell(Notice.NOT_GRADED.korean(notebook=notebook, reason=reason))
    nb.cells.insert(0, note)
    return nb
