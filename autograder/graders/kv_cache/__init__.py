"""Shared helpers of the `kv_cache` graders: real model configurations, exact integer checks, the Keras GQA layer
with known weights and a trusted cache.

Integer results (cache sizes, token counts) must be exact, and their mistakes are named with exact equality
(``diagnosis.of_number``); ``KVCache`` and ``attend_with_cache`` keep state in the student's process, so their
mistakes are named by replaying a whole scenario on ``references.KVCache``, the trusted cache (``diagnosis.of_replay``).
"""
from __future__ import annotations

import numpy as np

from autograder.graders.compare import GradingFailure, as_array
from autograder.graders.diagnosis import by_id, of_number, with_causes
from autograder.messages import Verdict

# name -> (num_layers, num_kv_heads, head_dim, FP16 bytes per token), from each model's config.json
# (num_hidden_layers, num_key_value_heads, head_dim).
MODELS = {
    "GPT-2 small": (12, 12, 64, 36_864),
    "Llama-3-8B": (32, 8, 128, 131_072),
    "Llama-3-70B": (80, 8, 128, 327_680),
    "Mistral-7B": (32, 8, 128, 131_072),
    "Qwen3-8B": (36, 8, 128, 147_456),
    "Gemma-2-9B": (42, 8, 256, 344_064),
}

GB, GiB, MiB = 10**9, 2**30, 2**20


# ----------------------------------------------------------------------------------------------- integers
def number(value, what: str):
    """The student's scalar as a Python ``int`` or ``float`` (for comparing values), or a Korean failure."""
    if isinstance(value, bool):
        raise GradingFailure(Verdict.NUMBER_IS_BOOL.korean(what=what, value=value))
    if isinstance(value, (int, float)):
        return value
    if one_number(value) and value.dtype.kind in "iuf":
        return int(value.item()) if value.dtype.kind in "iu" else float(value.item())
    if isinstance(value, np.ndarray):
        raise GradingFailure(Verdict.NUMBER_IS_ARRAY.korean(what=what, shape=value.shape))
    as_array(value, what)     # None, tuples, objects: the usual Korean message
    raise GradingFailure(Verdict.NOT_A_NUMBER.korean(what=what, kind=type(value).__name__))


def one_number(value) -> bool:
    """A numpy number as it arrives from the student's process: an array of one element, shape () or (1,) (the
    sandbox's wire format sends 0-d arrays as 1-d today: ``np.ascontiguousarray`` in ``inside.wire.write_frame``)."""
    return isinstance(value, np.ndarray) and value.ndim <= 1 and value.size == 1


def is_integer(value) -> bool:
    """A Python ``int`` or a numpy integer (an integer array of one element); never ``bool`` or a float."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return one_number(value) and value.dtype.kind in "iu"


def expect_int(got, expected: int, *, what: str, call=None, exercise: str | None = None, explain=None) -> None:
    """``got`` must equal ``expected`` exactly (tolerances.EXACT); a float of the same value passes here (the
    type is graded by its own test). On failure, the mistakes whose result on ``call`` is exactly ``got`` are
    named; ``explain(value)`` may add a Korean sentence about the wrong value."""
    value = number(got, what)
    if value == expected:
        return
    found = of_number(value, expected, call, exercise)
    shown = f"{value:,}" if isinstance(value, int) else f"{value:,.6g}"
    message = Verdict.INTEGER_DIFFERS.korean(what=what, shown=shown)
    if explain is not None:
        message += " " + explain(value)
    raise GradingFailure(with_causes(message, found), found)


def expect_integer_type(got, *, what: str, float_mistake: str | None = None) -> None:
    """The contract asks for an ``int``: a float, even an integral one, fails with a Korean explanation."""
    if is_integer(got):
        return
    value = number(got, what)
    found = [by_id(float_mistake)] if float_mistake and isinstance(value, float) else []
    message = Verdict.NOT_AN_INTEGER.korean(what=what, kind=type(value).__name__, value=value)
    raise GradingFailure(with_causes(message, found), found)


def raised(failure: GradingFailure, error: str) -> bool:
    """Whether a failed call of the student's function raised ``error`` (e.g. "ValueError"): the type's name as the
    sandbox reported it (``GradingFailure.raised``), never read back out of the Korean message, which carries the
    student's own text."""
    return failure.raised == error


# ----------------------------------------------------------------------------------------------- Keras GQA
def keras_gqa(rng, b, tq, tk, d_model, hq, hkv, head_dim, masked):
    """A keras.layers.GroupQueryAttention with random weights and biases, its output, and the projected
    query/key/value heads (B, H, T, d) computed here from the layer's own weights."""
    import keras

    from autograder.graders.attention import keras_layers
    from autograder.graders.attention.inputs import key_mask, normal

    x_q, x_kv = normal(rng, b, tq, d_model), normal(rng, b, tk, d_model)
    layer = keras_layers.layer(keras.layers.GroupQueryAttention, x_q.shape, x_kv.shape, head_dim=head_dim,
                               num_query_heads=hq, num_key_value_heads=hkv)
    dense = {"q": layer._query_dense, "k": layer._key_dense, "v": layer._value_dense, "o": layer._output_dense}
    weights, values = {}, []
    for name, sub in dense.items():
        kernel = normal(rng, *sub.kernel.shape) / np.float32(np.sqrt(d_model))
        bias = normal(rng, *sub.bias.shape) * np.float32(0.3)
        values += [(sub.kernel, kernel), (sub.bias, bias)]
        weights[name] = (kernel.astype(np.float64), bias.astype(np.float64))
    layer = keras_layers.holding(layer, values)
    mask = key_mask(rng, b, tq, tk) if masked else None                    # Keras's (B, Tq, Tk)
    out = keras.ops.convert_to_numpy(layer(x_q, x_kv, attention_mask=mask))  # (B, Tq, D)
    # The layer's projections: EinsumDense "bqm,muh->bquh" (query), "bkm,mvh->bkvh" (key, value).
    q = np.einsum("bqm,muh->buqh", x_q, weights["q"][0]) + weights["q"][1][None, :, None, :]    # (B, Hq, Tq, d)
    k = np.einsum("bkm,mvh->bvkh", x_kv, weights["k"][0]) + weights["k"][1][None, :, None, :]   # (B, Hkv, Tk, d)
    v = np.einsum("bkm,mvh->bvkh", x_kv, weights["v"][0]) + weights["v"][1][None, :, None, :]   # (B, Hkv, Tk, d)
    w_o, b_o = weights["o"]                                                # (Hq, d, D), (D,)
    return out, q, k, v, None if mask is None else mask[:, None], w_o, b_o
