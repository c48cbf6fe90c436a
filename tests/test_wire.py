"""The wire format (autograder/sandbox/inside/wire.py): what is written is read back as it was, and writing a big
frame costs the writer no copy of its arrays (a proxy's answer of ``answer_mb`` is sent from the memory it holds)."""
from __future__ import annotations

import os
import threading
import tracemalloc

import numpy as np

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
