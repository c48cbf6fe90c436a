"""Every code cell of the notebooks (demos, tables, plots and the visible checks) works with every return type the
contract allows: numpy arrays (the solution itself), torch tensors and Keras tensors. With the course's torch backend
a Keras tensor is a torch tensor (``keras.ops.convert_to_tensor`` returns one), so the torch run covers both.

The instructor's solution runs with each exercise's result turned into the other kind right after its solution
cell: arrays (masks included) become tensors, tuples keep their place, integers (byte and token counts) stay
integers, and a ``KVCache`` returns tensors from ``append`` and its properties. Then all code cells run in order in
one namespace of this process, as "Run All" would, with matplotlib drawing off screen; a cell that fails fails the
test with its index and source. (``demo-only`` cells are left out where they train: the attention notebook's Keras
training calls no student function, the decoder's trains its small model for seconds; kv_cache's, which measures the
student's flash_attention beside the full score matrix, runs: ``RUNS_DEMO_ONLY``.)
"""
from __future__ import annotations

import contextlib
import io
import os

import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

from tests.helpers import notebooks  # noqa: E402

pytestmark = pytest.mark.slow

CONVERT = {"torch": "import torch as _torch\n_to_tensor = _torch.as_tensor\n"}

WRAP = '''
import functools as _functools
import numpy as _np


def _tensor_out(value):
    """An exercise's result in the other kind the contract allows (integers stay integers)."""
    if isinstance(value, _np.ndarray):
        return _to_tensor(value)
    if isinstance(value, tuple):
        return tuple(_tensor_out(v) for v in value)
    return value


def _returning_tensors(fn):
    if isinstance(fn, type):
        class Cache(fn):
            def append(self, k, v):
                return _tensor_out(super().append(k, v))

            @property
            def keys(self):
                return _tensor_out(super().keys)

            @property
            def values(self):
                return _tensor_out(super().values)

        Cache.__name__ = fn.__name__
        return Cache

    @_functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return _tensor_out(fn(*args, **kwargs))

    return wrapper
'''


# Assignments whose demo-only cells run here too (they call the student's functions and take about a second).
RUNS_DEMO_ONLY = {"kv_cache"}


def cells_with_tensor_results(assignment: str, kind: str) -> list[tuple[int, str]]:
    """(index, source) of the solution notebook's code cells, each solution cell followed by the rewrap."""
    nb = notebooks.solution_notebook(assignment)
    exercises = set(notebooks.exercises(nb))
    found = [(-1, CONVERT[kind] + WRAP)]
    for index, cell in enumerate(nb.cells):
        demo_only = "demo-only" in cell.get("metadata", {}).get("tags", [])
        if cell.cell_type != "code" or (demo_only and assignment not in RUNS_DEMO_ONLY):
            continue
        found.append((index, cell.source))
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        name = grade_id.removeprefix("solution_")
        if grade_id.startswith("solution_") and name in exercises:
            found.append((index, f"{name} = _returning_tensors({name})"))
    return found


@pytest.mark.parametrize("kind", sorted(CONVERT))
@pytest.mark.parametrize("assignment", ["attention", "kv_cache", "decoder"])
def test_every_cell_runs_with_tensor_results(assignment, kind):
    import matplotlib

    matplotlib.use("Agg")   # in this process only (an MPLBACKEND set here would reach the browser tests' kernels)
    import matplotlib.pyplot as plt
    from IPython.display import display  # noqa: F401 - the notebooks import it themselves

    namespace: dict = {"__name__": "__main__"}
    for index, source in cells_with_tensor_results(assignment, kind):
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(source, f"<cell {index}>", "exec"), namespace)
        except Exception as exc:  # noqa: BLE001 - reported with the cell
            pytest.fail(f"{assignment} cell {index} failed with {kind} results: {type(exc).__name__}: {exc}\n"
                        f"{source[:600]}\n--- output ---\n{out.getvalue()[-1500:]}")
        finally:
            plt.close("all")
        assert "❌" not in out.getvalue(), (index, out.getvalue()[-1500:])
    # the wrap took: a mask and an attention output really came back as tensors
    import torch

    if assignment == "decoder":   # the decoder's given code (mask, attention) is numpy; its exercises return tensors
        assert isinstance(namespace["layer_norm"](namespace["np"].ones((2, 4)), 1.0, 0.0), torch.Tensor)
        return
    mask = namespace["causal_mask"](2, 3) if assignment == "attention" else namespace["sliding_window_mask"](2, 3, 2)
    assert isinstance(mask, torch.Tensor) and mask.dtype == torch.bool


def test_a_decoder_check_failing_on_a_wrong_layer_norm_points_at_it():
    """With a wrong ``layer_norm`` (unbiased variance) and the solution's ``decoder_block`` and ``generate``, the
    later checks fail, and each says that ``layer_norm`` is what is wrong (particles attached by reading)."""
    import matplotlib

    matplotlib.use("Agg")
    from autograder.graders.diagnosis import by_id

    nb = notebooks.solution_notebook("decoder")
    namespace: dict = {"__name__": "__main__"}
    failures = {}
    for index, cell in enumerate(nb.cells):
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        if cell.cell_type != "code" or grade_id == "test_layer_norm":
            continue
        if grade_id == "solution_generate":
            exec(compile(cell.source, f"<cell {index}>", "exec"), namespace)
            break
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                exec(compile(cell.source, f"<cell {index}>", "exec"), namespace)
            except AssertionError as failure:
                failures[grade_id] = str(failure)
        if grade_id == "solution_layer_norm":
            exec(by_id("ln_unbiased_variance").source, namespace)
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            exec(compile(nb.cells[index + 1].source, "<generate check>", "exec"), namespace)
        except AssertionError as failure:
            failures["test_generate"] = str(failure)
    assert set(failures) == {"test_decoder_block", "test_generate"}, failures
    for message in failures.values():
        assert "이 확인이 부르는 앞 연습의 `layer_norm`이 틀렸습니다" in message, message
    assert "e-01이 허용치" in failures["test_decoder_block"], failures["test_decoder_block"]
