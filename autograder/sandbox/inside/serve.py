"""The untrusted side's service: runs a submission's code cells and answers the grader's calls with plain values.

It runs inside the sandbox (``python -I FOLDER/inside ...``, see ``__main__``) and imports nothing from
``autograder`` (the hidden graders are not even visible there). Whatever this process sends back is treated as the
student's answer and nothing more: no object, no code and no verdict crosses the boundary.
"""
import builtins as _builtins_module

# This module's own copy of the builtins, taken before any student code runs: a cell that patches ``builtins.any``,
# ``abs``, ``__import__``... changes the student's code, not the guard, the proxies or the wire format (a function
# looks its builtins up in its module's ``__builtins__``).
__builtins__ = dict(vars(_builtins_module))

import io  # noqa: E402
import json
import linecache
import resource
import signal
import sys
import time
import traceback

import numpy as np

from .memory import allow_more
from .monitor import guard, watch_scipy
from .observed import Observed
from .proxies import Isolated
from .values import Handles, capture, decode_request, encode, student_value, to_numpy
from .wire import MAX_HEADER, read_frame, write_frame


class _memory_allowance:
    """Lower this process's soft address-space limit to what it holds now plus ``mb`` MiB for one call.

    The grader also measures the call's peak resident memory from outside, so raising the soft limit again from
    the student's code gains nothing.
    """

    def __init__(self, mb):
        self.mb, self.saved = mb, None

    def __enter__(self):
        if self.mb:
            self.saved = allow_more(int(self.mb) * (1 << 20))

    def __exit__(self, *exc):
        if self.saved is not None:
            resource.setrlimit(resource.RLIMIT_AS, self.saved)


class Timeout(BaseException):
    """Raised inside a graded call that ran past its limit (a BaseException: ``except Exception`` lets it pass); the
    reply's error is its name, which the grader reads as ``errors.Failure.TIMEOUT``."""


def _on_alarm(signum, frame):
    raise Timeout("time limit")


class _time_limit:
    """``limit`` seconds of wall time for one call (SIGALRM), or nothing when the grader gives no limit."""

    def __init__(self, limit):
        self.limit = limit

    def __enter__(self):
        if self.limit:
            signal.signal(signal.SIGALRM, _on_alarm)
            signal.setitimer(signal.ITIMER_REAL, float(self.limit))

    def __exit__(self, *exc):
        if self.limit:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_IGN)


def _error(exc):
    try:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith("<cell")]
    except PermissionError:  # the traceback passes through the guard's frames, which the audit hook keeps closed
        frames = []
    where = [f"{f.filename} {f.lineno}번째 줄: {f.line}"[:500] for f in frames[-3:]]
    return {"ok": False, "error": type(exc).__name__, "message": str(exc)[:2000], "where": where}


def _fits(reply) -> bool:
    """Whether ``reply``'s JSON header is within what the grader reads (``wire.MAX_HEADER``: it refuses a longer one
    and ends the process). One that is not JSON at all is left to ``write_frame`` to refuse (an error reply)."""
    try:
        return len(json.dumps(reply, ensure_ascii=False).encode("utf-8")) + 64 <= MAX_HEADER
    except (TypeError, ValueError):
        return True


def _fitted(reply):
    """``reply``, or what is sent in its place when its header would be too long: a cell's status without its
    outputs (a note says so), any other reply as an error that says why."""
    if _fits(reply):
        return reply
    if "outputs" in reply:
        note = "... (이 셀의 출력이 너무 커서 생략했습니다)\n"
        slim = {**reply, "outputs": [{"output_type": "stream", "name": "stderr", "text": note}]}
        if _fits(slim):
            return slim
    return {"ok": False, "error": "ValueError", "id": reply.get("id"),
            "message": "값이 너무 큽니다 (JSON으로 1 MiB 초과): 숫자가 많으면 numpy 배열로 반환하세요."}


def _names(namespace):
    """The names the notebook defined, for the grader: plain ``str`` keys only (a key of a ``str`` subclass could run
    the student's code in ``startswith`` or in the sort's comparisons, and is no name a grader looks up), shortest
    first up to 512 KiB of them (a notebook with countless globals cannot make the reply too long), sorted."""
    names = [k for k in list(namespace) if type(k) is str and not str.startswith(k, "_")]
    names.sort(key=len)
    kept, size = [], 0
    for name in names:
        size += len(name.encode("utf-8", "replace")) + 4
        if size > MAX_HEADER // 2:
            break
        kept.append(name)
    return sorted(kept)


class _Stream(io.TextIOBase):
    """A capped text buffer standing in for stdout/stderr while a cell runs."""

    def __init__(self, limit):
        self.parts, self.size, self.limit, self.dropped = [], 0, limit, 0

    def writable(self):
        return True

    def write(self, text):
        text = str(text)
        room = self.limit - self.size
        if room > 0:
            self.parts.append(text[:room])
            self.size += min(len(text), room)
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def value(self):
        text = "".join(self.parts)
        return text + (f"\n... ({self.dropped}자 생략)\n" if self.dropped else "")


def _figures():
    """PNG images of the open matplotlib figures (then closed), for the executed notebook."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    images = []
    for number in plt.get_fignums():
        buf = io.BytesIO()
        try:
            plt.figure(number).savefig(buf, format="png", dpi=72, bbox_inches="tight")
            import base64

            images.append(base64.b64encode(buf.getvalue()).decode("ascii"))
        except Exception:  # noqa: BLE001 - a broken figure is not a reason to stop
            pass
    plt.close("all")
    return images


def run_cell(index, source, namespace, capture=None):
    """Run one cell; with ``capture`` (a byte limit) also return its outputs in nbformat's shape."""
    name = f"<cell {index}>"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    status, outputs, value = {"ok": True}, [], None
    out = err = None
    saved = sys.stdout, sys.stderr
    if capture:
        out, err = _Stream(capture), _Stream(capture)
        sys.stdout, sys.stderr = out, err
    try:
        import ast

        tree = ast.parse(source, name)
        last = tree.body.pop() if capture and tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, name, "exec"), namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), name, "eval"), namespace)
    except BaseException as exc:  # noqa: BLE001 - a cell may raise anything, SystemExit included
        status = _error(exc)
    finally:
        sys.stdout, sys.stderr = saved
    if capture:
        for stream, buf in (("stdout", out), ("stderr", err)):
            if buf.value():
                outputs.append({"output_type": "stream", "name": stream, "text": buf.value()})
        if value is not None and status["ok"]:
            try:
                text = repr(value)[:capture]
            except BaseException:  # noqa: BLE001
                text = f"<{type(value).__name__}>"
            outputs.append({"output_type": "execute_result", "text": text})
        outputs += [{"output_type": "display_data", "png": png} for png in _figures()]
        if not status["ok"]:
            outputs.append({"output_type": "error", "ename": status["error"], "evalue": status["message"],
                            "traceback": status.get("where", [])})
        status["outputs"] = outputs
    return status


def serve(request_fd, response_fd, event_fd):
    """Answer requests until the grader closes the pipe: ``run`` a cell, ``names`` defined, ``call``, ``get``...

    Library routines that the forbidden-routine rule watches are reported on ``event_fd`` as they run (``guard``);
    the grader counts what arrives while a call is in flight against that call."""
    import types

    main = types.ModuleType("__main__")  # the notebook's own __main__: this module stays out of its reach
    namespace = main.__dict__
    namespace["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    capture()   # torch's tensor types and their converters, before any student code runs
    emit, scipy_watched = guard(event_fd, handlers=(_on_alarm,)), []
    audit = sys.audit   # a local, bound before any student code runs (a cell may replace ``sys.audit``)
    audit("autograder.arm")  # from here on the audit hook refuses fork, ctypes, gc walks, tracing, frames
    handles = Handles()
    other = student_value(handles)   # how this process sends what is not plain data: arrays, and handles of objects
    while True:
        try:
            header, arrays = read_frame(request_fd)
        except EOFError:
            return
        out_arrays, isolated = [], None
        try:
            op = header["op"]
            if op == "run":
                watch_scipy(emit, scipy_watched)  # what earlier cells imported, before later cells keep references
                status = run_cell(header["index"], header["source"], namespace, header.get("capture"))
                write_frame(response_fd, _fitted({**status, "id": header.get("id")}))
                continue
            if op == "names":
                with _time_limit(header.get("limit")):   # no student code is called; a finalizer might run
                    names = _names(namespace)
                write_frame(response_fd, {"ok": True, "names": names, "id": header.get("id")})
                continue
            target = header.get("target")
            obj = handles.objects[target["h"]] if isinstance(target, dict) else namespace.get(target, _MISSING)
            if obj is _MISSING:
                reply = {"ok": False, "error": "Missing", "message": target}
            elif op in ("get", "getattr", "len"):
                # within the request's limit: an attribute or a length may be the student's code (a property,
                # ``__len__``); a value's conversion calls none (``values.to_numpy``: exact types only)
                with _time_limit(header.get("limit")):
                    reply = _look(op, obj, header, out_arrays, other)
            elif op == "call":
                fn = getattr(obj, header["method"]) if header.get("method") else obj
                args = decode_request(header.get("args", {"l": []}), arrays, handles)
                kwargs = decode_request(header.get("kwargs", {"d": {}}), arrays, handles)
                start = time.perf_counter()
                isolated = Isolated(namespace, header.get("isolate") or (), request_fd, response_fd)
                observed = Observed(namespace, header.get("observe") or ())
                # A call past its limit is interrupted here (SIGALRM: Timeout), so a hung function costs its
                # time and not the process; one that stops the alarm is killed by the grader a moment later.
                with _memory_allowance(header.get("memory_mb")), isolated, observed, \
                        _time_limit(header.get("limit")):
                    value = fn(*args, **kwargs)
                    seconds = time.perf_counter() - start
                    # converted here, before the reply and within the call's limit: a value that calls a library
                    # routine when converted does so while the call is still in flight for the grader
                    value = encode(value, out_arrays, other)
                    # what the watched instances hold (their own code runs: within the limit, in flight too)
                    held = encode(observed.report(), out_arrays, other) if header.get("observe") else None
                reply = {"ok": True, "value": value, "seconds": seconds, "asked": sorted(isolated.asked)}
                # the library still as the guard found it (``monitor.verifier``): a change, made by a cell or by
                # this call, costs this call and every later one
                audit("autograder.verify")
                if held is not None:
                    reply["observed"] = held
            else:
                reply = {"ok": False, "error": "Protocol", "message": f"unknown op {op!r}"}
        except BaseException as exc:  # noqa: BLE001
            out_arrays = []
            reply = _error(exc)
            if isolated is not None:
                reply["asked"] = sorted(isolated.asked)
        reply["id"] = header.get("id")   # the grader matches each reply to its request by this number
        if not _fits(reply):
            reply, out_arrays = _fitted(reply), []
        try:
            write_frame(response_fd, reply, out_arrays)
        except (TypeError, ValueError) as exc:
            write_frame(response_fd, {"ok": False, "error": type(exc).__name__, "message": str(exc),
                                      "id": header.get("id")})


def _look(op, obj, header, out_arrays, other):
    """The reply to ``get`` (a value), ``getattr`` (an attribute's value, or that it is a method) or ``len``."""
    if op == "get":
        return {"ok": True, "value": encode(obj, out_arrays, other)}
    if op == "len":
        return {"ok": True, "value": encode(len(obj), out_arrays, other)}
    value = getattr(obj, header["attr"])
    if callable(value) and not issubclass(type(value), np.ndarray) and to_numpy(value) is None:
        return {"ok": True, "value": None, "callable": True}
    return {"ok": True, "value": encode(value, out_arrays, other)}


_MISSING = object()
