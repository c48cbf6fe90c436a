"""The wire format between the grader and the student's process: frames of a JSON header and ``.npy`` arrays.

Both sides import this module (the grader as ``autograder.sandbox.inside.wire``); it is plain data, read with
``allow_pickle=False``, and every frame is checked against its limits before anything is allocated or converted.

Wire format of one frame::

    8 bytes  total length N (big endian)
    4 bytes  header length H, then H bytes of UTF-8 JSON
    repeated: 8 bytes array length, then one .npy file
"""
import builtins as _builtins_module

# This module's own copy of the builtins, taken before any student code runs: a cell that patches ``builtins.any``,
# ``abs``, ``__import__``... changes the student's code, not the guard, the proxies or the wire format (a function
# looks its builtins up in its module's ``__builtins__``).
__builtins__ = dict(vars(_builtins_module))

import io  # noqa: E402
import json
import os
import struct
import time

import numpy as np

MAX_FRAME = 1 << 30        # the student process's own bound on what the grader sends it (trusted inputs)
MAX_DEPTH = 32             # nesting of a header's JSON values (lists in lists ...)
MAX_ARRAYS = 256           # arrays in one frame
MAX_NDIM = 8               # axes of one array
SMALL_FRAME = 1 << 16      # a frame up to this long is written with one system call (a bigger one part by part)


class FrameError(ValueError):
    """A frame that breaks the wire format or its limits; the message says what (English, for the log)."""


class FrameTooBig(FrameError):
    """A frame longer than the reader's limit (nothing of it was read but its length)."""

    def __init__(self, size, limit):
        super().__init__(f"frame of {size} bytes is over the limit of {limit}")
        self.size, self.limit = size, limit


def write_frame(fd, header, arrays=(), deadline=None):
    """Write one frame; with ``deadline`` (the grader's side, a non-blocking pipe) never block past it.

    A big frame's arrays are written from their own memory (a contiguous array is not copied), so it costs the
    writer no more memory than its arrays already hold."""
    head = json.dumps(header, ensure_ascii=False).encode("utf-8")
    parts = [struct.pack(">I", len(head)), head]
    for array in arrays:
        array = np.ascontiguousarray(array).reshape(np.shape(array))
        buf = io.BytesIO()
        np.lib.format.write_array_header_1_0(buf, np.lib.format.header_data_from_array_1_0(array))
        npy = buf.getvalue()
        data = array.reshape(-1).view(np.uint8) if array.size else b""
        parts += [struct.pack(">Q", len(npy) + array.nbytes), npy, data]
    parts.insert(0, struct.pack(">Q", sum(len(p) for p in parts)))
    if sum(len(p) for p in parts) <= SMALL_FRAME:
        parts = [b"".join(parts)]   # one write, as before: a small frame costs one system call
    for part in parts:
        view = memoryview(part)
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

