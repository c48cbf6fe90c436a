"""Realistic wrong versions of the exercises, one per family of mistakes a student falls into, written here apart
from the mistake catalogue (``autograder/graders/exercises/*.py``) and in other styles (einsum, loops, torch), to
measure how often the feedback *names* a mistake that loses points (``benchmarks/naming_rate.py``).

Families: the axis (softmax over the wrong axis, sums over everything), the mask (top-left instead of bottom-right,
applied after softmax, weights returned unmasked, filled with 0 instead of -inf, inverted), the scale (none, by d,
by the model width), the layout (heads interleaved, split without transpose, rotate-half vs pairs), numerics (no max
subtraction, no rescaling of the running sum, materialised scores or masks), the formula (tanh left out, a product
instead of a sum, a missing factor).

Each entry: (exercise, family, the catalogue ids that name it correctly, source). A mutant runs in the solution
notebook's namespace in place of its exercise (the other contract functions are the notebook's, answered by the
references while it is graded, as in real grading).
"""
from __future__ import annotations

MUTANTS = [
    # ------------------------------------------------------------------------------------------------- softmax
    ("softmax", "axis", {"softmax_ignores_axis"}, '''
def softmax(x, axis=-1):
    z = np.exp(np.asarray(x, dtype=np.float64) - np.max(x, -1, keepdims=True))
    return z / z.sum(-1, keepdims=True)
'''),
    ("softmax", "axis: sum over everything", {"softmax_sum_over_all", "softmax_sum_over_all_rowmax"}, '''
def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    z = np.exp(x - x.max(axis=axis, keepdims=True))
    return z / z.sum()
'''),
    ("softmax", "numerics: no max subtraction", {"softmax_no_max_subtraction"}, '''
def softmax(x, axis=-1):
    z = np.exp(np.asarray(x))
    return z / np.sum(z, axis=axis, keepdims=True)
'''),
    # ------------------------------------------------------------------------------------------------- SDPA
    ("scaled_dot_product_attention", "scale: none", {"sdpa_missing_scale"}, '''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    s = np.einsum("...qd,...kd->...qk", query, key)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = softmax(s)
    o = np.einsum("...qk,...kv->...qv", w, value)
    return (o, w) if return_weights else o
'''),
    ("scaled_dot_product_attention", "scale: by d", {"sdpa_scale_by_d"}, '''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    s = np.einsum("...qd,...kd->...qk", query, key) / query.shape[-1]
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = softmax(s)
    o = w @ value
    return (o, w) if return_weights else o
'''),
    ("scaled_dot_product_attention", "mask: after softmax", {"sdpa_mask_after_softmax"}, '''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    w = softmax(query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1]))
    if mask is not None:
        w = np.where(mask, w, 0.0)
    o = w @ value
    return (o, w) if return_weights else o
'''),
    ("scaled_dot_product_attention", "mask: filled with 0", {"sdpa_mask_with_zero"}, '''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    s = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])
    if mask is not None:
        s = np.where(mask, s, 0.0)
    w = softmax(s)
    return (w @ value, w) if return_weights else w @ value
'''),
    ("scaled_dot_product_attention", "mask: inverted", {"sdpa_inverted_mask"}, '''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    s = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])
    if mask is not None:
        s = np.where(~np.asarray(mask, dtype=bool), s, -np.inf)
    w = softmax(s)
    return (w @ value, w) if return_weights else w @ value
'''),
    ("scaled_dot_product_attention", "mask: weights returned unmasked", {"sdpa_weights_unmasked"}, '''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    s = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])
    plain = softmax(s)
    w = plain if mask is None else softmax(np.where(mask, s, -np.inf))
    return (w @ value, plain) if return_weights else w @ value
'''),
    ("scaled_dot_product_attention", "axis: softmax over the queries", {"sdpa_softmax_over_queries"}, '''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    s = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = softmax(s, axis=-2)
    return (w @ value, w) if return_weights else w @ value
'''),
    ("scaled_dot_product_attention", "numerics: inline softmax without max", {"sdpa_exp_without_max"}, '''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    s = query @ np.swapaxes(key, -1, -2) * query.shape[-1] ** -0.5
    e = np.exp(s)
    if mask is not None:
        e = np.where(mask, e, 0.0)
    w = e / e.sum(axis=-1, keepdims=True)
    return (w @ value, w) if return_weights else w @ value
'''),
    ("scaled_dot_product_attention", "axis: inline softmax summed over everything", {"sdpa_normalizes_over_all"}, '''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    s = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=(-2, -1), keepdims=True)
    return (w @ value, w) if return_weights else w @ value
'''),
    # ------------------------------------------------------------------------------------------------- additive
    ("additive_attention", "formula: product instead of sum", {"additive_product_instead_of_sum"}, '''
def additive_attention(query, key, value, mask=None):
    s = np.tanh(np.einsum("...qd,...kd->...qkd", query, key)).sum(-1)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return softmax(s) @ value
'''),
    ("additive_attention", "formula: tanh left out", {"additive_missing_tanh"}, '''
def additive_attention(query, key, value, mask=None):
    s = (query[..., :, None, :] + key[..., None, :, :]).sum(-1)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return softmax(s) @ value
'''),
    ("additive_attention", "mask: filled with 0", {"additive_mask_with_zero"}, '''
def additive_attention(query, key, value, mask=None):
    s = np.tanh(query[..., :, None, :] + key[..., None, :, :]).sum(-1)
    if mask is not None:
        s = s * mask
    return softmax(s) @ value
'''),
    ("additive_attention", "mask: after softmax", {"additive_mask_after_softmax"}, '''
def additive_attention(query, key, value, mask=None):
    w = softmax(np.tanh(query[..., :, None, :] + key[..., None, :, :]).sum(-1))
    if mask is not None:
        w = w * mask
    return w @ value
'''),
    ("additive_attention", "axis: softmax over the queries", {"additive_softmax_over_queries"}, '''
def additive_attention(query, key, value, mask=None):
    s = np.tanh(query[..., :, None, :] + key[..., None, :, :]).sum(-1)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return softmax(s, axis=-2) @ value
'''),
    ("additive_attention", "axis: mean instead of sum over d", {"additive_mean_instead_of_sum"}, '''
def additive_attention(query, key, value, mask=None):
    s = np.tanh(query[..., :, None, :] + key[..., None, :, :]).mean(-1)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return softmax(s) @ value
'''),
    # ------------------------------------------------------------------------------------------------- Bahdanau
    ("bahdanau_attention", "formula: sum instead of v", {"bahdanau_sum_instead_of_v"}, '''
def bahdanau_attention(query, key, value, w_q, w_k, v, mask=None):
    s = np.tanh((query @ w_q)[..., :, None, :] + (key @ w_k)[..., None, :, :]).sum(-1)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return softmax(s) @ value
'''),
    ("bahdanau_attention", "formula: tanh left out", {"bahdanau_missing_tanh"}, '''
def bahdanau_attention(query, key, value, w_q, w_k, v, mask=None):
    s = ((query @ w_q)[..., :, None, :] + (key @ w_k)[..., None, :, :]) @ v
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return softmax(s) @ value
'''),
    ("bahdanau_attention", "formula: projections swapped", {"bahdanau_swapped_projections"}, '''
def bahdanau_attention(query, key, value, w_q, w_k, v, mask=None):
    s = np.tanh((query @ w_k)[..., :, None, :] + (key @ w_q)[..., None, :, :]) @ v
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return softmax(s) @ value
'''),
    ("bahdanau_attention", "mask: after softmax", {"bahdanau_mask_after_softmax"}, '''
def bahdanau_attention(query, key, value, w_q, w_k, v, mask=None):
    w = softmax(np.tanh((query @ w_q)[..., :, None, :] + (key @ w_k)[..., None, :, :]) @ v)
    if mask is not None:
        w = np.where(mask, w, 0.0)
    return w @ value
'''),
    ("bahdanau_attention", "axis: softmax over the queries", {"bahdanau_softmax_over_queries"}, '''
def bahdanau_attention(query, key, value, w_q, w_k, v, mask=None):
    s = np.tanh((query @ w_q)[..., :, None, :] + (key @ w_k)[..., None, :, :]) @ v
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return softmax(s, axis=-2) @ value
'''),
    ("bahdanau_attention", "formula: v applied inside tanh", {"bahdanau_tanh_after_v"}, '''
def bahdanau_attention(query, key, value, w_q, w_k, v, mask=None):
    s = np.tanh(((query @ w_q)[..., :, None, :] + (key @ w_k)[..., None, :, :]) @ v)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return softmax(s) @ value
'''),
    # ------------------------------------------------------------------------------------------------- dot product
    ("dot_product_attention", "scale: by sqrt(d) where none belongs", {"dot_scaled_by_sqrt_d"}, '''
def dot_product_attention(query, key, value, mask=None):
    s = np.einsum("...qd,...kd->...qk", query, key) / np.sqrt(query.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return softmax(s) @ value
'''),
    ("dot_product_attention", "mask: filled with 0", {"dot_mask_with_zero"}, '''
def dot_product_attention(query, key, value, mask=None):
    s = query @ np.swapaxes(key, -1, -2)
    if mask is not None:
        s = np.where(mask, s, 0.0)
    return softmax(s) @ value
'''),
    ("dot_product_attention", "mask: after softmax", {"dot_mask_after_softmax"}, '''
def dot_product_attention(query, key, value, mask=None):
    w = softmax(query @ np.swapaxes(key, -1, -2))
    if mask is not None:
        w = w * mask
    return w @ value
'''),
    ("dot_product_attention", "axis: softmax over the queries", {"dot_softmax_over_queries"}, '''
def dot_product_attention(query, key, value, mask=None):
    s = query @ np.swapaxes(key, -1, -2)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return softmax(s, axis=-2) @ value
'''),
    # ------------------------------------------------------------------------------------------------- causal mask
    ("causal_mask", "mask: top-left", {"causal_top_left"}, '''
def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    return np.tril(np.ones((t_q, t_k), dtype=bool))
'''),
    ("causal_mask", "mask: offset with the wrong sign", {"causal_offset_sign"}, '''
def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    return np.tril(np.ones((t_q, t_k), dtype=bool), k=t_q - t_k)
'''),
    ("causal_mask", "mask: future instead of past", {"causal_triu"}, '''
def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    return np.triu(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q)
'''),
    ("causal_mask", "mask: inverted", {"causal_inverted"}, '''
def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    return np.arange(t_k)[None, :] > np.arange(t_q)[:, None] + (t_k - t_q)
'''),
    ("causal_mask", "mask: the diagonal hidden", {"causal_excludes_diagonal"}, '''
def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    return np.arange(t_k)[None, :] < np.arange(t_q)[:, None] + (t_k - t_q)
'''),
    # ------------------------------------------------------------------------------------------------- self-attention
    ("self_attention", "scale: by the model width", {"self_attention_scale_by_model_dim"}, '''
def self_attention(x, w_q, w_k, w_v, causal=False):
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(x.shape[-1])
    if causal:
        s = np.where(causal_mask(x.shape[-2]), s, -np.inf)
    return softmax(s) @ v
'''),
    ("self_attention", "scale: none", {"self_attention_no_scale"}, '''
def self_attention(x, w_q, w_k, w_v, causal=False):
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    s = q @ np.swapaxes(k, -1, -2)
    if causal:
        s = np.where(causal_mask(x.shape[-2]), s, -np.inf)
    return softmax(s) @ v
'''),
    ("self_attention", "mask: causal ignored", {"self_attention_ignores_causal"}, '''
def self_attention(x, w_q, w_k, w_v, causal=False):
    return scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v)
'''),
    ("self_attention", "mask: future instead of past", {"self_attention_future_mask"}, '''
def self_attention(x, w_q, w_k, w_v, causal=False):
    t = x.shape[-2]
    mask = np.triu(np.ones((t, t), dtype=bool)) if causal else None
    return scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, mask)
'''),
    ("self_attention", "formula: no value projection", {"self_attention_no_value_projection"}, '''
def self_attention(x, w_q, w_k, w_v, causal=False):
    mask = causal_mask(x.shape[-2]) if causal else None
    return scaled_dot_product_attention(x @ w_q, x @ w_k, x, mask)
'''),
    # ------------------------------------------------------------------------------------------------- RoPE
    ("apply_rope", "layout: pairs instead of rotate-half", {"rope_interleaved_pairs"}, '''
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    theta = np.outer(positions, base ** (-2.0 * np.arange(d // 2) / d))
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * theta)
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)
'''),
    ("apply_rope", "formula: frequency without the 2", {"rope_frequencies_without_two"}, '''
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    h = x.shape[-1] // 2
    a = np.asarray(positions)[:, None] * base ** (-np.arange(h) / x.shape[-1])
    return np.concatenate([x[..., :h] * np.cos(a) - x[..., h:] * np.sin(a),
                           x[..., :h] * np.sin(a) + x[..., h:] * np.cos(a)], axis=-1)
'''),
    ("apply_rope", "formula: turned the other way", {"rope_rotation_sign"}, '''
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    h = x.shape[-1] // 2
    a = np.asarray(positions)[:, None] * base ** (-2 * np.arange(h) / x.shape[-1])
    return np.concatenate([x[..., :h] * np.cos(a) + x[..., h:] * np.sin(a),
                           x[..., h:] * np.cos(a) - x[..., :h] * np.sin(a)], axis=-1)
'''),
    ("apply_rope", "formula: positions ignored", {"rope_ignores_positions"}, '''
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    h = x.shape[-1] // 2
    a = np.arange(x.shape[-2])[:, None] * base ** (-2 * np.arange(h) / x.shape[-1])
    return np.concatenate([x[..., :h] * np.cos(a) - x[..., h:] * np.sin(a),
                           x[..., :h] * np.sin(a) + x[..., h:] * np.cos(a)], axis=-1)
'''),
    # ------------------------------------------------------------------------------------------------- heads
    ("split_heads", "layout: split without transpose", {"split_heads_reshape_without_transpose"}, '''
def split_heads(x, num_heads):
    b, t, c = np.shape(x)
    return np.reshape(x, (b, num_heads, t, c // num_heads))
'''),
    ("split_heads", "layout: heads interleaved", {"split_heads_interleaved_channels"}, '''
def split_heads(x, num_heads):
    b, t, c = np.shape(x)
    return np.reshape(x, (b, t, c // num_heads, num_heads)).transpose(0, 3, 1, 2)
'''),
    ("merge_heads", "layout: merge without transpose", {"merge_heads_reshape_without_transpose"}, '''
def merge_heads(x):
    b, h, t, d = np.shape(x)
    return np.reshape(x, (b, t, h * d))
'''),
    ("merge_heads", "layout: heads interleaved", {"merge_heads_wrong_axis_order"}, '''
def merge_heads(x):
    b, h, t, d = np.shape(x)
    return np.transpose(x, (0, 2, 3, 1)).reshape(b, t, h * d)
'''),
    ("multi_head_attention", "scale: by the model width", {"mha_scale_by_model_dim"}, '''
def multi_head_attention(query, key, value, num_heads, mask=None):
    q, k, v = (split_heads(a, num_heads) for a in (query, key, value))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(query.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return merge_heads(softmax(s) @ v)
'''),
    ("multi_head_attention", "layout: heads interleaved", {"mha_interleaved_heads"}, '''
def multi_head_attention(query, key, value, num_heads, mask=None):
    def heads(a):
        b, t, c = a.shape
        return a.reshape(b, t, c // num_heads, num_heads).transpose(0, 3, 1, 2)
    y = scaled_dot_product_attention(heads(query), heads(key), heads(value), mask)
    b, h, t, d = y.shape
    return y.transpose(0, 2, 3, 1).reshape(b, t, h * d)
'''),
    ("multi_head_attention", "layout: split without transpose", {"mha_split_without_transpose"}, '''
def multi_head_attention(query, key, value, num_heads, mask=None):
    def heads(a):
        b, t, c = a.shape
        return a.reshape(b, num_heads, t, c // num_heads)
    return merge_heads(scaled_dot_product_attention(heads(query), heads(key), heads(value), mask))
'''),
    ("multi_head_attention", "layout: one head over all channels", {"mha_no_head_split"}, '''
def multi_head_attention(query, key, value, num_heads, mask=None):
    m = None if mask is None else np.broadcast_to(mask, (query.shape[0], num_heads, query.shape[1], key.shape[1]))[:, 0]
    return scaled_dot_product_attention(query, key, value, m)
'''),
    ("multi_head_attention_layer", "scale: by the model width", {"layer_scale_by_model_dim"}, '''
def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    p = params
    q = split_heads(x_q @ p["w_q"] + p["b_q"], num_heads)
    k = split_heads(x_kv @ p["w_k"] + p["b_k"], num_heads)
    v = split_heads(x_kv @ p["w_v"] + p["b_v"], num_heads)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(p["w_q"].shape[1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return merge_heads(softmax(s) @ v) @ p["w_o"] + p["b_o"]
'''),
    ("multi_head_attention_layer", "formula: output projection left out", {"layer_missing_output_projection"}, '''
def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    p = params
    q = split_heads(x_q @ p["w_q"] + p["b_q"], num_heads)
    k = split_heads(x_kv @ p["w_k"] + p["b_k"], num_heads)
    v = split_heads(x_kv @ p["w_v"] + p["b_v"], num_heads)
    y = merge_heads(scaled_dot_product_attention(q, k, v, mask))
    return y[..., :x_q.shape[-1]] if y.shape[-1] >= x_q.shape[-1] else y
'''),
    ("multi_head_attention_layer", "formula: keys and values from x_q", {"layer_cross_uses_x_q_for_keys"}, '''
def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    p = params
    q = split_heads(x_q @ p["w_q"] + p["b_q"], num_heads)
    k = split_heads(x_q @ p["w_k"] + p["b_k"], num_heads)
    v = split_heads(x_q @ p["w_v"] + p["b_v"], num_heads)
    return merge_heads(scaled_dot_product_attention(q, k, v, mask)) @ p["w_o"] + p["b_o"]
'''),
    ("multi_head_attention_layer", "layout: heads interleaved", {"layer_interleaved_heads"}, '''
def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    p = params

    def heads(a):
        b, t, c = a.shape
        return a.reshape(b, t, c // num_heads, num_heads).transpose(0, 3, 1, 2)
    y = scaled_dot_product_attention(heads(x_q @ p["w_q"] + p["b_q"]), heads(x_kv @ p["w_k"] + p["b_k"]),
                                     heads(x_kv @ p["w_v"] + p["b_v"]), mask)
    b, h, t, d = y.shape
    return y.transpose(0, 2, 3, 1).reshape(b, t, h * d) @ p["w_o"] + p["b_o"]
'''),
    ("multi_head_attention_layer", "layout: split without transpose", {"layer_split_without_transpose"}, '''
def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    p = params

    def heads(a):
        b, t, c = a.shape
        return a.reshape(b, num_heads, t, c // num_heads)
    y = scaled_dot_product_attention(heads(x_q @ p["w_q"] + p["b_q"]), heads(x_kv @ p["w_k"] + p["b_k"]),
                                     heads(x_kv @ p["w_v"] + p["b_v"]), mask)
    return merge_heads(y) @ p["w_o"] + p["b_o"]
'''),
    ("multi_head_attention_layer", "formula: biases left out", {"layer_biases_ignored"}, '''
def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    p = params
    y = scaled_dot_product_attention(split_heads(x_q @ p["w_q"], num_heads), split_heads(x_kv @ p["w_k"], num_heads),
                                     split_heads(x_kv @ p["w_v"], num_heads), mask)
    return merge_heads(y) @ p["w_o"]
'''),
    # ------------------------------------------------------------------------------------------------- cache sizes
    ("kv_cache_bytes", "formula: K and V counted once", {"kv_bytes_missing_factor_2"}, '''
def kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2):
    return num_layers * num_kv_heads * head_dim * seq_len * batch_size * bytes_per_element
'''),
    ("kv_cache_bytes", "formula: one layer", {"kv_bytes_one_layer"}, '''
def kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2):
    return 2 * num_kv_heads * head_dim * seq_len * batch_size * bytes_per_element
'''),
    ("kv_cache_bytes", "formula: element size ignored", {"kv_bytes_ignores_dtype"}, '''
def kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2):
    return 2 * num_layers * num_kv_heads * head_dim * seq_len * batch_size * 2
'''),
    ("kv_cache_bytes", "formula: batch ignored", {"kv_bytes_ignores_batch"}, '''
def kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2):
    return 2 * num_layers * num_kv_heads * head_dim * seq_len * bytes_per_element
'''),
    ("max_cached_tokens", "numerics: exact fit left out", {"max_tokens_excludes_exact_fit"}, '''
def max_cached_tokens(memory_bytes, num_layers, num_kv_heads, head_dim, batch_size=1, bytes_per_element=2):
    per_token = 2 * num_layers * num_kv_heads * head_dim * batch_size * bytes_per_element
    return (memory_bytes - 1) // per_token
'''),
    ("max_cached_tokens", "formula: batch ignored", {"max_tokens_ignores_batch"}, '''
def max_cached_tokens(memory_bytes, num_layers, num_kv_heads, head_dim, batch_size=1, bytes_per_element=2):
    return memory_bytes // (2 * num_layers * num_kv_heads * head_dim * bytes_per_element)
'''),
    # ------------------------------------------------------------------------------------------------- GQA
    ("grouped_query_attention", "layout: heads tiled instead of grouped", {"gqa_tiled_heads"}, '''
def grouped_query_attention(query, key, value, mask=None):
    hq, hkv = query.shape[1], key.shape[1]
    if hq % hkv:
        raise ValueError("heads")
    idx = np.arange(hq) % hkv
    return scaled_dot_product_attention(query, key[:, idx], value[:, idx], mask)
'''),
    ("grouped_query_attention", "scale: by the width of all query heads", {"gqa_scale_by_all_heads"}, '''
def grouped_query_attention(query, key, value, mask=None):
    hq, hkv = query.shape[1], key.shape[1]
    if hq % hkv:
        raise ValueError("heads")
    k, v = np.repeat(key, hq // hkv, axis=1), np.repeat(value, hq // hkv, axis=1)
    s = query @ np.swapaxes(k, -1, -2) / np.sqrt(hq * query.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return softmax(s) @ v
'''),
    # ------------------------------------------------------------------------------------------------- KVCache
    ("KVCache", "layout: the head axis instead of time", {"kvcache_wrong_axis"}, '''
class KVCache:
    def __init__(self):
        self._k, self._v = [], []

    def append(self, k, v):
        self._k.append(np.asarray(k))
        self._v.append(np.asarray(v))
        return self.keys, self.values

    @property
    def keys(self):
        return np.concatenate(self._k, axis=1) if self._k else None

    @property
    def values(self):
        return np.concatenate(self._v, axis=1) if self._v else None

    def __len__(self):
        return sum(k.shape[2] for k in self._k)

    @property
    def nbytes(self):
        return sum(k.nbytes + v.nbytes for k, v in zip(self._k, self._v))
'''),
    ("KVCache", "formula: append returns only the new tokens", {"kvcache_returns_new_only"}, '''
class KVCache:
    def __init__(self):
        self._k = self._v = None

    def append(self, k, v):
        k, v = np.asarray(k), np.asarray(v)
        self._k = k if self._k is None else np.concatenate([self._k, k], axis=2)
        self._v = v if self._v is None else np.concatenate([self._v, v], axis=2)
        return k, v

    @property
    def keys(self):
        return self._k

    @property
    def values(self):
        return self._v

    def __len__(self):
        return 0 if self._k is None else self._k.shape[2]

    @property
    def nbytes(self):
        return 0 if self._k is None else self._k.nbytes + self._v.nbytes
'''),
    ("KVCache", "formula: len counts the appends", {"kvcache_len_counts_appends"}, '''
class KVCache:
    def __init__(self):
        self._k = self._v = None
        self._calls = 0

    def append(self, k, v):
        k, v = np.asarray(k), np.asarray(v)
        self._k = k if self._k is None else np.concatenate([self._k, k], axis=2)
        self._v = v if self._v is None else np.concatenate([self._v, v], axis=2)
        self._calls += 1
        return self._k, self._v

    @property
    def keys(self):
        return self._k

    @property
    def values(self):
        return self._v

    def __len__(self):
        return self._calls

    @property
    def nbytes(self):
        return 0 if self._k is None else self._k.nbytes + self._v.nbytes
'''),
    # ------------------------------------------------------------------------------------------------- cached attention
    ("attend_with_cache", "mask: top-left", {"attend_top_left_mask"}, '''
def attend_with_cache(query, key, value, cache):
    keys, values = cache.append(key, value)
    t, n = np.shape(query)[-2], len(cache)
    return scaled_dot_product_attention(query, keys, values, np.arange(n)[None, :] <= np.arange(t)[:, None])
'''),
    ("attend_with_cache", "mask: none", {"attend_no_mask"}, '''
def attend_with_cache(query, key, value, cache):
    keys, values = cache.append(key, value)
    return scaled_dot_product_attention(query, keys, values)
'''),
    ("sliding_window_mask", "mask: the Mistral paper's window + 1", {"sw_window_off_by_one"}, '''
def sliding_window_mask(t_q, t_k=None, window=4096):
    t_k = t_q if t_k is None else t_k
    p = np.arange(t_q)[:, None] + t_k - t_q
    j = np.arange(t_k)[None, :]
    return (j <= p) & (j >= p - window)
'''),
    ("sliding_window_mask", "mask: top-left", {"sw_top_left"}, '''
def sliding_window_mask(t_q, t_k=None, window=4096):
    t_k = t_q if t_k is None else t_k
    i, j = np.arange(t_q)[:, None], np.arange(t_k)[None, :]
    return (j <= i) & (j > i - window)
'''),
    ("sliding_window_mask", "mask: causal condition left out", {"sw_missing_causal"}, '''
def sliding_window_mask(t_q, t_k=None, window=4096):
    t_k = t_q if t_k is None else t_k
    p = np.arange(t_q)[:, None] + t_k - t_q
    return p - np.arange(t_k)[None, :] < window
'''),
    ("attend_with_rope_cache", "formula: positions restart at 0", {"rope_positions_restart"}, '''
def attend_with_rope_cache(query, key, value, cache, base=10000.0):
    pos = np.arange(np.shape(query)[-2])
    keys, values = cache.append(apply_rope(key, pos, base), value)
    return scaled_dot_product_attention(apply_rope(query, pos, base), keys, values,
                                        causal_mask(len(pos), len(cache)))
'''),
    ("attend_with_rope_cache", "formula: positions counted after the append", {"rope_positions_after_append"}, '''
def attend_with_rope_cache(query, key, value, cache, base=10000.0):
    t = np.shape(query)[-2]
    pos = np.arange(len(cache) + t, len(cache) + 2 * t)
    keys, values = cache.append(apply_rope(key, pos, base), value)
    return scaled_dot_product_attention(apply_rope(query, pos, base), keys, values, causal_mask(t, len(cache)))
'''),
    ("attend_with_rope_cache", "formula: values rotated too", {"rope_rotates_values"}, '''
def attend_with_rope_cache(query, key, value, cache, base=10000.0):
    t, start = np.shape(query)[-2], len(cache)
    pos = np.arange(start, start + t)
    keys, values = cache.append(apply_rope(key, pos, base), apply_rope(value, pos, base))
    return scaled_dot_product_attention(apply_rope(query, pos, base), keys, values, causal_mask(t, len(cache)))
'''),
    ("attend_with_rope_cache", "formula: only the keys rotated", {"rope_query_not_rotated"}, '''
def attend_with_rope_cache(query, key, value, cache, base=10000.0):
    t, start = np.shape(query)[-2], len(cache)
    keys, values = cache.append(apply_rope(key, np.arange(start, start + t), base), value)
    return scaled_dot_product_attention(query, keys, values, causal_mask(t, len(cache)))
'''),
    # ------------------------------------------------------------------------------------------------- flash
    ("flash_attention", "numerics: running sum not rescaled", {"flash_sum_not_rescaled"}, '''
def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    tq, tk = q.shape[-2], k.shape[-2]
    m = np.full(q.shape[:-1] + (1,), -np.inf)
    l, acc = np.zeros_like(m), np.zeros(q.shape[:-1] + v.shape[-1:])
    for s in range(0, tk, block_size):
        sc = q @ np.swapaxes(k[..., s:s + block_size, :], -1, -2) / np.sqrt(q.shape[-1])
        if causal:
            sc = np.where(np.arange(s, min(s + block_size, tk)) <= np.arange(tq)[:, None] + tk - tq, sc, -np.inf)
        new = np.maximum(m, sc.max(-1, keepdims=True))
        p = np.exp(sc - new)
        acc = np.exp(m - new) * acc + p @ v[..., s:s + block_size, :]
        l = l + p.sum(-1, keepdims=True)
        m = new
    return acc / l
'''),
    ("flash_attention", "numerics: weighted sum not rescaled", {"flash_acc_not_rescaled"}, '''
def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    tq, tk = q.shape[-2], k.shape[-2]
    m = np.full(q.shape[:-1] + (1,), -np.inf)
    l, acc = np.zeros_like(m), np.zeros(q.shape[:-1] + v.shape[-1:])
    for s in range(0, tk, block_size):
        sc = q @ np.swapaxes(k[..., s:s + block_size, :], -1, -2) / np.sqrt(q.shape[-1])
        if causal:
            sc = np.where(np.arange(s, min(s + block_size, tk)) <= np.arange(tq)[:, None] + tk - tq, sc, -np.inf)
        new = np.maximum(m, sc.max(-1, keepdims=True))
        p = np.exp(sc - new)
        l = np.exp(m - new) * l + p.sum(-1, keepdims=True)
        acc = acc + p @ v[..., s:s + block_size, :]
        m = new
    return acc / l
'''),
    ("flash_attention", "mask: top-left", {"flash_causal_top_left"}, '''
def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    tq, tk = q.shape[-2], k.shape[-2]
    m = np.full(q.shape[:-1] + (1,), -np.inf)
    l, acc = np.zeros_like(m), np.zeros(q.shape[:-1] + v.shape[-1:])
    for s in range(0, tk, block_size):
        sc = q @ np.swapaxes(k[..., s:s + block_size, :], -1, -2) / np.sqrt(q.shape[-1])
        if causal:
            sc = np.where(np.arange(s, min(s + block_size, tk)) <= np.arange(tq)[:, None], sc, -np.inf)
        new = np.maximum(m, sc.max(-1, keepdims=True))
        base = np.where(np.isinf(new), 0.0, new)
        p = np.exp(sc - base)
        alpha = np.exp(m - base)
        l, acc, m = alpha * l + p.sum(-1, keepdims=True), alpha * acc + p @ v[..., s:s + block_size, :], new
    return acc / l
'''),
    ("flash_attention", "scale: none", {"flash_missing_scale"}, '''
def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    tq, tk = q.shape[-2], k.shape[-2]
    m = np.full(q.shape[:-1] + (1,), -np.inf)
    l, acc = np.zeros_like(m), np.zeros(q.shape[:-1] + v.shape[-1:])
    for s in range(0, tk, block_size):
        sc = q @ np.swapaxes(k[..., s:s + block_size, :], -1, -2)
        if causal:
            sc = np.where(np.arange(s, min(s + block_size, tk)) <= np.arange(tq)[:, None] + tk - tq, sc, -np.inf)
        new = np.maximum(m, sc.max(-1, keepdims=True))
        base = np.where(np.isinf(new), 0.0, new)
        p, alpha = np.exp(sc - base), np.exp(m - base)
        l, acc, m = alpha * l + p.sum(-1, keepdims=True), alpha * acc + p @ v[..., s:s + block_size, :], new
    return acc / l
'''),
    ("flash_attention", "numerics: each block normalised on its own", {"flash_blocks_normalized_separately"}, '''
def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    tq, tk = q.shape[-2], k.shape[-2]
    out, blocks = 0.0, 0
    for s in range(0, tk, block_size):
        sc = q @ np.swapaxes(k[..., s:s + block_size, :], -1, -2) / np.sqrt(q.shape[-1])
        if causal:
            sc = np.where(np.arange(s, min(s + block_size, tk)) <= np.arange(tq)[:, None] + tk - tq, sc, -np.inf)
        top = sc.max(-1, keepdims=True)
        e = np.exp(sc - np.where(np.isinf(top), 0.0, top))
        w = e / np.maximum(e.sum(-1, keepdims=True), 1e-300)
        out = out + w @ v[..., s:s + block_size, :]
        blocks += 1
    return out / blocks
'''),
    # ------------------------------------------------------------------------------------------------- decoder
    ("layer_norm", "numerics: Keras's default eps (1e-3)", {"ln_keras_default_eps"}, '''
def layer_norm(x, gamma, beta, eps=1e-3):
    t = torch.as_tensor(np.asarray(x, dtype=np.float64))
    var, mean = torch.var_mean(t, dim=-1, keepdim=True, correction=0)
    return ((t - mean) * torch.rsqrt(var + eps)).numpy() * gamma + beta
'''),
    ("decoder_block", "formula: tanh GELU (GPT-2's own code)", {"block_tanh_gelu"}, '''
def decoder_block(x, block, num_heads):
    def new_gelu(u):
        return 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * torch.pow(u, 3.0))))

    x = torch.as_tensor(np.asarray(x))
    t = x.shape[1]
    a = torch.as_tensor(layer_norm(x.numpy(), block["ln_1"]["gamma"], block["ln_1"]["beta"]))
    h = x + torch.as_tensor(multi_head_attention_layer(a.numpy(), a.numpy(), block["attn"], num_heads, causal_mask(t)))
    z = torch.as_tensor(layer_norm(h.numpy(), block["ln_2"]["gamma"], block["ln_2"]["beta"]))
    w_1, b_1, w_2, b_2 = (torch.as_tensor(block[n]) for n in ("w_1", "b_1", "w_2", "b_2"))
    return (h + new_gelu(z @ w_1 + b_1) @ w_2 + b_2).numpy()
'''),
    ("decoder_block", "formula: keras.ops.gelu's default (approximate=True)", {"block_tanh_gelu"}, '''
def decoder_block(x, block, num_heads):
    a = layer_norm(x, block["ln_1"]["gamma"], block["ln_1"]["beta"])
    h = x + multi_head_attention_layer(a, a, block["attn"], num_heads, causal_mask(x.shape[1]))
    z = layer_norm(h, block["ln_2"]["gamma"], block["ln_2"]["beta"])
    u = keras.ops.gelu(keras.ops.convert_to_tensor(z @ block["w_1"] + block["b_1"]))
    return h + keras.ops.convert_to_numpy(u) @ block["w_2"] + block["b_2"]
'''),
    ("generate", "positions: off by one (wpe[start + 1:])", {"gen_positions_off_by_one"}, '''
def generate(params, prompt, max_new_tokens, num_heads, use_cache=True):
    tokens = np.array(prompt)
    caches = [KVCache() for _ in params["blocks"]]
    for step in range(max_new_tokens):
        done = len(caches[0]) if use_cache else 0
        new = tokens[:, done:]
        h = params["wte"][new] + params["wpe"][done + 1:done + 1 + new.shape[1]]
        for block, cache in zip(params["blocks"], caches):
            if not use_cache:
                h = decoder_block(h, block, num_heads)
                continue
            p = block["attn"]
            a = layer_norm(h, block["ln_1"]["gamma"], block["ln_1"]["beta"])
            q, k, v = (split_heads(a @ p["w_" + n] + p["b_" + n], num_heads) for n in "qkv")
            h = h + merge_heads(attend_with_cache(q, k, v, cache)) @ p["w_o"] + p["b_o"]
            z = layer_norm(h, block["ln_2"]["gamma"], block["ln_2"]["beta"])
            h = h + gelu(z @ block["w_1"] + block["b_1"]) @ block["w_2"] + block["b_2"]
        last = layer_norm(h[:, -1], params["ln_f"]["gamma"], params["ln_f"]["beta"])
        tokens = np.concatenate([tokens, (last @ params["wte"].T).argmax(-1)[:, None]], axis=1)
    return tokens
'''),
    ("generate", "choice: sampling instead of argmax", {"gen_samples"}, '''
def generate(params, prompt, max_new_tokens, num_heads, use_cache=True):
    tokens = torch.as_tensor(np.asarray(prompt))
    caches = [KVCache() for _ in params["blocks"]]
    for step in range(max_new_tokens):
        done = len(caches[0]) if use_cache else 0
        new = tokens[:, done:].numpy()
        h = params["wte"][new] + params["wpe"][done:done + new.shape[1]]
        for block, cache in zip(params["blocks"], caches):
            if not use_cache:
                h = decoder_block(h, block, num_heads)
                continue
            p = block["attn"]
            a = layer_norm(h, block["ln_1"]["gamma"], block["ln_1"]["beta"])
            q, k, v = (split_heads(a @ p["w_" + n] + p["b_" + n], num_heads) for n in "qkv")
            h = h + merge_heads(attend_with_cache(q, k, v, cache)) @ p["w_o"] + p["b_o"]
            z = layer_norm(h, block["ln_2"]["gamma"], block["ln_2"]["beta"])
            h = h + gelu(z @ block["w_1"] + block["b_1"]) @ block["w_2"] + block["b_2"]
        last = layer_norm(h[:, -1], params["ln_f"]["gamma"], params["ln_f"]["beta"])
        logits = torch.as_tensor(last @ params["wte"].T)
        nxt = torch.multinomial(torch.softmax(logits.double(), dim=-1), 1)
        tokens = torch.cat([tokens, nxt], dim=1)
    return tokens.numpy()
'''),
    # ------------------------------------------------------------------------------------------------- next_token_probs
    ("next_token_probs", "temperature: after softmax (torch)", {"ntp_temperature_after_softmax"}, '''
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = torch.as_tensor(np.asarray(logits, dtype=np.float64))
    if temperature == 0:
        return torch.nn.functional.one_hot(z.argmax(-1), z.shape[-1]).double()
    if top_k is not None and top_k < z.shape[-1]:
        z = z.masked_fill(z < torch.topk(z, top_k).values[:, -1:], float("-inf"))
    p = torch.softmax(z, dim=-1) / temperature
    p = p / p.sum(-1, keepdim=True)
    if top_p is not None and top_p < 1:
        ranked, order = torch.sort(p, descending=True)
        drop = torch.cumsum(ranked, -1) - ranked >= top_p
        p = p.masked_fill(drop.scatter(-1, order, drop), 0.0)
        p = p / p.sum(-1, keepdim=True)
    return p
'''),
    ("next_token_probs", "top-k: ties broken by topk's indices", {"ntp_top_k_breaks_ties"}, '''
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = torch.as_tensor(np.asarray(logits, dtype=np.float64))
    if temperature == 0:
        return torch.nn.functional.one_hot(z.argmax(-1), z.shape[-1]).double()
    z = z / temperature
    if top_k is not None:
        keep = torch.zeros_like(z, dtype=torch.bool).scatter(-1, torch.topk(z, min(top_k, z.shape[-1])).indices, True)
        z = z.masked_fill(~keep, float("-inf"))
    p = torch.softmax(z, dim=-1)
    if top_p is not None and top_p < 1:
        ranked, order = torch.sort(p, descending=True)
        drop = torch.cumsum(ranked, -1) - ranked >= top_p
        p = p.masked_fill(drop.scatter(-1, order, drop), 0.0)
        p = p / p.sum(-1, keepdim=True)
    return p
'''),
    ("next_token_probs", "top-p: the crossing token dropped (loops)", {"ntp_top_p_drops_crossing"}, '''
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    out = []
    for row in np.asarray(logits, dtype=np.float64):
        if temperature == 0:
            out.append(np.eye(len(row))[np.argmax(row)])
            continue
        z = row / temperature
        if top_k is not None:
            z = np.where(z >= np.sort(z)[-min(top_k, len(z))], z, -np.inf)
        p = np.exp(z - z.max())
        p /= p.sum()
        if top_p is not None and top_p < 1:
            kept, mass = [], 0.0
            for i in np.argsort(-p):
                if kept and mass + p[i] > top_p:
                    break
                kept.append(i)
                mass += p[i]
            p = np.where(np.isin(np.arange(len(p)), kept), p, 0.0) / mass
        out.append(p)
    return np.array(out)
'''),
    ("next_token_probs", "renormalisation: top-k and top-p zero the probabilities", {"ntp_no_renormalise"}, '''
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return (np.arange(z.shape[-1]) == z.argmax(-1)[:, None]).astype(np.float64)
    e = np.exp(z / temperature - (z / temperature).max(-1, keepdims=True))
    p = e / e.sum(-1, keepdims=True)
    if top_k is not None:
        p = np.where(z >= np.sort(z, -1)[:, -min(top_k, z.shape[-1])][:, None], p, 0.0)
    if top_p is not None and top_p < 1:
        above = np.einsum("bij,bj->bi", p[:, None, :] > p[:, :, None], p)
        p = np.where(above < top_p, p, 0.0)
    return p
'''),
    ("next_token_probs", "top-p: cumulated in token order", {"ntp_top_p_in_token_order"}, '''
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return (np.arange(z.shape[-1]) == z.argmax(-1)[:, None]).astype(np.float64)
    z = z / temperature
    if top_k is not None:
        z = np.where(z >= np.sort(z, -1)[:, -min(top_k, z.shape[-1])][:, None], z, -np.inf)
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    if top_p is not None and top_p < 1:
        p = np.where(np.cumsum(p, -1) - p < top_p, p, 0.0)
        p /= p.sum(-1, keepdims=True)
    return p
'''),
    # ------------------------------------------------------------------------------------------------- generate
    ("generate", "cache: ignored, the sequence recomputed in torch", {"gen_ignores_cache"}, '''
def generate(params, prompt, max_new_tokens, num_heads, use_cache=True, temperature=0.0, top_k=None, top_p=None,
             rng=None):
    g = lambda w: torch.as_tensor(w)
    wte, wpe = g(params["wte"]), g(params["wpe"])
    tokens = torch.as_tensor(prompt, dtype=torch.long)
    for _ in range(max_new_tokens):
        b, t = tokens.shape
        h = wte[tokens] + wpe[:t]
        d = h.shape[-1]
        for blk in params["blocks"]:
            a = F.layer_norm(h, (d,), g(blk["ln_1"]["gamma"]), g(blk["ln_1"]["beta"]), 1e-5)
            q, k, v = ((a @ g(blk["attn"]["w_" + n]) + g(blk["attn"]["b_" + n])).view(b, t, num_heads, -1)
                       .transpose(1, 2) for n in "qkv")
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
            h = h + y @ g(blk["attn"]["w_o"]) + g(blk["attn"]["b_o"])
            z = F.layer_norm(h, (d,), g(blk["ln_2"]["gamma"]), g(blk["ln_2"]["beta"]), 1e-5)
            h = h + F.gelu(z @ g(blk["w_1"]) + g(blk["b_1"])) @ g(blk["w_2"]) + g(blk["b_2"])
        logits = F.layer_norm(h[:, -1], (d,), g(params["ln_f"]["gamma"]), g(params["ln_f"]["beta"]), 1e-5) @ wte.T
        chosen = (torch.argmax(logits, -1) if temperature == 0 else
                  torch.as_tensor(sample(next_token_probs(logits, temperature, top_k, top_p), rng)))
        tokens = torch.cat([tokens, chosen[:, None]], dim=1)
    return tokens
'''),
    ("generate", "cache: a new cache every step, the whole sequence into it", {"gen_cache_per_step"}, '''
def generate(params, prompt, max_new_tokens, num_heads, use_cache=True, temperature=0.0, top_k=None, top_p=None,
             rng=None):
    tokens = np.asarray(prompt)
    for _ in range(max_new_tokens):
        h = params["wte"][tokens] + params["wpe"][:tokens.shape[1]]
        for block in params["blocks"]:
            cache = KVCache() if use_cache else None
            a = layer_norm(h, block["ln_1"]["gamma"], block["ln_1"]["beta"])
            p = block["attn"]
            if cache is not None:
                q, k, v = (split_heads(a @ p["w_" + n] + p["b_" + n], num_heads) for n in "qkv")
                h = h + merge_heads(attend_with_cache(q, k, v, cache)) @ p["w_o"] + p["b_o"]
            else:
                h = h + multi_head_attention_layer(a, a, p, num_heads, causal_mask(h.shape[1]))
            z = layer_norm(h, block["ln_2"]["gamma"], block["ln_2"]["beta"])
            h = h + gelu(z @ block["w_1"] + block["b_1"]) @ block["w_2"] + block["b_2"]
        logits = layer_norm(h[:, -1], params["ln_f"]["gamma"], params["ln_f"]["beta"]) @ params["wte"].T
        chosen = np.argmax(logits, -1) if temperature == 0 else sample(next_token_probs(logits, temperature, top_k,
                                                                                        top_p), rng)
        tokens = np.concatenate([tokens, chosen[:, None]], axis=1)
    return tokens
'''),
    # ------------------------------------------------------------------------------------------------- sampling
    ("next_token_probs", "temperature: multiplied (torch)", {"ntp_temperature_multiplied"}, '''
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = torch.as_tensor(np.asarray(logits, dtype=np.float64))
    if temperature == 0:
        return torch.nn.functional.one_hot(z.argmax(-1), z.shape[-1]).double()
    z = z * temperature
    if top_k is not None and top_k < z.shape[-1]:
        z = z.masked_fill(z < torch.topk(z, top_k).values[:, -1:], float("-inf"))
    p = torch.softmax(z, dim=-1)
    if top_p is not None and top_p < 1:
        ranked, order = torch.sort(p, descending=True, stable=True)
        drop = torch.cumsum(ranked, -1) - ranked >= top_p
        drop[:, 0] = False
        p = p.masked_fill(drop.scatter(-1, order, drop), 0.0)
        p = p / p.sum(-1, keepdim=True)
    return p
'''),
    ("next_token_probs", "greedy: no branch for temperature 0 (loops: ZeroDivisionError)", {"ntp_no_greedy_branch"}, '''
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    out = []
    for row in np.asarray(logits, dtype=np.float64).tolist():
        z = [x / temperature for x in row]
        if top_k is not None and top_k < len(z):
            kth = sorted(z, reverse=True)[top_k - 1]
            z = [x if x >= kth else -math.inf for x in z]
        e = [math.exp(x - max(z)) for x in z]
        p = [x / sum(e) for x in e]
        if top_p is not None and top_p < 1:
            kept, mass = set(), 0.0
            for i in sorted(range(len(p)), key=lambda i: (-p[i], i)):
                if mass >= top_p:
                    break
                kept.add(i)
                mass += p[i]
            p = [p[i] / mass if i in kept else 0.0 for i in range(len(p))]
        out.append(p)
    return np.array(out)
'''),
    ("next_token_probs", "greedy: the last of tied maxima (flipped argmax)", {"ntp_greedy_last_argmax"}, '''
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = np.asarray(logits, dtype=np.float64)
    v = z.shape[-1]
    if temperature == 0:
        return np.eye(v)[v - 1 - np.argmax(z[:, ::-1], axis=-1)]
    z = z / temperature
    if top_k is not None and top_k < v:
        z = np.where(z >= np.sort(z, -1)[:, -top_k][:, None], z, -np.inf)
    p = softmax(z)
    if top_p is not None and top_p < 1:
        order = np.argsort(-p, -1, kind="stable")
        ranked = np.take_along_axis(p, order, -1)
        keep = np.cumsum(ranked, -1) - ranked < top_p
        keep[:, 0] = True
        np.put_along_axis(keep, order, keep.copy(), -1)
        p = np.where(keep, p, 0.0) / np.where(keep, p, 0.0).sum(-1, keepdims=True)
    return p
'''),
    ("next_token_probs", "top-k: torch.topk(z, k + 1)", {"ntp_top_k_one_too_many"}, '''
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = torch.as_tensor(np.asarray(logits, dtype=np.float64))
    if temperature == 0:
        return torch.nn.functional.one_hot(z.argmax(-1), z.shape[-1]).double()
    z = z / temperature
    if top_k is not None and top_k < z.shape[-1]:
        z = z.masked_fill(z < torch.topk(z, min(top_k + 1, z.shape[-1])).values[:, -1:], float("-inf"))
    p = torch.softmax(z, dim=-1)
    if top_p is not None and top_p < 1:
        ranked, order = torch.sort(p, descending=True, stable=True)
        drop = torch.cumsum(ranked, -1) - ranked >= top_p
        drop[:, 0] = False
        p = p.masked_fill(drop.scatter(-1, order, drop), 0.0)
        p = p / p.sum(-1, keepdim=True)
    return p
'''),
    ("next_token_probs", "top-k: np.partition and <= (the k-th dropped)", {"ntp_top_k_drops_kth"}, '''
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return (np.arange(z.shape[-1]) == z.argmax(-1)[:, None]).astype(np.float64)
    z = z / temperature
    if top_k is not None and top_k < z.shape[-1]:
        kth = np.partition(z, -top_k, axis=-1)[:, -top_k][:, None]
        z = np.where(z <= kth, -np.inf, z)
    e = np.exp(z - z.max(-1, keepdims=True))
    p = e / e.sum(-1, keepdims=True)
    if top_p is not None and top_p < 1:
        order = np.argsort(-p, -1, kind="stable")
        ranked = np.take_along_axis(p, order, -1)
        keep = np.cumsum(ranked, -1) - ranked < top_p
        keep[:, 0] = True
        np.put_along_axis(keep, order, keep.copy(), -1)
        p = np.where(keep, p, 0.0)
        p /= p.sum(-1, keepdims=True)
    return p
'''),
    ("next_token_probs", "top-p: torch.sort ascending, the descending rule", {"ntp_top_p_ascending"}, '''
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = torch.as_tensor(np.asarray(logits, dtype=np.float64))
    if temperature == 0:
        return torch.nn.functional.one_hot(z.argmax(-1), z.shape[-1]).double()
    z = z / temperature
    if top_k is not None and top_k < z.shape[-1]:
        z = z.masked_fill(z < torch.topk(z, top_k).values[:, -1:], float("-inf"))
    p = torch.softmax(z, dim=-1)
    if top_p is not None and top_p < 1:
        ranked, order = torch.sort(p, stable=True)
        drop = torch.cumsum(ranked, -1) - ranked >= top_p
        drop[:, 0] = False
        p = p.masked_fill(drop.scatter(-1, order, drop), 0.0)
        p = p / p.sum(-1, keepdim=True)
    return p
'''),
    ("next_token_probs", "top-p: the kept mask left in sorted order (torch)", {"ntp_top_p_not_unsorted"}, '''
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = torch.as_tensor(np.asarray(logits, dtype=np.float64))
    if temperature == 0:
        return torch.nn.functional.one_hot(z.argmax(-1), z.shape[-1]).double()
    z = z / temperature
    if top_k is not None and top_k < z.shape[-1]:
        z = z.masked_fill(z < torch.topk(z, top_k).values[:, -1:], float("-inf"))
    p = torch.softmax(z, dim=-1)
    if top_p is not None and top_p < 1:
        ranked, _ = torch.sort(p, descending=True, stable=True)
        drop = torch.cumsum(ranked, -1) - ranked >= top_p
        drop[:, 0] = False
        p = p.masked_fill(drop, 0.0)
        p = p / p.sum(-1, keepdim=True)
    return p
'''),
    ("next_token_probs", "the order: Hugging Face's warpers with top-p first", {"ntp_top_p_on_whole_distribution"}, '''
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = torch.as_tensor(np.asarray(logits, dtype=np.float64))
    if temperature == 0:
        return torch.nn.functional.one_hot(z.argmax(-1), z.shape[-1]).double()
    z = z / temperature
    if top_p is not None and top_p < 1:
        ranked, order = torch.sort(torch.softmax(z, -1), descending=True, stable=True)
        drop = torch.cumsum(ranked, -1) - ranked >= top_p
        drop[:, 0] = False
        z = z.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
    if top_k is not None and top_k < z.shape[-1]:
        z = z.masked_fill(z < torch.topk(z, top_k).values[:, -1:], float("-inf"))
    return torch.softmax(z, dim=-1)
'''),
    ("next_token_probs", "top-p: the mass of the more probable ones (ties kept together)", {"ntp_top_p_keeps_ties"}, '''
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = np.asarray(logits, dtype=np.float64)
    if temperature == 0:
        return (np.arange(z.shape[-1]) == z.argmax(-1)[:, None]).astype(np.float64)
    z = z / temperature
    if top_k is not None and top_k < z.shape[-1]:
        z = np.where(z >= np.sort(z, -1)[:, -top_k][:, None], z, -np.inf)
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    if top_p is not None and top_p < 1:
        above = np.einsum("bij,bj->bi", p[:, None, :] > p[:, :, None], p)
        p = np.where(above < top_p, p, 0.0)
        p /= p.sum(-1, keepdims=True)
    return p
'''),
    ("generate", "sampling: np.random.choice per row (global generator)", {"gen_ignores_rng"}, '''
def generate(params, prompt, max_new_tokens, num_heads, use_cache=True, temperature=0.0, top_k=None, top_p=None,
             rng=None):
    def step(x, block, cache):
        p = block["attn"]
        a = layer_norm(x, block["ln_1"]["gamma"], block["ln_1"]["beta"])
        q, k, v = (split_heads(a @ p["w_" + n] + p["b_" + n], num_heads) for n in "qkv")
        h = x + merge_heads(attend_with_cache(q, k, v, cache)) @ p["w_o"] + p["b_o"]
        z = layer_norm(h, block["ln_2"]["gamma"], block["ln_2"]["beta"])
        return h + gelu(z @ block["w_1"] + block["b_1"]) @ block["w_2"] + block["b_2"]

    tokens = np.asarray(prompt)
    caches = [KVCache() for _ in params["blocks"]]
    for _ in range(max_new_tokens):
        start = len(caches[0]) if use_cache else 0
        h = params["wte"][tokens[:, start:]] + params["wpe"][start:tokens.shape[1]]
        for block, cache in zip(params["blocks"], caches):
            h = step(h, block, cache) if use_cache else decoder_block(h, block, num_heads)
        logits = layer_norm(h[:, -1], params["ln_f"]["gamma"], params["ln_f"]["beta"]) @ params["wte"].T
        if temperature == 0:
            chosen = np.argmax(logits, axis=-1)
        else:
            probs = next_token_probs(logits, temperature, top_k, top_p)
            chosen = np.array([np.random.choice(len(row), p=row) for row in np.asarray(probs)])
        tokens = np.concatenate([tokens, chosen[:, None]], axis=1)
    return tokens
'''),
    ("generate", "sampling: logits divided by the temperature before next_token_probs", {"gen_temperature_twice"}, '''
def generate(params, prompt, max_new_tokens, num_heads, use_cache=True, temperature=0.0, top_k=None, top_p=None,
             rng=None):
    def step(x, block, cache):
        p = block["attn"]
        a = layer_norm(x, block["ln_1"]["gamma"], block["ln_1"]["beta"])
        q, k, v = (split_heads(a @ p["w_" + n] + p["b_" + n], num_heads) for n in "qkv")
        h = x + merge_heads(attend_with_cache(q, k, v, cache)) @ p["w_o"] + p["b_o"]
        z = layer_norm(h, block["ln_2"]["gamma"], block["ln_2"]["beta"])
        return h + gelu(z @ block["w_1"] + block["b_1"]) @ block["w_2"] + block["b_2"]

    tokens = np.asarray(prompt)
    caches = [KVCache() for _ in params["blocks"]]
    for _ in range(max_new_tokens):
        start = len(caches[0]) if use_cache else 0
        h = params["wte"][tokens[:, start:]] + params["wpe"][start:tokens.shape[1]]
        for block, cache in zip(params["blocks"], caches):
            h = step(h, block, cache) if use_cache else decoder_block(h, block, num_heads)
        logits = layer_norm(h[:, -1], params["ln_f"]["gamma"], params["ln_f"]["beta"]) @ params["wte"].T
        if temperature > 0:
            logits = logits / temperature
            chosen = sample(next_token_probs(logits, temperature, top_k, top_p), rng)
        else:
            chosen = logits.argmax(-1)
        tokens = np.concatenate([tokens, chosen[:, None]], axis=1)
    return tokens
'''),
    ("generate", "tokens: a preallocated np.zeros (float64)", {"gen_float_tokens"}, '''
def generate(params, prompt, max_new_tokens, num_heads, use_cache=True, temperature=0.0, top_k=None, top_p=None,
             rng=None):
    out = np.zeros((np.shape(prompt)[0], np.shape(prompt)[1] + max_new_tokens))
    out[:, :np.shape(prompt)[1]] = prompt
    def step(x, block, cache):
        p = block["attn"]
        a = layer_norm(x, block["ln_1"]["gamma"], block["ln_1"]["beta"])
        q, k, v = (split_heads(a @ p["w_" + n] + p["b_" + n], num_heads) for n in "qkv")
        h = x + merge_heads(attend_with_cache(q, k, v, cache)) @ p["w_o"] + p["b_o"]
        z = layer_norm(h, block["ln_2"]["gamma"], block["ln_2"]["beta"])
        return h + gelu(z @ block["w_1"] + block["b_1"]) @ block["w_2"] + block["b_2"]

    tokens = np.asarray(prompt)
    caches = [KVCache() for _ in params["blocks"]]
    for _ in range(max_new_tokens):
        start = len(caches[0]) if use_cache else 0
        h = params["wte"][tokens[:, start:]] + params["wpe"][start:tokens.shape[1]]
        for block, cache in zip(params["blocks"], caches):
            h = step(h, block, cache) if use_cache else decoder_block(h, block, num_heads)
        logits = layer_norm(h[:, -1], params["ln_f"]["gamma"], params["ln_f"]["beta"]) @ params["wte"].T
        chosen = np.argmax(logits, -1) if temperature == 0 else sample(next_token_probs(logits, temperature, top_k,
                                                                                        top_p), rng)
        out[:, tokens.shape[1]] = chosen
        tokens = np.concatenate([tokens, chosen[:, None]], axis=1)
    return out
'''),
]
