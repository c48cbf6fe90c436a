"""Shared helpers of the `decoder` graders: random blocks and tiny models in the contract's GPT-2 layout
(``params = {"wte", "wpe", "blocks", "ln_f"}``), a model and prompt whose greedy choices are clear (no near-ties),
and the block built from Keras layers with the same weights.
"""
from __future__ import annotations

import numpy as np

from autograder.graders import references, tolerances
from autograder.graders.attention.inputs import normal


def norm_params(rng, d_model) -> dict:
    """A layer norm's gamma (around 1) and beta (around 0), both far enough from 1 and 0 to matter."""
    return {"gamma": 1 + 0.3 * normal(rng, d_model), "beta": 0.3 * normal(rng, d_model)}


def block_params(rng, d_model, num_heads, hidden) -> dict:
    """One block: weights scaled like Glorot, non-zero biases (a block that ignores one must fail)."""
    def w(n_in, n_out):
        return normal(rng, n_in, n_out) / np.float32(np.sqrt(n_in))

    def bias(n):
        return normal(rng, n) * np.float32(0.3)

    attn = {"w_q": w(d_model, d_model), "b_q": bias(d_model), "w_k": w(d_model, d_model), "b_k": bias(d_model),
            "w_v": w(d_model, d_model), "b_v": bias(d_model), "w_o": w(d_model, d_model), "b_o": bias(d_model)}
    return {"ln_1": norm_params(rng, d_model), "attn": attn, "ln_2": norm_params(rng, d_model),
            "w_1": w(d_model, hidden), "b_1": bias(hidden), "w_2": w(hidden, d_model), "b_2": bias(d_model)}


def model_params(rng, vocab, d_model, num_heads, hidden, layers, t_max, final_gain=4.0) -> dict:
    """A tiny decoder-only model in the contract's layout (float32).

    Scaled so that its greedy tokens depend on everything a mistake can break. With the tied embedding a random
    model tends to repeat its last token (the residual stream carries wte[token], and the logits are dot products
    with wte): smaller token embeddings (0.5), larger position embeddings (1.5) and sublayer outputs (w_o, w_2
    x 3) and a final layer norm of gain ~4 give 3 distinct tokens in 8 on average instead of 1.4 (rows of different
    prompts mostly differ), and each catalogued mistake of generate changes the tokens of 85-95 % of scenarios
    (batch 3, prompt 3, 8 new tokens; 40 draws) instead of 30-85 %. ``final_gain``: the final layer norm's gain (1
    for the sampled cases: logits of std ~2 instead of ~8, so a draw is not nearly always the argmax).
    """
    blocks = []
    for _ in range(layers):
        block = block_params(rng, d_model, num_heads, hidden)
        block["attn"]["w_o"] = block["attn"]["w_o"] * np.float32(3)
        block["w_2"] = block["w_2"] * np.float32(3)
        blocks.append(block)
    ln_f = norm_params(rng, d_model)
    ln_f["gamma"] = ln_f["gamma"] * np.float32(final_gain)
    return {"wte": np.float32(0.5) * normal(rng, vocab, d_model), "wpe": np.float32(1.5) * normal(rng, t_max, d_model),
            "blocks": blocks, "ln_f": ln_f}


# The graders' model: 2 blocks, D = 16, 4 heads of 4, MLP 32 wide, 23 tokens, positions up to 16.
MODEL = {"vocab": 23, "d_model": 16, "num_heads": 4, "hidden": 32, "layers": 2, "t_max": 16}


def model_and_prompt(rng, batch, prompt_len, new_tokens, tries=64):
    """A model, a prompt (B, T0) and the float64 reference's tokens (B, T0 + N), redrawn until every greedy choice
    leads the runner-up by ``tolerances.TOKEN_MARGIN`` (so float32 and float64 computations choose alike)."""
    for _ in range(tries):
        params = model_params(rng, **MODEL)
        prompt = rng.integers(0, MODEL["vocab"], size=(batch, prompt_len))
        margins: list = []
        tokens = references.generate(params, prompt, new_tokens, MODEL["num_heads"], margins=margins)
        if min(margins, default=np.inf) >= tolerances.TOKEN_MARGIN:
            return params, prompt, tokens
    raise RuntimeError("no model with clear greedy choices")   # ~1 % of draws are redrawn; 64 failures never happen


# The most probability a case's tokens may have: a generate that draws with random numbers of its own (a new
# generator, numpy's global one) gives them at most this often, so it fails each of the 3 sampled cases at each of
# the 50 seeds of tests/graders/test_decoder_sampling.py but with probability 1.5e-3 in all.
OWN_RANDOM_CHANCE = 1e-5


def sampled_model_and_prompt(rng, batch, prompt_len, new_tokens, temperature, top_k=None, top_p=None, tries=256):
    """A model of flat logits (``final_gain`` 1), a prompt (B, T0), a seed, the float64 reference's tokens drawn with
    ``numpy.random.default_rng(seed)`` by the given ``sample``, and what other ways of choosing give on them
    (``alternatives``: ``{"greedy", "no_filters", "temperature_twice", "another_seed"}`` -> tokens: the argmax, the
    same draws without top_k and top_p, with the logits divided by the temperature twice, and another seed's draws).

    Redrawn until no step is near another outcome (every top-k cut leads by ``tolerances.TOKEN_MARGIN`` in logits /
    temperature, every top-p set and every draw is ``tolerances.SAMPLE_MARGIN`` away from changing, for the draws
    without filters and with the temperature twice too, and every greedy choice leads by ``TOKEN_MARGIN``: so float32
    and float64 computations choose alike), until the reference's tokens are no likelier than ``OWN_RANDOM_CHANCE``,
    and until each alternative gives other tokens than the reference: a generate that chooses in one of those ways
    then fails the case, whatever the seed. (The graders' cases take 6 to
    11 draws of a model on average; 256 failures in a row do not happen.)"""
    floors = {"top_k": tolerances.TOKEN_MARGIN, "top_p": tolerances.SAMPLE_MARGIN, "draw": tolerances.SAMPLE_MARGIN,
              "greedy": tolerances.TOKEN_MARGIN}
    for _ in range(tries):
        params = model_params(rng, **MODEL, final_gain=1.0)
        prompt = rng.integers(0, MODEL["vocab"], size=(batch, prompt_len))
        seed = int(rng.integers(2**31))
        variants = {"drawn": (temperature, top_k, top_p, seed), "no_filters": (temperature, None, None, seed),
                    "temperature_twice": (temperature ** 2, top_k, top_p, seed), "greedy": (0.0, None, None, seed)}
        chances: list = []
        clear = references.generate_variants(params, prompt, new_tokens, MODEL["num_heads"], list(variants.values()),
                                             floors, chances)
        if clear is None or chances[0] > OWN_RANDOM_CHANCE:
            continue
        tokens, *others = clear
        alternatives = dict(zip(list(variants)[1:], others, strict=True))
        alternatives["another_seed"] = references.generate_variants(params, prompt, new_tokens, MODEL["num_heads"],
                                                                    [(temperature, top_k, top_p, seed + 1)])[0]
        if not any(np.array_equal(tokens, other) for other in alternatives.values()):
            return params, prompt, seed, tokens, alternatives
    raise RuntimeError("no model whose sampled steps are clear")


# ----------------------------------------------------------------------------------------------- Keras
def keras_block(block, num_heads, x):
    """The block of Keras layers (LayerNormalization, MultiHeadAttention with a causal mask, Dense with exact GELU,
    Dense) holding ``block``'s weights, applied to ``x`` (B, T, D); float32."""
    import keras

    from autograder.graders.attention import keras_layers

    b, t, d_model = x.shape
    hidden = block["w_1"].shape[1]

    def layer_norm(slot, weights):   # two of one configuration: a slot each (keras_layers.layer)
        layer = keras_layers.layer(keras.layers.LayerNormalization, x.shape, slot=slot, epsilon=1e-5)
        return keras_layers.holding(layer, [(layer.gamma, weights["gamma"]), (layer.beta, weights["beta"])])

    ln_1, ln_2 = layer_norm(1, block["ln_1"]), layer_norm(2, block["ln_2"])
    attention = keras_layers.multi_head_attention(block["attn"], num_heads, x.shape, x.shape)
    fc = keras_layers.layer(keras.layers.Dense, x.shape, units=hidden, activation="gelu")   # gelu: exact (erf)
    fc = keras_layers.holding(fc, [(fc.kernel, block["w_1"]), (fc.bias, block["b_1"])])
    proj = keras_layers.layer(keras.layers.Dense, (b, t, hidden), units=d_model)
    proj = keras_layers.holding(proj, [(proj.kernel, block["w_2"]), (proj.bias, block["b_2"])])
    x = keras.ops.convert_to_tensor(x)
    a = ln_1(x)                                                      # (B, T, D)
    h = x + attention(a, a, a, use_causal_mask=True)                 # (B, T, D): Tq == Tk, so top-left is right
    return keras.ops.convert_to_numpy(h + proj(fc(ln_2(h))))         # (B, T, D)
