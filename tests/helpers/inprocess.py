"""The hidden graders run in this process against code held in a namespace: no sandbox, no notebook execution.

For the package's own tests and measurements that need many gradings of *our* code quickly (the mistakes of the
catalogue, the family mutants of ``tests/mutants.py``, the alternative implementations): a grading takes a second or two
here instead of a sandboxed process's several. It is no trust boundary and proves nothing about isolation, limits or the
forbidden-routine rule: ``tests/graders/test_<assignment>_graders.py`` grade the real notebooks through the sandbox for
that. What it keeps from the real ``plugin.Student``: the values come back as the wire format brings them (numpy arrays,
torch and Keras tensors converted by the sandbox's own ``values.to_numpy``, objects such as a ``KVCache`` kept on "the
student's side"), the other contract functions an exercise calls are answered by the references while it runs
(``isolation.CALLEES``), a student's exception reads as the sandbox's Korean message, and ``student.last`` is the call
the diagnosis re-runs (with the questions its proxies were asked and what the given classes its record ``observes``
held, watched by the sandbox's own ``inside.observed``), and ``with_memory`` measures a call's peak resident memory
the way the grader does (``/proc/self/clear_refs``, then ``VmHWM`` against ``VmRSS``), here in this process, without
the sandbox's address-space limit (so keep memory-hungry mistakes to the sandboxed tests).
"""
from __future__ import annotations

import ast
import copy
import functools
from contextlib import contextmanager
import types

import numpy as np

from autograder.submission.notebook import collect
from autograder.grade import run_graders
from autograder.graders import isolation
from autograder.graders.calls import Call
from autograder.graders.compare import GradingFailure
from autograder.messages import Reason
from autograder.sandbox.inside.observed import Observed
from autograder.sandbox.inside.proxies import FULL_PRECISION, _like, _NotPlain, _plain
from autograder.sandbox.inside.values import to_numpy
from autograder.sandbox.errors import exception_reason


def definitions(sources) -> str:
    """The imports, functions and classes of some code cells (demos, prints and plots left out)."""
    kept = []
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        lines = source.splitlines()
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
                start = (node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno)
                kept.append("\n".join(lines[start - 1:node.end_lineno]))
    return "\n\n".join(kept) + "\n"


def notebook_code(nb, assignment: str) -> str:
    """The definitions of a notebook's code cells, as grading collects them (grade cells and demos left out)."""
    return definitions(collect(nb, f"{assignment}.ipynb", assignment).code_cells)


def namespace(*sources: str) -> dict:
    """A fresh namespace in which the sources ran in order (later definitions replace earlier ones)."""
    ns: dict = {"__name__": "__student__"}
    for i, source in enumerate(sources):
        exec(_compiled(source, i), ns)
    return ns


@functools.lru_cache(maxsize=256)
def _compiled(source: str, i: int):
    """A source's code, compiled once (a notebook's definitions take ~15 ms to compile; tests build many namespaces
    from the same few sources)."""
    return compile(source, f"<student {i}>", "exec")


def _wire(value):
    """What the sandbox's wire format makes of a returned value."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    array = to_numpy(value)
    if array is not None:
        return array
    if isinstance(value, (tuple, list)):
        return type(value)(_wire(v) for v in value)
    if isinstance(value, dict):
        return {k: _wire(v) for k, v in value.items()}
    return _Object(value)


class _Object:
    """An object that stays on the student's side (a ``KVCache``): attributes and calls come back on the wire."""

    def __init__(self, obj):
        self._obj = obj
        self.type_name = type(obj).__name__

    def __getattr__(self, attr):
        if attr.startswith("_"):
            raise AttributeError(attr)
        try:
            value = getattr(self._obj, attr)
        except Exception as exc:  # noqa: BLE001 - reported as the sandbox reports it
            message = exception_reason(type(exc).__name__, str(exc)).korean
            raise GradingFailure(f"`{self.type_name}`: {message}", raised=type(exc).__name__) from None
        if callable(value):
            return lambda *args, **kwargs: _guarded(self.type_name, value, args, kwargs)
        return _wire(value)

    def __len__(self):
        return _guarded(self.type_name, len, (self._obj,), {})


def _copied(value):
    """Arrays are copied (the wire sends copies), and so are random generators (the wire sends their state: the
    grader's own is not drawn from); objects of the student's side are passed as they are."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, np.random.Generator):
        return copy.deepcopy(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_copied(v) for v in value)
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    return value._obj if isinstance(value, _Object) else value


def _proxy(name, original, questions):
    """The reference answering in the caller's kind, as ``inside.proxies.Isolated`` does (its own function runs
    for arguments that are not plain data or that the reference cannot take); each question is recorded in
    ``questions`` as ``isolation.Answers`` records it (its name, the shape of its first array)."""
    reference, signature = isolation.REFERENCES[name], isolation.SIGNATURES[name]

    def proxy(*args, **kwargs):
        try:
            plain_args, plain_kwargs = _plain(args), _plain(kwargs)
            first = next((a for a in [*plain_args, *plain_kwargs.values()] if isinstance(a, np.ndarray)), None)
            questions.append((name, () if first is None else tuple(first.shape)))
            signature.bind(*plain_args, **plain_kwargs)
            value = reference(*plain_args, **plain_kwargs)
        except (_NotPlain, Exception):  # noqa: BLE001
            return original(*args, **kwargs)
        return _like(value, args, kwargs, name in FULL_PRECISION)

    return proxy


def _guarded(name, fn, args, kwargs):
    try:
        return _wire(fn(*_copied(args), **_copied(kwargs)))
    except Exception as exc:  # noqa: BLE001
        message = exception_reason(type(exc).__name__, str(exc)).korean
        raise GradingFailure(f"`{name}`: {message}", raised=type(exc).__name__) from None


class InProcessStudent:
    """``plugin.Student``'s interface over a namespace of this process (see the module's docstring)."""

    def __init__(self, ns: dict, record: list | None = None, assignment: str | None = None):
        self._ns = ns
        self.assignment = assignment  # whose exercises these are (two assignments may share a name)
        self.last: Call | None = None
        self.asked: dict = {}
        self.history: dict = {}
        self.record = record          # when a list: every call's (function, args, kwargs, value) is appended

    @property
    def defined(self) -> set:
        return {k for k in self._ns if not k.startswith("_")}

    def value(self, name):
        if name not in self._ns:
            raise GradingFailure(Reason.UNDEFINED_VARIABLE.korean(name=name))
        return _wire(self._ns[name])

    def with_memory(self, memory_mb):
        return _MemoryLimited(self, memory_mb)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self._call(name, args, kwargs)

    def _call(self, name, args, kwargs):
        if name not in self._ns:
            raise GradingFailure(Reason.UNDEFINED_FUNCTION.korean(name=name))
        self.last = Call(name, args, kwargs, history=self.history.setdefault(name, []), assignment=self.assignment)
        saved = {}
        for callee in isolation.callees(name, self._ns, self.assignment):
            if isinstance(self._ns[callee], types.FunctionType):
                saved[callee] = self._ns[callee]
                self._ns[callee] = _proxy(callee, saved[callee], self.last.questions)
        from autograder.graders import registry
        from autograder.graders.plugin import observed_caches

        observes = registry.record(name, self.assignment).observes if name in registry.BY_NAME else ()
        observed = Observed(self._ns, observes)
        try:
            with observed:
                value = _guarded(name, self._ns[name], args, kwargs)
        finally:
            self._ns.update(saved)
        self.last.caches = observed_caches(observed.report()) if observes else None
        self.last.returned(value)
        if self.record is not None:
            self.record.append((name, args, kwargs, value))
        return value


def _status(field: str) -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(field + ":"))


class _MemoryLimited:
    """``student.with_memory(mb).f(...)``: the call's peak resident memory over ``mb`` MiB fails as in the grader."""

    def __init__(self, student, memory_mb):
        self._student, self._memory_mb = student, memory_mb

    def __getattr__(self, name):
        def call(*args, **kwargs):
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")
            before = _status("VmRSS")
            value = self._student._call(name, args, kwargs)
            peak_mb = (_status("VmHWM") - before) / (1 << 20)
            if peak_mb > self._memory_mb:
                raise GradingFailure(Reason.MEMORY_OVER_LIMIT.korean(name=name, peak_mb=peak_mb,
                                                                     memory_mb=self._memory_mb))
            return value
        return call


def run(assignment: str, ns: dict, seed: int = 20240611, record: list | None = None, select: str | None = None):
    """The graders' session (``plugin.GradingSession``) of ``ns``, run as ``grade.run_graders`` runs it; ``select``:
    a pytest ``-k`` expression."""
    return run_graders(assignment, InProcessStudent(ns, record, assignment), seed, select)


def grade(assignment: str, ns: dict, seed: int = 20240611, record: list | None = None) -> dict:
    """Run the assignment's hidden graders against ``ns``: ``{exercise: (score, max_score, diagnosis ids)}``."""
    session = run(assignment, ns, seed, record)
    out: dict = {}
    for result in session.results.values():
        score, top, named = out.get(result.exercise, (0.0, 0.0, []))
        named = named + [m.id for m in result.diagnosis if m.id not in named]
        out[result.exercise] = (round(score + (result.points if result.passed else 0.0), 4),
                                round(top + result.points, 4), named)
    if session.internal_errors:
        raise RuntimeError(session.internal_errors)
    return out


def as_float(value):
    return np.asarray(value, np.float64)


class Graders:
    """Some hidden graders of an assignment, collected once and then run many times in this process: for the
    package's own tests that grade many implementations at many seeds, where a pytest session per grading would cost
    more than its tests (~0.1 s a session).

    The collection is a real ``plugin.GradingSession``'s (the same tests, ids, points, and ``rng_for`` per test), and
    each grading calls every selected test function with what the graders' fixtures give (``student``, ``rng``,
    ``seed``) and its parameters, in the collected order, with one ``InProcessStudent`` for the whole grading (as a
    session has one). A failure is read by the plugin's own ``GradingSession._message``; any exception but a failure
    is an error of the graders and is raised. ``same_as_session``
    compares one grading with a real session's.

    Example::

        graders = Graders("decoder", "next_token_probs")
        graders.grade(namespace(code), seed=3)   # {exercise: (score, max_score, diagnosis ids)}
    """

    FIXTURES = ("student", "rng", "seed")

    def __init__(self, assignment: str, select: str):
        import contextlib
        import io

        import pytest

        from autograder.grade import GRADERS, IMPORT_MODE
        from autograder.graders.plugin import GradingSession

        class Collector:
            items: list = []

            def pytest_collection_finish(self, session):
                Collector.items = list(session.items)

        self.assignment, self.select = assignment, select
        session = GradingSession(None, 0)
        args = [str(GRADERS / assignment), "-c", str(GRADERS / "pytest.ini"), "--rootdir", str(GRADERS),
                "--disable-plugin-autoload", "-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:warnings",
                "-p", "no:logging", "-p", "no:unraisableexception", "-p", "no:threadexception", "--assert=plain",
                f"--import-mode={IMPORT_MODE}", "--collect-only", "-k", select]
        with contextlib.redirect_stdout(io.StringIO()) as out:
            code = pytest.main(args, plugins=[session, Collector()])
        if code != pytest.ExitCode.OK or not Collector.items:
            raise RuntimeError(f"no graders of {assignment!r} selected by {select!r}: {out.getvalue()[-2000:]}")
        self.tests = []
        for item in Collector.items:
            unknown = set(item.fixturenames) - set(self.FIXTURES) - set(getattr(item, "callspec", None) and
                                                                          item.callspec.params or {}) - {"request"}
            if unknown:
                raise RuntimeError(f"{item.nodeid}: fixtures this runner does not give: {sorted(unknown)}")
            params = dict(item.callspec.params) if hasattr(item, "callspec") else {}
            self.tests.append((item.nodeid, item.function, [f for f in self.FIXTURES if f in item.fixturenames],
                               params, session.results[item.nodeid], item))
        self.modules = {item.module for item in Collector.items}

    def run(self, ns: dict, seed: int) -> dict:
        """``{nodeid: (passed, message, diagnosis ids)}`` of one grading of ``ns``."""
        import pytest

        from autograder.graders.plugin import GradingSession

        student = InProcessStudent(ns, assignment=self.assignment)
        session = GradingSession(student, seed)
        out = {}
        for nodeid, function, fixtures, params, _, item in self.tests:
            given = {"student": student, "rng": session.rng_for(nodeid), "seed": seed}
            try:
                function(**{f: given[f] for f in fixtures}, **params)
            except (AssertionError, pytest.skip.Exception) as failure:   # GradingFailure is an AssertionError
                message, found = session._message(pytest.ExceptionInfo.from_exception(failure), item)
                out[nodeid] = (False, message, [m.id for m in found])
            else:
                out[nodeid] = (True, "", [])
        return out

    def grade(self, ns: dict, seed: int) -> dict:
        """``{exercise: (score, max_score of the selected tests, diagnosis ids)}``, as ``grade`` adds them up."""
        results, out = self.run(ns, seed), {}
        for nodeid, _, _, _, result, _ in self.tests:
            passed, _, ids = results[nodeid]
            score, top, named = out.get(result.exercise, (0.0, 0.0, []))
            out[result.exercise] = (round(score + (result.points if passed else 0.0), 4),
                                    round(top + result.points, 4), named + [i for i in ids if i not in named])
        return out

    def same_as_session(self, ns: dict, seed: int) -> bool:
        """One grading here gives what a real session of the same tests gives (``run``): each test's outcome,
        message and diagnosis."""
        results = run(self.assignment, ns, seed, select=self.select).results
        real = {nodeid: (bool(results[nodeid].passed), results[nodeid].message,
                         [m.id for m in results[nodeid].diagnosis]) for nodeid, *_ in self.tests}
        return real == self.run(ns, seed)

    @contextmanager
    def inputs_shared(self, *names):
        """While open, the grader modules' functions ``names`` (each drawing a test's inputs from the ``rng`` it is
        given first) compute each result once: a second call with a generator in the same state returns the same
        result and leaves the generator where the first call left it. Every grading of one seed then shares its
        inputs' computation, not only their values."""
        saved = []
        for module in self.modules:
            for name in names:
                if hasattr(module, name):
                    saved.append((module, name, getattr(module, name)))
                    setattr(module, name, _shared(getattr(module, name)))
        try:
            yield
        finally:
            for module, name, function in saved:
                setattr(module, name, function)


def _shared(function):
    memo = {}

    def shared(rng, *args, **kwargs):
        key = (repr(rng.bit_generator.state), args, tuple(sorted(kwargs.items())))
        if key not in memo:
            memo[key] = (function(rng, *args, **kwargs), rng.bit_generator.state)
        value, after = memo[key]
        rng.bit_generator.state = after
        return value

    return shared
