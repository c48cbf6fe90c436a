"""Names an instructor types (assignments, students) checked against the names that exist, before anything runs.

A typo must not look like an empty class: ``report atention`` would write a grade sheet with one empty column,
``autograde atention`` grade nothing and succeed. ``require`` refuses every unknown name at once with the names
that exist (and the closest ones), and the command exits 2 (``cli.main``).
"""
from __future__ import annotations

import difflib

LISTED = 40   # names listed in a message at most (a class of 200 is not printed whole)


class UnknownName(ValueError):
    """A name that does not exist; the message (English, for the instructor) lists the known ones."""


def require(kind: str, given, known, where: str = "") -> None:
    """Refuse (``UnknownName``) when a name of ``given`` is not in ``known``.

    Args:
        kind: what the names are, singular ("assignment", "student").
        given: the names typed.
        known: the names that exist, in the order to list them.
        where: where the known ones come from ("course_config.py", "submitted/ of attention").

    Example:
        >>> require("assignment", ["atention"], ["attention", "quiz"], "course_config.py")
        Traceback (most recent call last):
        UnknownName: unknown assignment 'atention' (did you mean 'attention'?); ...
    """
    known = list(known)
    unknown = [name for name in dict.fromkeys(given) if name not in known]
    if not unknown:
        return
    guesses = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        guesses.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    plural = "s" if len(unknown) > 1 else ""
    source = f" of {where}" if where else ""
    if known:
        listed = ", ".join(known[:LISTED]) + (f", ... and {len(known) - LISTED} more" if len(known) > LISTED else "")
        what = f"the {len(known)} known {kind}{'s' if len(known) != 1 else ''}{source}: {listed}"
    else:
        what = f"there is no {kind}{source} yet"
    raise UnknownName(f"unknown {kind}{plural} {', '.join(guesses)}; {what}")
