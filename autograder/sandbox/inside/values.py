"""Python values in the wire format, both ways: the one codec of the student's process and of the grader.

Values inside a frame's header are JSON, with arrays as ``{"a": i}`` (index into the frame's arrays), tuples as
``{"t": [...]}``, lists as ``{"l": [...]}``, dicts as ``{"d": {...}}``, non-finite floats as ``{"f": "nan"}``
objects that stay in the student's process as ``{"h": id, "type": name}``, and a ``numpy.random.Generator`` the grader
seeds as ``{"g": state}`` (its PCG64 bit generator's state: the student's code draws from a generator in the same
state as the grader's own, so a sampled result can be compared exactly).

``encode`` and ``decode`` are that format; each side says only what it does with what is not plain data. The
student's process (``serve``, ``proxies``) sends numpy arrays of whatever tensor the student returned
(``to_numpy``) and handles of its other objects (``Handles``), and resolves the handles it is sent; the grader
(``autograder.sandbox.remote``, which imports this module as ``autograder.sandbox.inside.values``) sends its own
arrays, numpy scalars as Python numbers and the handles it holds, and takes back numeric arrays only.
"""
import builtins as _builtins_module

# This module's own copy of the builtins, taken before any student code runs: a cell that patches ``builtins.any``,
# ``abs``, ``__import__``... changes the student's code, not the guard, the proxies or the wire format (a function
# looks its builtins up in its module's ``__builtins__``).
__builtins__ = dict(vars(_builtins_module))

import math  # noqa: E402
import sys

import numpy as np

MAX_DEPTH = 8   # containers in containers, at most (a deeper value is refused)


class UnknownValue(ValueError):
    """A wire value that is none of the format's: a dict without a known tag, or not a JSON scalar."""


class Handles:
    """Objects that stay on this side (a student's KVCache, say), named by small integers."""

    def __init__(self):
        self.objects = {}

    def add(self, obj):
        key = len(self.objects) + 1
        self.objects[key] = obj
        return key


_NUMPY_SCALARS = frozenset(np.sctypeDict.values())
_TORCH = {}   # torch's exact tensor types and the C methods that convert one (``capture``)


def capture():
    """Take torch's tensor types and the C methods of its tensor base that convert one, before any student code runs
    (``serve`` calls it first): a cell that replaces ``torch.Tensor``, its methods or ``keras.Variable`` later changes
    nothing here. Keras's variables of the torch backend are converted through their torch value."""
    torch = sys.modules.get("torch")
    if torch is None or _TORCH:
        return
    base = torch._C.TensorBase
    _TORCH.update(types=(torch.Tensor, torch.nn.Parameter), off=torch._C.DisableTorchFunction, detach=base.detach,
                  cpu=base.cpu, numpy=base.numpy, to_float=base.float, is_floating=base.is_floating_point,
                  element_size=base.element_size)
    backend = sys.modules.get("keras.src.backend")
    if backend is not None and getattr(backend, "backend", lambda: "")() == "torch":
        _TORCH.update(keras_variable=backend.Variable, keras_value=backend.Variable.value.fget)


def to_numpy(value):
    """A tensor-like value as a plain numpy array (or None when it is not one), without calling any of the student's
    code: only exact types are converted (a numpy array or a subclass, viewed as a plain array: none of its methods
    is called; numpy's own scalar types; torch's ``Tensor`` and ``Parameter`` and keras's torch-backend
    ``Variable``, through the methods ``capture`` took, with torch functions and tensor subclasses switched off).
    Anything else, whatever its module or its methods say, is not an array here."""
    kind = type(value)
    if issubclass(kind, np.ndarray):   # (a type's MRO, never ``__class__`` or ``__instancecheck__``)
        return np.array(np.ndarray.view(value, np.ndarray), copy=True)
    if kind in _NUMPY_SCALARS:
        return np.array(value)
    if not _TORCH:
        capture()   # (a process whose torch was not imported before its cells: the grading lanes' always is)
        if not _TORCH:
            return None
    if kind is _TORCH.get("keras_variable"):
        with _TORCH["off"]():
            value = _TORCH["keras_value"](value)
        kind = type(value)
    if kind in _TORCH["types"]:
        with _TORCH["off"]():
            t = _TORCH["detach"](value)
            if _TORCH["is_floating"](t) and _TORCH["element_size"](t) < 4:
                t = _TORCH["to_float"](t)
            return np.array(_TORCH["numpy"](_TORCH["cpu"](t)), copy=True)
    return None


def encode(value, arrays, other, depth=0):
    """``value`` in the wire format, its arrays appended to ``arrays``.

    Plain data (None, bool, int, float, str, and tuples, lists and dicts with str keys of plain data) is encoded
    here; anything else is ``other(value, arrays)``'s to encode: an array, a tensor, an object (each side's own).
    """
    if depth > MAX_DEPTH:
        raise ValueError("값이 너무 깊게 중첩되어 있습니다")
    if value is None or type(value) in (bool, str, int):
        return value
    if type(value) is float:
        return value if math.isfinite(value) else {"f": repr(value)}
    if type(value) is tuple:
        return {"t": [encode(v, arrays, other, depth + 1) for v in value]}
    if type(value) is list:
        return {"l": [encode(v, arrays, other, depth + 1) for v in value]}
    if type(value) is dict and all(type(k) is str for k in value):
        return {"d": {k: encode(v, arrays, other, depth + 1) for k, v in value.items()}}
    return other(value, arrays)


def decode(value, array, handle):
    """A wire value as Python values: ``array(i)`` gives the frame's i-th array, ``handle(h, type_name)`` the
    object a handle names. Raises ``UnknownValue`` for anything the format does not have."""
    if isinstance(value, dict):
        if "a" in value:
            return array(int(value["a"]))
        if "t" in value:
            return tuple(decode(v, array, handle) for v in value["t"])
        if "l" in value:
            return [decode(v, array, handle) for v in value["l"]]
        if "d" in value:
            return {str(k): decode(v, array, handle) for k, v in value["d"].items()}
        if "f" in value:
            return float(value["f"])
        if "h" in value:
            return handle(int(value["h"]), str(value.get("type", "object")))
        if "g" in value:
            return generator(decode(value["g"], array, handle))
        raise UnknownValue("a dict without a known tag")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise UnknownValue(f"a value of type {type(value).__name__}")


BIT_GENERATORS = ("PCG64",)   # the bit generators a sent generator may have (numpy's default)


def generator(state):
    """A ``numpy.random.Generator`` in ``state`` (a ``bit_generator.state`` dict); ``UnknownValue`` for another."""
    if not isinstance(state, dict) or state.get("bit_generator") not in BIT_GENERATORS:
        raise UnknownValue("a generator of an unknown kind")
    bits = getattr(np.random, state["bit_generator"])()
    try:
        bits.state = state
    except (TypeError, ValueError, KeyError) as exc:
        raise UnknownValue(f"a generator state numpy refuses: {exc}") from None
    return np.random.Generator(bits)


# ----------------------------------------------------------------------------------------------- the student's side
def student_value(handles):
    """``encode``'s ``other`` in the student's process: a tensor-like value as a numeric array, any other object
    kept here under a handle (``handles.add``)."""
    def other(value, arrays):
        array = to_numpy(value)
        if array is not None:
            if array.dtype.kind not in "biuf":
                raise TypeError(f"숫자 배열이 아닙니다 (dtype={array.dtype})")
            arrays.append(array)
            return {"a": len(arrays) - 1}
        return {"h": handles.add(value), "type": type(value).__name__}
    return other


def decode_request(value, arrays, handles):
    """A request's arguments (or the grader's answer to a proxy) as Python values: arrays and handles resolved."""
    return decode(value, arrays.__getitem__, lambda h, _type: handles.objects[h])
