"""The untrusted side: runs a submission's code cells and answers the grader's calls with plain values.

This file runs inside the sandbox as ``python -I worker.py REQUEST_FD RESPONSE_FD`` and imports nothing from
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
import io
import json
import linecache
import os
import signal
import struct
import sys
import time
import traceback

import numpy as np

MAX_FRAME = 1 << 30


# ----------------------------------------------------------------------------------------------- wire format
def write_frame(fd, header, arrays=()):
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
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd, n, deadline=None):
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            import select

            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer in time")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise TimeoutError("no answer in time")
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the pipe")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(fd, deadline=None, max_bytes=MAX_FRAME):
    (length,) = struct.unpack(">Q", _read_exact(fd, 8, deadline))
    if length > max_bytes:
        raise ValueError(f"frame of {length} bytes is over the limit of {max_bytes}")
    payload = _read_exact(fd, length, deadline)
    (hlen,) = struct.unpack(">I", payload[:4])
    header = json.loads(payload[4 : 4 + hlen].decode("utf-8"))
    arrays, pos = [], 4 + hlen
    while pos < len(payload):
        (alen,) = struct.unpack(">Q", payload[pos : pos + 8])
        pos += 8
        arrays.append(np.lib.format.read_array(io.BytesIO(payload[pos : pos + alen]), allow_pickle=False))
        pos += alen
    return header, arrays


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


# ----------------------------------------------------------------------------------------------- monitor
_NAMESPACE: dict = {}  # the notebook's namespace (set by serve), to tell its functions from nested helpers


def _student_caller():
    """The innermost function on the stack that is one of the notebook's own top-level functions (by code object,
    so a nested helper that merely shares an exercise's name is not taken for it); '' when none is."""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code.co_filename.startswith("<cell"):
            fn = _NAMESPACE.get(code.co_name)
            if getattr(fn, "__code__", None) is code:
                return code.co_name
        frame = frame.f_back
    return ""


def _torch_routine(func):
    """A torch function's watched name, seen through aliases: ``torch.special.softmax``, ``aten._softmax.default``
    and the ``_scaled_dot_product_*`` kernels count as what they compute; None when not watched."""
    name = getattr(func, "__name__", "") or ""
    name = name.split(".")[0].lstrip("_")
    name = name[len("special_"):] if name.startswith("special_") else name
    if name.startswith("scaled_dot_product") or name in ("native_multi_head_attention", "multi_head_attention_forward"):
        return "scaled_dot_product_attention" if name.startswith("scaled_dot_product") else "multi_head_attention_forward"
    if name in ("softmax", "log_softmax", "softmin"):
        return name
    return None


class Monitor:
    """Records which library routines a call used, and from which of the student's functions
    (``routine@function``), so that the grader can apply the forbidden-routine rule.

    torch functions are seen through a ``TorchFunctionMode`` (aliases and ``torch._C`` paths included);
    Keras layers, ``keras.ops`` and scipy routines through wrappers installed before each call.
    """

    KERAS_LAYERS = ("Attention", "AdditiveAttention", "MultiHeadAttention", "GroupQueryAttention",
                    "GroupedQueryAttention")
    KERAS_OPS = ("softmax", "log_softmax", "dot_product_attention")
    SCIPY = ("softmax", "log_softmax")

    def __init__(self):
        self.used = set()
        self.patched = set()
        self.mode_class = None

    def _wrap(self, owner, attr, label):
        key = (id(owner), attr)
        original = getattr(owner, attr, None)
        if original is None or key in self.patched:
            return
        used = self.used

        def wrapper(*args, **kwargs):
            used.add(f"{label}@{_student_caller()}")
            return original(*args, **kwargs)

        wrapper.__name__ = getattr(original, "__name__", attr)
        wrapper.__doc__ = getattr(original, "__doc__", None)
        try:
            setattr(owner, attr, wrapper)
            self.patched.add(key)
        except (AttributeError, TypeError):
            pass

    def install(self):
        keras = sys.modules.get("keras")
        if keras is not None:
            for name in self.KERAS_LAYERS:
                layer = getattr(keras.layers, name, None)
                if layer is not None:
                    self._wrap(layer, "call", f"keras:layers.{name}")
            for name in self.KERAS_OPS:
                self._wrap(keras.ops, name, f"keras:ops.{name}")
            self._wrap(keras.activations, "softmax", "keras:activations.softmax")
        special = sys.modules.get("scipy.special")
        if special is not None:
            for name in self.SCIPY:
                self._wrap(special, name, f"scipy:special.{name}")
        torch = sys.modules.get("torch")
        if torch is not None and self.mode_class is None:
            from torch.overrides import TorchFunctionMode

            used = self.used

            class Watch(TorchFunctionMode):
                def __torch_function__(self, func, types, args=(), kwargs=None):
                    name = _torch_routine(func)
                    if name:
                        used.add(f"torch:{name}@{_student_caller()}")
                    return func(*args, **(kwargs or {}))

            self.mode_class = Watch

    def run(self, fn, args, kwargs):
        self.install()
        self.used.clear()
        if self.mode_class is None:
            return fn(*args, **kwargs)
        with self.mode_class():
            return fn(*args, **kwargs)


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
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith("<cell")]
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


def serve(request_fd, response_fd):
    """Answer requests until the grader closes the pipe: ``run`` a cell, ``names`` defined, ``call``, ``get``..."""
    import types

    main = types.ModuleType("__main__")  # the notebook's own __main__: this module (and its Monitor) stays out of reach
    namespace = main.__dict__
    namespace["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    _NAMESPACE.clear()
    _NAMESPACE.update(namespace)
    handles, monitor = Handles(), Monitor()
    monitor.install()  # wrap what is imported already (the zygote's keras) before any student cell runs
    while True:
        try:
            header, arrays = read_frame(request_fd)
        except EOFError:
            return
        out_arrays, isolated = [], None
        try:
            op = header["op"]
            if op == "run":
                monitor.install()  # wrap what earlier cells imported before later cells keep references to it
                status = run_cell(header["index"], header["source"], namespace, header.get("capture"))
                _NAMESPACE.update(namespace)
                write_frame(response_fd, status)
                continue
            if op == "names":
                write_frame(response_fd, {"ok": True, "names": sorted(k for k in namespace if not k.startswith("_"))})
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
                    value = monitor.run(fn, args, kwargs)
                seconds = time.perf_counter() - start
                reply = {"ok": True, "value": encode(value, out_arrays, handles), "seconds": seconds,
                         "used": sorted(monitor.used), "asked": sorted(isolated.asked)}
            else:
                reply = {"ok": False, "error": "Protocol", "message": f"unknown op {op!r}"}
        except BaseException as exc:  # noqa: BLE001
            out_arrays = []
            reply = _error(exc)
            reply["used"] = sorted(monitor.used)
            if isolated is not None:
                reply["asked"] = sorted(isolated.asked)
        try:
            write_frame(response_fd, reply, out_arrays)
        except (TypeError, ValueError) as exc:
            write_frame(response_fd, {"ok": False, "error": type(exc).__name__, "message": str(exc)})


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
    """Kill every process of this sandbox but the zygote (and pid 1), then reap.

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
        pid = os.fork()  # IPC_RMID needs the owner: a short-lived child with the lane's uid removes them
        if pid == 0:
            try:
                os.setgroups([])
                os.setgid(_LANE_UID[0])
                os.setuid(_LANE_UID[0])
                _remove_sysv_ipc()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


_LANE_UID: list = []  # the uid the zygote's children run as (set at the first fork)


def _remove_sysv_ipc():
    """Remove the System V shared memory, semaphores and message queues left in this sandbox's IPC namespace."""
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


def _child(header, request_fd, response_fd):
    """In the forked child: become the submission's process (own session, limits, uid), then serve."""
    import random
    import resource

    os.setsid()
    os.chdir(header["scratch"])
    os.environ.update(HOME=header["scratch"], TMPDIR=header["scratch"])
    mb = 1 << 20
    limits = header["limits"]
    for name, value in (("RLIMIT_AS", limits["memory_mb"] * mb), ("RLIMIT_CPU", limits["cpu_seconds"]),
                        ("RLIMIT_FSIZE", limits["file_size_mb"] * mb), ("RLIMIT_NPROC", limits["max_processes"]),
                        ("RLIMIT_CORE", 0)):
        resource.setrlimit(getattr(resource, name), (value, value))
    uid = header.get("uid")
    if uid is not None and os.getuid() == 0:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    _libc_call("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # nothing this process executes gains privileges
    log = os.open("output.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    random.seed()
    np.random.seed()
    serve(request_fd, response_fd)


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

    Control messages arrive on a SOCK_SEQPACKET unix socket, with the child's two pipe ends attached (SCM_RIGHTS):
    ``fork`` (reply: the child's pid), ``status`` (a child's exit code once it ended), ``reap`` (kill every
    process but this one). Children never run while another submission's child is alive: ``fork`` kills and
    reaps everything first. The zygote is not dumpable, so a child cannot read or trace it.
    """
    import socket

    children = {}
    while True:
        message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 2)
        if not message:
            return
        header = json.loads(message)
        if header["op"] == "fork":
            if header.get("uid") is not None and not _LANE_UID:
                _LANE_UID.append(header["uid"])
            _kill_all(children, contained)
            pid = os.fork()
            if pid == 0:
                try:
                    sock.close()
                    _child(header, *fds)
                except BaseException:  # noqa: BLE001 - the setup failed: say so in the lane's log
                    traceback.print_exc()
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


def _drop_admin():
    """Give up CAP_SYS_ADMIN (kept by the nursery only to make the lanes' namespaces); no new privileges on exec."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    _libc_call("capget", ctypes.byref(header), data)
    for word in data:
        word.effective &= ~(1 << CAP_SYS_ADMIN)
        word.permitted &= ~(1 << CAP_SYS_ADMIN)
        word.inheritable = 0
    _libc_call("capset", ctypes.byref(header), data)
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
        serve(int(sys.argv[1]), int(sys.argv[2]))
