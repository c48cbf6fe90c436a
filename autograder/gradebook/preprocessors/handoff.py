"""What one of the course's nbgrader preprocessors hands to a later one, through nbgrader's ``resources``.

nbgrader runs ``c.Autograde.autograde_preprocessors`` (``course_config.py``) in order on one notebook and passes one
``resources`` dictionary along. Two hand-offs of the course travel in it, each a small dataclass under a key of its
own:

- :class:`RanInSandbox` (``resources["autograder_started"]``), from ``SandboxedExecute`` to ``HiddenGraders``: the
  submission and its live sandboxed process, in which its code cells ran and whose functions the hidden graders
  call. ``HiddenGraders`` takes it out (the process ends when grading does).
- :class:`Graded` (``resources["autograder_graded"]``), from ``HiddenGraders`` to ``WriteGradeCells``,
  ``SaveGradeResult`` and ``RecordReview``: the grading result. It stays in ``resources`` (plain data).

A preprocessor that needs a hand-off finds it with ``take`` or ``find``, which check it: nothing there (the giver
is not configured, or comes later) or something else there is a configuration error, raised as
:class:`HandoffError` with an English message for the instructor that names both preprocessors and the setting.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from autograder import grade

if TYPE_CHECKING:
    from autograder.grade import GradeResult

SETTING = "c.Autograde.autograde_preprocessors (course_config.py)"


class HandoffError(RuntimeError):
    """A preprocessor did not get what an earlier one should have handed it: the course's config is wrong."""


class Handoff:
    """A value one preprocessor (``giver``) puts into ``resources[KEY]`` for later ones."""

    KEY: ClassVar[str]
    giver: ClassVar[str]

    def put(self, resources: dict) -> None:
        resources[self.KEY] = self

    @classmethod
    def find(cls, resources: dict, taker: str):
        """The hand-off in ``resources``, left there; raises ``HandoffError`` when it is missing or not one."""
        return cls._checked(resources.get(cls.KEY), taker)

    @classmethod
    def take(cls, resources: dict, taker: str):
        """The hand-off, taken out of ``resources``; raises ``HandoffError`` when it is missing or not one."""
        return cls._checked(resources.pop(cls.KEY, None), taker)

    @classmethod
    def _checked(cls, value, taker: str):
        if isinstance(value, cls):
            return value
        if value is None:
            raise HandoffError(
                f"{taker} found nothing from {cls.giver} in resources[{cls.KEY!r}]: {cls.giver} must come before "
                f"{taker} in {SETTING}.")
        raise HandoffError(
            f"{taker} expected a {cls.__name__} from {cls.giver} in resources[{cls.KEY!r}] but found a "
            f"{type(value).__name__}: only {cls.giver} may put it there; check {SETTING}.")


@dataclass
class RanInSandbox(grade.RanInSandbox, Handoff):
    """``SandboxedExecute`` -> ``HiddenGraders``: ``grade.RanInSandbox`` (the submission's code cells ran in
    ``process``, which is still alive for the hidden graders; ``errors`` are the notebook's errors), handed over."""

    KEY: ClassVar[str] = "autograder_started"
    giver: ClassVar[str] = "SandboxedExecute"


@dataclass
class Graded(Handoff):
    """``HiddenGraders`` -> ``WriteGradeCells``, ``SaveGradeResult``, ``RecordReview``: the hidden graders' result
    for the notebook."""

    KEY: ClassVar[str] = "autograder_graded"
    giver: ClassVar[str] = "HiddenGraders"

    result: GradeResult
