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
        out_arrays = []
        try:
            op = header["op"]
            if op == "run":
                monitor.install()  # wrap what earlier cells imported before later cells keep references to it
                status = run_cell(header["index"], header["source"], namespace, header.get("capture"))
                _NAMESPACE.update(namespace)
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
                with _memory_allowance(header.get("memory_mb")):
                    value = monitor.run(fn, args, kwargs)
                seconds = time.perf_counter() - start
                reply = {"ok": True, "value": encode(value, out_arrays, handles), "seconds": seconds,
                         "used": sorted(monitor.used)}
            else:
                reply = {"ok": False, "error": "Protocol", "message": f"unknown op {op!r}"}
        except BaseException as exc:  # noqa: BLE001
            out_arrays = []
            reply = _error(exc)
            reply["used"] = sorted(monitor.used)
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


def _child(header, request_fd, response_fd, log_fd):
    """In the forked child: become the submission's process (own session, namespaces, scratch, limits, uid), then
    serve. Its output goes to ``log_fd``, a file the grader opened and reads by that descriptor alone."""
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

    Control messages arrive on a SOCK_SEQPACKET unix socket, with the child's two pipe ends and its output log
    attached (SCM_RIGHTS): ``fork`` (reply: the child's pid), ``status`` (a child's exit code once it ended),
    ``reap`` (kill every process but this one). Children never run while another submission's child is alive: ``fork`` kills and
    reaps everything first. The zygote is not dumpable, so a child cannot read or trace it.
    """
    import socket

    children = {}
    while True:
        message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 3)
        if not message:
            return
        header = json.loads(message)
        if header["op"] == "fork" and len(fds) != 3:
            for fd in fds:
                os.close(fd)
            reply = {"error": "a fork needs the request pipe, the response pipe and the log"}
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
                        os.write(fds[2], traceback.format_exc().encode())
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
        serve(int(sys.argv[1]), int(sys.argv[2]))
