"""The two libraries' Qwen3, holding the weights of the `modern` notebook's layout: Hugging Face transformers'
``Qwen3ForCausalLM`` (its ``Qwen3Attention``, ``Qwen3DecoderLayer`` and ``Qwen3MLP``) and KerasHub's ``Qwen3Backbone``
(its ``Qwen3Attention`` and ``Qwen3TransformerDecoder``, Keras layers on the torch backend).

The notebook multiplies weights from the right (``x @ q_proj``, q_proj ``(D, H * dh)``); a torch ``Linear`` holds the
transpose (``q_proj.weight`` is ``(H * dh, D)``) and KerasHub's EinsumDense kernels the same matrix reshaped per head
(query ``(D, H, dh)``, output ``(H, dh, D)``). Both libraries' RoPE is the rotate-half layout of the course's
``apply_rope`` with ``rope_theta`` as its base.

What each computes in (measured by tests/graders/test_modern_references.py, written in tolerances.py):

* transformers in float64 (``model.double()``) computes its RMSNorms and its rotary angles in float32 by design
  (``Qwen3RMSNorm`` casts to float32, ``Qwen3RotaryEmbedding`` holds ``inv_freq`` in float32);
* KerasHub computes in float32 (its ``Qwen3LayerNorm`` casts to float32 whatever the layer's dtype), and its
  ``Qwen3Attention`` normalises queries and keys with epsilon 1e-5 where transformers uses ``rms_norm_eps`` (1e-6).

Imported by ``scripts/modern_refs/generate.py`` and the package's tests only: importing transformers' Qwen3 takes
about 3 s here and keras_hub 0.5 s beyond keras, which no grading pays.
"""
from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "torch")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from autograder.graders.answers import ROPE_THETA, QWEN3_EPS  # noqa: E402


def _t(a, dtype=torch.float64) -> torch.Tensor:
    return torch.from_numpy(np.array(a, np.float64)).to(dtype)


# ----------------------------------------------------------------------------------------------- transformers
def hf_config(vocab, d_model, num_heads, num_kv_heads, head_dim, hidden, layers, tied=True, max_positions=256):
    from transformers import Qwen3Config

    return Qwen3Config(vocab_size=vocab, hidden_size=d_model, intermediate_size=hidden, num_hidden_layers=layers,
                       num_attention_heads=num_heads, num_key_value_heads=num_kv_heads, head_dim=head_dim,
                       max_position_embeddings=max_positions, rope_theta=ROPE_THETA, rms_norm_eps=QWEN3_EPS,
                       tie_word_embeddings=tied, hidden_act="silu", attention_bias=False,
                       attn_implementation="eager", use_sliding_window=False)


def shape_of(params) -> dict:
    """The config numbers of a model in the notebook's layout."""
    first = params["layers"][0]
    head_dim = first["q_norm"].shape[0]
    return {"vocab": params["embed_tokens"].shape[0], "d_model": params["embed_tokens"].shape[1],
            "num_heads": first["q_proj"].shape[1] // head_dim, "num_kv_heads": first["k_proj"].shape[1] // head_dim,
            "head_dim": head_dim, "hidden": first["gate_proj"].shape[1], "layers": len(params["layers"]),
            "tied": params.get("lm_head") is None}


def _load_block(layer, block, dtype) -> None:
    attn, mlp = layer.self_attn, layer.mlp
    with torch.no_grad():
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            getattr(attn, name).weight.copy_(_t(block[name], dtype).T)
        attn.q_norm.weight.copy_(_t(block["q_norm"], dtype))
        attn.k_norm.weight.copy_(_t(block["k_norm"], dtype))
        for name in ("gate_proj", "up_proj", "down_proj"):
            getattr(mlp, name).weight.copy_(_t(block[name], dtype).T)
        layer.input_layernorm.weight.copy_(_t(block["input_layernorm"], dtype))
        layer.post_attention_layernorm.weight.copy_(_t(block["post_attention_layernorm"], dtype))


def hf_model(params, dtype=torch.float64):
    """``Qwen3ForCausalLM`` holding ``params`` (tied when it has no lm_head), in ``dtype``, in eval mode."""
    from transformers import Qwen3ForCausalLM

    torch.manual_seed(0)
    model = Qwen3ForCausalLM(hf_config(**shape_of(params))).to(dtype).eval()
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(_t(params["embed_tokens"], dtype))
        model.model.norm.weight.copy_(_t(params["norm"], dtype))
        if params.get("lm_head") is not None:
            model.lm_head.weight.copy_(_t(params["lm_head"], dtype).T)
        for layer, block in zip(model.model.layers, params["layers"], strict=True):
            _load_block(layer, block, dtype)
    if params.get("lm_head") is None:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()   # tied
    return model


def _one_block_model(block, num_heads, num_kv_heads, dtype):
    d_model = block["input_layernorm"].shape[0]
    params = {"embed_tokens": np.zeros((2, d_model), np.float32), "layers": [block],
              "norm": np.ones(d_model, np.float32)}
    model = hf_model(params, dtype)
    assert model.config.num_attention_heads == num_heads and model.config.num_key_value_heads == num_kv_heads
    return model


def _rotary(model, x, positions):
    position_ids = torch.as_tensor(np.asarray(positions), dtype=torch.long)[None].expand(x.shape[0], -1)
    return model.model.rotary_emb(x, position_ids)


def _causal(b, t, dtype):
    """The additive causal mask (B, 1, T, T) that transformers' eager attention adds to its scores."""
    mask = torch.full((t, t), float("-inf"), dtype=dtype).triu(1)
    return mask[None, None].expand(b, 1, t, t)


def hf_attention(x, params, positions, num_heads, num_kv_heads):
    """transformers' ``Qwen3Attention`` holding ``params``, on ``x`` (B, T, D) at ``positions``, float64."""
    model = _one_block_model(params, num_heads, num_kv_heads, torch.float64)
    x = _t(x)
    with torch.no_grad():
        out, _ = model.model.layers[0].self_attn(x, _rotary(model, x, positions), _causal(*x.shape[:2], x.dtype))
    return out.numpy()


def hf_block(x, block, positions, num_heads, num_kv_heads):
    """transformers' ``Qwen3DecoderLayer`` holding ``block``, float64."""
    model = _one_block_model(block, num_heads, num_kv_heads, torch.float64)
    x = _t(x)
    with torch.no_grad():
        out = model.model.layers[0](x, attention_mask=_causal(*x.shape[:2], x.dtype),
                                    position_embeddings=_rotary(model, x, positions))
    return (out[0] if isinstance(out, tuple) else out).numpy()


def hf_mlp(x, w_gate, w_up, w_down):
    """transformers' ``Qwen3MLP`` with these weights, float64."""
    from transformers.models.qwen3.modeling_qwen3 import Qwen3MLP

    d_model, hidden = w_gate.shape
    config = hf_config(2, d_model, 1, 1, 2, hidden, 1)
    mlp = Qwen3MLP(config).double()
    with torch.no_grad():
        for name, w in (("gate_proj", w_gate), ("up_proj", w_up), ("down_proj", w_down)):
            getattr(mlp, name).weight.copy_(_t(w).T)
        return mlp(_t(x)).numpy()


def hf_generate(params, prompt, max_new_tokens):
    """``Qwen3ForCausalLM.generate(do_sample=False)`` (greedy, with its own KV cache) of the float64 model."""
    model = hf_model(params)
    prompt = torch.as_tensor(np.asarray(prompt), dtype=torch.long)
    with torch.no_grad():
        out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=max_new_tokens,
                             min_new_tokens=max_new_tokens, do_sample=False, pad_token_id=0, eos_token_id=None)
    return out.numpy()


def hf_logits(params, tokens):
    """The float64 model's logits (B, V) after ``tokens`` (the last position), no cache."""
    model = hf_model(params)
    with torch.no_grad():
        return model(torch.as_tensor(np.asarray(tokens), dtype=torch.long)).logits[:, -1].numpy()


def hf_cache_bytes(params, batch, length, dtype=torch.float32) -> int:
    """The bytes of the keys and values that ``Qwen3ForCausalLM`` holds in its cache (a ``DynamicCache``) after a
    prefill of ``length`` tokens of a batch of ``batch``, in ``dtype``."""
    model = hf_model(params, dtype)
    tokens = torch.zeros((batch, length), dtype=torch.long)
    with torch.no_grad():
        out = model(tokens, use_cache=True)
    cache = getattr(out, "cache", None) or out.past_key_values
    return int(sum(layer.keys.nbytes + layer.values.nbytes for layer in cache.layers))


# ----------------------------------------------------------------------------------------------- KerasHub
def kh_backbone(params, dtype="float32", max_positions=256):
    """KerasHub's ``Qwen3Backbone`` holding ``params`` (its tied or untied ``ReversibleEmbedding`` as the model)."""
    import keras_hub

    s = shape_of(params)
    backbone = keras_hub.models.Qwen3Backbone(
        vocabulary_size=s["vocab"], num_layers=s["layers"], num_query_heads=s["num_heads"],
        num_key_value_heads=s["num_kv_heads"], head_dim=s["head_dim"], hidden_dim=s["d_model"],
        intermediate_dim=s["hidden"], rope_max_wavelength=ROPE_THETA, layer_norm_epsilon=QWEN3_EPS,
        tie_word_embeddings=s["tied"], sliding_window_size=max_positions, dtype=dtype)
    embedding = backbone.token_embedding
    embedding.embeddings.assign(np.asarray(params["embed_tokens"], np.float32))
    if not s["tied"]:
        embedding.reverse_embeddings.assign(np.asarray(params["lm_head"], np.float32))
    backbone.layer_norm.scale.assign(np.asarray(params["norm"], np.float32))
    for layer, block in zip(backbone.transformer_layers, params["layers"], strict=True):
        _load_keras_block(layer, block, s)
    return backbone


def _load_keras_block(layer, block, s) -> None:
    d, h, kv, dh = s["d_model"], s["num_heads"], s["num_kv_heads"], s["head_dim"]
    attn = layer._self_attention_layer
    f32 = lambda name: np.asarray(block[name], np.float32)                              # noqa: E731
    attn._query_dense.kernel.assign(f32("q_proj").reshape(d, h, dh))                    # (D, H, dh)
    attn._key_dense.kernel.assign(f32("k_proj").reshape(d, kv, dh))                     # (D, Hkv, dh)
    attn._value_dense.kernel.assign(f32("v_proj").reshape(d, kv, dh))                   # (D, Hkv, dh)
    attn._output_dense.kernel.assign(f32("o_proj").reshape(h, dh, d))                   # (H, dh, D)
    attn._query_dense_layer_norm.scale.assign(f32("q_norm"))
    attn._key_dense_layer_norm.scale.assign(f32("k_norm"))
    layer._self_attention_layernorm.scale.assign(f32("input_layernorm"))
    layer._feedforward_layernorm.scale.assign(f32("post_attention_layernorm"))
    layer._feedforward_gate_dense.kernel.assign(f32("gate_proj"))
    layer._feedforward_intermediate_dense.kernel.assign(f32("up_proj"))
    layer._feedforward_output_dense.kernel.assign(f32("down_proj"))


def _one_block_backbone(block, num_heads, num_kv_heads):
    d_model = block["input_layernorm"].shape[0]
    backbone = kh_backbone({"embed_tokens": np.zeros((2, d_model), np.float32), "layers": [block],
                            "norm": np.ones(d_model, np.float32)})
    assert backbone.num_query_heads == num_heads and backbone.num_key_value_heads == num_kv_heads
    return backbone.transformer_layers[0]


def _numpy(x) -> np.ndarray:
    import keras

    return np.asarray(keras.ops.convert_to_numpy(x), np.float64)


def kh_attention(x, params, num_heads, num_kv_heads):
    """KerasHub's ``Qwen3Attention`` holding ``params`` on ``x`` (B, T, D) at positions 0 .. T-1 (its RoPE starts
    at a cache's index; without a cache, at 0), causal, float32."""
    layer = _one_block_backbone(params, num_heads, num_kv_heads)
    x = np.asarray(x, np.float32)
    b, t, _ = x.shape
    mask = np.broadcast_to(np.tril(np.ones((t, t), bool)), (b, t, t))
    return _numpy(layer._self_attention_layer(x, attention_mask=mask))


def kh_block(x, block, num_heads, num_kv_heads):
    """KerasHub's ``Qwen3TransformerDecoder`` (its causal mask its own) holding ``block``, positions 0 .. T-1,
    float32."""
    layer = _one_block_backbone(block, num_heads, num_kv_heads)
    return _numpy(layer(np.asarray(x, np.float32)))


def kh_mlp(x, w_gate, w_up, w_down):
    """The SwiGLU MLP of KerasHub's ``Qwen3TransformerDecoder`` (its gate, intermediate and output Dense layers and
    its silu), float32."""
    import keras

    d_model, hidden = w_gate.shape
    block = {"input_layernorm": np.ones(d_model, np.float32), "q_proj": np.zeros((d_model, 2), np.float32),
             "k_proj": np.zeros((d_model, 2), np.float32), "v_proj": np.zeros((d_model, 2), np.float32),
             "o_proj": np.zeros((2, d_model), np.float32), "q_norm": np.ones(2, np.float32),
             "k_norm": np.ones(2, np.float32), "post_attention_layernorm": np.ones(d_model, np.float32),
             "gate_proj": w_gate, "up_proj": w_up, "down_proj": w_down}
    layer = _one_block_backbone(block, 1, 1)
    x = keras.ops.convert_to_tensor(np.asarray(x, np.float32))
    gate = layer.activation(layer._feedforward_gate_dense(x))
    return _numpy(layer._feedforward_output_dense(layer._feedforward_intermediate_dense(x) * gate))


def kh_logits(params, tokens):
    """KerasHub's logits (B, V) after ``tokens``: the backbone, then its ``ReversibleEmbedding`` reversed (tied or
    not), float32."""
    backbone = kh_backbone(params)
    tokens = np.asarray(tokens, np.int32)
    hidden = backbone({"token_ids": tokens, "padding_mask": np.ones_like(tokens)})
    return _numpy(backbone.token_embedding(hidden[:, -1], reverse=True))


def kh_cache_bytes(params, batch, max_length) -> int:
    """The bytes of the cache that KerasHub's ``Qwen3CausalLM`` allocates for generating up to ``max_length``
    tokens (``_build_cache``: one (B, layers, 2, max_length, Hkv, dh) tensor, filled by the prefill)."""
    import keras_hub

    causal_lm = keras_hub.models.Qwen3CausalLM(backbone=kh_backbone(params), preprocessor=None)
    tokens = np.zeros((batch, max_length), np.int32)
    _, cache = causal_lm._build_cache(tokens)
    return int(cache.numel() * cache.element_size())                                  # a torch tensor (torch backend)
