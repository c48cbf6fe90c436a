"""A mistake costs its own points, once, fast: each exercise is graded on its own logic, in its own time.

* **Isolation.** While exercise X is called, the other contract functions X may build on (``CALLEES``) are, in
  the student's process, proxies that ask this side for the reference result (``inside.proxies.Isolated``); ``Answers``
  answers them here with the float64 answers of ``answers.py`` (the answer key never enters the sandbox: only the
  answer for the arguments asked). A wrong, hanging or crashing ``softmax`` therefore costs
  ``softmax``'s points and not those of every exercise that calls it. The relation is a ladder (no exercise may
  ask for one that may ask for it, and none may ask for a function that computes its own result: ``softmax`` may
  not ask for ``scaled_dot_product_attention``, ``flash_attention`` not for any attention), so a proxy never
  gives away what the exercise itself asks for. Classes are not replaced: ``attend_with_cache`` works on the
  student's own ``KVCache`` (the grader creates it), and its feedback says so when ``KVCache`` lost points.
* **An answer's cost.** A question is sized before it is answered (``sizing.need``: exact bytes and operations from the
  broadcast shapes of every argument); a small one is answered here, a bigger one in a forked child under
  ``answer_mb`` and the call's deadline (``bounded.compute``), one over ``answer_mb`` refused with a Korean reason.
  The answers' time is the call's time. So a proxy question never costs the grader more than the student's own
  call may.
* **The note.** ``dependency_notes`` says, for an exercise whose code calls another contract function that lost
  points, that in the real notebook this exercise would give wrong results too.
* **Time.** ``call_limit``: a call whose inputs are small (the reference needs milliseconds) may take
  ``call_floor`` seconds, a big one ``call``; all calls of one function together ``exercise`` seconds, and all
  calls of a submission ``calls`` seconds (``plugin.Student``). From ``course_config.py``'s ``timeouts``.
"""
from __future__ import annotations

import ast
import functools
import time

import numpy as np

from autograder.graders import bounded, registry, sizing, syntax
from autograder.messages import Reason, Verdict

# The proxies' table, from the exercise records (``exercises/<exercise>.py``):
# exercise (its record's key: ``registry.key``) -> the other contract functions it may call that are answered with
# the reference while it is graded,
CALLEES = {k: r.callees for k, r in registry.RECORDS.items() if r.callees}
# the contract functions it depends on without naming them in its code (the cache it is given),
IMPLIED = {k: r.implied for k, r in registry.RECORDS.items() if r.implied}
# and contract function -> its float64 answer (answers.py), sized by ``need`` before it is computed.
REFERENCES = {r.name: r.answer.compute for r in registry.RECORDS.values() if r.answer}
SIGNATURES = {name: registry.record(name).answer.signature for name in REFERENCES}


def need(name: str, arguments: dict) -> sizing.Need:
    """What the answer to ``name`` needs for ``arguments`` (``sizing.need``)."""
    return registry.record(name).answer.need(arguments)


def callees(exercise: str, defined, assignment: str | None = None) -> tuple:
    """The names that are proxies while ``exercise`` (of ``assignment``) is called (those the notebook defines)."""
    if exercise not in registry.BY_NAME:
        return ()
    return tuple(n for n in registry.record(exercise, assignment).callees if n in defined and n in REFERENCES)


# ----------------------------------------------------------------------------------------------- answers
# A question is answered here, in the grading process, when it needs at most INLINE_BYTES and INLINE_WORK (the
# largest of the 294 questions the solutions of `attention` and `kv_cache` ask needs 0.8 MiB and 0.5 M operations:
# a 16 MiB, 33 M operation answer takes at most tens of milliseconds on a loaded core, inside the call's time);
# a bigger one, up to ``answer_mb``, in a forked child under that memory limit and the call's deadline
# (``bounded.compute``); a question over ``answer_mb`` is refused with a Korean reason (the call fails: it costs
# that exercise). Every answer's time is part of the call's, so the budgets of the student's calls (``call``,
# ``exercise``, ``calls``) bound the answers too.
INLINE_BYTES = 16 << 20
INLINE_WORK = 1 << 25
CHILD_SLACK = 64 << 20   # address space a forked child may map beyond ``answer_mb``: thread stacks, malloc's arenas
_FALLBACK = {"ok": True, "fallback": True}


def answer_mb() -> int:
    """The most memory one proxy answer may take (``COURSE["sandbox"]["answer_mb"]``)."""
    from autograder.sandbox.policy import Limits

    return int(Limits.from_course().answer_mb)


class Answers:
    """Answers the proxies of one call: ``(header, arrays, deadline) -> (header, arrays)`` for
    ``RemoteCalls.request``.

    Only the names allowed for the call in flight are answered; the names answered are collected in ``asked``, the
    Korean reasons of the questions refused (over ``answer_mb``, or a child that ran out of memory or time) in
    ``refused``, and the largest growth of a child that computed an answer (bytes) in ``apart_peak``.
    """

    def __init__(self, allowed, limit_mb: float | None = None):
        self.allowed = set(allowed)
        self.asked: set[str] = set()
        self.refused: list[str] = []
        self.apart_peak = 0
        self.limit = int((answer_mb() if limit_mb is None else limit_mb) * (1 << 20))
        self.questions: list[tuple[str, tuple]] = []   # (name, shape of its first array argument), in order

    def __call__(self, header, arrays, deadline: float | None = None):
        from autograder.sandbox.errors import StudentCodeError
        from autograder.sandbox.remote import decode_value, encode_value

        name = header.get("name")
        if name not in self.allowed:
            return {"ok": False, "error": "RuntimeError", "message": Reason.NOT_GIVEN_NOW.korean(name=name)}, []
        try:
            args = _scalars(decode_value(header.get("args"), arrays))
            kwargs = _scalars(decode_value(header.get("kwargs"), arrays))
            first = next((a for a in [*args, *kwargs.values()] if isinstance(a, np.ndarray)), None)
            self.questions.append((name, () if first is None else tuple(first.shape)))
            sized = need(name, SIGNATURES[name].bind(*args, **kwargs).arguments)
        except (StudentCodeError, Exception):  # noqa: BLE001 - arguments the reference cannot take
            return _FALLBACK, []
        limit_mb = self.limit >> 20
        if sized.peak > self.limit:
            return self._refuse(Reason.ANSWER_TOO_BIG.korean(asked=name, need_mb=sized.mb, limit_mb=limit_mb))
        try:
            if sized.peak <= INLINE_BYTES and sized.work <= INLINE_WORK:
                value = REFERENCES[name](*args, **kwargs)
            else:
                if deadline is None:
                    from autograder.sandbox.policy import Timeouts

                    deadline = time.monotonic() + float(Timeouts.from_course().call)
                value, peak = bounded.compute(REFERENCES[name], args, kwargs, limit=self.limit + CHILD_SLACK,
                                              deadline=deadline, result_bytes=sized.result)
                self.apart_peak = max(self.apart_peak, peak)
        except bounded.Refused as exc:
            reason = Reason.ANSWER_TIME if exc.why == "time" else Reason.ANSWER_MEMORY
            return self._refuse(reason.korean(asked=name, limit_mb=limit_mb))
        except Exception:  # noqa: BLE001 - the reference does not take these arguments after all
            return _FALLBACK, []
        out: list = []
        encoded = encode_value(value, out)
        self.asked.add(name)
        return {"ok": True, "value": encoded}, out

    def _refuse(self, reason: str):
        self.refused.append(reason)
        return {"ok": False, "error": "RuntimeError", "message": reason}, []

def _scalars(value):
    """0-d arrays (a numpy number the student passed) as Python numbers, in lists, tuples and dicts too."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value.item()
    if isinstance(value, (list, tuple)):
        return type(value)(_scalars(v) for v in value)
    if isinstance(value, dict):
        return {k: _scalars(v) for k, v in value.items()}
    return value


# ----------------------------------------------------------------------------------------------- time
def call_limit(args, kwargs, timeouts) -> float:
    """Seconds one call may take (``timeouts``: ``policy.Timeouts``), by what the reference needs on its inputs:
    ``call_floor`` when the arrays passed hold at most ``call_small`` elements (every grader input but one: the
    float64 reference needs milliseconds there), ``call`` otherwise (flash_attention's long memory tests: the
    reference itself needs seconds)."""
    ceiling = float(timeouts.call)
    if elements((args, kwargs)) > int(timeouts.call_small):
        return ceiling
    return min(ceiling, float(timeouts.call_floor))


def elements(value) -> int:
    """How many numbers the arrays in ``value`` (nested in lists, tuples and dicts) hold."""
    if isinstance(value, np.ndarray):
        return int(value.size)
    if isinstance(value, (list, tuple)):
        return sum(elements(v) for v in value)
    if isinstance(value, dict):
        return sum(elements(v) for v in value.values())
    return 0


# ----------------------------------------------------------------------------------------------- the note
def calls_in_source(exercise: str, sources, contract, assignment: str | None = None) -> set[str]:
    """The contract functions the submitted ``def exercise`` (of ``assignment``) calls, directly or through the
    notebook's own top-level helpers (not through other contract functions)."""
    defs = _top_level_defs(tuple(sources))
    found, seen, todo = set(), set(), [exercise]
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        for used in defs[name]:
            if used == exercise:
                continue
            if used in contract:
                found.add(used)
            elif used in defs:
                todo.append(used)
    implied = registry.record(exercise, assignment).implied if exercise in registry.BY_NAME else ()
    return found | set(implied) & set(contract)


@functools.lru_cache(maxsize=64)
def _top_level_defs(sources: tuple) -> dict:
    """``{name: names it reads}`` of every top-level function and class of the cells (the last one wins)."""
    defs = {}
    for source in sources:
        tree = syntax.tree(source)
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defs[node.name] = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return defs


def dependency_notes(exercise: str, calls, lost) -> list[str]:
    """Korean notes: ``exercise`` calls the student's own ``calls``; those in ``lost`` lost points."""
    return [Verdict.BUILT_ON_WRONG.korean(exercise=exercise, name=name) for name in sorted(set(calls) & set(lost))]
