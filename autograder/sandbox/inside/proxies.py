"""Proxies for the other contract functions during one graded call: they ask the grader for the reference result."""
import builtins as _builtins_module

# This module's own copy of the builtins, taken before any student code runs: a cell that patches ``builtins.any``,
# ``abs``, ``__import__``... changes the student's code, not the guard, the proxies or the wire format (a function
# looks its builtins up in its module's ``__builtins__``).
__builtins__ = dict(vars(_builtins_module))

import json  # noqa: E402
import signal
import sys

import numpy as np

from .values import decode_request, encode, student_value, to_numpy
from .wire import MAX_HEADER, read_frame, write_frame


class _NotPlain(Exception):
    """An argument that is not plain data (numbers, arrays, tensors, lists of them): the student's own function runs."""


class _NoHandles:
    def add(self, obj):
        raise _NotPlain(type(obj).__name__)


def _plain(value, depth=0):
    """A proxy's argument as plain data for the grader (tensors as numpy arrays), or ``_NotPlain``."""
    if depth > 8:
        raise _NotPlain("too deep")
    if value is None or type(value) in (bool, int, float, str):
        return value
    try:
        array = to_numpy(value)
    except Exception:  # noqa: BLE001 - a tensor-like object that cannot be converted is not plain data
        raise _NotPlain(type(value).__name__) from None
    if array is not None:
        if array.dtype.kind not in "biuf":
            raise _NotPlain(str(array.dtype))
        return array
    if type(value) in (tuple, list):
        return type(value)(_plain(v, depth + 1) for v in value)
    if type(value) is dict and all(type(k) is str for k in value):
        return {k: _plain(v, depth + 1) for k, v in value.items()}
    raise _NotPlain(type(value).__name__)


# Answers kept in float64 whatever the caller's dtype: probabilities to draw from (a float32 row of them does not
# sum to 1 in float64, and numpy's random choice refuses it with an error that blames the student's code).
FULL_PRECISION = frozenset({"next_token_probs"})


def _like(value, args, kwargs, full_precision=False):
    """The grader's answer (numpy, float64) in the caller's kind: a torch tensor of the first tensor argument's
    floating dtype and device when the arguments are torch (or Keras) tensors, numpy of the first float array's
    dtype when they are numpy (``full_precision``: float64 in either kind); integer and boolean results keep their
    dtype."""
    torch = sys.modules.get("torch")
    kind, floating, device = None, None, None
    for arg in list(args) + list(kwargs.values()):
        if torch is not None and isinstance(arg, torch.Tensor):
            kind = kind or "torch"
            if kind == "torch" and floating is None and arg.is_floating_point():
                floating, device = arg.dtype, arg.device
            device = device or arg.device
        elif (type(arg).__module__ or "").startswith("keras") and hasattr(arg, "dtype"):
            kind = kind or "torch"
        elif isinstance(arg, np.ndarray):
            kind = kind or "numpy"
            if kind == "numpy" and floating is None and arg.dtype.kind == "f":
                floating = arg.dtype

    if full_precision:
        floating = torch.float64 if kind == "torch" else np.dtype(np.float64) if kind == "numpy" else floating

    def convert(v):
        if isinstance(v, (tuple, list)):
            return type(v)(convert(x) for x in v)
        if not isinstance(v, np.ndarray):
            return v
        if kind == "torch":
            t = torch.from_numpy(np.ascontiguousarray(v))
            if v.dtype.kind == "f":
                t = t.to(floating if floating is not None else torch.get_default_dtype())
            return t.to(device) if device is not None else t
        if kind == "numpy" and floating is not None and v.dtype.kind == "f":
            return v.astype(floating)
        return v

    return convert(value)


_BUILTIN_ERRORS = {"ValueError": ValueError, "TypeError": TypeError, "IndexError": IndexError,
                   "KeyError": KeyError, "ZeroDivisionError": ZeroDivisionError}


class Isolated:
    """For one graded call, each other contract function the grader names (``isolate``) is replaced in the
    notebook's namespace by a proxy that asks the grader for its reference result, so that an exercise is judged
    on its own logic; the student's originals are put back afterwards.

    A proxy writes a ``callback`` frame on the response pipe and reads the grader's answer from the request pipe
    (the grader answers while it waits for the call's reply). The reference never enters this process: only the
    answer for these arguments does, and the grader answers only the names it allowed for the call in flight (a
    proxy kept for later is refused). Arguments that are not plain data, or that the reference cannot take (the
    grader says ``fallback``), run the student's own function. Only plain functions are replaced (a class such as
    ``KVCache`` stays the student's).
    """

    def __init__(self, namespace, names, request_fd, response_fd):
        import threading
        import types

        self.namespace, self.request_fd, self.response_fd = namespace, request_fd, response_fd
        self.originals = {name: namespace[name] for name in names
                          if isinstance(namespace.get(name), types.FunctionType)}
        self.proxies = {}
        self.asked = set()
        self.active = False
        self.lock = threading.Lock()

    def __enter__(self):
        self.active = True
        for name, original in self.originals.items():
            self.proxies[name] = self.namespace[name] = self._proxy(name, original)
        return self

    def __exit__(self, *exc):
        with self.lock:
            self.active = False
        for name, original in self.originals.items():
            if self.namespace.get(name) is self.proxies.get(name):
                self.namespace[name] = original

    def _proxy(self, name, original):
        ask = self._ask

        def proxy(*args, **kwargs):
            return ask(name, original, args, kwargs)

        proxy.__name__ = proxy.__qualname__ = name
        proxy.__doc__ = original.__doc__
        return proxy

    def _ask(self, name, original, args, kwargs):
        try:
            plain_args, plain_kwargs = _plain(list(args)), _plain(dict(kwargs))
        except _NotPlain:
            return original(*args, **kwargs)
        arrays = []
        plain = student_value(_NoHandles())
        header = {"op": "callback", "name": name, "args": encode(plain_args, arrays, plain),
                  "kwargs": encode(plain_kwargs, arrays, plain)}
        if len(json.dumps(header, ensure_ascii=False).encode("utf-8")) > MAX_HEADER:
            return original(*args, **kwargs)   # (long lists of numbers) the grader would refuse the question
        with self.lock:
            if not self.active:
                raise RuntimeError(f"{name}: 채점 중인 호출 밖에서는 이 대리 함수를 쓸 수 없습니다.")
            # the question and its answer are never cut apart by the time limit (it lands right after)
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            try:
                write_frame(self.response_fd, header, arrays)
                answer, out = read_frame(self.request_fd)
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if answer.get("fallback"):
            return original(*args, **kwargs)
        if not answer.get("ok"):
            raise _BUILTIN_ERRORS.get(answer.get("error"), RuntimeError)(answer.get("message", ""))
        self.asked.add(name)
        return _like(decode_request(answer.get("value"), out, None), args, kwargs, name in FULL_PRECISION)

