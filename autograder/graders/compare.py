"""Comparison helpers of the hidden graders: Korean messages (``messages.Verdict``), shapes first, tolerances from
``tolerances.py``.

A failed comparison raises ``GradingFailure``; when the grader passes the student's call (``call=student.last``)
the result is also compared with the outputs of the known mistakes of that exercise on the same inputs, and a
match is named in the message (and recorded as the diagnosis: ``diagnosis.of_output``).
"""
from __future__ import annotations

import numpy as np

from autograder.graders import diagnosis, tolerances
from autograder.graders.tolerances import Tolerance
from autograder.messages import Verdict


class GradingFailure(AssertionError):
    """A failed check; ``message`` is Korean and safe to show to the student. ``raised``: the name of the exception
    type the student's code raised when that is why the check failed (``sandbox.errors.StudentCodeError``), else
    None."""

    def __init__(self, message: str, diagnosis=None, raised: str | None = None):
        super().__init__(message)
        self.message = message
        self.diagnosis = list(diagnosis or [])
        self.raised = raised


def as_array(value, what: str = "반환값") -> np.ndarray:
    """The student's value as a float64 array, or a Korean failure saying what came back instead."""
    if value is None:
        raise GradingFailure(Verdict.RETURNED_NONE.korean(what=what))
    if isinstance(value, (tuple, list)):
        raise GradingFailure(Verdict.RETURNED_SEQUENCE.korean(what=what, kind=type(value).__name__, length=len(value)))
    if isinstance(value, (bool, int, float)):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        raise GradingFailure(Verdict.RETURNED_NOT_ARRAY.korean(what=what, kind=type(value).__name__))
    return value.astype(np.float64)


def _shape(a) -> str:
    return "(" + ", ".join(str(n) for n in np.shape(a)) + ")"


def expect_shape(got, expected_shape, what: str = "출력") -> np.ndarray:
    got = as_array(got, what)
    if tuple(got.shape) != tuple(expected_shape):
        raise GradingFailure(Verdict.WRONG_SHAPE.korean(what=what, expected=_shape(np.empty(expected_shape)),
                                                       got=_shape(got)))
    return got


def max_error(got, expected) -> float:
    diff = np.abs(np.asarray(got, np.float64) - np.asarray(expected, np.float64))
    return float(np.nanmax(np.where(np.isnan(diff), np.inf, diff))) if diff.size else 0.0


def expect_close(got, expected, *, what: str = "출력", tol: Tolerance = tolerances.STUDENT, against: str = "",
                 call=None, pick=None) -> float:
    """Check ``got`` against ``expected`` (shape, finiteness, then ``tol``); returns the max error.

    Args:
        got: the student's value (already converted by the sandbox).
        expected: the reference.
        what: Korean name of the compared quantity, e.g. "출력" or "가중치".
        tol: the tolerance (see ``tolerances.py``).
        against: Korean description of the reference, e.g. "keras.layers.Attention".
        call: ``student.last``: the student's call that produced ``got``, for the diagnosis of mistakes.
        pick: takes the value a function returns to the compared array (e.g. ``lambda r: r[1]``).
    """
    expected = np.asarray(expected, np.float64)
    got = expect_shape(got, expected.shape, what)
    ref = Verdict.AGAINST.korean(against=against) if against else ""
    if not np.all(np.isfinite(got)):
        bad = int(np.sum(~np.isfinite(got)))
        raise GradingFailure(Verdict.NOT_FINITE.korean(what=what, bad=bad, against=ref, shape=_shape(got)),
                             diagnosis.of_output(got, call, pick, expected))
    if np.allclose(got, expected, atol=tol.atol, rtol=tol.rtol):
        return max_error(got, expected)
    err = max_error(got, expected)
    found = diagnosis.of_output(got, call, pick, expected)
    message = Verdict.NOT_CLOSE.korean(what=what, against=ref, shape=_shape(got), error=err, tolerance=tol.describe())
    raise GradingFailure(diagnosis.with_causes(message, found), found)


def expect_true(condition, message: str, call=None) -> None:
    if not condition:
        raise GradingFailure(message)

