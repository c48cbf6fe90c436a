"""The memory rule cannot be reset from inside nor fooled by freeing what the process held before the call, or by
keeping the matrix in files.

The rule (``RemoteCalls.call_with_memory``, flash attention's grader) allows a call a number of MiB of its own
allocations. A student's process that frees a ballast at the start of the call and then builds the full score matrix
stayed under ``VmHWM`` (reset to the starting size) and passed; one that wrote ``5`` to ``/proc/self/clear_refs``
after building it reset the peak the grader reads; one that writes the matrix to four files of its scratch folder (a
tmpfs: memory, but no process's resident size) and reads it back a block at a time was not measured at all. All are
played here in one process of this test's lane.
"""
from __future__ import annotations

import pytest

from autograder.sandbox import lanes
from autograder.sandbox.errors import StudentCodeError
from autograder.sandbox.policy import Limits, Timeouts
from autograder.sandbox.process import StudentProcess

TIMEOUTS, LIMITS = Timeouts.from_course(), Limits.from_course()
ALLOWED_MB = 100
SCORES = 6000   # a (6000, 6000) float64 score matrix: 275 MiB, well over the allowance

CELLS = ["""
import os
import numpy as np

ballast = np.ones(48 << 20)                    # 384 MiB held before the call


def with_ballast(n):
    global ballast
    ballast = None                             # freed at the call's start ...
    scores = np.ones((n, n))                   # ... and as much allocated again: the full score matrix
    return float(scores[-1, -1])


def then_reset(n):
    scores = np.ones((n, n))                   # the full score matrix
    total = float(scores[-1, -1])
    del scores
    for path in ("/proc/self/clear_refs", "reset"):
        try:
            with open(path, "w") as fh:        # resets VmHWM to the (now small) resident size
                fh.write("5")
        except OSError as exc:
            refused.append(type(exc).__name__)
    return total


def in_files(n):
    rows = n // 4                              # the full matrix in four files, read back a block at a time
    for part in range(4):
        np.ones((rows, n)).tofile(f"part{part}")
    total = 0.0
    for part in range(4):
        block = np.fromfile(f"part{part}", count=64 * n).reshape(64, n)
        total += float(block[-1, -1])
    for part in range(4):
        os.remove(f"part{part}")
    return total


def refusals():
    return list(refused)


refused = []
os.symlink("/proc/self/clear_refs", "reset")   # the same file under another name
"""]


@pytest.fixture(scope="module")
def process():
    shared = lanes.shared()
    if not shared.alive:
        shared.start()
    with StudentProcess(CELLS, shared, LIMITS, TIMEOUTS) as student:
        cells = student.start().cells
        assert all(c["ok"] for c in cells), cells
        yield student


# The score matrix freed of a ballast is seen from its lowest point, which ``Growth`` samples every millisecond when the
# machine runs its thread: on a loaded machine (CI: two workers on two cores) the first sample after the ballast was
# freed came once when ~30 MiB of the matrix were already written (243 of its 275 MiB seen). What the rule needs is
# the call judged well over its allowance; VmHWM alone, before the rule measured from the lowest point, saw ~0 here.
SEEN_OF_THE_MATRIX_MB = 200


def test_freeing_a_ballast_first_does_not_hide_the_score_matrix(process):
    reply = process.calls.call_with_memory(ALLOWED_MB, "with_ballast", SCORES)
    assert reply["peak_mb"] > max(SEEN_OF_THE_MATRIX_MB, 2 * ALLOWED_MB), reply["peak_mb"]


def test_clear_refs_is_refused_under_any_name_and_the_peak_stands(process):
    try:
        reply = process.calls.call_with_memory(ALLOWED_MB, "then_reset", SCORES)
    except StudentCodeError:   # refused and not caught: the call fails, which is the rule's verdict too
        return
    assert reply["peak_mb"] > 250, reply["peak_mb"]
    assert process.calls.call("refusals")["value"] == ["PermissionError", "PermissionError"]


def test_a_matrix_kept_in_scratch_files_counts(process):
    """What the call writes to its scratch tmpfs is memory it holds: a (5000, 5000) float64 matrix (191 MiB; the
    scratch holds 256) kept in files counts, though the process's resident size never holds more than a quarter."""
    reply = process.calls.call_with_memory(ALLOWED_MB, "in_files", 5000)
    assert reply["value"] == 4.0 and reply["peak_mb"] > 180, reply["peak_mb"]
