# The `kv_cache` assignment in numpy, written differently from the notebook: numpy integers for the sizes
# (np.prod, np.floor_divide), GQA by broadcasting a (B, Hkv, group, ...) view of the queries against the KV heads,
# a cache with preallocated buffers that double when full (a static cache that grows), attention through an
# explicit einsum, and flash attention that also walks the queries in blocks. The sliding window as a band of
# np.tril/np.triu; RoPE as a complex product (x1 + i x2) * exp(i * angle).
import numpy as np


def kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2):
    return np.prod([2, num_layers, num_kv_heads, head_dim, seq_len, batch_size, bytes_per_element], dtype=np.int64)


def max_cached_tokens(memory_bytes, num_layers, num_kv_heads, head_dim, batch_size=1, bytes_per_element=2):
    return np.floor_divide(np.int64(memory_bytes),
                           kv_cache_bytes(num_layers, num_kv_heads, head_dim, 1, batch_size, bytes_per_element))


def _softmax_rows(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def grouped_query_attention(query, key, value, mask=None):
    q, k, v = np.asarray(query), np.asarray(key), np.asarray(value)
    b, hq, tq, d = q.shape
    hkv, tk = k.shape[1], k.shape[2]
    if hq % hkv != 0:
        raise ValueError(f"{hq} query heads cannot be split into {hkv} key/value groups")
    g = hq // hkv
    qg = q.reshape(b, hkv, g, tq, d)                                       # query head h = (h // g, h % g)
    scores = np.einsum("bvgqd,bvkd->bvgqk", qg, k) / np.sqrt(d)           # (B, Hkv, g, Tq, Tk)
    if mask is not None:
        m = np.broadcast_to(np.asarray(mask, dtype=bool), (b, hq, tq, tk)).reshape(b, hkv, g, tq, tk)
        scores = np.where(m, scores, -np.inf)
    out = np.einsum("bvgqk,bvkd->bvgqd", _softmax_rows(scores), v)        # (B, Hkv, g, Tq, d)
    return out.reshape(b, hq, tq, d)


class KVCache:
    def __init__(self):
        self._k = self._v = None
        self._size = 0

    def append(self, k, v):
        k, v = np.asarray(k), np.asarray(v)
        t = k.shape[2]
        if self._k is None:
            self._k = np.empty(k.shape[:2] + (max(t, 4),) + k.shape[3:], dtype=k.dtype)
            self._v = np.empty(v.shape[:2] + (max(t, 4),) + v.shape[3:], dtype=v.dtype)
        while self._size + t > self._k.shape[2]:                          # double the buffers
            self._k = np.concatenate([self._k, np.empty_like(self._k)], axis=2)
            self._v = np.concatenate([self._v, np.empty_like(self._v)], axis=2)
        self._k[:, :, self._size:self._size + t] = k
        self._v[:, :, self._size:self._size + t] = v
        self._size += t
        return self.keys, self.values

    @property
    def keys(self):
        return None if self._k is None else self._k[:, :, :self._size]

    @property
    def values(self):
        return None if self._v is None else self._v[:, :, :self._size]

    def __len__(self):
        return self._size

    @property
    def nbytes(self):
        return 0 if self._k is None else self.keys.nbytes + self.values.nbytes


def attend_with_cache(query, key, value, cache):
    keys, values = cache.append(key, value)
    q = np.asarray(query)
    t, total = q.shape[2], keys.shape[2]
    scores = np.einsum("bhqd,bhkd->bhqk", q, keys) / np.sqrt(q.shape[-1])
    visible = np.arange(total)[None, :] - np.arange(t)[:, None] <= total - t          # (t, T)
    return np.einsum("bhqk,bhkd->bhqd", _softmax_rows(np.where(visible, scores, -np.inf)), values)


def flash_attention(query, key, value, block_size=64, causal=False, query_block=1024):
    q, k, v = np.asarray(query), np.asarray(key), np.asarray(value)
    tq, tk = q.shape[-2], k.shape[-2]
    out = np.empty(q.shape[:-1] + v.shape[-1:], dtype=np.result_type(q, k, v, np.float32))
    for r0 in range(0, tq, query_block):                                  # query rows r0 .. r1 - 1
        r1 = min(r0 + query_block, tq)
        qb = q[..., r0:r1, :] / np.sqrt(q.shape[-1])
        limit = np.arange(r0, r1)[:, None] + (tk - tq)                     # last key each row may see
        m = np.full(qb.shape[:-1] + (1,), -np.inf, out.dtype)
        total = np.zeros(qb.shape[:-1] + (1,), out.dtype)
        acc = np.zeros(qb.shape[:-1] + v.shape[-1:], out.dtype)
        for c0 in range(0, tk, block_size):
            c1 = min(c0 + block_size, tk)
            s = qb @ np.swapaxes(k[..., c0:c1, :], -1, -2)
            if causal:
                s = np.where(np.arange(c0, c1) <= limit, s, -np.inf)
            m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
            shift = np.where(m_new == -np.inf, 0, m_new)
            p = np.exp(s - shift)
            scale = np.exp(m - shift)
            total = scale * total + p.sum(axis=-1, keepdims=True)
            acc = scale * acc + p @ v[..., c0:c1, :]
            m = m_new
        out[..., r0:r1, :] = acc / total
    return out


def sliding_window_mask(t_q, t_k=None, window=4096):
    t_k = t_q if t_k is None else t_k
    causal = np.tril(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q)                  # j <= p
    return np.triu(causal, k=t_k - t_q - window + 1)                                # and j > p - window


def _rope_complex(x, positions, base):
    """RoPE as a complex product: (x[i] + 1j x[i + d/2]) * exp(1j * position * base ** (-2i/d))."""
    x = np.asarray(x, dtype=np.float64)
    half = x.shape[-1] // 2
    z = x[..., :half] + 1j * x[..., half:]
    z = z * np.exp(1j * np.outer(positions, base ** (-np.arange(0, x.shape[-1], 2) / x.shape[-1])))
    return np.concatenate([z.real, z.imag], axis=-1)


def attend_with_rope_cache(query, key, value, cache, base=10000.0):
    start, t = len(cache), np.shape(query)[2]
    positions = np.arange(start, start + t)
    keys, values = cache.append(_rope_complex(key, positions, base), value)
    q = _rope_complex(query, positions, base)
    scores = np.einsum("bhqd,bhkd->bhqk", q, keys) / np.sqrt(q.shape[-1])
    visible = np.arange(start + t)[None, :] <= positions[:, None]                       # (t, T)
    return np.einsum("bhqk,bhkd->bhqd", _softmax_rows(np.where(visible, scores, -np.inf)), values)
