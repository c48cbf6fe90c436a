# A plain numpy solution of the `attention` assignment, written in the notebook's cell layout: the body of every
# exercise sits between the nbgrader solution markers, so that tests/helpers/notebooks.py can build a minimal notebook
# from this file while source/attention/attention.ipynb does not exist. It is also graded as one more correct
# implementation (einsum instead of matmul in places, float64 throughout).
import numpy as np


def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`."""
    ### BEGIN SOLUTION
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
    ### END SOLUTION


def additive_attention(query, key, value, mask=None):
    """score(q, k) = sum_d tanh(q + k)."""
    ### BEGIN SOLUTION
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    scores = np.tanh(np.expand_dims(q, -2) + np.expand_dims(k, -3)).sum(-1)      # (..., Tq, Tk)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return np.einsum("...qk,...kv->...qv", softmax(scores), v)                    # (..., Tq, dv)
    ### END SOLUTION


def bahdanau_attention(query, key, value, w_q, w_k, v, mask=None):
    """score(q, k) = v . tanh(q @ w_q + k @ w_k)."""
    ### BEGIN SOLUTION
    q = np.asarray(query, dtype=np.float64) @ np.asarray(w_q, dtype=np.float64)    # (..., Tq, h)
    k = np.asarray(key, dtype=np.float64) @ np.asarray(w_k, dtype=np.float64)      # (..., Tk, h)
    scores = np.einsum("...qkh,h->...qk", np.tanh(q[..., :, None, :] + k[..., None, :, :]),
                       np.asarray(v, dtype=np.float64))                            # (..., Tq, Tk)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores) @ np.asarray(value, dtype=np.float64)                   # (..., Tq, dv)
    ### END SOLUTION


def dot_product_attention(query, key, value, mask=None):
    """score = q . k, no scaling."""
    ### BEGIN SOLUTION
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    scores = np.einsum("...qd,...kd->...qk", q, k)                                 # (..., Tq, Tk)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores) @ v
    ### END SOLUTION


def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    """softmax(q k^T / sqrt(d)) v, optionally with the weights."""
    ### BEGIN SOLUTION
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    scores = np.einsum("...qd,...kd->...qk", q, k) / np.sqrt(q.shape[-1])         # (..., Tq, Tk)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores)                                                      # (..., Tq, Tk)
    out = weights @ v                                                              # (..., Tq, dv)
    return (out, weights) if return_weights else out
    ### END SOLUTION


def causal_mask(t_q, t_k=None):
    """bool (t_q, t_k), bottom-right aligned: query i sees key j iff j <= i + (t_k - t_q)."""
    ### BEGIN SOLUTION
    t_k = t_q if t_k is None else t_k
    return np.tril(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q)
    ### END SOLUTION


def self_attention(x, w_q, w_k, w_v, causal=False):
    """Single-head self-attention."""
    ### BEGIN SOLUTION
    x = np.asarray(x, dtype=np.float64)
    q, k, v = (x @ np.asarray(w, dtype=np.float64) for w in (w_q, w_k, w_v))
    return scaled_dot_product_attention(q, k, v, causal_mask(x.shape[-2]) if causal else None)
    ### END SOLUTION


def split_heads(x, num_heads):
    """(B, T, C) -> (B, H, T, C // H)."""
    ### BEGIN SOLUTION
    x = np.asarray(x)
    b, t, c = x.shape
    return x.reshape(b, t, num_heads, c // num_heads).transpose(0, 2, 1, 3)
    ### END SOLUTION


def merge_heads(x):
    """(B, H, T, dh) -> (B, T, H * dh)."""
    ### BEGIN SOLUTION
    x = np.asarray(x)
    b, h, t, dh = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * dh)
    ### END SOLUTION


def multi_head_attention(query, key, value, num_heads, mask=None):
    """Split heads, scaled dot-product attention per head, merge."""
    ### BEGIN SOLUTION
    q, k, v = (split_heads(a, num_heads) for a in (query, key, value))
    return merge_heads(scaled_dot_product_attention(q, k, v, mask))
    ### END SOLUTION


def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    """Multi-head attention with input projections (and biases) and an output projection."""
    ### BEGIN SOLUTION
    p = {name: np.asarray(w, dtype=np.float64) for name, w in params.items()}
    x_q, x_kv = np.asarray(x_q, dtype=np.float64), np.asarray(x_kv, dtype=np.float64)
    q = split_heads(x_q @ p["w_q"] + p["b_q"], num_heads)
    k = split_heads(x_kv @ p["w_k"] + p["b_k"], num_heads)
    v = split_heads(x_kv @ p["w_v"] + p["b_v"], num_heads)
    return merge_heads(scaled_dot_product_attention(q, k, v, mask)) @ p["w_o"] + p["b_o"]
    ### END SOLUTION


def apply_rope(x, positions, base=10000.0):
    """Rotary position embedding (rotate-half): each pair (x_i, x_{i+d/2}) as one complex number turned by
    e^{i theta}."""
    ### BEGIN SOLUTION
    x = np.asarray(x, dtype=np.float64)
    half = x.shape[-1] // 2
    theta = np.einsum("t,f->tf", np.asarray(positions, dtype=np.float64), base ** (-np.arange(half) / half))
    z = (x[..., :half] + 1j * x[..., half:]) * np.exp(1j * theta)              # (..., T, d/2) complex
    return np.concatenate([z.real, z.imag], axis=-1)                           # (..., T, d)
    ### END SOLUTION
