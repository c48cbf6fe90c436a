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


def split_heads(x, num_heads):
    b, t, c = np.shape(x)
    return np.asarray(x, np.float64).reshape(b, t, num_heads, c // num_heads).transpose(0, 2, 1, 3)  # (B, H, T, dh)


def merge_heads(x):
    b, h, t, dh = np.shape(x)
    return np.asarray(x, np.float64).transpose(0, 2, 1, 3).reshape(b, t, h * dh)                     # (B, T, C)


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


def kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2):
    return 2 * num_layers * num_kv_heads * head_dim * seq_len * batch_size * bytes_per_element


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
             "sliding_window_mask"]
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
