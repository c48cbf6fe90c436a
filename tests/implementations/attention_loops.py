# The `attention` assignment with explicit Python loops over batches, queries and keys, in float64 (math.exp,
# one row of scores at a time), and einsum for the projections. Slow but exact; returns numpy float64 arrays.
import math

import numpy as np


def softmax(x, axis=-1):
    x = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    out = np.empty_like(x)
    for index in np.ndindex(x.shape[:-1]):
        row = x[index]
        top = max(row)
        exps = [math.exp(value - top) for value in row]
        total = sum(exps)
        out[index] = [e / total for e in exps]
    return np.moveaxis(out, -1, axis)


def _attention_loops(score, query, key, value, mask):
    """out[..., i, :] = sum_j w_ij value[..., j, :], w_i = softmax_j(score(q_i, k_j)) over the visible keys j."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    tq, tk = q.shape[-2], k.shape[-2]
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2],
                               () if mask is None else np.shape(mask)[:-2])
    q, k, v = (np.broadcast_to(a, lead + a.shape[-2:]) for a in (q, k, v))
    seen = np.ones(lead + (tq, tk), dtype=bool) if mask is None else np.broadcast_to(mask, lead + (tq, tk))
    out = np.zeros(lead + (tq, v.shape[-1]))
    for index in np.ndindex(lead):
        for i in range(tq):
            visible = [j for j in range(tk) if seen[index][i, j]]
            scores = [score(q[index][i], k[index][j]) for j in visible]
            top = max(scores)
            exps = [math.exp(s - top) for s in scores]
            total = sum(exps)
            for j, e in zip(visible, exps, strict=True):
                out[index][i] += (e / total) * v[index][j]
    return out


def additive_attention(query, key, value, mask=None):
    return _attention_loops(lambda q, k: float(np.sum(np.tanh(q + k))), query, key, value, mask)


def bahdanau_attention(query, key, value, w_q, w_k, v, mask=None):
    q = np.einsum("...td,dh->...th", np.asarray(query, np.float64), np.asarray(w_q, np.float64))
    k = np.einsum("...td,dh->...th", np.asarray(key, np.float64), np.asarray(w_k, np.float64))
    v = np.asarray(v, np.float64)
    return _attention_loops(lambda a, b: float(np.dot(v, np.tanh(a + b))), q, k, value, mask)


def dot_product_attention(query, key, value, mask=None):
    return _attention_loops(lambda q, k: float(np.dot(q, k)), query, key, value, mask)


def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    d = np.shape(query)[-1]

    def score(q, k):
        return float(np.dot(q, k)) / math.sqrt(d)

    out = _attention_loops(score, query, key, value, mask)
    if not return_weights:
        return out
    tk = np.shape(key)[-2]
    lead = np.broadcast_shapes(np.shape(query)[:-2], np.shape(key)[:-2])
    identity = np.broadcast_to(np.eye(tk), lead + (tk, tk))             # value = I gives the weights back
    return out, _attention_loops(score, query, key, identity, mask)


def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    mask = np.zeros((t_q, t_k), dtype=bool)
    for i in range(t_q):
        for j in range(t_k):
            mask[i, j] = j <= i + (t_k - t_q)
    return mask


def self_attention(x, w_q, w_k, w_v, causal=False):
    x = np.asarray(x, np.float64)
    q, k, v = (np.einsum("...td,de->...te", x, np.asarray(w, np.float64)) for w in (w_q, w_k, w_v))
    return scaled_dot_product_attention(q, k, v, causal_mask(x.shape[-2]) if causal else None)


def split_heads(x, num_heads):
    x = np.asarray(x, np.float64)
    b, t, c = x.shape
    dh = c // num_heads
    out = np.empty((b, num_heads, t, dh))
    for h in range(num_heads):
        out[:, h] = x[:, :, h * dh:(h + 1) * dh]
    return out


def merge_heads(x):
    x = np.asarray(x, np.float64)
    return np.concatenate([x[:, h] for h in range(x.shape[1])], axis=-1)


def multi_head_attention(query, key, value, num_heads, mask=None):
    b, tq, c = np.shape(query)
    tk, dh = np.shape(key)[1], c // num_heads
    full = None if mask is None else np.broadcast_to(mask, (b, num_heads, tq, tk))
    heads = []
    for h in range(num_heads):
        cols = slice(h * dh, (h + 1) * dh)
        heads.append(scaled_dot_product_attention(np.asarray(query)[..., cols], np.asarray(key)[..., cols],
                                                  np.asarray(value)[..., cols], None if full is None else full[:, h]))
    return np.concatenate(heads, axis=-1)


def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    p = {name: np.asarray(w, np.float64) for name, w in params.items()}
    q = np.einsum("btd,de->bte", np.asarray(x_q, np.float64), p["w_q"]) + p["b_q"]
    k = np.einsum("btd,de->bte", np.asarray(x_kv, np.float64), p["w_k"]) + p["b_k"]
    v = np.einsum("btd,de->bte", np.asarray(x_kv, np.float64), p["w_v"]) + p["b_v"]
    b, tq, _ = q.shape
    tk = k.shape[1]
    dk, dv = q.shape[-1] // num_heads, v.shape[-1] // num_heads
    full = None if mask is None else np.broadcast_to(mask, (b, num_heads, tq, tk))
    heads = [scaled_dot_product_attention(q[..., h * dk:(h + 1) * dk], k[..., h * dk:(h + 1) * dk],
                                          v[..., h * dv:(h + 1) * dv], None if full is None else full[:, h])
             for h in range(num_heads)]
    return np.einsum("bte,ed->btd", np.concatenate(heads, axis=-1), p["w_o"]) + p["b_o"]


def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    half = d // 2
    out = np.empty_like(x)
    for index in np.ndindex(x.shape[:-2]):
        for t, position in enumerate(positions):
            for i in range(half):
                angle = float(position) * math.pow(base, -2.0 * i / d)
                a, b = x[index + (t, i)], x[index + (t, i + half)]
                out[index + (t, i)] = a * math.cos(angle) - b * math.sin(angle)
                out[index + (t, i + half)] = b * math.cos(angle) + a * math.sin(angle)
    return out
