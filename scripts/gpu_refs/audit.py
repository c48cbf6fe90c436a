"""How correct implementations and the catalogue's mistakes fare against every stored reference.

The tolerance policy promises two things: a correct answer passes against every backend and dtype, and every
known mistake still fails against them. ``audit`` measures both (the package's tests assert them;
``benchmarks/gpu_reference_errors.py`` prints the table).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from autograder.graders import gpu_checks, references
from autograder.graders.gpu_refs import store
from autograder.graders.tolerances import STUDENT

# stored case kind -> the exercise whose grader compares with it (its GPU_CASES)
EXERCISE = gpu_checks.graders_of_kinds()


@dataclass
class Row:
    case: str
    backend: str
    dtype: str
    implementation: str
    max_error: float
    ratio: float      # <= 1 passes

    @property
    def passed(self) -> bool:
        return self.ratio <= 1


def to_numpy(value) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach().cpu().double().numpy()
    elif type(value).__module__.startswith("keras") or "Tensor" in type(value).__name__:
        import keras

        value = keras.ops.convert_to_numpy(value)
    return np.asarray(value, dtype=np.float64)


def run(case: store.Case, fn) -> np.ndarray:
    """Call an implementation of the case's exercise on the case's inputs (only the stored rows)."""
    a = case.inputs
    kind = case.kind
    if kind in ("sdpa", "sdpa_large_logits"):
        out = fn(a["query"], a["key"], a["value"], a.get("mask"))
    elif kind == "causal":
        mask = to_numpy(fn(a["t_q"], a["t_k"])) > 0.5
        out = references.scaled_dot_product_attention(a["query"], a["key"], a["value"], mask)
    elif kind == "self_attention":
        out = fn(a["x"], a["w_q"], a["w_k"], a["w_v"], causal=bool(a["causal"]))
    elif kind == "mha":
        out = fn(a["x_q"], a["x_kv"], a["params"], int(a["num_heads"]), a.get("mask"))
    elif kind == "gqa":
        out = fn(a["query"], a["key"], a["value"], a.get("mask"))
    elif kind == "flash_long":
        out = fn(a["query"], a["key"], a["value"], block_size=100, causal=bool(a["causal"]))  # 100 does not divide 4096
    else:
        raise ValueError(kind)
    out = to_numpy(out)
    return out if case.rows is None else out[..., case.rows, :]


def audit(implementations: dict, kinds=None) -> list[Row]:
    """Rows for every stored output x every implementation (label -> function of the case's exercise)."""
    rows = []
    for case in store.load_cases():
        if kinds and case.kind not in kinds:
            continue
        for label, fn in implementations.get(EXERCISE[case.kind], {}).items():
            try:
                got = run(case, fn)
                finite = np.all(np.isfinite(got)) and got.shape == case.float64.shape
            except Exception:  # noqa: BLE001 - a mistake may fail outright: that is a failure against every reference
                got, finite = None, False
            targets = [("math", "float64 (ref)", case.float64, STUDENT)]
            targets += [(r.backend, r.dtype, r.output, r.tolerance) for r in case.references]
            for backend, dtype, output, tol in targets:
                if finite:
                    err = float(np.max(np.abs(got - output)))
                    ratio = store.error_ratio(got, output, tol)
                else:
                    err = ratio = float("inf")
                rows.append(Row(case.name, backend, dtype, label, err, ratio))
    return rows


def mistakes_by_exercise() -> dict:
    """exercise -> {mistake id: function} for every mistake of the catalogue on an exercise with references."""
    from autograder.graders import registry

    found: dict = {}
    for mistake in registry.catalogue():
        if mistake.exercise in EXERCISE.values():
            found.setdefault(mistake.exercise, {})[mistake.id] = mistake.function()
    return found
