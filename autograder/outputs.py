"""The files the package writes for people (grades CSV, report.html, a result's JSON, a run's record): each one is
replaced whole or not at all.

A file is written next to its final place under a temporary name (the same folder, so the same file system), flushed
to the disk, checked, and only then renamed over the old one (``os.replace``: atomic on POSIX). A command that stops
half-way (an exception, a full disk, Ctrl-C, a kill) leaves the old file as it was and no temporary file behind; a
new file that came out empty is refused (``EmptyOutput``) and the old one kept: a grade sheet is never lost to a
typo or a crash.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


class EmptyOutput(ValueError):
    """What was about to replace a file is empty: the old file is kept (the message names it)."""


@contextlib.contextmanager
def replacing_path(path):
    """A temporary path beside ``path`` for a writer that opens files itself (``ElementTree.write``); when the block
    ends without an error and the file there is not empty, it replaces ``path`` (as ``replacing``).

    Example:
        >>> with replacing_path("junit.xml") as temporary:
        ...     tree.write(temporary)
    """
    path = Path(path)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    os.close(fd)
    try:
        yield temporary
        with open(temporary, "rb+") as fh:
            os.fsync(fh.fileno())
        _put(Path(temporary), path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _put(temporary: Path, path: Path) -> None:
    """``temporary`` over ``path``: refused when empty; the old file's permissions kept (else the umask's)."""
    if os.path.getsize(temporary) == 0:
        raise EmptyOutput(f"{path}: the new file came out empty; the old one is kept")
    if path.exists():   # the old file's permissions carry over (a grades file an instructor made private stays so)
        os.chmod(temporary, path.stat().st_mode & 0o7777)
    else:
        os.chmod(temporary, 0o666 & ~_umask())
    os.replace(temporary, path)


@contextlib.contextmanager
def replacing(path, mode: str = "w", encoding: str | None = "utf-8", newline: str | None = None):
    """Open a temporary file beside ``path`` for writing; when the block ends without an error, and the file is not
    empty, it replaces ``path``. On an error (or an empty file) ``path`` is left as it was and the temporary file
    removed.

    Args:
        path: the file to replace (its folder must exist).
        mode: ``"w"`` (text) or ``"wb"`` (bytes).
        encoding, newline: as ``open``'s (text mode only).

    Example:
        >>> with replacing("reports/grades.csv", newline="") as fh:
        ...     csv.writer(fh).writerows(rows)
    """
    text = "b" not in mode
    with replacing_path(path) as temporary, \
            open(temporary, mode, **({"encoding": encoding, "newline": newline} if text else {})) as fh:
        yield fh


def write_text(path, text: str, encoding: str = "utf-8") -> Path:
    """``text`` into ``path``, replacing it whole or not at all (``replacing``); returns ``path``."""
    with replacing(path, encoding=encoding) as fh:
        fh.write(text)
    return Path(path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
