"""GitHub Actions' workflow commands (``::warning title=...::message``), encoded the way the runner decodes them, and
the submission's files that are not graded as they are (links, devices, FIFOs, sockets, hard links), each removed
and annotated on its own.

The runner reads a workflow command from one line of the log: a message with a newline would end at the newline
(the rest is plain log, and may itself start a command); ``%`` would be read as the start of an escape. The message
is encoded as the runner's own toolkit does (``%`` -> ``%25``, ``\\r`` -> ``%0D``, ``\\n`` -> ``%0A``), and a
property's value (``title=``, ``file=``) also has ``:`` and ``,`` encoded (``%3A``, ``%2C``).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

_DATA = {"%": "%25", "\r": "%0D", "\n": "%0A"}
_PROPERTY = {**_DATA, ":": "%3A", ",": "%2C"}


def escape_data(text) -> str:
    """A workflow command's message, encoded (``%``, ``\\r``, ``\\n``)."""
    return "".join(_DATA.get(c, c) for c in str(text))


def escape_property(text) -> str:
    """A workflow command's property value, encoded (``%``, ``\\r``, ``\\n``, ``:``, ``,``)."""
    return "".join(_PROPERTY.get(c, c) for c in str(text))


def command(name: str, message, **properties) -> str:
    """One workflow command's line: ``command("warning", "x", title="t")`` is ``::warning title=t::x``.

    Example:
        >>> command("warning", "a\\nb 100%", title="not graded: links")
        '::warning title=not graded%3A links::a%0Ab 100%25'
    """
    props = ",".join(f"{key}={escape_property(value)}" for key, value in properties.items() if value is not None)
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def odd_files(root) -> list[tuple[Path, str]]:
    """Everything under ``root`` (its ``.git`` left out) that is not a plain file or folder of its own: symbolic
    links (never followed), FIFOs, sockets, devices, hard-linked files; each with what it is."""
    found = []
    root = Path(root)
    for folder, folders, files in os.walk(root):
        folders[:] = [f for f in folders if not (Path(folder) == root and f == ".git")]
        for name in [*folders, *files]:
            path = Path(folder) / name
            st = path.lstat()
            kind = ("a symbolic link" if stat.S_ISLNK(st.st_mode) else
                    None if stat.S_ISDIR(st.st_mode) else
                    ("a hard link" if st.st_nlink > 1 else None) if stat.S_ISREG(st.st_mode) else
                    "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else
                    "a device file" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a plain file")
            if kind:
                found.append((path, kind))
    return found


def refuse(root, out=print) -> int:
    """Remove every odd file under ``root`` (``odd_files``) and annotate each (a warning of its own, its path
    relative to ``root``); returns how many. Nothing is read through them."""
    found = odd_files(root)
    for path, kind in found:
        path.unlink()
        out(command("warning", f"{path.relative_to(root)}: {kind}, removed before grading (the grader never "
                               "follows links or reads special files)", title="not graded as it is"))
    return len(found)
