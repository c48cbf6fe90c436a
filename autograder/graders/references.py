"""Float64 references on the grading machine, built on the library routines the contract names.

These are the trusted answers the graders compare with (next to the Keras layers, which compute in float32,
and the stored GPU outputs). Every function takes the contract's arguments and returns float64 numpy arrays.
Each grader names the ones it compares with at its top (``REFERENCE``). They are also the helpers that a known
mistake (``exercises/<exercise>.py``) calls when it is run for a diagnosis.
"""
from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

# numpy already, and the answers' own (the same function answers a proxy and serves as the graders' reference)
from autograder.graders.answers import (ROPE_THETA, kv_cache_bytes, merge_heads, next_token_probs,  # noqa: F401
                                       split_heads)


def _t(x) -> torch.Tensor:
    return torch.from_numpy(np.array(x, dtype=np.float64))  # a copy: inputs may be read-only broadcast views


def _mask(mask) -> torch.Tensor | None:
    return None if mask is None else torch.from_numpy(np.array(mask, dtype=bool))


def softmax(x, axis=-1):
    return torch.softmax(_t(x), dim=axis).numpy()


def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    return np.tril(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q)                    # (Tq, Tk)


def attention_weights(scores, mask=None):
    """softmax over the key axis with masked scores at -inf (masked weights exactly 0)."""
    scores = _t(scores)
    if mask is not None:
        scores = scores.masked_fill(~_mask(mask), float("-inf"))
    return torch.softmax(scores, dim=-1).numpy()


def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False, scale=None):
    q, k, v = _t(query), _t(key), _t(value)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    with sdpa_kernel(SDPBackend.MATH):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=_mask(mask), scale=scale).numpy()
    if not return_weights:
        return out
    weights = attention_weights((q @ k.transpose(-1, -2) * scale).numpy(), mask)       # (..., Tq, Tk)
    return out, weights


def dot_product_attention(query, key, value, mask=None):
    return scaled_dot_product_attention(query, key, value, mask, scale=1.0)


def additive_attention(query, key, value, mask=None):
    q, k = np.asarray(query, np.float64), np.asarray(key, np.float64)
    scores = np.tanh(q[..., :, None, :] + k[..., None, :, :]).sum(-1)                 # (..., Tq, Tk)
    return attention_weights(scores, mask) @ np.asarray(value, np.float64)            # (..., Tq, dv)


def bahdanau_attention(query, key, value, w_q, w_k, v, mask=None):
    q = np.asarray(query, np.float64) @ np.asarray(w_q, np.float64)                   # (..., Tq, h)
    k = np.asarray(key, np.float64) @ np.asarray(w_k, np.float64)                     # (..., Tk, h)
    scores = np.tanh(q[..., :, None, :] + k[..., None, :, :]) @ np.asarray(v, np.float64)  # (..., Tq, Tk)
    return attention_weights(scores, mask) @ np.asarray(value, np.float64)            # (..., Tq, dv)


def self_attention(x, w_q, w_k, w_v, causal=False):
    x = np.asarray(x, np.float64)
    q, k, v = x @ w_q, x @ w_k, x @ w_v                                                 # (..., T, dk|dv)
    mask = causal_mask(x.shape[-2]) if causal else None
    return scaled_dot_product_attention(q, k, v, mask)


def multi_head_attention(query, key, value, num_heads, mask=None):
    q, k, v = (split_heads(a, num_heads) for a in (query, key, value))                # (B, H, T, dh)
    return merge_heads(scaled_dot_product_attention(q, k, v, mask))                   # (B, Tq, C)


def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    p = {name: np.asarray(a, np.float64) for name, a in params.items()}
    q = np.asarray(x_q, np.float64) @ p["w_q"] + p["b_q"]                             # (B, Tq, H*dk)
    k = np.asarray(x_kv, np.float64) @ p["w_k"] + p["b_k"]                            # (B, Tk, H*dk)
    v = np.asarray(x_kv, np.float64) @ p["w_v"] + p["b_v"]                            # (B, Tk, H*dv)
    heads = scaled_dot_product_attention(*(split_heads(a, num_heads) for a in (q, k, v)), mask)  # (B, H, Tq, dv)
    return merge_heads(heads) @ p["w_o"] + p["b_o"]                                   # (B, Tq, D)


def apply_rope(x, positions, base=10000.0):
    """Rotary position embedding, rotate-half layout: pair (x[..., i], x[..., i + d/2]) turned by pos * base^(-2i/d).

    The layout of GPT-NeoX, Hugging Face transformers' Llama port and Keras Hub; Meta's reference Llama code and
    RoFormer rotate adjacent pairs (x[..., 2i], x[..., 2i + 1]) instead (the same up to a permutation of W_q/W_k's
    output rows).
    """
    x = np.asarray(x, np.float64)
    half = x.shape[-1] // 2
    inv_freq = float(base) ** (-2.0 * np.arange(half) / x.shape[-1])                  # (d/2,)
    angles = np.asarray(positions, np.float64)[:, None] * inv_freq                     # (T, d/2)
    cos, sin = np.cos(angles), np.sin(angles)
    x1, x2 = x[..., :half], x[..., half:]                                              # (..., T, d/2)
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)        # (..., T, d)


def max_cached_tokens(memory_bytes, num_layers, num_kv_heads, head_dim, batch_size=1, bytes_per_element=2):
    return memory_bytes // kv_cache_bytes(num_layers, num_kv_heads, head_dim, 1, batch_size, bytes_per_element)


def grouped_query_attention(query, key, value, mask=None):
    q, k, v = _t(query), _t(key), _t(value)
    if q.shape[1] % k.shape[1]:
        raise ValueError("query heads must be a multiple of key/value heads")
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=_mask(mask), enable_gqa=True).numpy()


def namespace() -> dict:
    """The helpers a mistake's source may call, with numpy, torch and math."""
    names = ["softmax", "causal_mask", "scaled_dot_product_attention", "dot_product_attention",
             "additive_attention", "split_heads", "merge_heads", "multi_head_attention", "self_attention",
             "apply_rope", "kv_cache_bytes", "grouped_query_attention", "attention_weights",
             "sliding_window_mask", "multi_head_attention_layer", "layer_norm", "gelu", "decoder_block",
             "KVCache", "attend_with_cache", "next_token_probs", "sample",
             # modern: the notebook's given names and its exercises (a mistake calls them as a student would)
             "ROPE_THETA", "rms_norm", "silu", "swiglu_mlp", "qwen3_attention", "qwen3_block"]
    ns = {name: globals()[name] for name in names}
    ns.update(np=np, torch=torch, F=F, math=math)
    return ns


# ----------------------------------------------------------------------------------------------- kv_cache: positions
def sliding_window_mask(t_q, t_k=None, window=4096):
    """causal_mask (bottom-right) that also hides keys `window` or more tokens back: (Tq, Tk) bool."""
    t_k = t_q if t_k is None else t_k
    i = np.arange(t_q)[:, None] + (t_k - t_q)                                       # (Tq, 1) absolute position
    j = np.arange(t_k)[None, :]                                                     # (1, Tk)
    return (j <= i) & (i - j < window)                                              # (Tq, Tk)


def rope_causal_attention(query, key, value, base=10000.0):
    """Causal attention over a whole sequence (B, H, T, d) with RoPE at positions 0..T-1: what a prefill and
    any later decoding steps of attend_with_rope_cache must add up to."""
    t = np.shape(query)[-2]
    positions = np.arange(t)
    q, k = apply_rope(query, positions, base), apply_rope(key, positions, base)
    return scaled_dot_product_attention(q, k, value, causal_mask(t))


# ----------------------------------------------------------------------------------------------- decoder
def layer_norm(x, gamma, beta, eps=1e-5):
    """torch's layer_norm in float64 over the last axis (mean and biased variance, eps inside the square root)."""
    x = _t(x)
    return F.layer_norm(x, x.shape[-1:], _t(gamma), _t(beta), eps).numpy()             # (..., D)


def gelu(x):
    """The exact (erf) GELU, x * Phi(x), in float64."""
    return F.gelu(_t(x)).numpy()


def decoder_block(x, block, num_heads):
    """A pre-norm GPT-2 block: h = x + attn(ln_1(x)) with causal_mask(T), then h + mlp(ln_2(h))."""
    x = np.asarray(x, np.float64)
    a = layer_norm(x, block["ln_1"]["gamma"], block["ln_1"]["beta"])                   # (B, T, D)
    h = x + multi_head_attention_layer(a, a, block["attn"], num_heads, causal_mask(x.shape[-2]))  # (B, T, D)
    z = layer_norm(h, block["ln_2"]["gamma"], block["ln_2"]["beta"])                   # (B, T, D)
    w_1, b_1, w_2, b_2 = (np.asarray(block[k], np.float64) for k in ("w_1", "b_1", "w_2", "b_2"))
    return h + gelu(z @ w_1 + b_1) @ w_2 + b_2                                         # (B, T, D)


def next_token_logits(params, tokens, num_heads):
    """Logits (B, V) of the token after ``tokens`` (B, T): the whole sequence through the model, no cache."""
    tokens = np.asarray(tokens)
    wte = np.asarray(params["wte"], np.float64)
    h = wte[tokens] + np.asarray(params["wpe"], np.float64)[: tokens.shape[1]]         # (B, T, D)
    for block in params["blocks"]:
        h = decoder_block(h, block, num_heads)                                         # (B, T, D)
    h = layer_norm(h[:, -1], params["ln_f"]["gamma"], params["ln_f"]["beta"])          # (B, D)
    return h @ wte.T                                                                   # (B, V)


def layer_keys_values(params, tokens, num_heads) -> list:
    """The keys and values ``(B, H, T, dh)`` of every layer for ``tokens`` (B, T), in float64: what each layer's
    cache holds once a cached generate has run those tokens through the model (causal, so a position's keys do not
    depend on the tokens after it)."""
    tokens = np.asarray(tokens)
    h = np.asarray(params["wte"], np.float64)[tokens] + np.asarray(params["wpe"], np.float64)[: tokens.shape[1]]
    out = []
    for block in params["blocks"]:
        a = layer_norm(h, block["ln_1"]["gamma"], block["ln_1"]["beta"])                # (B, T, D)
        k, v = (split_heads(a @ np.asarray(block["attn"][f"w_{n}"], np.float64) + block["attn"][f"b_{n}"], num_heads)
                for n in "kv")                                                          # (B, H, T, dh)
        out.append((k, v))
        h = decoder_block(h, block, num_heads)                                         # (B, T, D)
    return out


def generate(params, prompt, max_new_tokens, num_heads, use_cache=True, temperature=0.0, top_k=None, top_p=None,
             rng=None, margins=None):
    """Tokens (B, T0 + max_new_tokens) of the float64 model, recomputed from scratch at every step (what the cached
    path must equal): greedy at temperature 0, else drawn by ``sample`` from ``next_token_probs``. ``margins``, a
    list, receives how far each step's choices are from changing: greedy, the smallest gap between the best and the
    second-best logit of a row; sampled, ``sampling_margins``'s (kind, distance) pairs."""
    tokens = np.asarray(prompt, dtype=np.int64)                                        # (B, T0)
    for _ in range(max_new_tokens):
        logits = next_token_logits(params, tokens, num_heads)                          # (B, V)
        if temperature == 0:
            if margins is not None:
                top = np.sort(logits, axis=-1)
                margins.append(float(np.min(top[:, -1] - top[:, -2])))
            chosen = np.argmax(logits, axis=-1)                                        # (B,)
        else:
            probs = next_token_probs(logits, temperature, top_k, top_p)                # (B, V)
            if margins is not None:
                state = rng.bit_generator.state
                margins += sampling_margins(logits, probs, rng.random(len(logits)), temperature, top_k, top_p)
                rng.bit_generator.state = state
            chosen = sample(probs, rng)                                                # (B,)
        tokens = np.concatenate([tokens, chosen[:, None]], axis=1)                     # (B, T + 1)
    return tokens


def generate_variants(params, prompt, max_new_tokens, num_heads, variants, floors=None, chances=None) -> list | None:
    """``generate`` for several ways of choosing at once, as one batch through the model (the variants' rows stacked:
    one forward pass a step instead of one per variant): ``variants`` is a list of ``(temperature, top_k, top_p,
    seed)``, temperature 0 greedy (its seed unused), else drawn with ``numpy.random.default_rng(seed)``; returns each
    variant's tokens (B, T0 + N), what ``generate`` returns for it. ``floors``: ``{kind: distance}`` for ``generate``'s
    margins (``"greedy"`` for a greedy choice's lead, ``sampling_margins``'s kinds for a draw): ``None`` is returned
    as soon as a step of a variant comes closer than its floor to another outcome. ``chances``, a list, receives each
    variant's probability of drawing its tokens (the product of the chosen tokens' probabilities; 1 for greedy)."""
    prompt = np.asarray(prompt, dtype=np.int64)                                        # (B, T0)
    b = prompt.shape[0]
    tokens = np.tile(prompt, (len(variants), 1))                                       # (n * B, T0)
    rngs = [np.random.default_rng(seed) if temperature else None for temperature, _, _, seed in variants]
    floors = floors or {}
    log_chances = np.zeros(len(variants))
    for _ in range(max_new_tokens):
        logits = next_token_logits(params, tokens, num_heads)                          # (n * B, V)
        chosen = []
        for i, (temperature, top_k, top_p, _) in enumerate(variants):
            rows = logits[i * b:(i + 1) * b]                                           # (B, V)
            if not temperature:
                top = np.sort(rows, axis=-1)
                margins = [("greedy", float(np.min(top[:, -1] - top[:, -2])))]
                chosen.append(np.argmax(rows, axis=-1))
            else:
                probs = next_token_probs(rows, temperature, top_k, top_p)              # (B, V)
                state = rngs[i].bit_generator.state
                margins = sampling_margins(rows, probs, rngs[i].random(b), temperature, top_k, top_p)
                rngs[i].bit_generator.state = state
                chosen.append(sample(probs, rngs[i]))
                log_chances[i] += np.sum(np.log(probs[np.arange(b), chosen[-1]]))
            if any(distance < floors.get(kind, 0.0) for kind, distance in margins):
                return None
        tokens = np.concatenate([tokens, np.concatenate(chosen)[:, None]], axis=1)    # (n * B, T + 1)
    if chances is not None:
        chances.extend(np.exp(log_chances).tolist())
    return [tokens[i * b:(i + 1) * b] for i in range(len(variants))]


def sample(probs, rng):
    """The notebook's given ``sample``: one ``rng.random()`` per row, the first token whose cumulative probability
    (in token order) exceeds it, never a token of probability 0."""
    p = np.asarray(probs, dtype=np.float64)                                            # (B, V)
    u = rng.random(p.shape[0])                                                         # (B,)
    chosen = np.sum(np.cumsum(p, axis=-1) <= u[:, None], axis=-1)                      # (B,)
    last = p.shape[-1] - 1 - np.argmax(p[:, ::-1] > 0, axis=-1)                        # (B,) last possible token
    return np.minimum(chosen, last)


def sampling_margins(logits, probs, u, temperature, top_k, top_p) -> list:
    """How far one sampled step is from another outcome, as (kind, distance) pairs: ``"top_k"``, the gap between
    the k-th and the (k+1)-th largest logit / temperature; ``"top_p"``, the smallest distance between top_p and the
    probability ranked above a token (the rule that keeps it); ``"draw"``, the smallest distance between a row's
    draw u and the cumulative probabilities."""
    out = []
    z = np.asarray(logits, np.float64) / temperature                                   # (B, V)
    if top_k is not None and top_k < z.shape[-1]:
        top = np.sort(z, axis=-1)[:, ::-1]
        out.append(("top_k", float(np.min(top[:, top_k - 1] - top[:, top_k]))))
    if top_p is not None and top_p < 1:
        cut = top_k is not None and top_k < z.shape[-1]
        kept = np.where(z >= np.sort(z, axis=-1)[:, -top_k][:, None], z, -np.inf) if cut else z
        p = softmax(kept)                                                              # before top-p
        ranked = -np.sort(-p, axis=-1)
        out.append(("top_p", float(np.min(np.abs(np.cumsum(ranked, axis=-1) - ranked - top_p)))))
    out.append(("draw", float(np.min(np.abs(np.cumsum(probs, axis=-1) - u[:, None])))))
    return out


class KVCache:
    """The trusted cache a mistake is replayed with for the diagnosis (``generate``'s, ``attend_with_cache``'s and
    ``attend_with_rope_cache``'s): never the student's own, which a re-run would change."""

    def __init__(self):
        self.keys = self.values = None

    def append(self, k, v):
        k, v = np.array(k, np.float64), np.array(v, np.float64)                        # (B, H, t, d)
        self.keys = k if self.keys is None else np.concatenate([self.keys, k], axis=2)
        self.values = v if self.values is None else np.concatenate([self.values, v], axis=2)
        return self.keys, self.values                                                  # (B, H, T, d)

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[2]

    @property
    def nbytes(self):
        return 0 if self.keys is None else self.keys.nbytes + self.values.nbytes


def attend_with_cache(query, key, value, cache):
    keys, values = cache.append(key, value)                                            # (B, H, T, d)
    return scaled_dot_product_attention(query, keys, values, causal_mask(np.shape(query)[-2], len(cache)))


# ----------------------------------------------------------------------------------------------- modern (Qwen3)
# A Qwen3 model in the `modern` notebook's layout (numpy, weights multiplied from the right: Hugging Face's
# ``q_proj.weight.T``): params = {"embed_tokens": (V, D), "layers": [block, ...], "norm": (D,), "lm_head": (D, V),
# absent when the embedding is tied}; block = {"input_layernorm": (D,), "q_proj": (D, H*dh), "k_proj": (D, Hkv*dh),
# "v_proj": (D, Hkv*dh), "o_proj": (H*dh, D), "q_norm": (dh,), "k_norm": (dh,), "post_attention_layernorm": (D,),
# "gate_proj": (D, F), "up_proj": (D, F), "down_proj": (F, D)}. RoPE base ROPE_THETA, every RMSNorm's eps 1e-6.
def rms_norm(x, weight, eps=1e-6):
    """torch's rms_norm in float64 over the last axis: x / sqrt(mean(x^2) + eps) * weight (no mean subtracted)."""
    x = _t(x)
    return F.rms_norm(x, x.shape[-1:], _t(weight), eps).numpy()                        # (..., D)


def silu(x):
    """x * sigmoid(x) in float64."""
    return F.silu(_t(x)).numpy()


def swiglu_mlp(x, w_gate, w_up, w_down):
    """(silu(x @ w_gate) * (x @ w_up)) @ w_down in float64."""
    x = _t(x)
    return ((F.silu(x @ _t(w_gate)) * (x @ _t(w_up))) @ _t(w_down)).numpy()           # (..., D)


def qwen3_qkv(x, params, positions, num_heads, num_kv_heads):
    """Qwen3's queries (B, H, T, dh), keys and values (B, Hkv, T, dh): projections, RMSNorm of each head's head_dim
    (q_norm, k_norm), RoPE (rotate-half, base ROPE_THETA) of queries and keys at ``positions``."""
    x = _t(x)
    b, t, _ = x.shape
    q = (x @ _t(params["q_proj"])).view(b, t, num_heads, -1)                           # (B, T, H, dh)
    dh = q.shape[-1]
    k = (x @ _t(params["k_proj"])).view(b, t, num_kv_heads, dh)                        # (B, T, Hkv, dh)
    v = (x @ _t(params["v_proj"])).view(b, t, num_kv_heads, dh).transpose(1, 2)        # (B, Hkv, T, dh)
    q = F.rms_norm(q, (dh,), _t(params["q_norm"]), 1e-6).transpose(1, 2)              # (B, H, T, dh)
    k = F.rms_norm(k, (dh,), _t(params["k_norm"]), 1e-6).transpose(1, 2)              # (B, Hkv, T, dh)
    return (apply_rope(q.numpy(), positions, ROPE_THETA), apply_rope(k.numpy(), positions, ROPE_THETA),
            v.numpy())


def qwen3_attention(x, params, positions, num_heads, num_kv_heads, cache=None):
    """Qwen3's attention: ``qwen3_qkv``, the rotated keys and the values appended to ``cache`` (a ``KVCache``: Hkv
    heads, not repeated) when given, causal GQA over every cached token (``causal_mask(T, len(cache))``), o_proj."""
    q, k, v = qwen3_qkv(x, params, positions, num_heads, num_kv_heads)
    if cache is not None:
        k, v = cache.append(k, v)                                                      # (B, Hkv, T_all, dh)
    b, h, t, dh = q.shape
    y = grouped_query_attention(q, k, v, causal_mask(t, k.shape[-2]))                  # (B, H, T, dh)
    return merge_heads(y) @ np.asarray(params["o_proj"], np.float64)                   # (B, T, D)


def qwen3_block(x, block, positions, num_heads, num_kv_heads, cache=None):
    """A pre-norm Qwen3 block: h = x + attention(rms_norm(x)), then h + swiglu_mlp(rms_norm(h))."""
    x = np.asarray(x, np.float64)
    a = rms_norm(x, block["input_layernorm"])                                          # (B, T, D)
    h = x + qwen3_attention(a, block, positions, num_heads, num_kv_heads, cache)       # (B, T, D)
    z = rms_norm(h, block["post_attention_layernorm"])                                 # (B, T, D)
    return h + swiglu_mlp(z, block["gate_proj"], block["up_proj"], block["down_proj"])  # (B, T, D)


def qwen3_logits(params, tokens, num_heads, num_kv_heads):
    """Logits (B, V) of the token after ``tokens`` (B, T): the whole sequence through the model, no cache. Its blocks
    are the numpy answers (answers.py: equal to ``qwen3_block`` above within 1e-12, tests/graders/test_isolation.py),
    ~60 times faster than torch's per-call overhead on these tiny arrays: a generate grader runs ~100 blocks."""
    from autograder.graders import answers

    tokens = np.asarray(tokens)
    h = np.asarray(params["embed_tokens"], np.float64)[tokens]                         # (B, T, D)
    positions = np.arange(tokens.shape[1])
    for block in params["layers"]:
        h = answers.qwen3_block(h, block, positions, num_heads, num_kv_heads)          # (B, T, D)
    h = answers.rms_norm(h[:, -1], params["norm"])                                     # (B, D)
    head = params.get("lm_head")
    head = np.asarray(params["embed_tokens"], np.float64).T if head is None else np.asarray(head, np.float64)
    return h @ head                                                                    # (B, V)


def qwen3_layer_keys_values(params, tokens, num_heads, num_kv_heads) -> list:
    """The keys (QK-normed and rotated at positions 0..T-1) and values ``(B, Hkv, T, dh)`` of every layer for
    ``tokens`` (B, T), in float64: what each layer's given cache holds once a cached generate has run those tokens
    through the model (causal, so a position's keys do not depend on the tokens after it)."""
    tokens = np.asarray(tokens)
    h = np.asarray(params["embed_tokens"], np.float64)[tokens]                         # (B, T, D)
    positions = np.arange(tokens.shape[1])
    out = []
    for block in params["layers"]:
        a = rms_norm(h, block["input_layernorm"])                                      # (B, T, D)
        _, k, v = qwen3_qkv(a, block, positions, num_heads, num_kv_heads)              # (B, Hkv, T, dh)
        out.append((k, v))
        h = qwen3_block(h, block, positions, num_heads, num_kv_heads)                  # (B, T, D)
    return out


def qwen3_generate(params, prompt, max_new_tokens, num_heads, num_kv_heads, use_cache=True, temperature=0.0,
                   top_k=None, top_p=None, rng=None, margins=None):
    """``generate`` (the decoder's rules: greedy at temperature 0, else ``sample`` of ``next_token_probs``) of the
    float64 Qwen3 model, recomputed from scratch at every step; ``margins`` as ``generate``'s."""
    tokens = np.asarray(prompt, dtype=np.int64)                                        # (B, T0)
    for _ in range(max_new_tokens):
        logits = qwen3_logits(params, tokens, num_heads, num_kv_heads)                 # (B, V)
        if temperature == 0:
            if margins is not None:
                top = np.sort(logits, axis=-1)
                margins.append(float(np.min(top[:, -1] - top[:, -2])))
            chosen = np.argmax(logits, axis=-1)                                        # (B,)
        else:
            probs = next_token_probs(logits, temperature, top_k, top_p)                # (B, V)
            if margins is not None:
                state = rng.bit_generator.state
                margins += sampling_margins(logits, probs, rng.random(len(logits)), temperature, top_k, top_p)
                rng.bit_generator.state = state
            chosen = sample(probs, rng)                                                # (B,)
        tokens = np.concatenate([tokens, chosen[:, None]], axis=1)                     # (B, T + 1)
    return tokens


def qwen3_kv_cache_bytes(config, seq_len, batch_size=1, bytes_per_element=2):
    """``kv_cache_bytes`` of a Hugging Face config.json (a dict): its layers, KV heads and head_dim (or, where it
    has none, hidden_size // num_attention_heads, transformers' rule)."""
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    return kv_cache_bytes(config["num_hidden_layers"], config["num_key_value_heads"], head_dim, seq_len, batch_size,
                          bytes_per_element)
