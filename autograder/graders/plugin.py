"""The pytest plugin that runs the hidden graders against one submission.

It gives the grader tests their fixtures (``student``, ``rng``, ``seed``), reads the points declared on each test
(``@pytest.mark.points(p)``; a parametrised test splits ``p`` over its cases; a case's own points marker wins),
and records every test's outcome with a Korean message. Messages come only from ``GradingFailure``,
``StudentCodeError`` and assertion texts written for students; an unexpected error inside a grader is reported as
such without its traceback (which would show the hidden test's source).
"""
from __future__ import annotations

import sys
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pytest

from autograder.graders import diagnosis, forbidden, isolation, registry
from autograder.graders.calls import Call
from autograder.graders.compare import GradingFailure
from autograder.messages import Reason
from autograder.sandbox.errors import Failure, StudentCodeError
from autograder.sandbox.policy import Timeouts
from autograder.sandbox.process import StudentProcess
from autograder.sandbox.remote import Remote

SESSION_KEY = pytest.StashKey["GradingSession"]()


@dataclass
class TestResult:
    exercise: str
    name: str
    description: str
    points: float
    passed: bool = False
    message: str = ""
    diagnosis: list = field(default_factory=list)
    seconds: float = 0.0   # its setup and call together (JUnit's and Gradescope's per-test time)
    assignment: str = ""   # the grader folder it comes from


class Student:
    """The submission's functions and variables, reached through the sandboxed process.

    ``student.softmax(x)`` calls the student's ``softmax`` and returns plain values; ``student.value("q1")``
    reads a variable. The forbidden-routine rule is applied to every call. Each call runs with the other contract
    functions it may build on answered by the references (``isolation``), under a time limit scaled to what the
    reference needs, and within a time budget for all calls of that function (``policy.Timeouts``);
    ``asked`` records which of the student's functions each exercise's calls used.
    """

    def __init__(self, process: StudentProcess, sources: list[str], timeouts: Timeouts | None = None,
                 assignment: str | None = None):
        self._process = process
        self.assignment = assignment             # whose exercises these are (two assignments may share a name)
        self._sources = sources
        self._static = {}
        self._timeouts = timeouts or process.timeouts
        self.spent: dict[str, float] = {}        # function -> seconds its calls with small inputs took
        self.total = 0.0                         # seconds of all calls
        self.asked: dict[str, set] = {}          # function -> the student's functions answered by references
        self.answer_peak = 0                     # bytes: the most a child computing a proxy's answer grew
        self.last: Call | None = None
        self.history: dict[str, list] = {}       # function -> its calls so far (Call.history)

    @property
    def defined(self) -> set[str]:
        return set(self._process.names)

    def value(self, name: str):
        """The variable ``name`` as plain values, read within ``call_floor`` seconds and charged to the time budget
        of all calls (``calls``): its conversion calls none of the student's code (``inside.values.to_numpy``), and
        whatever runs anyway (a finalizer) is stopped at that limit."""
        if name not in self.defined:
            raise GradingFailure(Reason.UNDEFINED_VARIABLE.korean(name=name))
        try:
            timeout = self._limit(name, min(float(self._timeouts.call), float(self._timeouts.call_floor)), small=False)
            return self._timed(None, self._process.calls.request, {"op": "get", "target": name}, (), timeout)["value"]
        except StudentCodeError as exc:
            raise GradingFailure(exc.message, raised=exc.exception) from None

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self._call(name, args, kwargs)

    def with_memory(self, memory_mb: int) -> "_MemoryLimited":
        """``student.with_memory(256).flash_attention(...)``: the call may use at most 256 MiB more memory."""
        return _MemoryLimited(self, memory_mb)

    def _call(self, name, args, kwargs, memory_mb: int | None = None):
        if name not in self.defined:
            if self._process.fatal:
                raise GradingFailure(f"`{name}`: {self._process.fatal}")
            raise GradingFailure(Reason.UNDEFINED_FUNCTION.korean(name=name))
        rule = _rule(name, self.assignment)
        if name not in self._static:
            self._static[name] = forbidden.static_violations(name, rule, self._sources)
        if self._static[name]:
            raise _forbidden_failure(name, self._static[name])
        self.last = Call(name, args, kwargs, history=self.history.setdefault(name, []), assignment=self.assignment)
        answers = isolation.Answers(isolation.callees(name, self.defined, self.assignment))
        limit = isolation.call_limit(args, kwargs, self._timeouts)
        small = limit < float(self._timeouts.call)
        options = {"timeout": self._limit(name, limit, small), "isolate": answers.allowed, "answer": answers,
                   "memory_mb": memory_mb, "observe": registry.record(name, self.assignment).observes}
        started = time.perf_counter()
        try:
            reply = self._timed(name if small else None, self._process.calls.graded_call, name, args, kwargs, **options)
        except StudentCodeError as exc:
            # a question the grader refused to answer (too big) is why the call failed, unless its time ran out
            why = answers.refused[-1] if answers.refused and exc.kind is not Failure.TIMEOUT else exc.message
            raise GradingFailure(f"`{name}`: {why}", raised=exc.exception) from None
        finally:
            self.asked.setdefault(name, set()).update(answers.asked)
            self.answer_peak = max(self.answer_peak, answers.apart_peak)
            self.last.questions = list(answers.questions)
        if memory_mb is not None and reply.get("peak_mb", 0) > memory_mb:
            raise GradingFailure(Reason.MEMORY_OVER_LIMIT.korean(name=name, peak_mb=reply["peak_mb"],
                                                                 memory_mb=memory_mb))
        used = forbidden.runtime_violations(rule, reply.get("events", []))
        if used:
            raise _forbidden_failure(name, used)
        self.last.seconds = time.perf_counter() - started   # measured here: the process's own figure is its word
        self.last.caches = observed_caches(reply.get("observed")) if options["observe"] else None
        value = self._own(name, reply["value"])
        self.last.returned(value)
        return value

    # --------------------------------------------------------------- time
    def _limit(self, name: str, limit: float, small: bool = True) -> float:
        """This call's limit: its own, or what is left of the time budget of ``name``'s calls with small inputs
        (``exercise``; a call with big inputs has its own ``call``) or of all calls of the submission (``calls``),
        whichever is least; a spent budget fails the call at once."""
        for key, used, spent in (("exercise", self.spent.get(name, 0.0), Reason.EXERCISE_TIME_SPENT),
                                 ("calls", self.total, Reason.CALLS_TIME_SPENT)):
            budget = getattr(self._timeouts, key)
            if key == "exercise" and not small:
                continue
            left = float(budget) - used
            if left <= 0:
                raise GradingFailure(spent.korean(name=name, budget=float(budget)))
            limit = min(limit, left)
        return limit

    def _timed(self, name, fn, *args, **kwargs):
        """``fn(*args, **kwargs)``; its time is charged to ``name`` (None: to the submission's total only)."""
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            seconds = time.perf_counter() - start
            self.total += seconds
            if name is not None:
                self.spent[name] = self.spent.get(name, 0.0) + seconds

    def _own(self, name: str, value):
        """Objects of the student's process in a reply (a ``KVCache``) make their requests through this student,
        under the limits and the budget of ``name``."""
        if isinstance(value, Remote):
            value._requester = lambda header, arrays: self._remote(name, header, arrays)
        elif isinstance(value, (tuple, list)):
            for v in value:
                self._own(name, v)
        return value

    def _remote(self, name: str, header: dict, arrays) -> dict:
        floor = min(float(self._timeouts.call), float(self._timeouts.call_floor))
        try:
            timeout = self._limit(name, floor)
            reply = self._timed(name, self._process.calls.request, header, arrays, timeout)
        except StudentCodeError as exc:
            raise GradingFailure(f"`{name}`: {exc.message}", raised=exc.exception) from None
        self._own(name, reply["value"])
        return reply


class _MemoryLimited:
    def __init__(self, student: Student, memory_mb: int):
        self._student, self._memory_mb = student, memory_mb

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: self._student._call(name, args, kwargs, self._memory_mb)


def observed_caches(record) -> list | None:
    """What the watched instances of a reply held (``inside.observed.Observed.report``, arrays decoded): one
    ``(keys, values)`` pair per instance, each a numeric array or None; None for a record that is not that (it came
    from the student's process)."""
    try:
        caches = record["caches"]
        out = [(held["keys"], held["values"]) for held in caches]
    except (TypeError, KeyError):
        return None
    if not all(a is None or (isinstance(a, np.ndarray) and a.dtype.kind in "biuf") for pair in out for a in pair):
        return None
    return out


def _rule(name: str, assignment: str | None = None) -> forbidden.Rule | None:
    """The forbidden-routine rule of the exercise ``name`` of ``assignment`` (its record's); a name without a record
    is an error, never a call without a rule (``registry.RegistryError``)."""
    return registry.record(name, assignment).forbidden


def _forbidden_failure(name, routines) -> GradingFailure:
    listed = ", ".join(r.split(":")[-1] for r in routines)
    return GradingFailure(Reason.FORBIDDEN_ROUTINE.korean(name=name, routines=listed))


class GradingSession:
    """Registered with ``pytest.main(plugins=[session])``; fixtures in ``graders/conftest.py`` read it."""

    def __init__(self, student: Student, seed: int):
        self.student = student
        self.seed = seed
        self.results: dict[str, TestResult] = {}
        self.deselected: set[str] = set()   # node ids a ``-k`` selection left out (``run_graders``' select)
        self.internal_errors: list[str] = []

    # --------------------------------------------------------------- collection: points and exercises
    def pytest_configure(self, config):
        config.stash[SESSION_KEY] = self
        # The messages come from the exceptions themselves (below); pytest's own report of a failure (source
        # lines, argument reprs: ~20 ms each) is never shown, so it is kept to one line.
        config.option.tbstyle = "line"
        config.addinivalue_line("markers", "points(p): points of a grader test (split over its cases)")
        config.addinivalue_line("markers", "exercise(name): the exercise a test belongs to")

    @pytest.hookimpl(tryfirst=True)   # before ``-k`` deselects any: the points are those of the whole grader
    def pytest_collection_modifyitems(self, session, config, items):
        per_function = Counter(_function_key(item) for item in items)
        for item in items:
            own = [m for m in item.own_markers if m.name == "points"]
            marker = item.get_closest_marker("points")
            points = float(marker.args[0]) if marker else 0.0
            if not (own and _is_case_marker(item, own[0])):
                points /= per_function[_function_key(item)]
            exercise = item.get_closest_marker("exercise")
            exercise = exercise.args[0] if exercise else item.module.__name__.rsplit(".", 1)[-1][len("test_"):]
            doc = (getattr(item.function, "__doc__", None) or "").strip().splitlines()
            name = item.name[len("test_"):] if item.name.startswith("test_") else item.name
            self.results[item.nodeid] = TestResult(exercise, name, doc[0] if doc else name, round(points, 6),
                                                   assignment=item.path.parent.name)
        _check_points(self.results.values())

    def pytest_deselected(self, items):
        self.deselected.update(item.nodeid for item in items)

    # --------------------------------------------------------------- outcomes
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        result = self.results.get(item.nodeid)
        if result is None or report.when == "teardown":
            return
        result.seconds += report.duration
        if report.when == "call" and report.passed:
            result.passed, result.message = True, ""
        elif report.failed or (report.when == "setup" and report.skipped):
            result.passed = False
            result.message, result.diagnosis = self._message(call.excinfo, item)

    def _message(self, excinfo, item):
        if excinfo is None:
            return Reason.SKIPPED.korean(), []
        exc = excinfo.value
        if isinstance(exc, GradingFailure):
            if exc.raised and not exc.diagnosis:   # the student's code raised: a known mistake that raises the same?
                found = diagnosis.of_exception(getattr(self.student, "last", None), exc.raised)
                return diagnosis.with_causes(exc.message, found), found
            return exc.message, exc.diagnosis
        if isinstance(exc, StudentCodeError):
            return exc.message, []
        if isinstance(exc, pytest.skip.Exception):
            return str(exc), []
        if isinstance(exc, AssertionError) and str(exc):
            return str(exc).split("\nassert ")[0], []
        if isinstance(exc, (TypeError, ValueError, IndexError, KeyError, AttributeError)):
            # The student's value had an unexpected form (a grader could not even look at it).
            self.internal_errors.append(f"{item.nodeid}: {type(exc).__name__}: {exc}")
            return Reason.UNCHECKABLE_VALUE.korean(error=type(exc).__name__), []
        self.internal_errors.append(f"{item.nodeid}: {type(exc).__name__}: {exc}")
        print(f"[autograder] grader error in {item.nodeid}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return Reason.GRADER_ERROR.korean(error=type(exc).__name__), []

    def rng_for(self, nodeid: str) -> np.random.Generator:
        test_id = nodeid.split("::", 1)[-1]
        return np.random.default_rng([self.seed, zlib.crc32(test_id.encode())])


def _check_points(results) -> None:
    """Each exercise's tests add up to the points of its record (its grade cell's), or the graders do not run."""
    totals = Counter()
    for result in results:
        totals[result.assignment, result.exercise] += result.points
    for (assignment, exercise), total in totals.items():
        named = registry.BY_NAME.get(exercise, [])
        declared = next((r for r in named if r.assignment == assignment), named[0] if len(named) == 1 else None)
        if declared is not None and round(total, 4) != round(float(declared.points), 4):
            raise pytest.UsageError(f"the graders of {exercise} declare {total:g} points and its exercise record "
                                    f"{declared.points:g} ({registry.RECORDS_DIR / exercise}.py): the two must agree "
                                    "(and the grade cell's points with them)")


def _function_key(item):
    return (item.module.__name__, getattr(item, "originalname", item.name))


def _is_case_marker(item, marker) -> bool:
    """True when a points marker comes from ``pytest.param(..., marks=...)`` rather than the function."""
    function_marks = getattr(item.function, "pytestmark", [])
    return not any(m is marker or (m.name == marker.name and m.args == marker.args) for m in function_marks)
