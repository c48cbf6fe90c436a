"""The float64 answers to the proxies' questions: while an exercise is graded, the other contract functions it
calls are answered with these (``isolation.py``).

They are numpy versions of ``references.py`` (the same formulas; numpy because a proxy's question is small and torch's
per-call overhead is not: ~300 answers per submission), with the contract's signatures (a call that does not fit runs
the student's own function). tests/graders/test_isolation.py checks them against ``references.py``. They work in place
where they can, so that what they allocate is what ``sizing.need`` counts.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from autograder.graders import sizing


def softmax(x, axis=-1):
    e = np.array(x, np.float64)                                                       # a copy: the result
    top = np.max(e, axis=axis, keepdims=True)
    e -= np.where(np.isfinite(top), top, 0.0)
    np.exp(e, out=e)
    e /= np.sum(e, axis=axis, keepdims=True)
    return e


def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    return np.arange(t_k)[None, :] <= np.arange(t_q)[:, None] + (t_k - t_q)           # (Tq, Tk)


def attention(query, key, value, mask, scale):
    q, k, v = (np.asarray(a, np.float64) for a in (query, key, value))
    scores = q @ np.swapaxes(k, -1, -2)                                               # (..., Tq, Tk)
    scores *= scale
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        shape = np.broadcast_shapes(scores.shape, mask.shape)
        if shape != scores.shape:                                                     # a mask with more batch axes
            scores = np.array(np.broadcast_to(scores, shape))
        np.copyto(scores, -np.inf, where=~mask)
    top = np.max(scores, axis=-1, keepdims=True)                                      # softmax, in place
    scores -= np.where(np.isfinite(top), top, 0.0)
    np.exp(scores, out=scores)
    scores /= np.sum(scores, axis=-1, keepdims=True)                                  # (..., Tq, Tk) weights
    return scores @ v, scores                                                         # (..., Tq, dv)


def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    out, weights = attention(query, key, value, mask, np.shape(query)[-1] ** -0.5)
    return (out, weights) if return_weights else out


def dot_product_attention(query, key, value, mask=None):
    return attention(query, key, value, mask, 1.0)[0]


def multi_head_attention(query, key, value, num_heads, mask=None):
    q, k, v = (split_heads(a, num_heads) for a in (query, key, value))     # (B, H, T, dh)
    return merge_heads(scaled_dot_product_attention(q, k, v, mask))        # (B, Tq, C)


def split_heads(x, num_heads):
    b, t, c = np.shape(x)
    return np.asarray(x, np.float64).reshape(b, t, num_heads, c // num_heads).transpose(0, 2, 1, 3)  # (B, H, T, dh)


def merge_heads(x):
    b, h, t, dh = np.shape(x)
    return np.asarray(x, np.float64).transpose(0, 2, 1, 3).reshape(b, t, h * dh)                     # (B, T, C)


def kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2):
    return 2 * num_layers * num_kv_heads * head_dim * seq_len * batch_size * bytes_per_element


def linear(x, w, b):
    out = np.asarray(x, np.float64) @ np.asarray(w, np.float64)                       # (..., out)
    out += np.asarray(b, np.float64)
    return out


def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    q = linear(x_q, params["w_q"], params["b_q"])                                     # (B, Tq, H*dk)
    k = linear(x_kv, params["w_k"], params["b_k"])                                    # (B, Tk, H*dk)
    v = linear(x_kv, params["w_v"], params["b_v"])                                    # (B, Tk, H*dv)
    heads = multi_head_attention(q, k, v, num_heads, mask)                            # (B, Tq, H*dv)
    del q, k, v
    return linear(heads, params["w_o"], params["b_o"])                                # (B, Tq, D)


def layer_norm(x, gamma, beta, eps=1e-5):
    out = np.array(x, np.float64)                                                     # (..., D) the result
    out -= out.mean(axis=-1, keepdims=True)
    scale = np.einsum("...d,...d->...", out, out)[..., None]                          # (..., 1)
    scale /= out.shape[-1]                                                            # the biased variance
    scale += eps
    np.sqrt(scale, out=scale)
    out /= scale
    out *= np.asarray(gamma, np.float64)
    out += np.asarray(beta, np.float64)
    return out


def gelu(z):
    """The exact (erf) GELU, z * Phi(z), in float64 (torch's erf, computed in place on numpy's memory)."""
    import torch

    out = z * 0.7071067811865476                                                      # (..., F)
    erf = torch.from_numpy(out)
    torch.special.erf(erf, out=erf)
    out += 1.0
    out *= 0.5
    out *= z
    return out


def decoder_block(x, block, num_heads):
    h = np.array(x, np.float64)                                                       # (B, T, D) the result
    a = layer_norm(h, block["ln_1"]["gamma"], block["ln_1"]["beta"])                  # (B, T, D)
    h += multi_head_attention_layer(a, a, block["attn"], num_heads, causal_mask(h.shape[-2]))  # (B, T, D)
    del a
    z = layer_norm(h, block["ln_2"]["gamma"], block["ln_2"]["beta"])                  # (B, T, D)
    u = linear(z, block["w_1"], block["b_1"])                                         # (B, T, F)
    del z
    u = gelu(u)                                                                       # (B, T, F)
    h += linear(u, block["w_2"], block["b_2"])                                        # (B, T, D)
    return h


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    """Hugging Face's warpers in their order: logits / temperature, top-k (ties with the k-th kept), softmax, top-p
    (the smallest set from the most probable whose probability reaches top_p: the crossing token kept, at least
    one), renormalised; temperature 0: one-hot at the first argmax. top_p >= 1 keeps every token."""
    z = np.array(logits, np.float64)                                                  # (..., V) the result
    if temperature == 0:
        first = np.argmax(z, axis=-1)[..., None]                                      # (..., 1)
        z[...] = 0.0
        np.put_along_axis(z, first, 1.0, axis=-1)
        return z
    z /= temperature
    if top_k is not None and top_k < z.shape[-1]:
        kth = np.partition(z, -top_k, axis=-1)[..., -top_k:-top_k + 1 or None]        # (..., 1) the k-th largest
        np.copyto(z, -np.inf, where=z < kth)
    z = softmax(z)                                                                    # (..., V)
    if top_p is not None and top_p < 1:
        order = np.argsort(-z, axis=-1, kind="stable")                                # (..., V) most probable first
        ranked = np.take_along_axis(z, order, axis=-1)                                # (..., V)
        before = np.cumsum(ranked, axis=-1) - ranked                                  # (..., V) mass ranked above
        keep = before < top_p                                                         # the crossing token too
        keep[..., 0] = True
        np.put_along_axis(keep, order, keep.copy(), axis=-1)                          # back to token order
        np.copyto(z, 0.0, where=~keep)
        z /= np.sum(z, axis=-1, keepdims=True)
    return z


# ----------------------------------------------------------------------------------------------- modern (Qwen3)
# Qwen3's rotary base (``rope_theta`` of every Qwen3 config.json): the `modern` notebook's ROPE_THETA.
ROPE_THETA = 1_000_000.0
QWEN3_EPS = 1e-6   # Qwen3's rms_norm_eps: every RMSNorm of the block, QK-norm included


def rms_norm(x, weight, eps=1e-6):
    out = np.array(x, np.float64)                                                     # (..., D) the result
    scale = np.einsum("...d,...d->...", out, out)[..., None]                          # (..., 1) sum of squares
    scale /= out.shape[-1]                                                            # the mean square
    scale += eps
    np.sqrt(scale, out=scale)
    out /= scale
    out *= np.asarray(weight, np.float64)
    return out


def swiglu_mlp(x, w_gate, w_up, w_down):
    x = np.asarray(x, np.float64)
    gate = x @ np.asarray(w_gate, np.float64)                                         # (..., F)
    up = x @ np.asarray(w_up, np.float64)                                             # (..., F)
    with np.errstate(over="ignore"):                                                  # exp(-z) = inf: silu(z) = -0
        _silu(gate)                                                                   # (..., F) in place
    gate *= up
    del up
    return gate @ np.asarray(w_down, np.float64)                                      # (..., D)


def _silu(z):
    """z * sigmoid(z) = z / (1 + exp(-z)), in place (one temporary of z's size)."""
    e = np.negative(z)
    np.exp(e, out=e)
    e += 1.0
    z /= e
    return z


def rope(x, positions, base=ROPE_THETA):
    """``apply_rope`` (rotate-half) of float64 ``x`` (..., T, d), in place."""
    half = x.shape[-1] // 2
    angles = np.asarray(positions, np.float64)[:, None] * base ** (-2.0 * np.arange(half) / x.shape[-1])  # (T, d/2)
    cos, sin = np.cos(angles), np.sin(angles)
    x1 = x[..., :half].copy()                                                         # (..., T, d/2)
    x[..., :half] *= cos
    x[..., :half] -= x[..., half:] * sin
    x[..., half:] *= cos
    x1 *= sin
    x[..., half:] += x1
    return x


def qwen3_attention(x, params, positions, num_heads, num_kv_heads, cache=None):
    """Qwen3's attention without a cache (a call with one is answered by the student's own function: the cache is
    state in the student's process)."""
    if cache is not None:
        raise sizing.Unfit("a cache")
    x = np.asarray(x, np.float64)
    b, t, _ = x.shape
    p = {k: np.asarray(params[k], np.float64) for k in ("q_proj", "k_proj", "v_proj", "o_proj", "q_norm", "k_norm")}
    dh = p["q_proj"].shape[1] // num_heads
    q = rms_norm((x @ p["q_proj"]).reshape(b, t, num_heads, dh), p["q_norm"], QWEN3_EPS)      # (B, T, H, dh)
    k = rms_norm((x @ p["k_proj"]).reshape(b, t, num_kv_heads, dh), p["k_norm"], QWEN3_EPS)   # (B, T, Hkv, dh)
    v = (x @ p["v_proj"]).reshape(b, t, num_kv_heads, dh).transpose(0, 2, 1, 3)               # (B, Hkv, T, dh)
    q = rope(q.transpose(0, 2, 1, 3), positions)                                      # (B, H, T, dh)
    k = rope(k.transpose(0, 2, 1, 3), positions)                                      # (B, Hkv, T, dh)
    group = num_heads // num_kv_heads
    q = q.reshape(b, num_kv_heads, group * t, dh)                                     # (B, Hkv, g*T, dh) by KV head
    y = attention(q, k, v, np.tile(causal_mask(t), (group, 1)), dh ** -0.5)[0]        # (B, Hkv, g*T, dh)
    del q, k, v
    y = y.reshape(b, num_heads, t, dh).transpose(0, 2, 1, 3).reshape(b, t, num_heads * dh)   # (B, T, H*dh)
    return y @ p["o_proj"]                                                            # (B, T, D)


def qwen3_block(x, block, positions, num_heads, num_kv_heads, cache=None):
    if cache is not None:
        raise sizing.Unfit("a cache")
    h = np.array(x, np.float64)                                                       # (B, T, D) the result
    a = rms_norm(h, block["input_layernorm"], QWEN3_EPS)                              # (B, T, D)
    h += qwen3_attention(a, block, positions, num_heads, num_kv_heads)                # (B, T, D)
    del a
    z = rms_norm(h, block["post_attention_layernorm"], QWEN3_EPS)                     # (B, T, D)
    h += swiglu_mlp(z, block["gate_proj"], block["up_proj"], block["down_proj"])      # (B, T, D)
    return h


# ----------------------------------------------------------------------------------------------- the records' answers
@dataclass(frozen=True)
class Answer:
    """How a call of a contract function is answered while another exercise is graded (an exercise record's
    ``answer``): ``compute``, its float64 answer above, and ``size``, what that needs for some arguments before it
    runs (``sizing.py``)."""

    compute: Callable
    size: Callable[[dict], sizing.Need]

    @property
    def signature(self) -> inspect.Signature:
        return inspect.signature(self.compute)

    def need(self, arguments: dict) -> sizing.Need:
        return sizing.need(self.size, arguments)


SOFTMAX = Answer(softmax, sizing.softmax)
CAUSAL_MASK = Answer(causal_mask, sizing.causal_mask)
SCALED_DOT_PRODUCT_ATTENTION = Answer(scaled_dot_product_attention, sizing.attention)
DOT_PRODUCT_ATTENTION = Answer(dot_product_attention, sizing.attention)
SPLIT_HEADS = Answer(split_heads, sizing.split_heads)
MERGE_HEADS = Answer(merge_heads, sizing.merge_heads)
MULTI_HEAD_ATTENTION = Answer(multi_head_attention, sizing.multi_head_attention)
MULTI_HEAD_ATTENTION_LAYER = Answer(multi_head_attention_layer, sizing.multi_head_attention_layer)
KV_CACHE_BYTES = Answer(kv_cache_bytes, sizing.kv_cache_bytes)
LAYER_NORM = Answer(layer_norm, sizing.layer_norm)
DECODER_BLOCK = Answer(decoder_block, sizing.decoder_block)
NEXT_TOKEN_PROBS = Answer(next_token_probs, sizing.next_token_probs)
RMS_NORM = Answer(rms_norm, sizing.rms_norm)
SWIGLU_MLP = Answer(swiglu_mlp, sizing.swiglu_mlp)
QWEN3_ATTENTION = Answer(qwen3_attention, sizing.qwen3_attention)
QWEN3_BLOCK = Answer(qwen3_block, sizing.qwen3_block)
