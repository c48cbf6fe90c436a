"""The graders' Keras layers are built once per grading process and hold each use's weights.

A class run grades many submissions in one process: ``keras_layers.layer`` keeps each built layer for its
configuration and input shapes, and ``keras_layers.holding`` sets every weight on each use. These tests prove that a
kept layer computes what a freshly built one does with the second use's weights, that a weight left out is refused,
and that the decoder block's two layer norms of one configuration are two layers.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

import keras  # noqa: E402

from autograder.graders import references  # noqa: E402
from autograder.graders.attention import keras_layers  # noqa: E402
from autograder.graders.decoder import block_params, keras_block  # noqa: E402


def mha_params(rng, d_model, h, dk, dv, width, bias):
    params = {"w_q": rng.standard_normal((d_model, h * dk)), "w_k": rng.standard_normal((d_model, h * dk)),
              "w_v": rng.standard_normal((d_model, h * dv)), "w_o": rng.standard_normal((h * dv, width))}
    if bias:
        params.update({"b_q": rng.standard_normal(h * dk), "b_k": rng.standard_normal(h * dk),
                       "b_v": rng.standard_normal(h * dv), "b_o": rng.standard_normal(width)})
    return {k: v.astype(np.float32) for k, v in params.items()}


def fresh_mha(params, h, dk, dv, width, d_model, x_q, x_kv):
    """keras.layers.MultiHeadAttention built here, not kept: the layer a kept one must equal."""
    bias = "b_q" in params
    layer = keras.layers.MultiHeadAttention(num_heads=h, key_dim=dk, value_dim=dv, use_bias=bias,
                                            output_shape=None if width == d_model else width)
    layer.build(x_q.shape, x_kv.shape, x_kv.shape)
    for dense, name, size in ((layer._query_dense, "q", dk), (layer._key_dense, "k", dk),
                              (layer._value_dense, "v", dv)):
        dense.kernel.assign(params[f"w_{name}"].reshape(-1, h, size))
        if bias:
            dense.bias.assign(params[f"b_{name}"].reshape(h, size))
    layer._output_dense.kernel.assign(params["w_o"].reshape(h, dv, width))
    if bias:
        layer._output_dense.bias.assign(params["b_o"])
    return keras.ops.convert_to_numpy(layer(x_q, x_kv, x_kv))


@pytest.mark.parametrize("d_model, h, dk, dv, width, bias", [
    pytest.param(12, 3, 4, 2, 12, True, id="biases"),
    pytest.param(12, 3, 4, 2, 12, False, id="no_biases"),
    pytest.param(8, 2, 3, 5, 6, True, id="narrower_output"),
])
def test_a_kept_multi_head_attention_layer_holds_each_uses_weights(d_model, h, dk, dv, width, bias):
    rng = np.random.default_rng(7)
    x_q = rng.standard_normal((2, 5, d_model)).astype(np.float32)
    x_kv = rng.standard_normal((2, 6, d_model)).astype(np.float32)
    outputs, layers = [], []
    for params in (mha_params(rng, d_model, h, dk, dv, width, bias), mha_params(rng, d_model, h, dk, dv, width, bias)):
        layer = keras_layers.multi_head_attention(params, h, x_q.shape, x_kv.shape)
        got = keras.ops.convert_to_numpy(layer(x_q, x_kv, x_kv))
        # the same float32 operations on the same weights and inputs: the same bits
        np.testing.assert_array_equal(got, fresh_mha(params, h, dk, dv, width, d_model, x_q, x_kv))
        outputs.append(got)
        layers.append(layer)
    assert layers[0] is layers[1], "the second use should reuse the first use's layer"
    assert np.abs(outputs[0] - outputs[1]).max() > 0.1, "the two uses' weights should give different outputs"


def test_the_decoder_blocks_kept_layers_hold_each_blocks_weights():
    """Two blocks in a row, each with its own layer norms (two of one configuration: two slots): each equals the
    float64 reference block (the tolerance of test_decoder_graders.test_keras_block_is_the_reference_block)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 7, 12)).astype(np.float32)
    for _ in range(2):
        block = block_params(rng, 12, 3, 40)
        assert np.abs(block["ln_1"]["gamma"] - block["ln_2"]["gamma"]).max() > 0.1
        np.testing.assert_allclose(keras_block(block, 3, x), references.decoder_block(x, block, 3),
                                   atol=1e-4, rtol=1e-4)


def test_holding_refuses_a_layer_with_a_weight_left_out():
    dense = keras_layers.layer(keras.layers.Dense, (2, 3), units=4)
    with pytest.raises(ValueError, match="bias"):
        keras_layers.holding(dense, [(dense.kernel, np.ones((3, 4), np.float32))])
    held = keras_layers.holding(dense, [(dense.kernel, np.ones((3, 4), np.float32)),
                                        (dense.bias, np.full(4, 2.0, np.float32))])
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(held(np.ones((2, 3), np.float32))), np.full((2, 4), 5.0))


def test_layers_of_one_configuration_in_two_slots_are_two_layers():
    first = keras_layers.layer(keras.layers.LayerNormalization, (2, 4, 6), slot=1, epsilon=1e-5)
    second = keras_layers.layer(keras.layers.LayerNormalization, (2, 4, 6), slot=2, epsilon=1e-5)
    assert first is not second
    assert keras_layers.layer(keras.layers.LayerNormalization, (2, 4, 6), slot=1, epsilon=1e-5) is first
    assert keras_layers.layer(keras.layers.LayerNormalization, (2, 4, 7), slot=1, epsilon=1e-5) is not first


def test_the_kept_layers_are_bounded():
    for units in range(1, keras_layers.KEPT + 5):
        keras_layers.layer(keras.layers.Dense, (1, 2), units=units)
        assert len(keras_layers._BUILT) <= keras_layers.KEPT
