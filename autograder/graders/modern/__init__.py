"""Shared helpers of the `modern` graders: random Qwen3 blocks and tiny Qwen3 models in the notebook's layout
(``references.py``'s modern section), a model and prompt whose greedy choices are clear (no near-ties), and the
stored references of the two libraries (``store.py``: Hugging Face transformers' and KerasHub's Qwen3, computed by
``scripts/modern_refs`` and read here with numpy only: no grading imports either library).
"""
from __future__ import annotations

import numpy as np

from autograder.graders import references, tolerances
from autograder.graders.attention.inputs import normal

# The graders' model: 2 blocks, D = 24, 4 query heads and 2 KV heads of head_dim 8 (so H * dh = 32 is not D, as in
# Qwen3-0.6B: 16 x 128 = 2048 against D = 1024), SwiGLU 40 wide, 40 tokens.
MODEL = {"vocab": 40, "d_model": 24, "num_heads": 4, "num_kv_heads": 2, "head_dim": 8, "hidden": 40, "layers": 2}


def norm_weight(rng, n) -> np.ndarray:
    """An RMSNorm's weight: around 1, far enough from it (and from the other norms') to matter."""
    return 1 + 0.3 * normal(rng, n)


def block_params(rng, d_model, num_heads, num_kv_heads, head_dim, hidden, out_scale=1.0) -> dict:
    """One Qwen3 block (float32): weights scaled like Glorot, no biases (Qwen3 has none); ``out_scale`` multiplies
    the two projections whose outputs are added to the residual stream (o_proj, down_proj)."""
    def w(n_in, n_out, scale=1.0):
        return normal(rng, n_in, n_out) * np.float32(scale / np.sqrt(n_in))

    return {"input_layernorm": norm_weight(rng, d_model),
            "q_proj": w(d_model, num_heads * head_dim), "k_proj": w(d_model, num_kv_heads * head_dim),
            "v_proj": w(d_model, num_kv_heads * head_dim), "o_proj": w(num_heads * head_dim, d_model, out_scale),
            "q_norm": norm_weight(rng, head_dim), "k_norm": norm_weight(rng, head_dim),
            "post_attention_layernorm": norm_weight(rng, d_model),
            "gate_proj": w(d_model, hidden), "up_proj": w(d_model, hidden), "down_proj": w(hidden, d_model, out_scale)}


def model_params(rng, vocab, d_model, num_heads, num_kv_heads, head_dim, hidden, layers, tied=True) -> dict:
    """A tiny Qwen3 model in the notebook's layout (float32); ``tied``: no ``lm_head`` (the embedding's transpose).

    Scaled so that its greedy tokens depend on everything a mistake can break: as with the decoder's GPT-2 model,
    a random model with a tied embedding tends to repeat its last token (the residual stream carries
    embed_tokens[token] and the logits are dot products with it), so the token embeddings are small (0.5), the
    sublayers' outputs large (o_proj, down_proj x 3) and the final norm's gain about 4.
    """
    params = {"embed_tokens": np.float32(0.5) * normal(rng, vocab, d_model),
              "layers": [block_params(rng, d_model, num_heads, num_kv_heads, head_dim, hidden, out_scale=3.0)
                         for _ in range(layers)],
              "norm": np.float32(4) * norm_weight(rng, d_model)}
    if not tied:
        params["lm_head"] = normal(rng, d_model, vocab) * np.float32(1 / np.sqrt(d_model))
    return params


def model_and_prompt(rng, batch, prompt_len, new_tokens, tied=True, tries=64):
    """A model, a prompt (B, T0) and the float64 reference's greedy tokens (B, T0 + N), redrawn until every greedy
    choice leads the runner-up by ``tolerances.TOKEN_MARGIN`` (so float32 and float64 computations choose alike)."""
    heads, kv_heads = MODEL["num_heads"], MODEL["num_kv_heads"]
    for _ in range(tries):
        params = model_params(rng, **MODEL, tied=tied)
        prompt = rng.integers(0, MODEL["vocab"], size=(batch, prompt_len))
        margins: list = []
        tokens = references.qwen3_generate(params, prompt, new_tokens, heads, kv_heads, margins=margins)
        if min(margins, default=np.inf) >= tolerances.TOKEN_MARGIN:
            return params, prompt, tokens
    raise RuntimeError("no model with clear greedy choices")


def sampled_model_and_prompt(rng, batch, prompt_len, new_tokens, temperature, top_k=None, top_p=None, tries=64):
    """A model, a prompt, a seed and the float64 reference's tokens drawn with ``numpy.random.default_rng(seed)``
    by the notebook's ``sample``, redrawn until no step is near another outcome (as the decoder's)."""
    floors = {"top_k": tolerances.TOKEN_MARGIN, "top_p": tolerances.SAMPLE_MARGIN, "draw": tolerances.SAMPLE_MARGIN}
    heads, kv_heads = MODEL["num_heads"], MODEL["num_kv_heads"]
    for _ in range(tries):
        params = model_params(rng, **MODEL)
        prompt = rng.integers(0, MODEL["vocab"], size=(batch, prompt_len))
        seed = int(rng.integers(2**31))
        margins: list = []
        tokens = references.qwen3_generate(params, prompt, new_tokens, heads, kv_heads, temperature=temperature,
                                           top_k=top_k, top_p=top_p, rng=np.random.default_rng(seed),
                                           margins=margins)
        if all(distance >= floors[kind] for kind, distance in margins):
            return params, prompt, seed, tokens
    raise RuntimeError("no model whose sampled steps are clear")


def random_block(rng, num_heads=None, num_kv_heads=None):
    """A block of the graders' model (other head counts where given)."""
    heads = num_heads or MODEL["num_heads"]
    kv_heads = num_kv_heads or MODEL["num_kv_heads"]
    return block_params(rng, MODEL["d_model"], heads, kv_heads, MODEL["head_dim"], MODEL["hidden"])
