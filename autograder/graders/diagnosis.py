"""The diagnosis: which known mistakes of an exercise (``exercises/<exercise>.py``) explain a student's wrong result.

A grader that fails a check names the matching mistakes in its Korean message (``with_causes``: " 진단: <title>;
...") and hands them to ``GradingFailure`` (the feedback lists each one's hint under the exercise). A mistake runs
here, in the trusted process, with the float64 references as its helpers (``exercises.Mistake.function``). Three
ways to match, one per kind of result:

* ``of_output``: an array result. Each mistake is re-run on the arguments of the failing call (``student.last``)
  and matches when its output is within 1e-4 of the student's (and not of the expected one);
* ``of_number``: an integer result (cache sizes, token counts). Mistakes differ from the right answer by one token
  or by a factor, which ``rtol=1e-4`` cannot tell apart (488,281 from 488,282), so they match with exact equality;
* both check, for each mistake that explains the failing call, that it also explains the function's other results
  in this grading (``consistent``: the calls kept in ``Call.history``). Two different mistakes can give the same
  value on one call (without the factor 2 and with one layer agree when there are two layers; a mask with the
  wrong offset and an inverted one on some shapes), but rarely on all of them, so the feedback names the one that
  fits everything the student's function returned;
* ``of_exception``: a call that raised. The mistakes whose record says they raise (``Mistake.raises``) are re-run
  on the same arguments and match when they raise the same exception (``generate`` sampling at temperature 0 with
  ``rng=None``);
* ``of_replay``: a result that depends on state in the student's process (``KVCache``, ``attend_with_cache``: the
  cache is a ``Remote``). Re-running on "the same arguments" would append to the student's own cache again, so
  each mistake replays the grader's whole scenario on a fresh cache here and matches when its observations are
  the student's (``attend_with_rope_cache`` too: the replay also compares the cached keys, which is how a cache of
  raw keys re-rotated at every step is named).
"""
from __future__ import annotations

import copy

import numpy as np

from autograder.graders import registry, tolerances
from autograder.graders.exercises import Mistake
from autograder.messages import Verdict

CLOSE = tolerances.DIAGNOSIS_CLOSE   # a mistake's output this close to the student's explains it (atol = rtol)


def with_causes(message: str, found) -> str:
    """The message with the names of the diagnosed mistakes."""
    if found:
        message += Verdict.DIAGNOSED.korean(titles="; ".join(m.title for m in found))
    return message


def by_id(mistake_id: str) -> Mistake:
    return next(m for m in registry.catalogue() if m.id == mistake_id)


def of_output(got, call, pick=None, expected=None) -> list:
    """Known mistakes of ``call``'s exercise whose output on the same inputs matches ``got`` (``pick`` takes the
    compared array from what the function returns; ``expected``, when given, must not match)."""
    if call is None:
        return []
    found, apart = [], _resolution(call)
    finite, plain = np.isfinite(got), np.nan_to_num(got)
    for mistake in registry.diagnosable_mistakes(call.function, call.assignment):
        try:
            value = _rerun(mistake.function(), call.args, call.kwargs)
            value = pick(value) if pick else value
            value = np.asarray(value, np.float64)
        except Exception:  # noqa: BLE001 - a mutant may fail on some inputs; then it is not the diagnosis
            continue
        if value.shape != got.shape or not _close(plain, np.nan_to_num(value), CLOSE):
            continue
        same_nan = np.array_equal(np.isfinite(value), finite)
        right = expected is not None and np.allclose(value, expected, atol=apart, rtol=apart, equal_nan=True)
        if same_nan and not right:
            found.append(mistake)
    return [m for m in found if consistent(m, call)]


def _close(a, b, tol: float) -> bool:
    """``np.allclose(a, b, atol=tol, rtol=tol)`` for finite arrays of one shape, without its checks for inf and NaN
    (the callers give ``nan_to_num``'s arrays): a diagnosis compares every mistake's output, and allclose's own cost
    was most of it."""
    return bool(np.all(np.abs(a - b) <= tol + tol * np.abs(b)))


def _resolution(call) -> float:
    """How far from the expected result a mistake's must be to explain anything: 1e-4, or ten units of the
    coarsest floating input's precision (float16: 1e-2). A mistake that on these inputs gives the right answer
    computed in float16 (``softmax`` ignoring ``axis`` when ``axis`` is -1) is no explanation of a float16 result."""
    eps = [np.finfo(a.dtype).eps for a in _arrays((call.args, call.kwargs)) if a.dtype.kind == "f"]
    return max([tolerances.DIAGNOSIS_APART] + [tolerances.DIAGNOSIS_APART_UNITS * float(e) for e in eps])


def _arrays(value):
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _arrays(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _arrays(v)


def of_number(value, expected, call, exercise=None) -> list:
    """Known mistakes whose result on ``call`` is exactly ``value`` (and not ``expected``)."""
    if call is None:
        return []
    found = []
    for mistake in registry.diagnosable_mistakes(exercise or call.function, call.assignment):
        try:
            result = _rerun(mistake.function(), call.args, call.kwargs)
        except Exception:  # noqa: BLE001 - a mistake may fail on some inputs; then it is not the diagnosis
            continue
        if isinstance(result, (int, float, np.integer, np.floating)) and result == value and result != expected:
            found.append(mistake)
    return [m for m in found if consistent(m, call)]


def of_exception(call, raised: str | None) -> list:
    """Known mistakes of ``call``'s exercise that raise ``raised`` (an exception type's name) on the same arguments,
    among those whose record says they raise (``Mistake.raises``)."""
    if call is None or not raised:
        return []
    found = []
    for mistake in registry.diagnosable_mistakes(call.function, call.assignment):
        if mistake.raises != raised:
            continue
        try:
            _rerun(mistake.function(), call.args, call.kwargs)
        except Exception as exc:  # noqa: BLE001 - what is looked for
            if type(exc).__name__ == raised:
                found.append(mistake)
    return found


def _rerun(function, args, kwargs):
    """``function`` on a call's arguments, each ``numpy.random.Generator`` among them a copy in the state it had
    (the call's own is the grader's: a re-run must draw what the student's function drew, and leave it as it was)."""
    return function(*_copied(args), **_copied(kwargs))


def _copied(value):
    if isinstance(value, np.random.Generator):
        return copy.deepcopy(value)
    if isinstance(value, tuple):
        return tuple(_copied(v) for v in value)
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    return value


def consistent(mistake: Mistake, call) -> bool:
    """The mistake gives what the student's function returned on every other call kept in ``call.history`` (calls
    on which the mistake's own code fails are not held against it)."""
    for earlier in getattr(call, "history", ()):
        if earlier is call or earlier.value is None:
            continue
        try:
            theirs = _rerun(mistake.function(), earlier.args, earlier.kwargs)
        except Exception:  # noqa: BLE001 - the mistake's code cannot take these inputs: no evidence either way
            continue
        if not _agree(theirs, earlier.value):
            return False
    return True


def _agree(theirs, got) -> bool:
    """A mistake's result and the student's (as it came back) agree: integers exactly, arrays within ``LOOSE`` with
    NaN and inf in the same places, tuples element by element. Loose on purpose: this only rules out a mistake
    that contradicts another result (its values then differ by far more), and a student's float16 or float32
    arithmetic must not rule out the right one."""
    if isinstance(got, (tuple, list)):
        return isinstance(theirs, (tuple, list)) and len(theirs) == len(got) and \
            all(_agree(t, g) for t, g in zip(theirs, got, strict=True))
    if isinstance(got, (int, float, np.integer, np.floating)) and np.ndim(theirs) == 0:
        return bool(np.asarray(theirs, np.float64) == np.asarray(got, np.float64))
    try:
        a, b = np.asarray(theirs, np.float64), np.asarray(got, np.float64)
    except (TypeError, ValueError):
        return True
    if a.size == b.size == 1:
        return bool(a.reshape(-1)[0] == b.reshape(-1)[0]) if float(b.reshape(-1)[0]).is_integer() else \
            bool(np.allclose(a.reshape(-1), b.reshape(-1), atol=LOOSE, rtol=LOOSE))
    return a.shape == b.shape and np.array_equal(np.isfinite(a), np.isfinite(b)) and \
        _close(np.nan_to_num(a), np.nan_to_num(b), LOOSE)


LOOSE = tolerances.DIAGNOSIS_CONSISTENT   # consistency with the other results (``_agree``), not ``CLOSE``


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
    return a.shape == b.shape and np.allclose(a, b, atol=CLOSE, rtol=CLOSE)


def of_replay(exercise: str, replay, observed: list, expected: list, assignment: str | None = None) -> list:
    """Mistakes of ``exercise`` whose replay gives the student's observations (and not the expected ones).

    ``replay(function)`` runs the grader's scenario with a mistake's function (or class) in this process and
    returns its observations; ``observed`` are the student's, up to the first one that failed.
    """
    found = []
    for mistake in registry.diagnosable_mistakes(exercise, assignment):
        try:
            theirs = replay(mistake.function())[: len(observed)]
        except Exception:  # noqa: BLE001
            continue
        if len(theirs) == len(observed) and all(same(a, b) for a, b in zip(theirs, observed, strict=True)) \
                and not all(same(a, b) for a, b in zip(theirs, expected, strict=False)):
            found.append(mistake)
    return found
