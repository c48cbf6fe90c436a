# The `kv_cache` assignment with explicit loops and einsum in float64: math.prod and divmod for the sizes, GQA one
# query head at a time, a cache that keeps float64 chunks in a list and joins them on demand, attend_with_cache
# one query at a time over the keys it may see, flash attention as a plain loop over key blocks; the sliding window
# and RoPE (one pair at a time) with loops too.
import math

import numpy as np


def kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2):
    return math.prod((2, num_layers, num_kv_heads, head_dim, seq_len, batch_size, bytes_per_element))


def max_cached_tokens(memory_bytes, num_layers, num_kv_heads, head_dim, batch_size=1, bytes_per_element=2):
    tokens, _rest = divmod(memory_bytes, kv_cache_bytes(num_layers, num_kv_heads, head_dim, 1, batch_size,
                                                         bytes_per_element))
    return tokens


def _weights(scores):
    scores = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(scores)
    return e / e.sum(axis=-1, keepdims=True)


def grouped_query_attention(query, key, value, mask=None):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    b, hq, tq, d = q.shape
    hkv, tk = k.shape[1], k.shape[2]
    if hq % hkv:
        raise ValueError(f"Hq={hq} is not a multiple of Hkv={hkv}")
    group = hq // hkv
    full_mask = None if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), (b, hq, tq, tk))
    out = np.empty((b, hq, tq, d))
    for h in range(hq):
        kv = h // group
        scores = np.einsum("bqd,bkd->bqk", q[:, h], k[:, kv]) / math.sqrt(d)
        if full_mask is not None:
            scores = np.where(full_mask[:, h], scores, -np.inf)
        out[:, h] = np.einsum("bqk,bkd->bqd", _weights(scores), v[:, kv])
    return out


class KVCache:
    def __init__(self):
        self.key_chunks = []
        self.value_chunks = []

    def append(self, k, v):
        self.key_chunks.append(np.array(k, dtype=np.float64))
        self.value_chunks.append(np.array(v, dtype=np.float64))
        return self.keys, self.values

    @property
    def keys(self):
        return np.concatenate(self.key_chunks, axis=2) if self.key_chunks else None

    @property
    def values(self):
        return np.concatenate(self.value_chunks, axis=2) if self.value_chunks else None

    def __len__(self):
        return sum(chunk.shape[2] for chunk in self.key_chunks)

    @property
    def nbytes(self):
        return sum(chunk.nbytes for chunk in self.key_chunks) + sum(chunk.nbytes for chunk in self.value_chunks)


def attend_with_cache(query, key, value, cache):
    keys, values = cache.append(key, value)
    q = np.asarray(query, dtype=np.float64)
    t, total = q.shape[2], len(cache)
    out = np.empty(q.shape[:3] + (np.shape(values)[-1],))
    for i in range(t):
        seen = total - t + i + 1                                           # keys 0 .. total - t + i
        scores = np.einsum("bhd,bhkd->bhk", q[:, :, i], keys[:, :, :seen]) / math.sqrt(q.shape[-1])
        out[:, :, i] = np.einsum("bhk,bhkd->bhd", _weights(scores), values[:, :, :seen])
    return out


def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    tq, tk = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])
    row_max = np.full(q.shape[:-1] + (1,), -np.inf)
    row_sum = np.zeros(q.shape[:-1] + (1,))
    total = np.zeros(q.shape[:-1] + (v.shape[-1],))
    query_pos = np.arange(tq)[:, None] + (tk - tq)
    start = 0
    while start < tk:
        stop = min(start + block_size, tk)
        scores = q @ np.swapaxes(k[..., start:stop, :], -1, -2) * scale     # (..., Tq, stop - start)
        if causal:
            scores = np.where(np.arange(start, stop)[None, :] <= query_pos, scores, -np.inf)
        new_max = np.maximum(row_max, scores.max(axis=-1, keepdims=True))
        safe = np.where(np.isneginf(new_max), 0.0, new_max)
        p = np.exp(scores - safe)
        correction = np.exp(row_max - safe)
        row_sum = row_sum * correction + p.sum(axis=-1, keepdims=True)
        total = total * correction + p @ v[..., start:stop, :]
        row_max = new_max
        start = stop
    return total / row_sum


def sliding_window_mask(t_q, t_k=None, window=4096):
    t_k = t_q if t_k is None else t_k
    mask = np.zeros((t_q, t_k), dtype=bool)
    for i in range(t_q):
        position = i + t_k - t_q
        for j in range(max(0, position - window + 1), min(position, t_k - 1) + 1):
            mask[i, j] = True
    return mask


def _rotate(x, positions, base):
    """Each pair (x[i], x[i + d/2]) turned by position * base ** (-2i/d), one pair at a time."""
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    out = np.empty_like(x)
    for i in range(d // 2):
        angle = np.asarray(positions, dtype=np.float64) * base ** (-2 * i / d)      # (t,)
        c, s = np.cos(angle), np.sin(angle)
        out[..., i] = x[..., i] * c - x[..., i + d // 2] * s
        out[..., i + d // 2] = x[..., i] * s + x[..., i + d // 2] * c
    return out


def attend_with_rope_cache(query, key, value, cache, base=10000.0):
    start, t = len(cache), np.shape(query)[2]
    positions = list(range(start, start + t))
    keys, values = cache.append(_rotate(key, positions, base), value)
    q = _rotate(query, positions, base)
    out = np.empty(q.shape[:3] + (np.shape(values)[-1],))
    for i, position in enumerate(positions):
        seen = position + 1                                                # keys 0 .. position
        scores = np.einsum("bhd,bhkd->bhk", q[:, :, i], keys[:, :, :seen]) / math.sqrt(q.shape[-1])
        out[:, :, i] = np.einsum("bhk,bhkd->bhd", _weights(scores), values[:, :, :seen])
    return out
