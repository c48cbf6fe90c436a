"""The untrusted side: runs a submission's code cells and answers the grader's calls with plain values.

This file runs inside the sandbox as ``python -I worker.py REQUEST_FD RESPONSE_FD EVENT_FD`` and imports nothing from
``autograder`` (the hidden graders are not even visible there). It is also imported by the trusted side for
the wire format alone (``write_frame``/``read_frame``), which is plain data: a JSON header and ``.npy`` arrays
read with ``allow_pickle=False``. Whatever this process sends back is treated as the student's answer and
nothing more: no object, no code and no verdict crosses the boundary.

Wire format of one frame::

    8 bytes  total length N (big endian)
    4 bytes  header length H, then H bytes of UTF-8 JSON
    repeated: 8 bytes array length, then one .npy file

Values inside the header are JSON, with arrays as ``{"a": i}`` (index into the frame's arrays), tuples as
``{"t": [...]}``, lists as ``{"l": [...]}``, dicts as ``{"d": {...}}``, non-finite floats as ``{"f": "nan"}``
and objects that stay in the worker as ``{"h": id, "type": name}``.
"""
import builtins as _builtins_module

# This file's own copy of the builtins, taken before any student code runs: a cell that patches ``builtins.any``,
# ``abs``, ``__import__``... changes the student's code, not the guard, the proxies or the wire format below (a
# function looks its builtins up in its module's ``__builtins__``).
__builtins__ = dict(vars(_builtins_module))

import io  # noqa: E402
import json
import linecache
import os
import signal
import struct
import sys
import time
import traceback

import numpy as np

MAX_FRAME = 1 << 30        # the worker's own bound on what the grader sends it (trusted inputs)
MAX_DEPTH = 32             # nesting of a header's JSON values (lists in lists ...)
MAX_ARRAYS = 256           # arrays in one frame
MAX_NDIM = 8               # axes of one array


class FrameError(ValueError):
    """A frame that breaks the wire format or its limits; the message says what (English, for the log)."""


class FrameTooBig(FrameError):
    """A frame longer than the reader's limit (nothing of it was read but its length)."""

    def __init__(self, size, limit):
        super().__init__(f"frame of {size} bytes is over the limit of {limit}")
        self.size, self.limit = size, limit


# ----------------------------------------------------------------------------------------------- wire format
def write_frame(fd, header, arrays=(), deadline=None):
    """Write one frame; with ``deadline`` (the grader's side, a non-blocking pipe) never block past it."""
    parts = []
    head = json.dumps(header, ensure_ascii=False).encode("utf-8")
    parts.append(struct.pack(">I", len(head)) + head)
    for array in arrays:
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.ascontiguousarray(array).reshape(np.shape(array)), allow_pickle=False)
        data = buf.getvalue()
        parts.append(struct.pack(">Q", len(data)) + data)
    payload = b"".join(parts)
    data = struct.pack(">Q", len(payload)) + payload
    view = memoryview(data)
    while view:
        if deadline is not None:
            _wait(fd, deadline, write=True)
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            continue
        view = view[n:]


def _wait(fd, deadline, write=False):
    """Wait until ``fd`` is ready (readable, or writable) or raise TimeoutError at ``deadline``."""
    import select

    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("no answer in time")
    ready = select.select([], [fd], [], left)[1] if write else select.select([fd], [], [], left)[0]
    if not ready:
        raise TimeoutError("no answer in time")


def _read_exact(fd, n, deadline=None):
    """Exactly ``n`` bytes (the caller checked ``n`` against its limit first), one buffer allocated once."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        if deadline is not None:
            _wait(fd, deadline)
        count = os.readv(fd, [view[got : got + min(n - got, 1 << 20)]])
        if not count:
            raise EOFError("the other side closed the pipe")
        got += count
    return buf


def read_frame(fd, deadline=None, max_bytes=MAX_FRAME, max_elements=None):
    """One frame, checked before anything is allocated or converted: its length against ``max_bytes``; the header
    (UTF-8 JSON, nesting at most ``MAX_DEPTH``); each array's ``.npy`` header (numeric dtype of at most 8 bytes,
    at most ``MAX_NDIM`` axes, exactly as many data bytes as its shape needs; all arrays together at most
    ``max_elements`` elements). Raises ``FrameError`` for anything else, ``TimeoutError``, ``EOFError``."""
    (length,) = struct.unpack(">Q", bytes(_read_exact(fd, 8, deadline)))
    if length > max_bytes:
        raise FrameTooBig(length, max_bytes)
    payload = _read_exact(fd, length, deadline)
    try:
        return _parse(memoryview(payload), max_elements)
    except FrameError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, struct.error, RecursionError, OverflowError) as exc:
        raise FrameError(f"malformed frame: {type(exc).__name__}: {exc}") from None


def _parse(payload, max_elements):
    if len(payload) < 4:
        raise FrameError(f"frame of {len(payload)} bytes has no header")
    (hlen,) = struct.unpack(">I", payload[:4])
    if 4 + hlen > len(payload):
        raise FrameError(f"header of {hlen} bytes is longer than its frame")
    header = json.loads(bytes(payload[4 : 4 + hlen]).decode("utf-8"))
    if not isinstance(header, dict):
        raise FrameError("the header is not a JSON object")
    _check_depth(header)
    arrays, pos, elements = [], 4 + hlen, 0
    while pos < len(payload):
        if pos + 8 > len(payload) or len(arrays) >= MAX_ARRAYS:
            raise FrameError("too many arrays, or an array's length is cut off")
        (alen,) = struct.unpack(">Q", payload[pos : pos + 8])
        pos += 8
        if alen > len(payload) - pos:
            raise FrameError(f"an array of {alen} bytes is longer than what is left of its frame")
        array = _npy(payload[pos : pos + alen])
        elements += array.size
        if max_elements is not None and elements > max_elements:
            raise FrameError(f"{elements} array elements are over the limit of {max_elements}")
        arrays.append(array)
        pos += alen
    return header, arrays


def _check_depth(value):
    pending = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise FrameError(f"values nested deeper than {MAX_DEPTH}")
        if isinstance(item, dict):
            pending += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list):
            pending += [(v, depth + 1) for v in item]


def _npy(data):
    """A numeric array from one ``.npy`` file's bytes, its header checked before the data is touched."""
    stream = io.BytesIO(data[:4096])   # the magic and the header (a numeric dtype's header is short)
    version = np.lib.format.read_magic(stream)
    if version not in ((1, 0), (2, 0)):
        raise FrameError(f".npy version {version} is not accepted")
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran, dtype = read_header(stream)
    if dtype.kind not in "biuf" or dtype.itemsize > 8 or dtype.fields is not None or dtype.subdtype is not None:
        raise FrameError(f"dtype {dtype} is not a plain numeric type")
    if len(shape) > MAX_NDIM or any(not isinstance(n, int) or n < 0 for n in shape):
        raise FrameError(f"shape {shape} is not accepted")
    count = 1
    for n in shape:
        count *= n
    start = stream.tell()
    if len(data) - start != count * dtype.itemsize:
        raise FrameError(f"array data of {len(data) - start} bytes does not match shape {shape} of {dtype}")
    flat = np.frombuffer(data[start:], dtype=dtype, count=count)
    return flat.reshape(shape, order="F" if fortran else "C").copy(order="K")


# ----------------------------------------------------------------------------------------------- values
class Handles:
    """Objects that stay on this side (a student's KVCache, say), named by small integers."""

    def __init__(self):
        self.objects = {}

    def add(self, obj):
        key = len(self.objects) + 1
        self.objects[key] = obj
        return key


def _to_numpy(value):
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
    array = _to_numpy(value)
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


# ----------------------------------------------------------------------------------------------- guard
# The forbidden-routine rule, enforced where the student's code cannot switch it off (see ``_guard``).
_KERNEL_OPS = {   # aten operator -> what the trusted side calls it (every registered CPU-side kernel is replaced)
    "_softmax": "torch:softmax", "_softmax.out": "torch:softmax", "_safe_softmax": "torch:softmax",
    "_masked_softmax": "torch:softmax", "_sparse_softmax": "torch:softmax",
    "_nested_tensor_softmax_with_shape": "torch:softmax",
    "_log_softmax": "torch:log_softmax", "_log_softmax.out": "torch:log_softmax",
    "_sparse_log_softmax": "torch:log_softmax",
    "scaled_dot_product_attention": "torch:scaled_dot_product_attention",
    "_scaled_dot_product_attention_math": "torch:scaled_dot_product_attention",
    "_scaled_dot_product_flash_attention_for_cpu": "torch:scaled_dot_product_attention",
    "_native_multi_head_attention": "torch:multi_head_attention_forward",
    "_transformer_encoder_layer_fwd": "torch:multi_head_attention_forward",
}
# Kernels that every Python-level library routine of the rule reaches (matrix products, tanh, exp): they report the
# routine when one of its functions is on the calling thread's stack.
_PROBE_OPS = ("mm", "bmm", "baddbmm", "addmm", "mv", "dot", "tanh", "exp")
_KEYS = ("CPU", "SparseCPU", "NestedTensorCPU", "MkldnnCPU", "QuantizedCPU", "CompositeImplicitAutograd",
         "CompositeExplicitAutograd", "FuncTorchBatchedDecomposition", "FuncTorchVmapMode")
_RUNTIME_KEY = {"CompositeImplicitAutograd": "CPU", "CompositeExplicitAutograd": "CPU",
                "FuncTorchBatchedDecomposition": "FuncTorchBatched"}  # alias key -> the key its kernel is read at
_REFUSED = {   # audit events refused to the student's code once its first cell runs
    "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system", "os.exec", "subprocess.Popen", "pty.spawn",
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.cdata", "ctypes.cdata/buffer",
    "ctypes.call_function", "ctypes.string_at", "ctypes.wstring_at", "ctypes.addressof", "ctypes.PyObj_FromPtr",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys.settrace", "sys.setprofile",
    "sys._current_frames", "sys._current_exceptions", "os.add_dll_directory",
}
_FRAME_ATTRS = {"tb_frame", "gi_frame", "cr_frame", "ag_frame"}


def _routine_codes():
    """``{code object: routine}`` of the Python-level library routines of the rule (Keras attention layers and
    their internals, ``keras.ops.dot_product_attention``, torch's ``multi_head_attention_forward`` and the
    softmax/attention decompositions of ``torch._refs``/``torch._decomp``)."""
    import inspect

    found = {}

    def add(obj, label):
        for fn in ([obj] if inspect.isfunction(obj) else
                   [getattr(v, "__func__", v) for v in vars(obj).values()] if inspect.isclass(obj) else []):
            fn = inspect.unwrap(fn) if inspect.isfunction(fn) else fn
            code = getattr(fn, "__code__", None)
            if code is not None:
                found[code] = label

    def module(name):
        return sys.modules.get(name)

    layers = {"keras.src.layers.attention.attention": ("Attention", "keras:layers.Attention"),
              "keras.src.layers.attention.additive_attention": ("AdditiveAttention", "keras:layers.AdditiveAttention"),
              "keras.src.layers.attention.multi_head_attention": ("MultiHeadAttention",
                                                                   "keras:layers.MultiHeadAttention"),
              "keras.src.layers.attention.grouped_query_attention": ("GroupedQueryAttention",
                                                                      "keras:layers.GroupQueryAttention")}
    for name, (cls, label) in layers.items():
        if module(name) is not None and hasattr(module(name), cls):
            add(getattr(module(name), cls), label)
    for name in ("keras.src.ops.nn", "keras.src.backend.torch.nn"):
        for attr, value in vars(module(name) or object).items() if module(name) else ():
            if "attention" in attr.lower():
                add(value, "keras:ops.dot_product_attention")
    functional = module("torch.nn.functional")
    if functional is not None:
        add(functional.multi_head_attention_forward, "torch:multi_head_attention_forward")
        add(sys.modules["torch.nn"].MultiheadAttention, "torch:multi_head_attention_forward")
    for name in ("torch._refs", "torch._refs.nn.functional", "torch._refs.special", "torch._decomp.decompositions",
                 "torch._decomp.decompositions_for_jvp"):
        for attr, value in vars(module(name) or object).items() if module(name) else ():
            low = attr.lower()
            label = ("torch:log_softmax" if "log_softmax" in low else "torch:softmax" if "softmax" in low else
                     "torch:scaled_dot_product_attention" if "scaled_dot_product" in low else None)
            if label:
                add(value, label)
    return found


def _guard(event_fd):
    """Install the forbidden-routine watch and the audit hook in this (the student's) process; returns ``emit``.

    The hook is armed by ``sys.audit("autograder.arm")`` before the first cell (arming early only restricts more).

    Design (what the student's code can and cannot do about it):

    * **Seen at torch's dispatcher.** Every kernel of the forbidden operators (softmax, log-softmax, SDPA and its
      flash/math kernels, native multi-head attention) on every CPU-side dispatch key is replaced by one that first
      reports and then runs the original kernel (``torch.library.get_kernel``). Python, ``torch.ops``,
      ``torch._C``, threads, ``torch.jit``, ``vmap``, ``redispatch`` to the CPU key: every road ends at a leaf
      kernel, so every road is seen. Python-level routines (Keras attention layers and their internals,
      ``multi_head_attention_forward``, torch's decompositions) reach a matrix product, ``tanh`` or ``exp``
      kernel: those report the routine when one of its functions (by code object) is on the calling thread's stack.
    * **Nothing to undo.** Each use is written at once, as one line, to ``event_fd``, a pipe whose read end only
      the grader holds: a byte sent cannot be taken back. Nothing is recorded in this process. The kernels and the
      pipe's identity live in closures that no student object refers to; a closed or replaced pipe makes the
      kernels refuse to compute, and the grader counts a closed pipe as tampering.
    * **Attribution on the trusted side**: what arrives while a graded call is in flight (its conversion to arrays
      included, so a lazy object that computes when converted is seen) counts against that call. No function name
      chosen by the student is consulted.
    * **An audit hook** (it cannot be removed), armed before the first cell: no fork/exec/spawn (so no child that
      escapes the watch or the memory rule), no ``ctypes``, no ``gc.get_objects``/``get_referrers``/
      ``get_referents``, no ``sys.settrace``/``setprofile``/``_current_frames``, and no frame (``sys._getframe``,
      ``tb_frame``, ``gi_frame``, ...) from which one of the guard's frames can be reached.

    What it cannot see is listed in the README (trust boundary): a signal handler's frame argument, library source
    copied into the notebook, numpy-only library routines (scipy's softmax is wrapped, and flagged statically).
    """
    import threading

    import torch
    from torch.library import Library, get_kernel

    # torch.compile runs eagerly here (so through the kernels below); tracing with fake tensors would run torch's
    # own Python code beneath a guard kernel, where the audit hook refuses frames, and fail without saying why.
    os.environ["TORCHDYNAMO_DISABLE"] = "1"
    if "torch._dynamo.config" in sys.modules:
        sys.modules["torch._dynamo.config"].disable = True
    write, fstat, getframe = os.write, os.fstat, sys._getframe
    stat = fstat(event_fd)
    identity = (stat.st_dev, stat.st_ino)
    local = threading.local()
    codes = {code: (label + "\n").encode() for code, label in _routine_codes().items()}
    guard_codes = set()

    def emit(token):
        now = fstat(event_fd)
        if (now.st_dev, now.st_ino) != identity:
            raise PermissionError("채점 기록 통로가 바뀌어 이 연산을 실행하지 않습니다")
        write(event_fd, token)

    def probe():
        local.inside = True
        try:
            frame = getframe(2)   # the kernel's caller (0: probe, 1: the kernel)
        except ValueError:        # called from a thread without Python frames: no library routine above it
            frame = None
        finally:
            local.inside = False
        while frame is not None:
            label = codes.get(frame.f_code)
            if label is not None:
                emit(label)
                return
            frame = frame.f_back

    def make(original, token):
        if original is None:
            def kernel(keyset, *args, **kwargs):
                raise PermissionError("채점 중에는 이 텐서 형식으로 이 연산을 쓸 수 없습니다")
        elif token is None:
            def kernel(keyset, *args, **kwargs):
                probe()
                return original.call_boxed(keyset, *args, **kwargs)
        else:
            def kernel(keyset, *args, **kwargs):
                emit(token)
                probe()
                return original.call_boxed(keyset, *args, **kwargs)
        guard_codes.add(kernel.__code__)
        return kernel

    import warnings

    library = Library("aten", "IMPL")
    for op, label in list(_KERNEL_OPS.items()) + [(op, None) for op in _PROBE_OPS]:
        try:
            registrations = torch._C._dispatch_dump(f"aten::{op}").splitlines()
        except RuntimeError:
            continue
        token = None if label is None else (label + "\n").encode()
        keys = {line.split(":")[0].replace("[alias]", "") for line in registrations
                if ": registered at" in line and "(inactive)" not in line and "fallthrough" not in line}
        originals = {}
        for key in sorted(keys & set(_KEYS)):  # every original first: an alias key's is computed from the others
            try:
                originals[key] = get_kernel(f"aten::{op}", _RUNTIME_KEY.get(key, key))
            except (ValueError, RuntimeError):  # a key torch cannot hand out (MkldnnCPU): its tensors are refused
                originals[key] = None
        for key, original in originals.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "overriding a previously registered kernel": that is the point
                library.impl(op, make(original, token), key, with_keyset=True)
    guard_codes |= {emit.__code__, probe.__code__}

    def reaches_guard(frame):
        while frame is not None:
            if frame.f_code in guard_codes:
                return True
            frame = frame.f_back
        return False

    armed = []

    def hook(event, args):
        if event == "autograder.arm":
            armed.append(keep)
            return
        if not armed or getattr(local, "inside", False):
            return
        if event in _REFUSED:
            raise PermissionError(f"채점 중에는 `{event}`은(는) 쓸 수 없습니다")
        if event == "sys._getframe":
            if reaches_guard(args[0]):
                raise PermissionError("채점기의 프레임에는 접근할 수 없습니다")
        elif event == "object.__getattr__" and len(args) > 1 and args[1] in _FRAME_ATTRS:
            local.inside = True
            try:
                frame = getattr(args[0], args[1], None)
            finally:
                local.inside = False
            if reaches_guard(frame):
                raise PermissionError("채점기의 프레임에는 접근할 수 없습니다")

    keep = library  # the registrations live as long as the hook, which the interpreter alone holds
    guard_codes.add(hook.__code__)
    guard_codes.add(reaches_guard.__code__)
    sys.addaudithook(hook)
    return emit


def _watch_scipy(emit, done):
    """scipy's softmax is numpy code that no torch kernel sees: wrapped (once imported) to report its use."""
    special = sys.modules.get("scipy.special")
    if special is None or done:
        return
    for name in ("softmax", "log_softmax"):
        original, token = getattr(special, name, None), f"scipy:special.{name}\n".encode()
        if original is None:
            continue

        def wrapper(*args, _original=original, _token=token, **kwargs):
            emit(_token)
            return _original(*args, **kwargs)

        wrapper.__name__, wrapper.__doc__ = name, original.__doc__
        setattr(special, name, wrapper)
    done.append(True)


# ----------------------------------------------------------------------------------------------- serving
class _memory_allowance:
    """Lower this process's soft address-space limit to what it holds now plus ``mb`` MiB for one call.

    The grader also measures the call's peak resident memory from outside, so raising the soft limit again from
    the student's code gains nothing.
    """

    def __init__(self, mb):
        self.mb, self.saved = mb, None

    def __enter__(self):
        if self.mb:
            import resource

            with open("/proc/self/status") as fh:
                held = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
            self.saved = resource.getrlimit(resource.RLIMIT_AS)
            hard = self.saved[1]
            soft = held + int(self.mb) * (1 << 20)
            resource.setrlimit(resource.RLIMIT_AS, (soft if hard < 0 else min(soft, hard), hard))

    def __exit__(self, *exc):
        if self.saved is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, self.saved)



# ----------------------------------------------------------------------------------------------- isolation
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
        array = _to_numpy(value)
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


def _like(value, args, kwargs):
    """The grader's answer (numpy, float64) in the caller's kind: a torch tensor of the first tensor argument's
    floating dtype and device when the arguments are torch (or Keras) tensors, numpy of the first float array's
    dtype when they are numpy; integer and boolean results keep their dtype."""
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


class _Isolated:
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
        header = {"op": "callback", "name": name, "args": encode(plain_args, arrays, _NoHandles()),
                  "kwargs": encode(plain_kwargs, arrays, _NoHandles())}
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
        return _like(decode(answer.get("value"), out, None), args, kwargs)


class TimeLimit(BaseException):
    """Raised inside a graded call that ran past its limit (a BaseException: ``except Exception`` lets it pass)."""


def _on_alarm(signum, frame):
    raise TimeLimit("time limit")


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
    where = [f"{f.filename} {f.lineno}번째 줄: {f.line}" for f in frames[-3:]]
    return {"ok": False, "error": type(exc).__name__, "message": str(exc)[:2000], "where": where}


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

    Library routines that the forbidden-routine rule watches are reported on ``event_fd`` as they run (``_guard``);
    the grader counts what arrives while a call is in flight against that call."""
    import types

    main = types.ModuleType("__main__")  # the notebook's own __main__: this module stays out of its reach
    namespace = main.__dict__
    namespace["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    emit, scipy_watched = _guard(event_fd), []
    sys.audit("autograder.arm")  # from here on the audit hook refuses fork, ctypes, gc walks, tracing, frames
    handles = Handles()
    while True:
        try:
            header, arrays = read_frame(request_fd)
        except EOFError:
            return
        out_arrays, isolated = [], None
        try:
            op = header["op"]
            if op == "run":
                _watch_scipy(emit, scipy_watched)  # what earlier cells imported, before later cells keep references
                status = run_cell(header["index"], header["source"], namespace, header.get("capture"))
                write_frame(response_fd, {**status, "id": header.get("id")})
                continue
            if op == "names":
                write_frame(response_fd, {"ok": True, "names": sorted(k for k in namespace if not k.startswith("_")),
                                          "id": header.get("id")})
                continue
            target = header.get("target")
            obj = handles.objects[target["h"]] if isinstance(target, dict) else namespace.get(target, _MISSING)
            if obj is _MISSING:
                reply = {"ok": False, "error": "Missing", "message": target}
            elif op == "get":
                reply = {"ok": True, "value": encode(obj, out_arrays, handles)}
            elif op == "getattr":
                value = getattr(obj, header["attr"])
                if callable(value) and not isinstance(value, np.ndarray) and _to_numpy(value) is None:
                    reply = {"ok": True, "value": None, "callable": True}
                else:
                    reply = {"ok": True, "value": encode(value, out_arrays, handles)}
            elif op == "len":
                reply = {"ok": True, "value": encode(len(obj), out_arrays, handles)}
            elif op == "call":
                fn = getattr(obj, header["method"]) if header.get("method") else obj
                args = decode(header.get("args", {"l": []}), arrays, handles)
                kwargs = decode(header.get("kwargs", {"d": {}}), arrays, handles)
                start = time.perf_counter()
                isolated = _Isolated(namespace, header.get("isolate") or (), request_fd, response_fd)
                # A call past its limit is interrupted here (SIGALRM: TimeLimit), so a hung function costs its
                # time and not the process; one that stops the alarm is killed by the grader a moment later.
                with _memory_allowance(header.get("memory_mb")), isolated, _time_limit(header.get("limit")):
                    value = fn(*args, **kwargs)
                seconds = time.perf_counter() - start
                # converted here, before the reply: a value that calls a library routine when converted does so
                # while the call is still in flight for the grader
                reply = {"ok": True, "value": encode(value, out_arrays, handles), "seconds": seconds,
                         "asked": sorted(isolated.asked)}
            else:
                reply = {"ok": False, "error": "Protocol", "message": f"unknown op {op!r}"}
        except BaseException as exc:  # noqa: BLE001
            out_arrays = []
            reply = _error(exc)
            if isolated is not None:
                reply["asked"] = sorted(isolated.asked)
        reply["id"] = header.get("id")   # the grader matches each reply to its request by this number
        try:
            write_frame(response_fd, reply, out_arrays)
        except (TypeError, ValueError) as exc:
            write_frame(response_fd, {"ok": False, "error": type(exc).__name__, "message": str(exc),
                                      "id": header.get("id")})


_MISSING = object()


# ----------------------------------------------------------------------------------------------- zygote
def _reap(children, block=False):
    """Collect exit statuses of finished children (``children`` maps pid -> status or None)."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children[pid] = os.waitstatus_to_exitcode(status)


def _kill_all(children, contained):
    """Kill every process of this sandbox but the zygote (and pid 1), then reap, then empty what the lane's uid holds.

    Only inside the sandbox's own pid namespace (``contained``, and this process has a small pid there) is that
    ``kill(-1)``; outside it would reach the whole machine, so there only the children's process groups are killed.
    """
    import signal

    if contained and os.getpid() < 16:
        targets = [-1]
    else:
        targets = [-pid for pid, code in children.items() if code is None]
    for target in targets:
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if any(code is None for code in children.values()) or targets == [-1]:
        _reap(children, block=True)
    if contained and _LANE_UID:
        pid = os.fork()  # IPC_RMID and the keyrings need the owner: a short-lived child with the lane's uid
        if pid == 0:
            try:
                os.setgroups([])
                os.setgid(_LANE_UID[0])
                os.setuid(_LANE_UID[0])
                _remove_sysv_ipc()
                _clear_keyrings()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


_LANE_UID: list = []  # the uid the zygote's children run as (set at the first fork)


def _remove_sysv_ipc():
    """Remove the System V shared memory, semaphores and message queues left in this sandbox's IPC namespace.

    (Each submission's process has an IPC namespace of its own, which ends with it; this covers a child that could
    not make one.)"""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    IPC_RMID = 0
    for kind, remove in (("shm", lambda i: libc.shmctl(i, IPC_RMID, None)),
                         ("sem", lambda i: libc.semctl(i, 0, IPC_RMID)),
                         ("msg", lambda i: libc.msgctl(i, IPC_RMID, None))):
        try:
            with open(f"/proc/sysvipc/{kind}") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 1:
                remove(int(fields[1]))


# keyctl(2): a uid's keyrings outlive its processes (the user keyring, the user session keyring and the persistent
# keyring stay with the uid, even into the next grading run), so they are emptied before and after every submission.
SYS_KEYCTL = 250
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_CLEAR, KEYCTL_GET_PERSISTENT = 1, 7, 22
KEY_SPEC_PROCESS_KEYRING, KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -2, -4, -5


def _keyctl(*args):
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(SYS_KEYCTL, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])


def _clear_keyrings():
    """Unlink every key of this uid's user, user session and persistent keyrings (run as the lane's uid)."""
    rings = [KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING]
    persistent = _keyctl(KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_PROCESS_KEYRING)
    if persistent > 0:
        rings.append(persistent)
    for ring in rings:
        _keyctl(KEYCTL_CLEAR, ring)


MS_RDONLY = 1


def _isolate(header):
    """As root in the fresh child, before student code: own mount and IPC namespaces (System V IPC and POSIX
    message queues of this submission end with it), and a scratch folder that is a tmpfs of its own, with a total
    size and a number of files (inodes), owned by the lane's uid; /dev/shm is a small empty tmpfs nobody can write.
    """
    uid, scratch, limits = header["uid"], header["scratch"], header["limits"]
    _set_admin(True)
    _libc_call("unshare", CLONE_NEWNS | CLONE_NEWIPC)
    _libc_call("mount", None, b"/", None, MS_REC | MS_PRIVATE, None)
    options = (f"size={int(limits['scratch_mb'])}m,nr_inodes={int(limits['scratch_files'])},mode=0700,"
               f"uid={uid},gid={uid}")
    _libc_call("mount", b"tmpfs", scratch.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options.encode())
    if os.path.isdir("/dev/shm"):
        _libc_call("mount", b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
                   b"mode=0755,size=4k,nr_inodes=2")


def _child(header, request_fd, response_fd, event_fd, log_fd):
    """In the forked child: become the submission's process (own session, namespaces, scratch, limits, uid), then
    serve (routine events go to ``event_fd``). Its output goes to ``log_fd``, a file the grader opened and reads by
    that descriptor alone."""
    import random
    import resource

    os.setsid()
    uid = header.get("uid")
    if uid is not None and os.getuid() == 0:
        _isolate(header)
    os.environ.update(HOME=header["scratch"], TMPDIR=header["scratch"])
    mb = 1 << 20
    limits = header["limits"]
    for name, value in (("RLIMIT_AS", limits["memory_mb"] * mb), ("RLIMIT_CPU", limits["cpu_seconds"]),
                        ("RLIMIT_FSIZE", limits["file_size_mb"] * mb), ("RLIMIT_NPROC", limits["max_processes"]),
                        ("RLIMIT_CORE", 0)):
        resource.setrlimit(getattr(resource, name), (value, value))
    if uid is not None and os.getuid() == 0:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    os.chdir(header["scratch"])   # after the switch: the scratch tmpfs is the lane uid's alone (0700)
    _keyctl(KEYCTL_JOIN_SESSION_KEYRING, None)  # a session keyring of its own, not the zygote's (shared) one
    _libc_call("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # nothing this process executes gains privileges
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    for fd in (null, log_fd):
        os.close(fd)
    random.seed()
    np.random.seed()
    serve(request_fd, response_fd, event_fd)


def _warm():
    """Import what every submission needs (numpy, torch, keras, matplotlib) once; returns the seconds it took."""
    start = time.perf_counter()
    for module in ("numpy", "torch", "keras", "matplotlib.pyplot"):
        try:
            __import__(module)
        except Exception:  # noqa: BLE001 - a missing optional module only costs the child time
            pass
    import gc

    gc.collect()
    gc.freeze()  # the children's collections skip what is imported, so they do not copy its pages on every fork
    return time.perf_counter() - start


def _warm_and_ready(control_fd):
    """Import, become not dumpable (no child can read or trace this process), say ready: the control socket."""
    import socket

    seconds = _warm()
    _libc_call("prctl", PR_SET_DUMPABLE, 0, 0, 0, 0)
    sock = socket.socket(fileno=control_fd)
    sock.send(json.dumps({"ready": True, "seconds": seconds}).encode())
    return sock


def zygote(control_fd, contained=False):
    """A lane's warm process started on its own (one bubblewrap per lane): import, say ready, serve the lane."""
    serve_lane(_warm_and_ready(control_fd), contained)


def serve_lane(sock, contained=False):
    """A warm process (numpy, torch, keras imported once) that forks one child per submission.

    Control messages arrive on a SOCK_SEQPACKET unix socket, with the child's three pipe ends and its output log
    attached (SCM_RIGHTS): ``fork`` (reply: the child's pid), ``status`` (a child's exit code once it ended),
    ``reap`` (kill every process but this one). Children never run while another submission's child is alive:
    ``fork`` kills and
    reaps everything first. The zygote is not dumpable, so a child cannot read or trace it.
    """
    import socket

    children = {}
    while True:
        message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 4)
        if not message:
            return
        header = json.loads(message)
        if header["op"] == "fork" and len(fds) != 4:
            for fd in fds:
                os.close(fd)
            reply = {"error": "a fork needs the request, response and event pipes and the log"}
        elif header["op"] == "fork":
            if header.get("uid") is not None and not _LANE_UID:
                _LANE_UID.append(header["uid"])
            _kill_all(children, contained)
            pid = os.fork()
            if pid == 0:
                try:
                    sock.close()
                    _child(header, *fds)
                except BaseException:  # noqa: BLE001 - the setup failed: say so in the lane's and the child's log
                    traceback.print_exc()
                    try:
                        os.write(fds[3], traceback.format_exc().encode())
                    except OSError:
                        pass
                finally:
                    os._exit(0)
            for fd in fds:
                os.close(fd)
            children[pid] = None
            reply = {"pid": pid}
        elif header["op"] == "status":
            _reap(children)
            reply = {"code": children.get(header["pid"])}
        elif header["op"] == "reap":
            _kill_all(children, contained)
            reply = {"ok": True}
        else:
            reply = {"error": "unknown op"}
        sock.send(json.dumps(reply).encode())


# ----------------------------------------------------------------------------------------------- nursery
# One warm process for all the lanes of a grading run: numpy, torch and keras are imported once, and each lane's
# zygote is a fork of it that enters namespaces of its own (mount, pid, network, IPC, UTS) before it serves, so
# lanes stay as separate as when each had its own bubblewrap.
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
CAP_SYS_ADMIN = 21
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 4, 38


def _libc_call(name, *args):
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{name}{tuple(a.decode() if isinstance(a, bytes) else a for a in args)}: "
                             f"{os.strerror(errno)}")


def _lane_namespaces():
    """Own mount, pid, network, IPC and UTS namespaces (the next child becomes pid 1 of the new pid namespace)."""
    _libc_call("unshare", CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS)


def _lane_mounts(root):
    """As pid 1 of the lane: only the lane's folder at /scratch, its own /dev/shm and a /proc of its processes.

    /tmp stays bubblewrap's (root's, 0755: no student process can write there), because the course's virtual
    environment may be mounted below it (a checkout under /tmp) and a new /tmp would hide it."""
    _libc_call("mount", None, b"/", None, MS_REC | MS_PRIVATE, None)
    _libc_call("mount", root.encode(), b"/scratch", None, MS_BIND | MS_REC, None)
    if os.path.isdir("/dev/shm"):
        _libc_call("mount", b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755,size=64m")
    _libc_call("mount", b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    os.chdir("/scratch")


def _set_admin(effective):
    """Put CAP_SYS_ADMIN into the effective set (where it is permitted) or take it out of it."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    _libc_call("capget", ctypes.byref(header), data)
    bit = 1 << CAP_SYS_ADMIN
    for word in data:
        word.effective = (word.effective | (word.permitted & bit)) if effective else (word.effective & ~bit)
        word.inheritable = 0
    _libc_call("capset", ctypes.byref(header), data)


def _drop_admin():
    """Take CAP_SYS_ADMIN out of the lane's effective set; no new privileges on exec.

    It stays permitted, for one use: each submission's fresh child raises it to make its own mount and IPC
    namespaces and its scratch tmpfs (``_isolate``), before any student code runs, and then loses every
    capability when it switches to the lane's uid."""
    _set_admin(False)
    _libc_call("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def _start_lane(header, lane_fd, report_fd, contained):
    """In a child of the nursery: new namespaces, then fork the lane's zygote (pid 1 there) and report its pid."""
    import socket

    if contained:
        _lane_namespaces()
    pid = os.fork()
    if pid:
        os.write(report_fd, json.dumps({"pid": pid}).encode())
        return
    os.close(report_fd)
    sock = socket.socket(fileno=lane_fd)
    try:
        if contained:
            _lane_mounts(header["root"])
            _drop_admin()
        else:
            os.chdir(header["root"])
    except OSError as exc:
        sock.send(json.dumps({"ready": False, "error": str(exc)}).encode())
        os._exit(1)
    sock.send(json.dumps({"ready": True}).encode())
    try:
        serve_lane(sock, contained)
    finally:
        os._exit(0)


def nursery(control_fd, contained=False):
    """Import once, then fork a lane's zygote per ``lane`` request (the lane's control socket attached)."""
    import socket

    sock = _warm_and_ready(control_fd)
    while True:
        message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 1)
        if not message:
            return
        header = json.loads(message)
        if header.get("op") != "lane" or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"error": "expected a lane request with its socket"}).encode())
            continue
        read_fd, report_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                os.close(read_fd)
                _start_lane(header, fds[0], report_fd, contained)
            except BaseException as exc:  # noqa: BLE001 - reported to the grader, which falls back
                os.write(report_fd, json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
            finally:
                os._exit(0)
        os.close(report_fd)
        os.close(fds[0])
        reply = os.read(read_fd, 4096)
        os.close(read_fd)
        os.waitpid(pid, 0)
        sock.send(reply or json.dumps({"error": "the lane did not start"}).encode())


if __name__ == "__main__":
    if sys.argv[1] == "--zygote":
        zygote(int(sys.argv[2]), contained="--contained" in sys.argv)
    elif sys.argv[1] == "--nursery":
        nursery(int(sys.argv[2]), contained="--contained" in sys.argv)
    else:
        serve(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
