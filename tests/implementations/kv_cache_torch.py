# The `kv_cache` assignment written with torch: tensors in the inputs' own precision (float32 stays float32),
# a cache of torch tensors grown with torch.cat, GQA by viewing the query heads as (Hkv, group) instead of
# repeating K and V, max_cached_tokens by bisection on kv_cache_bytes, RoPE in Hugging Face's Llama form
# (x * cos + rotate_half(x) * sin). No torch SDPA, no Keras attention layers.
import math

import numpy as np
import torch


def _tensor(x):
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))


def kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2):
    per_layer = torch.Size([batch_size, num_kv_heads, seq_len, head_dim]).numel()   # elements of K (or V)
    return 2 * num_layers * per_layer * bytes_per_element


def max_cached_tokens(memory_bytes, num_layers, num_kv_heads, head_dim, batch_size=1, bytes_per_element=2):
    def fits(t):
        return kv_cache_bytes(num_layers, num_kv_heads, head_dim, t, batch_size, bytes_per_element) <= memory_bytes

    low, high = 0, 1                  # fits(low) is True, fits(high) is unknown
    while fits(high):
        low, high = high, high * 2
    while high - low > 1:             # fits(low) and not fits(high)
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


def grouped_query_attention(query, key, value, mask=None):
    q, k, v = _tensor(query), _tensor(key), _tensor(value)
    b, hq, tq, d = q.shape
    hkv, tk = k.shape[1], k.shape[2]
    if hq % hkv != 0:
        raise ValueError(f"query heads ({hq}) must be a multiple of key/value heads ({hkv})")
    group = hq // hkv
    qg = q.reshape(b, hkv, group, tq, d)                                   # head h = kv * group + j
    scores = qg @ k.unsqueeze(2).transpose(-1, -2) / math.sqrt(d)          # (B, Hkv, g, Tq, Tk)
    if mask is not None:
        m = _tensor(mask).bool().broadcast_to((b, hq, tq, tk)).reshape(b, hkv, group, tq, tk)
        scores = scores.masked_fill(~m, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v.unsqueeze(2)                  # (B, Hkv, g, Tq, d)
    return out.reshape(b, hq, tq, d)


class KVCache:
    def __init__(self):
        self._k = None
        self._v = None

    def append(self, k, v):
        k, v = _tensor(k).clone(), _tensor(v).clone()                     # (B, H, t, d)
        self._k = k if self._k is None else torch.cat([self._k, k], dim=2)
        self._v = v if self._v is None else torch.cat([self._v, v], dim=2)
        return self._k, self._v

    @property
    def keys(self):
        return self._k

    @property
    def values(self):
        return self._v

    def __len__(self):
        return 0 if self._k is None else int(self._k.shape[2])

    @property
    def nbytes(self):
        return 0 if self._k is None else self._k.nbytes + self._v.nbytes


def attend_with_cache(query, key, value, cache):
    keys, values = cache.append(key, value)
    q, k, v = _tensor(query), _tensor(keys), _tensor(values)
    t, total = q.shape[-2], k.shape[-2]
    future = torch.arange(total)[None, :] > torch.arange(t)[:, None] + (total - t)   # (t, T): may not see
    scores = (q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])).masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = _tensor(query), _tensor(key), _tensor(value)
    tq, tk = q.shape[-2], k.shape[-2]
    scale = 1.0 / math.sqrt(q.shape[-1])
    m = torch.full(q.shape[:-1] + (1,), float("-inf"), dtype=q.dtype)     # running max
    total = torch.zeros(q.shape[:-1] + (1,), dtype=q.dtype)                # running sum
    acc = torch.zeros(q.shape[:-1] + v.shape[-1:], dtype=q.dtype)          # running weighted sum
    last = torch.arange(tq)[:, None] + (tk - tq)                           # last key each query may see
    for start in range(0, tk, block_size):
        kb, vb = k[..., start:start + block_size, :], v[..., start:start + block_size, :]
        s = (q @ kb.transpose(-1, -2)) * scale                             # (..., Tq, b)
        if causal:
            s = s.masked_fill(torch.arange(start, start + kb.shape[-2]) > last, float("-inf"))
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        base = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        p = torch.exp(s - base)
        alpha = torch.exp(m - base)
        total = alpha * total + p.sum(dim=-1, keepdim=True)
        acc = alpha * acc + p @ vb
        m = m_new
    return acc / total


def sliding_window_mask(t_q, t_k=None, window=4096):
    t_k = t_q if t_k is None else t_k
    keys = torch.arange(t_k)[None, :]
    last = torch.arange(t_q)[:, None] + (t_k - t_q)                        # absolute position of each query
    return ((keys <= last) & (keys > last - window)).numpy()


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def _rope(x, positions, base):
    """Hugging Face's Llama form: x * cos + rotate_half(x) * sin, with the angles repeated for both halves."""
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.outer(positions.to(torch.float64), inv_freq)             # (t, d/2)
    emb = torch.cat((freqs, freqs), dim=-1)                                # (t, d)
    return (x * emb.cos() + _rotate_half(x) * emb.sin()).to(x.dtype)


def attend_with_rope_cache(query, key, value, cache, base=10000.0):
    q, k, v = _tensor(query), _tensor(key), _tensor(value)
    t, start = q.shape[-2], len(cache)
    positions = torch.arange(start, start + t)
    keys, values = cache.append(_rope(k, positions, base), v)
    q = _rope(q, positions, base)
    total = keys.shape[-2]
    future = torch.arange(total)[None, :] > positions[:, None]             # (t, T): may not see
    scores = (q @ keys.transpose(-1, -2) / math.sqrt(q.shape[-1])).masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ values
