"""The Keras layers the attention graders compare with, holding given weights (float32, torch backend).

* ``expect_like_keras_attention``: an attention function ``f(query, key, value, mask)`` (additive, dot-product,
  scaled dot-product) against the Keras attention layer that computes it, with and without a key mask;
* ``multi_head_attention``: ``keras.layers.MultiHeadAttention`` holding the projections of a parameter dict of the
  contract (``w_q``, ``w_k``, ``w_v``: (D, H*dk); ``w_o``: (H*dv, D_out); biases ``b_*`` where given), for
  self-attention, multi-head attention, its layer and the decoder block;
* ``layer``, ``holding``: a Keras layer built once per grading process for its configuration and input shapes, and
  every one of its weights set on each use (a class run grades many submissions in one process; building a
  ``MultiHeadAttention`` takes about 3 ms, setting its weights 0.07 ms).
"""
from __future__ import annotations

import keras
import numpy as np

from autograder.graders import tolerances
from autograder.graders.attention.inputs import key_mask, normal
from autograder.graders.compare import expect_close


def expect_like_keras_attention(student, name: str, rng, masked: bool, layer, *, against: str, dv: int = 5):
    """``student.<name>(q, k, v, mask)`` equals ``layer(q, v, k)`` (B = 2, Tq = 4, Tk = 6, d = 8), with a random key
    mask (B, 1, Tk) when ``masked``. ``layer(q, v, k)`` makes the Keras layer for these inputs."""
    b, tq, tk, d = 2, 4, 6, 8
    q, k, v = normal(rng, b, tq, d), normal(rng, b, tk, d), normal(rng, b, tk, dv)
    value_mask = key_mask(rng, b, tk) if masked else None
    expected = layer(q, v, k)([q, v, k], mask=[None, value_mask] if masked else None)   # (B, Tq, dv)
    mask = value_mask[:, None, :] if masked else None                                    # (B, 1, Tk)
    got = getattr(student, name)(q, k, v, mask)
    expect_close(got, keras.ops.convert_to_numpy(expected), tol=tolerances.STUDENT_VS_KERAS, against=against,
                 call=student.last)


def multi_head_attention(params: dict, num_heads: int, query_shape, value_shape, key_shape=None):
    """A built ``keras.layers.MultiHeadAttention`` holding ``params``'s weights: no biases (``use_bias=False``) when
    ``params`` has none, an output of ``w_o``'s width. The layer is kept for the next call of the same configuration
    and shapes (``layer``), which sets its weights again: use it before that call."""
    d_model = query_shape[-1]
    dk, dv = params["w_q"].shape[1] // num_heads, params["w_v"].shape[1] // num_heads
    width = params["w_o"].shape[1]
    use_bias = "b_q" in params
    mha = layer(keras.layers.MultiHeadAttention, query_shape, value_shape, key_shape or value_shape,
                num_heads=num_heads, key_dim=dk, value_dim=dv, use_bias=use_bias,
                output_shape=None if width == d_model else width)
    weights = []
    for dense, name, size in ((mha._query_dense, "q", dk), (mha._key_dense, "k", dk), (mha._value_dense, "v", dv)):
        weights.append((dense.kernel, np.asarray(params[f"w_{name}"]).reshape(-1, num_heads, size)))   # (D, H, d)
        if use_bias:
            weights.append((dense.bias, np.asarray(params[f"b_{name}"]).reshape(num_heads, size)))      # (H, d)
    output = np.asarray(params["w_o"]).reshape(num_heads, dv, width)                          # (H, dv, D_out)
    weights.append((mha._output_dense.kernel, output))
    if use_bias:
        weights.append((mha._output_dense.bias, params["b_o"]))
    return holding(mha, weights)


KEPT = 64   # built layers kept per grading process, at most (the attention and decoder graders use 11)
_BUILT: dict = {}


def layer(cls, *input_shapes, slot: int = 0, **config):
    """A built ``cls(**config)`` (``build(*input_shapes)``), made once per grading process for these values and reused
    after: give it to ``holding`` before use, since a reused layer still holds the weights of its last use. Two layers
    of one configuration in use at the same time need two ``slot`` numbers: with one, the second would be the first.

    Example:
        >>> dense = layer(keras.layers.Dense, (2, 3), units=4)
        >>> dense = holding(dense, [(dense.kernel, np.ones((3, 4))), (dense.bias, np.zeros(4))])
        >>> layer(keras.layers.Dense, (2, 3), units=4) is dense
        True
    """
    key = (cls.__name__, slot, tuple(sorted(config.items())), tuple(tuple(shape) for shape in input_shapes))
    made = _BUILT.get(key)
    if made is None:
        if len(_BUILT) >= KEPT:
            _BUILT.clear()
        made = cls(**config)
        made.build(*input_shapes)
        _BUILT[key] = made
    return made


def holding(kept, weights):
    """``kept`` (a layer) with each of its weights set: ``weights`` pairs every variable of the layer
    (``kept.weights``) with its value; a variable left out is an error, so a reused layer never keeps another use's
    weights. Returns the layer."""
    given = {id(variable) for variable, _ in weights}
    missing = [variable.path for variable in kept.weights if id(variable) not in given]
    if missing:
        raise ValueError(f"{type(kept).__name__}: no value given for {missing}")
    for variable, value in weights:
        variable.assign(value)
    return kept
