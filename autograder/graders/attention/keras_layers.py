"""The Keras layers the attention graders compare with, holding given weights (float32, torch backend).

* ``expect_like_keras_attention``: an attention function ``f(query, key, value, mask)`` (additive, dot-product,
  scaled dot-product) against the Keras attention layer that computes it, with and without a key mask;
* ``multi_head_attention``: ``keras.layers.MultiHeadAttention`` holding the projections of a parameter dict of the
  contract (``w_q``, ``w_k``, ``w_v``: (D, H*dk); ``w_o``: (H*dv, D_out); biases ``b_*`` where given), for
  self-attention, multi-head attention, its layer and the decoder block.
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
    ``params`` has none, an output of ``w_o``'s width."""
    d_model = query_shape[-1]
    dk, dv = params["w_q"].shape[1] // num_heads, params["w_v"].shape[1] // num_heads
    width = params["w_o"].shape[1]
    use_bias = "b_q" in params
    layer = keras.layers.MultiHeadAttention(num_heads=num_heads, key_dim=dk, value_dim=dv, use_bias=use_bias,
                                            output_shape=None if width == d_model else width)
    layer.build(query_shape, value_shape, key_shape or value_shape)
    for dense, name, size in ((layer._query_dense, "q", dk), (layer._key_dense, "k", dk),
                              (layer._value_dense, "v", dv)):
        dense.kernel.assign(np.asarray(params[f"w_{name}"]).reshape(-1, num_heads, size))   # (D, H, d)
        if use_bias:
            dense.bias.assign(np.asarray(params[f"b_{name}"]).reshape(num_heads, size))      # (H, d)
    layer._output_dense.kernel.assign(np.asarray(params["w_o"]).reshape(num_heads, dv, width))  # (H, dv, D_out)
    if use_bias:
        layer._output_dense.bias.assign(params["b_o"])
    return layer
