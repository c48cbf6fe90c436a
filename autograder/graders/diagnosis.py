"""The diagnosis: which known mistakes of an exercise (``exercises/<exercise>.py``) explain a student's wrong result.

A grader that fails a check names the matching mistakes in its Korean message (``with_causes``: " 진단: <title>;
...") and hands them to ``GradingFailure`` (the feedback lists each one's hint under the exercise). A mistake runs
here, in the trusted process, with the float64 references as its helpers (``mistakes.Mistake.function``). Three
ways to match, one per kind of result:

* ``of_output``: an array result. Each mistake is re-run on the arguments of the failing call (``student.last``)
  and matches when its output is within 1e-4 of the student's (and not of the expected one);
* ``of_number``: an integer result (cache sizes, token counts). Mistakes differ from the right answer by one token
  or by a factor, which ``rtol=1e-4`` cannot tell apart (488,281 from 488,282), so they match with exact equality;
* ``of_replay``: a result that depends on state in the student's process (``KVCache``, ``attend_with_cache``: the
  cache is a ``Remote``). Re-running on "the same arguments" would append to the student's own cache again, so
  each mistake replays the grader's whole scenario on a fresh cache here and matches when its observations are
  the student's (``attend_with_rope_cache`` too: the replay also compares the cached keys, which is how a cache of
  raw keys re-rotated at every step is named).
"""
from __future__ import annotations

import numpy as np

from autograder.graders import mistakes


def with_causes(message: str, found) -> str:
    """The message with the names of the diagnosed mistakes."""
    if found:
        message += " 진단: " + "; ".join(m.title for m in found)
    return message


def by_id(mistake_id: str) -> mistakes.Mistake:
    return next(m for m in mistakes.catalogue() if m.id == mistake_id)


def of_output(got, call, pick=None, expected=None) -> list:
    """Known mistakes of ``call``'s exercise whose output on the same inputs matches ``got`` (``pick`` takes the
    compared array from what the function returns; ``expected``, when given, must not match)."""
    if call is None:
        return []
    found = []
    for mistake in mistakes.for_exercise(call.function):
        try:
            value = mistake.function()(*call.args, **call.kwargs)
            value = pick(value) if pick else value
            value = np.asarray(value, np.float64)
        except Exception:  # noqa: BLE001 - a mutant may fail on some inputs; then it is not the diagnosis
            continue
        if value.shape != got.shape:
            continue
        same_nan = np.array_equal(np.isfinite(value), np.isfinite(got))
        close = np.allclose(np.nan_to_num(got), np.nan_to_num(value), atol=1e-4, rtol=1e-4)
        if same_nan and close and (expected is None or not np.allclose(value, expected, atol=1e-4, rtol=1e-4,
                                                                       equal_nan=True)):
            found.append(mistake)
    return found


def of_number(value, expected, call, exercise=None) -> list:
    """Known mistakes whose result on ``call`` is exactly ``value`` (and not ``expected``)."""
    if call is None:
        return []
    found = []
    for mistake in mistakes.for_exercise(exercise or call.function):
        try:
            result = mistake.function()(*call.args, **call.kwargs)
        except Exception:  # noqa: BLE001 - a mistake may fail on some inputs; then it is not the diagnosis
            continue
        if isinstance(result, (int, float, np.integer, np.floating)) and result == value and result != expected:
            found.append(mistake)
    return found


def same(a, b) -> bool:
    """Two observations agree (arrays within 1e-4, the diagnosis' usual closeness; numbers exactly)."""
    if a is None or b is None:
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    try:
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    except (TypeError, ValueError):
        return False
    return a.shape == b.shape and np.allclose(a, b, atol=1e-4, rtol=1e-4)


def of_replay(exercise: str, replay, observed: list, expected: list) -> list:
    """Mistakes of ``exercise`` whose replay gives the student's observations (and not the expected ones).

    ``replay(function)`` runs the grader's scenario with a mistake's function (or class) in this process and
    returns its observations; ``observed`` are the student's, up to the first one that failed.
    """
    found = []
    for mistake in mistakes.for_exercise(exercise):
        try:
            theirs = replay(mistake.function())[: len(observed)]
        except Exception:  # noqa: BLE001
            continue
        if len(theirs) == len(observed) and all(same(a, b) for a, b in zip(theirs, observed, strict=True)) \
                and not all(same(a, b) for a, b in zip(theirs, expected, strict=False)):
            found.append(mistake)
    return found
