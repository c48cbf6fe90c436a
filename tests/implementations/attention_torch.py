# The `attention` assignment written with torch tensor operations, computing in the inputs' own precision
# (float32 stays float32; float16 is computed in float32) and returning torch tensors. No torch softmax inside
# `softmax`, and no torch SDPA / nn.MultiheadAttention anywhere.
import math

import numpy as np
import torch


def _tensor(x):
    t = x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def _bool(mask):
    return mask.bool() if isinstance(mask, torch.Tensor) else torch.as_tensor(np.asarray(mask, dtype=bool))


def softmax(x, axis=-1):
    t = _tensor(x)
    e = torch.exp(t - t.amax(dim=axis, keepdim=True))
    return e / e.sum(dim=axis, keepdim=True)


def _attend(scores, value, mask):
    if mask is not None:
        scores = scores.masked_fill(~_bool(mask), float("-inf"))
    return torch.softmax(scores, dim=-1) @ value


def additive_attention(query, key, value, mask=None):
    q, k, v = _tensor(query), _tensor(key), _tensor(value)
    scores = torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3)).sum(dim=-1)            # (..., Tq, Tk)
    return _attend(scores, v, mask)


def bahdanau_attention(query, key, value, w_q, w_k, v, mask=None):
    q = _tensor(query) @ _tensor(w_q)                                              # (..., Tq, h)
    k = _tensor(key) @ _tensor(w_k)                                                # (..., Tk, h)
    scores = torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3)) @ _tensor(v)            # (..., Tq, Tk)
    return _attend(scores, _tensor(value), mask)


def dot_product_attention(query, key, value, mask=None):
    q, k, v = _tensor(query), _tensor(key), _tensor(value)
    return _attend(q @ k.transpose(-1, -2), v, mask)


def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    q, k, v = _tensor(query), _tensor(key), _tensor(value)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~_bool(mask), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out = weights @ v
    return (out, weights) if return_weights else out


def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    return torch.ones(t_q, t_k, dtype=torch.bool).tril(diagonal=t_k - t_q)


def self_attention(x, w_q, w_k, w_v, causal=False):
    x = _tensor(x)
    q, k, v = x @ _tensor(w_q), x @ _tensor(w_k), x @ _tensor(w_v)
    return scaled_dot_product_attention(q, k, v, causal_mask(x.shape[-2]) if causal else None)


def split_heads(x, num_heads):
    t = _tensor(x)
    b, n, c = t.shape
    return t.view(b, n, num_heads, c // num_heads).permute(0, 2, 1, 3)


def merge_heads(x):
    t = _tensor(x)
    b, h, n, dh = t.shape
    return t.permute(0, 2, 1, 3).reshape(b, n, h * dh)


def multi_head_attention(query, key, value, num_heads, mask=None):
    q, k, v = (split_heads(a, num_heads) for a in (query, key, value))
    return merge_heads(scaled_dot_product_attention(q, k, v, mask))


def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    p = {name: _tensor(w) for name, w in params.items()}
    x_q, x_kv = _tensor(x_q), _tensor(x_kv)
    q = torch.nn.functional.linear(x_q, p["w_q"].T, p["b_q"])
    k = torch.nn.functional.linear(x_kv, p["w_k"].T, p["b_k"])
    v = torch.nn.functional.linear(x_kv, p["w_v"].T, p["b_v"])
    heads = scaled_dot_product_attention(*(split_heads(a, num_heads) for a in (q, k, v)), mask)
    return torch.nn.functional.linear(merge_heads(heads), p["w_o"].T, p["b_o"])


def _rotate_half(t):
    half = t.shape[-1] // 2
    return torch.cat([-t[..., half:], t[..., :half]], dim=-1)


def apply_rope(x, positions, base=10000.0):
    t = _tensor(x)
    d = t.shape[-1]
    inv_freq = 1.0 / base ** (torch.arange(0, d, 2, dtype=t.dtype) / d)               # (d/2,)
    angles = torch.as_tensor(np.asarray(positions)).to(t.dtype)[:, None] * inv_freq   # (T, d/2)
    angles = torch.cat([angles, angles], dim=-1)                                       # (T, d), as in Llama
    return t * angles.cos() + _rotate_half(t) * angles.sin()
