"""Python values in the wire format: what the student's process sends back and what it is sent.

Values inside a frame's header are JSON, with arrays as ``{"a": i}`` (index into the frame's arrays), tuples as
``{"t": [...]}``, lists as ``{"l": [...]}``, dicts as ``{"d": {...}}``, non-finite floats as ``{"f": "nan"}``
and objects that stay in the student's process as ``{"h": id, "type": name}``.
"""
import builtins as _builtins_module

# This module's own copy of the builtins, taken before any student code runs: a cell that patches ``builtins.any``,
# ``abs``, ``__import__``... changes the student's code, not the guard, the proxies or the wire format (a function
# looks its builtins up in its module's ``__builtins__``).
__builtins__ = dict(vars(_builtins_module))

import numpy as np  # noqa: E402


class Handles:
    """Objects that stay on this side (a student's KVCache, say), named by small integers."""

    def __init__(self):
        self.objects = {}

    def add(self, obj):
        key = len(self.objects) + 1
        self.objects[key] = obj
        return key


def to_numpy(value):
    """A tensor-like value as a plain numpy array (or None when it is not one)."""
    if isinstance(value, np.ndarray):
        return np.array(value, copy=True, subok=False)
    if isinstance(value, np.generic):
        return np.array(value)
    module = type(value).__module__ or ""
    if module.startswith("torch") and hasattr(value, "detach"):
        t = value.detach().cpu()
        if t.dtype.is_floating_point and t.element_size() < 4:
            t = t.float()
        return np.array(t.numpy(), copy=True)
    if module.startswith(("keras", "tensorflow", "jax")):
        import keras

        return np.array(keras.ops.convert_to_numpy(value), copy=True)
    return None


def encode(value, arrays, handles, depth=0):
    """Turn a student's value into the wire format (arrays appended to ``arrays``)."""
    if depth > 8:
        raise ValueError("값이 너무 깊게 중첩되어 있습니다")
    if value is None or type(value) in (bool, str):
        return value
    if type(value) is int:
        return value
    if type(value) is float:
        return value if np.isfinite(value) else {"f": repr(value)}
    array = to_numpy(value)
    if array is not None:
        if array.dtype.kind not in "biuf":
            raise TypeError(f"숫자 배열이 아닙니다 (dtype={array.dtype})")
        arrays.append(array)
        return {"a": len(arrays) - 1}
    if type(value) is tuple:
        return {"t": [encode(v, arrays, handles, depth + 1) for v in value]}
    if type(value) is list:
        return {"l": [encode(v, arrays, handles, depth + 1) for v in value]}
    if type(value) is dict and all(type(k) is str for k in value):
        return {"d": {k: encode(v, arrays, handles, depth + 1) for k, v in value.items()}}
    return {"h": handles.add(value), "type": type(value).__name__}


def decode(value, arrays, handles):
    """Turn a request's arguments into Python values (arrays, handles resolved)."""
    if isinstance(value, dict):
        if "a" in value:
            return arrays[value["a"]]
        if "t" in value:
            return tuple(decode(v, arrays, handles) for v in value["t"])
        if "l" in value:
            return [decode(v, arrays, handles) for v in value["l"]]
        if "d" in value:
            return {k: decode(v, arrays, handles) for k, v in value["d"].items()}
        if "f" in value:
            return float(value["f"])
        if "h" in value:
            return handles.objects[value["h"]]
    return value

