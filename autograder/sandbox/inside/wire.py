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

import functools  # noqa: E402
import io
import json
import os
import struct
import time

import numpy as np

MAX_FRAME = 1 << 30        # the student process's own bound on what the grader sends it (trusted inputs)
MAX_HEADER = 1 << 20       # a frame's JSON header from the student's process (checked before it is read or parsed)
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
        npy = _npy_header(array)
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


def _read_into(fd, view, deadline=None):
    """Fill ``view`` (a writable byte buffer) from ``fd``."""
    got, n = 0, len(view)
    while got < n:
        if deadline is not None:
            _wait(fd, deadline)
        count = os.readv(fd, [view[got : got + min(n - got, 1 << 20)]])
        if not count:
            raise EOFError("the other side closed the pipe")
        got += count


def _read_exact(fd, n, deadline=None):
    """Exactly ``n`` bytes (the caller checked ``n`` against its limit first), one buffer allocated once."""
    buf = bytearray(n)
    _read_into(fd, memoryview(buf), deadline)
    return buf


def _skip(fd, n, deadline=None):
    chunk = bytearray(1 << 16)
    view = memoryview(chunk)
    while n > 0:
        if deadline is not None:
            _wait(fd, deadline)
        count = os.readv(fd, [view[: min(n, len(chunk))]])
        if not count:
            raise EOFError("the other side closed the pipe")
        n -= count


def read_frame(fd, deadline=None, max_bytes=MAX_FRAME, max_elements=None, max_header=MAX_HEADER):
    """One frame, checked before anything is allocated or converted: its length against ``max_bytes``; the header's
    length against ``max_header`` before it is read, then the header (UTF-8 JSON, nesting at most ``MAX_DEPTH``):
    ``json.loads`` builds ~27 bytes of objects per byte of ``{},``, so a header is never bigger than what its
    bound allows (the arrays carry the data); each array's ``.npy`` header (numeric dtype of at most 8 bytes,
    at most ``MAX_NDIM`` axes, exactly as many data bytes as its shape needs; all arrays together at most
    ``max_elements`` elements). Raises ``FrameError`` for anything else, ``TimeoutError``, ``EOFError``.

    Each array's data is read straight into the array (allocated once its header has been checked): reading a
    frame costs the reader its arrays and its header, once. An array the reader cannot allocate (``MemoryError``:
    a process under a memory limit) is read past with the rest of the frame first, so that the next frame is read
    from its start."""
    (length,) = struct.unpack(">Q", bytes(_read_exact(fd, 8, deadline)))
    if length > max_bytes:
        raise FrameTooBig(length, max_bytes)
    frame = _Frame(fd, length, deadline)
    try:
        return _parse(frame, max_elements, max_header)
    except FrameError:
        raise
    except MemoryError:
        frame.skip_rest()
        raise
    except (ValueError, TypeError, KeyError, IndexError, struct.error, RecursionError, OverflowError) as exc:
        raise FrameError(f"malformed frame: {type(exc).__name__}: {exc}") from None


class _Frame:
    """The rest of one frame on ``fd``: ``read(n)`` never reads past its end."""

    def __init__(self, fd, length, deadline):
        self.fd, self.left, self.deadline = fd, length, deadline

    def read(self, n) -> bytearray:
        if n > self.left:
            raise FrameError(f"{n} bytes asked, {self.left} left in the frame")
        buf = bytearray(n)       # a MemoryError here leaves these bytes to skip_rest
        self.left -= n
        _read_into(self.fd, memoryview(buf), self.deadline)
        return buf

    def read_into(self, view) -> None:
        if len(view) > self.left:
            raise FrameError(f"{len(view)} bytes asked, {self.left} left in the frame")
        self.left -= len(view)
        _read_into(self.fd, view, self.deadline)

    def skip_rest(self) -> None:
        left, self.left = self.left, 0
        _skip(self.fd, left, self.deadline)


def _parse(frame, max_elements, max_header):
    if frame.left < 4:
        raise FrameError(f"frame of {frame.left} bytes has no header")
    (hlen,) = struct.unpack(">I", frame.read(4))
    if hlen > max_header:
        raise FrameError(f"header of {hlen} bytes is over the limit of {max_header}")
    if hlen > frame.left:
        raise FrameError(f"header of {hlen} bytes is longer than its frame")
    header = json.loads(bytes(frame.read(hlen)).decode("utf-8"))
    if not isinstance(header, dict):
        raise FrameError("the header is not a JSON object")
    _check_depth(header)
    arrays, elements = [], 0
    while frame.left:
        if frame.left < 8 or len(arrays) >= MAX_ARRAYS:
            raise FrameError("too many arrays, or an array's length is cut off")
        (alen,) = struct.unpack(">Q", frame.read(8))
        if alen > frame.left:
            raise FrameError(f"an array of {alen} bytes is longer than what is left of its frame")
        array = _npy(frame, alen, max_elements, elements)
        elements += array.size
        arrays.append(array)
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


def _npy(frame, alen, max_elements, elements):
    """A numeric array from the next ``alen`` bytes of ``frame`` (one ``.npy`` file): its header checked before the
    array is allocated, its data read straight into it."""
    prefix = bytes(frame.read(min(alen, 12)))
    stream = io.BytesIO(prefix)
    version = np.lib.format.read_magic(stream)
    if version not in ((1, 0), (2, 0)):
        raise FrameError(f".npy version {version} is not accepted")
    size_bytes = 2 if version == (1, 0) else 4
    (hlen,) = struct.unpack("<H" if size_bytes == 2 else "<I", prefix[8 : 8 + size_bytes])
    start = 8 + size_bytes + hlen
    if hlen > 4096 or start > alen:
        raise FrameError(f".npy header of {hlen} bytes is not accepted")
    shape, fortran, dtype = _array_header(prefix + bytes(frame.read(start - len(prefix))))
    count = 1
    for n in shape:
        count *= n
    if alen - start != count * dtype.itemsize:
        raise FrameError(f"array data of {alen - start} bytes does not match shape {shape} of {dtype}")
    if max_elements is not None and elements + count > max_elements:
        raise FrameError(f"{elements + count} array elements are over the limit of {max_elements}")
    array = np.empty(shape, dtype=dtype, order="F" if fortran else "C")
    if count:
        frame.read_into(memoryview(array.reshape(-1, order="A").view(np.uint8)))
    return array


# The arrays' .npy headers. Numpy reads a header's text with ``ast.literal_eval`` and writes it with ``repr`` (in a
# grading about 0.1 ms a header read: the grader's side of the attention answer key reads 436 arrays, 0.040 s), while
# the frames of one grading carry the same few dtypes and shapes again and again. So both are kept here, by their
# exact bytes or exact key: a header read before gives what numpy's reader gave for those very bytes, checks
# included; a header not seen before (or one that fails a check: a failure is never kept) goes through numpy's reader
# and the checks again. The caches are bounded (a process that sends new headers without end costs numpy's parse
# each time, and at most HEADERS entries of at most 4 KiB are kept).
HEADERS = 1024


@functools.lru_cache(maxsize=HEADERS)
def _array_header(head: bytes):
    """``(shape, fortran_order, dtype)`` of one ``.npy`` header (magic, version, length and text: ``head``, the bytes
    before the data), read by numpy's own reader and checked: a plain numeric dtype of at most 8 bytes, at most
    ``MAX_NDIM`` axes of non-negative integer lengths. Raises ``FrameError`` (and numpy's ``ValueError``) otherwise."""
    stream = io.BytesIO(head)
    version = np.lib.format.read_magic(stream)
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran, dtype = read_header(stream)
    if dtype.kind not in "biuf" or dtype.itemsize > 8 or dtype.fields is not None or dtype.subdtype is not None:
        raise FrameError(f"dtype {dtype} is not a plain numeric type")
    if len(shape) > MAX_NDIM or any(not isinstance(n, int) or n < 0 for n in shape):
        raise FrameError(f"shape {shape} is not accepted")
    return shape, fortran, dtype


def _npy_header(array) -> bytes:
    """The ``.npy`` header numpy writes for ``array`` (C-contiguous), from the cache for a plain numeric dtype."""
    if array.dtype.kind in "biuf" and array.dtype.metadata is None:
        return _numeric_header(array.dtype.str, array.shape)
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, np.lib.format.header_data_from_array_1_0(array))
    return buf.getvalue()


@functools.lru_cache(maxsize=HEADERS)
def _numeric_header(descr: str, shape: tuple) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()
