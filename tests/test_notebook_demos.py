"""Every code cell of the notebooks (demos, tables, plots and the visible checks) works with every return type the
contract allows: numpy arrays (the solution itself), torch tensors and Keras tensors. With the course's torch backend
a Keras tensor is a torch tensor (``keras.ops.convert_to_tensor`` returns one), so the torch run covers both.

The instructor's solution runs with each exercise's result turned into the other kind right after its solution
cell: arrays (masks included) become tensors, tuples keep their place, integers (byte and token counts) stay
integers, and a ``KVCache`` returns tensors from ``append`` and its properties. Then all code cells run in order in
one namespace of this process, as "Run All" would, with matplotlib drawing off screen; a cell that fails fails the
test with its index and source. (``demo-only`` cells are left out: the attention notebook's Keras training demo
calls no student function.)
"""
from __future__ import annotations

import contextlib
import io
import os

import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

import notebooks  # noqa: E402 - tests/ is on sys.path (tests/conftest.py)

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


def cells_with_tensor_results(assignment: str, kind: str) -> list[tuple[int, str]]:
    """(index, source) of the solution notebook's code cells, each solution cell followed by the rewrap."""
    nb = notebooks.solution_notebook(assignment)
    exercises = set(notebooks.exercises(nb))
    found = [(-1, CONVERT[kind] + WRAP)]
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or "demo-only" in cell.get("metadata", {}).get("tags", []):
            continue
        found.append((index, cell.source))
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        name = grade_id.removeprefix("solution_")
        if grade_id.startswith("solution_") and name in exercises:
            found.append((index, f"{name} = _returning_tensors({name})"))
    return found


@pytest.mark.parametrize("kind", sorted(CONVERT))
@pytest.mark.parametrize("assignment", ["attention", "kv_cache"])
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

    mask = namespace["causal_mask"](2, 3) if assignment == "attention" else namespace["sliding_window_mask"](2, 3, 2)
    assert isinstance(mask, torch.Tensor) and mask.dtype == torch.bool
