"""One call of a student's function, as the graders keep it: what ``compare`` names in a message (``call=``) and
what the diagnosis of mistakes re-runs (``diagnosis``). ``plugin.Student`` makes one for each call it grades.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Call:
    """One call of a student's function: what the diagnosis of mistakes re-runs.

    ``value`` is what it returned when that is small (``HISTORY_ELEMENTS``), and ``history`` is the list of this
    function's calls in this grading (shared by all of them, this one included once it returned): a mistake named
    for a wrong result must also explain the function's other results (``diagnosis.consistent``).
    """

    function: str
    args: tuple
    kwargs: dict
    seconds: float = 0.0   # how long the call took, measured on this side (its answers included)
    value: object = None
    history: list = field(default_factory=list, repr=False)
    # (name, shape of its first array argument) of each question the proxies asked during the call, in order: this
    # side's own record of the call (``isolation.Answers``), whatever the student's process says
    questions: list = field(default_factory=list)
    # what each watched instance (``Exercise.observes``: the given KVCache) held when the call returned, in the order
    # they were made: ``(keys, values)`` arrays, either None when it held none the grader could read; None when
    # nothing was watched or the reply's record was not that. The student's answer like any value: judged here.
    caches: list | None = None
    assignment: str | None = None   # whose exercise ``function`` is (``registry.record``: two may share a name)

    def returned(self, value) -> None:
        """Record the call's result in the function's history (only results small enough to re-check)."""
        if _elements(value) <= HISTORY_ELEMENTS:
            self.value = value
            self.history.append(self)


HISTORY_ELEMENTS = 1 << 15   # results this small are kept for the diagnosis (the memory and 4,096-token cases are not)


def _elements(value) -> int:
    if isinstance(value, (tuple, list)):
        return sum(_elements(v) for v in value)
    if isinstance(value, np.ndarray):
        return int(value.size)
    return 1 if isinstance(value, (int, float, bool, np.number)) else HISTORY_ELEMENTS + 1
