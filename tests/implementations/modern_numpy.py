# The `modern` assignment in float64 numpy with einsum: the RMSNorm from np.linalg.norm, the SiLU through tanh, an
# attention of its own (einsum over KV-head groups, no grouped_query_attention and no apply_rope: the rotation as a
# complex product of the halves), a generate that keeps its layers' caches in the given KVCache, and the cache bytes
# written out (not through kv_cache_bytes).
import numpy as np


def rms_norm(x, weight, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    rms = np.linalg.norm(x, axis=-1, keepdims=True) / np.sqrt(x.shape[-1])
    return x / np.sqrt(rms ** 2 + eps) * np.asarray(weight, np.float64)


def swiglu_mlp(x, w_gate, w_up, w_down):
    x = np.asarray(x, dtype=np.float64)
    gate = np.einsum("...d,df->...f", x, w_gate)
    up = np.einsum("...d,df->...f", x, w_up)
    silu = gate * 0.5 * (1.0 + np.tanh(0.5 * gate))                # z * sigmoid(z), sigmoid through tanh
    return np.einsum("...f,fd->...d", silu * up, w_down)


def _rotate(z, positions):
    """RoPE (the halves as the real and imaginary parts of d/2 complex numbers), z (B, T, heads, dh)."""
    half = z.shape[-1] // 2
    angle = np.asarray(positions, np.float64)[:, None] * ROPE_THETA ** (-np.arange(half) / half)   # (T, d/2)  # noqa: F821 - the notebook's
    c = (z[..., :half] + 1j * z[..., half:]) * np.exp(1j * angle)[None, :, None, :]
    return np.concatenate([c.real, c.imag], axis=-1)


def qwen3_attention(x, params, positions, num_heads, num_kv_heads, cache=None):
    x = np.asarray(x, dtype=np.float64)
    b, t, _ = x.shape
    dh = np.shape(params["q_norm"])[0]
    q = rms_norm(np.einsum("btd,de->bte", x, params["q_proj"]).reshape(b, t, num_heads, dh), params["q_norm"])
    k = rms_norm(np.einsum("btd,de->bte", x, params["k_proj"]).reshape(b, t, num_kv_heads, dh), params["k_norm"])
    v = np.einsum("btd,de->bte", x, params["v_proj"]).reshape(b, t, num_kv_heads, dh)
    q, k = _rotate(q, positions), _rotate(k, positions)
    if cache is not None:
        keys, values = cache.append(k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3))   # (B, Hkv, T_all, dh)
        k, v = np.asarray(keys).transpose(0, 2, 1, 3), np.asarray(values).transpose(0, 2, 1, 3)
    total, g = k.shape[1], num_heads // num_kv_heads
    q = q.reshape(b, t, num_kv_heads, g, dh)                                            # heads by KV head
    scores = np.einsum("bqkgd,bskd->bkgqs", q, k) / np.sqrt(dh)                          # (B, Hkv, g, T, T_all)
    visible = np.arange(total)[None, :] <= np.arange(t)[:, None] + (total - t)
    scores = np.where(visible, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    y = np.einsum("bkgqs,bskd->bqkgd", weights, v).reshape(b, t, num_heads * dh)
    return np.einsum("bte,ed->btd", y, params["o_proj"])


def qwen3_block(x, block, positions, num_heads, num_kv_heads, cache=None):
    x = np.asarray(x, dtype=np.float64)
    h = x + qwen3_attention(rms_norm(x, block["input_layernorm"]), block, positions, num_heads, num_kv_heads,
                            cache)
    return h + swiglu_mlp(rms_norm(h, block["post_attention_layernorm"]), block["gate_proj"], block["up_proj"],
                          block["down_proj"])


def generate(params, prompt, max_new_tokens, num_heads, num_kv_heads, use_cache=True, temperature=0.0, top_k=None,
             top_p=None, rng=None):
    tokens = np.array(prompt, dtype=np.int64)
    layers = params["layers"]
    caches = [KVCache() for _ in layers] if use_cache else None  # noqa: F821 - the notebook's
    embed = np.asarray(params["embed_tokens"], np.float64)
    head = embed.T if "lm_head" not in params or params["lm_head"] is None else np.asarray(params["lm_head"])
    for step in range(max_new_tokens):
        start = tokens.shape[1] - 1 if use_cache and step else 0
        new = tokens[:, start:]
        h = embed[new]
        for i, block in enumerate(layers):
            h = qwen3_block(h, block, np.arange(start, tokens.shape[1]), num_heads, num_kv_heads,
                            caches[i] if use_cache else None)
        logits = rms_norm(h[:, -1], params["norm"]) @ head
        if temperature == 0:
            chosen = logits.argmax(axis=-1)
        else:
            chosen = sample(next_token_probs(logits, temperature, top_k, top_p), rng)  # noqa: F821 - the notebook's
        tokens = np.concatenate([tokens, np.asarray(chosen, np.int64)[:, None]], axis=1)
    return tokens


def qwen3_kv_cache_bytes(config, seq_len, batch_size=1, bytes_per_element=2):
    if config.get("head_dim"):
        head_dim = config["head_dim"]
    else:
        head_dim = config["hidden_size"] // config["num_attention_heads"]
    per_token = config["num_hidden_layers"] * 2 * config["num_key_value_heads"] * head_dim * bytes_per_element
    return int(per_token * seq_len * batch_size)
