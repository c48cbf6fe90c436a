# The `attention` assignment with keras.ops only (any backend), returning Keras tensors. keras.ops.softmax is
# used inside the attention functions (allowed) but not inside `softmax` itself; no Keras attention layer.
from keras import ops


def _tensor(x):
    t = ops.convert_to_tensor(x)
    return ops.cast(t, "float32") if t.dtype in ("float16", "bfloat16") else t


def _masked(scores, mask):
    if mask is None:
        return scores
    return ops.where(ops.convert_to_tensor(mask, dtype="bool"), scores, float("-inf"))


def softmax(x, axis=-1):
    t = _tensor(x)
    e = ops.exp(t - ops.max(t, axis=axis, keepdims=True))
    return e / ops.sum(e, axis=axis, keepdims=True)


def additive_attention(query, key, value, mask=None):
    q, k, v = _tensor(query), _tensor(key), _tensor(value)
    scores = ops.sum(ops.tanh(ops.expand_dims(q, -2) + ops.expand_dims(k, -3)), axis=-1)
    return ops.matmul(ops.softmax(_masked(scores, mask), axis=-1), v)


def bahdanau_attention(query, key, value, w_q, w_k, v, mask=None):
    q = ops.matmul(_tensor(query), _tensor(w_q))
    k = ops.matmul(_tensor(key), _tensor(w_k))
    hidden = ops.tanh(ops.expand_dims(q, -2) + ops.expand_dims(k, -3))           # (..., Tq, Tk, h)
    scores = ops.tensordot(hidden, _tensor(v), axes=1)                            # (..., Tq, Tk)
    return ops.matmul(ops.softmax(_masked(scores, mask), axis=-1), _tensor(value))


def dot_product_attention(query, key, value, mask=None):
    q, k, v = _tensor(query), _tensor(key), _tensor(value)
    scores = ops.matmul(q, ops.swapaxes(k, -1, -2))
    return ops.matmul(ops.softmax(_masked(scores, mask), axis=-1), v)


def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    q, k, v = _tensor(query), _tensor(key), _tensor(value)
    scores = ops.matmul(q, ops.swapaxes(k, -1, -2)) / ops.sqrt(ops.cast(ops.shape(q)[-1], q.dtype))
    weights = ops.softmax(_masked(scores, mask), axis=-1)
    out = ops.matmul(weights, v)
    return (out, weights) if return_weights else out


def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    i = ops.expand_dims(ops.arange(t_q), 1)
    j = ops.expand_dims(ops.arange(t_k), 0)
    return ops.less_equal(j, i + (t_k - t_q))


def self_attention(x, w_q, w_k, w_v, causal=False):
    x = _tensor(x)
    q, k, v = (ops.matmul(x, _tensor(w)) for w in (w_q, w_k, w_v))
    return scaled_dot_product_attention(q, k, v, causal_mask(ops.shape(x)[-2]) if causal else None)


def split_heads(x, num_heads):
    x = _tensor(x)
    b, t, c = ops.shape(x)
    return ops.transpose(ops.reshape(x, (b, t, num_heads, c // num_heads)), (0, 2, 1, 3))


def merge_heads(x):
    x = _tensor(x)
    b, h, t, dh = ops.shape(x)
    return ops.reshape(ops.transpose(x, (0, 2, 1, 3)), (b, t, h * dh))


def multi_head_attention(query, key, value, num_heads, mask=None):
    q, k, v = (split_heads(a, num_heads) for a in (query, key, value))
    return merge_heads(scaled_dot_product_attention(q, k, v, mask))


def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    p = {name: _tensor(w) for name, w in params.items()}
    x_q, x_kv = _tensor(x_q), _tensor(x_kv)
    q = ops.matmul(x_q, p["w_q"]) + p["b_q"]
    k = ops.matmul(x_kv, p["w_k"]) + p["b_k"]
    v = ops.matmul(x_kv, p["w_v"]) + p["b_v"]
    heads = scaled_dot_product_attention(*(split_heads(a, num_heads) for a in (q, k, v)), mask)
    return ops.matmul(merge_heads(heads), p["w_o"]) + p["b_o"]


def apply_rope(x, positions, base=10000.0):
    x = _tensor(x)
    d = x.shape[-1]
    x1, x2 = ops.split(x, 2, axis=-1)                                                  # (..., T, d/2) each
    exponent = ops.cast(ops.arange(d // 2), x.dtype) * (-2.0 / d)
    angles = ops.cast(ops.convert_to_tensor(positions), x.dtype)[:, None] * ops.power(base, exponent)
    cos, sin = ops.cos(angles), ops.sin(angles)
    return ops.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
