"""The wire format (autograder/sandbox/inside/wire.py): what is written is read back as it was, and writing a big
frame costs the writer no copy of its arrays (a proxy's answer of ``answer_mb`` is sent from the memory it holds)."""
from __future__ import annotations

import io
import os
import struct
import threading
import time
import tracemalloc

import numpy as np
import pytest

from autograder.sandbox.inside import wire


def _through_a_pipe(header, arrays):
    """``write_frame`` into a pipe (from a thread) and ``read_frame`` from it: the frame read back."""
    r, w = os.pipe()

    def write():
        try:
            wire.write_frame(w, header, arrays)
        finally:
            os.close(w)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        return wire.read_frame(r)
    finally:
        writer.join()
        os.close(r)


def test_what_is_written_is_read_back():
    rng = np.random.default_rng(0)
    arrays = [np.array(3.0), np.zeros((0, 3)), rng.normal(size=(3, 4)).T, rng.normal(size=(2, 3)).astype(np.float16),
              np.ones(5, bool), np.arange(7)[::2], np.asfortranarray(rng.normal(size=(4, 5))),
              rng.normal(size=(300, 400)).T]
    header, back = _through_a_pipe({"값": [1, "둘"]}, arrays)
    assert header == {"값": [1, "둘"]}
    assert len(back) == len(arrays)
    for sent, got in zip(arrays, back, strict=True):
        assert got.dtype == sent.dtype and got.shape == np.shape(sent) and np.array_equal(got, sent)


def test_a_big_frame_is_written_without_copying_its_arrays():
    big = np.ones((4, 1 << 21))                        # 64 MiB, contiguous
    r, w = os.pipe()
    drain = threading.Thread(target=lambda: [None for _ in iter(lambda: os.read(r, 1 << 16), b"")])
    drain.start()
    tracemalloc.start()
    try:
        wire.write_frame(w, {"op": "answer"}, [big, big[:1]])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        os.close(w)
        drain.join()
        os.close(r)
    assert peak < 1 << 20, f"writing 80 MiB of arrays allocated {peak / (1 << 20):.0f} MiB"


def test_a_frame_too_big_to_allocate_is_read_past(monkeypatch):
    """A reader that cannot allocate an array of a frame (the student's process under a call's memory limit,
    receiving a proxy's big answer) gets MemoryError and the next frame is read from its start: the two sides stay
    in step."""
    real = np.empty

    def tight(shape, *args, **kwargs):
        if int(np.prod(shape)) > 1 << 17:
            raise MemoryError
        return real(shape, *args, **kwargs)

    monkeypatch.setattr(np, "empty", tight)
    r, w = os.pipe()

    def write():
        try:
            wire.write_frame(w, {"n": 1}, [np.arange(4.0), np.ones(1 << 18)])   # 2 MiB: not allocated by the reader
            wire.write_frame(w, {"n": 2}, [np.arange(3.0)])
        except BrokenPipeError:
            pass
        finally:
            os.close(w)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        with pytest.raises(MemoryError):
            wire.read_frame(r, deadline=time.monotonic() + 10)
        header, arrays = wire.read_frame(r, deadline=time.monotonic() + 10)
    finally:
        os.close(r)          # a writer still blocked on the pipe ends (broken pipe)
        writer.join()
    assert header == {"n": 2} and np.array_equal(arrays[0], np.arange(3.0))


def test_reading_a_frame_allocates_its_arrays_once():
    """An answer of 64 MiB costs the reader 64 MiB (not the frame and then a copy of each array): what lets a
    student's process under a call's memory limit receive an answer it has room for."""
    big = np.ones((8, 1 << 20))
    r, w = os.pipe()

    def write():
        try:
            wire.write_frame(w, {"op": "answer"}, [big])
        finally:
            os.close(w)

    writer = threading.Thread(target=write)
    writer.start()
    tracemalloc.start()
    try:
        header, arrays = wire.read_frame(r, deadline=time.monotonic() + 30)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        os.close(r)
        writer.join()
    assert np.array_equal(arrays[0], big) and arrays[0].flags.writeable and arrays[0].flags.owndata
    assert peak < big.nbytes + (1 << 20), f"reading 64 MiB allocated {peak / (1 << 20):.0f} MiB"


# ----------------------------------------------------------------------------------------------- the .npy headers
HEADER_CASES = [np.array(3.0), np.zeros((0, 3)), np.ones(5, bool), np.arange(7, dtype=np.int8),
                np.arange(6, dtype=">f8").reshape(2, 3), np.zeros((2, 4, 8, 16), np.float32),
                np.zeros((1,) * 8, np.uint64), np.zeros(3, np.float16), np.asfortranarray(np.ones((4, 5)))]


@pytest.mark.parametrize("array", HEADER_CASES, ids=lambda a: f"{a.dtype.str}{list(a.shape)}")
def test_a_kept_header_is_numpys_own(array):
    """The headers kept by ``wire`` (issue 25: numpy's parse of each header was most of a frame's reading) are the
    bytes numpy writes and, read once or again from the cache, what numpy's reader makes of them."""
    sent = np.ascontiguousarray(array).reshape(array.shape)
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, np.lib.format.header_data_from_array_1_0(sent))
    assert wire._npy_header(sent) == buf.getvalue() == wire._npy_header(sent)
    stream = io.BytesIO(buf.getvalue())
    np.lib.format.read_magic(stream)
    numpys = np.lib.format.read_array_header_1_0(stream)
    assert wire._array_header(buf.getvalue()) == numpys == wire._array_header(buf.getvalue())
    header, back = _through_a_pipe({}, [array])
    assert back[0].dtype == array.dtype and np.array_equal(back[0], array)


def _raw_frame(descr, shape, data=b""):
    """A frame of one array whose .npy header says ``descr`` and ``shape`` (numpy's own header writer), then
    ``data``."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    npy = buf.getvalue() + data
    head = b"{}"
    body = struct.pack(">I", len(head)) + head + struct.pack(">Q", len(npy)) + npy
    return struct.pack(">Q", len(body)) + body


@pytest.mark.parametrize("descr, shape", [
    ("|O", (2,)), ("<c16", (2,)), ("<f16", (1,)), ([("a", "<f8")], (1,)), ("<U3", (2,)), ("|V8", (1,)),
    ("<f8", (1,) * 9), ("<f8", (-1,)), ("<f8", (2.0,)),
], ids=["object", "complex", "longdouble", "structured", "unicode", "void", "nine_axes", "negative", "float_shape"])
def test_a_refused_header_is_refused_every_time(descr, shape):
    """A header the reader refuses (not a plain numeric dtype of at most 8 bytes, more than ``MAX_NDIM`` axes, a
    length that is not a non-negative integer) is refused the second time too: the cache keeps only what passed
    every check, and a good frame after a refused one is read as before. Each array's data is as long as its
    header says (where it can say), so that only the header's check can refuse it."""
    count = int(np.prod(shape)) if all(isinstance(n, int) and n >= 0 for n in shape) else 1
    data = b"\0" * (count * np.dtype(descr).itemsize)
    for _ in range(2):
        r, w = os.pipe()
        try:
            os.write(w, _raw_frame(descr, shape, data))
            os.close(w)
            with pytest.raises(wire.FrameError):
                wire.read_frame(r, deadline=time.monotonic() + 10)
        finally:
            os.close(r)
    r, w = os.pipe()
    try:
        os.write(w, _raw_frame("<f8", (2,), np.arange(2.0).tobytes()))
        os.close(w)
        assert np.array_equal(wire.read_frame(r, deadline=time.monotonic() + 10)[1][0], np.arange(2.0))
    finally:
        os.close(r)


# ----------------------------------------------------------------------------------------------- the event pipe
def test_the_event_log_keeps_what_ran_between_marks_and_not_every_line():
    """``EventLog`` (the grader's end of the student process's event pipe): the routines of each stretch between two
    marks, each once; review reports apart; a line the monitor never writes is tampering; and a flood of lines (the
    student's code can find the pipe: issue 21 made the grader hold 1.1 GB after 8 s of it) costs nothing kept."""
    from autograder.sandbox.logs import EventLog

    r, w = os.pipe()
    log = EventLog(r)
    try:
        os.write(w, b"torch:softmax\n")
        first = log.mark()
        os.write(w, b"torch:scaled_dot_product_attention\ntorch:softmax\nreview:function.__new__\n")
        assert log.since(first) == ["torch:scaled_dot_product_attention", "torch:softmax"]
        second = log.mark()
        assert log.since(second) == [] and log.reviewed == {"function.__new__"} and not log.tampered
        tracemalloc.start()
        try:
            flood = b"torch:softmax\n" * 4096
            for _ in range(256):                          # 14 MiB of lines, 1 M of them
                os.write(w, flood)
                log.mark()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert log.since(second) == ["torch:softmax"]
        assert peak < 4 << 20, f"1 M event lines kept {peak / (1 << 20):.0f} MiB"
        os.write(w, b"torch:made_up_routine\n")
        log.since(second)
        assert log.tampered
    finally:
        os.close(w)
        log.close()


def test_a_seeded_generator_crosses_as_its_state():
    """The grader's numpy.random.Generator reaches the student's side as a generator in the same state (so a draw
    there equals the grader's), through the frame's JSON header (its 128-bit state included); a state of another
    kind of bit generator, or one numpy refuses, is not a value of the format."""
    from autograder.sandbox import remote
    from autograder.sandbox.inside import values

    grader = np.random.default_rng(1234)
    grader.random(3)                                                   # not a fresh state
    arrays = []
    header = {"kwargs": remote.encode_value({"rng": grader}, arrays)}
    got, _ = _through_a_pipe(header, arrays)
    student = values.decode_request(got["kwargs"], [], values.Handles())["rng"]
    assert isinstance(student, np.random.Generator)
    np.testing.assert_array_equal(student.random(5), grader.random(5))
    for state in ({"bit_generator": "MT19937", "state": {}}, {"bit_generator": "PCG64", "state": "x"}, [1, 2]):
        with pytest.raises(values.UnknownValue):
            values.decode({"g": remote.encode_value(state, [])}, [].__getitem__, None)
