# The `modern` assignment with explicit loops over batch rows, heads and positions (plain Python floats and small
# numpy vectors): the slowest correct implementation, and a generate that runs the rows of the batch one by one, each
# row with a KVCache per layer.
import math

import numpy as np


def rms_norm(x, weight, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    for index in np.ndindex(*x.shape[:-1]):
        row = x[index]
        ms = sum(float(v) * float(v) for v in row) / len(row)
        out[index] = row / math.sqrt(ms + eps) * np.asarray(weight, np.float64)
    return out


def swiglu_mlp(x, w_gate, w_up, w_down):
    x = np.asarray(x, dtype=np.float64)
    out = np.empty(x.shape[:-1] + (np.shape(w_down)[1],))
    for index in np.ndindex(*x.shape[:-1]):
        gate, up = x[index] @ w_gate, x[index] @ w_up
        act = np.array([g / (1.0 + math.exp(-g)) if g > -700 else 0.0 for g in gate])
        out[index] = (act * up) @ w_down
    return out


def _rope_vector(vec, position):
    half = len(vec) // 2
    out = np.empty_like(vec)
    for i in range(half):
        angle = position * ROPE_THETA ** (-2.0 * i / len(vec))  # noqa: F821 - the notebook's
        c, s = math.cos(angle), math.sin(angle)
        out[i] = vec[i] * c - vec[i + half] * s
        out[i + half] = vec[i + half] * c + vec[i] * s
    return out


def qwen3_attention(x, params, positions, num_heads, num_kv_heads, cache=None):
    x = np.asarray(x, dtype=np.float64)
    b, t, d = x.shape
    dh = len(params["q_norm"])
    group = num_heads // num_kv_heads
    q = np.empty((b, num_heads, t, dh))
    k = np.empty((b, num_kv_heads, t, dh))
    v = np.empty((b, num_kv_heads, t, dh))
    for bi in range(b):
        for ti in range(t):
            qp, kp, vp = x[bi, ti] @ params["q_proj"], x[bi, ti] @ params["k_proj"], x[bi, ti] @ params["v_proj"]
            for h in range(num_heads):
                q[bi, h, ti] = _rope_vector(rms_norm(qp[h * dh:(h + 1) * dh], params["q_norm"]), positions[ti])
            for h in range(num_kv_heads):
                k[bi, h, ti] = _rope_vector(rms_norm(kp[h * dh:(h + 1) * dh], params["k_norm"]), positions[ti])
                v[bi, h, ti] = vp[h * dh:(h + 1) * dh]
    if cache is not None:
        k, v = (np.asarray(a) for a in cache.append(k, v))
    total = k.shape[2]
    out = np.zeros((b, t, d))
    for bi in range(b):
        for ti in range(t):
            heads = []
            for h in range(num_heads):
                kv = h // group
                scores = [float(q[bi, h, ti] @ k[bi, kv, s]) / math.sqrt(dh) for s in range(ti + total - t + 1)]
                top = max(scores)
                weights = [math.exp(s - top) for s in scores]
                total_w = sum(weights)
                heads.append(sum(w / total_w * v[bi, kv, s] for s, w in enumerate(weights)))
            out[bi, ti] = np.concatenate(heads) @ params["o_proj"]
    return out


def qwen3_block(x, block, positions, num_heads, num_kv_heads, cache=None):
    a = rms_norm(x, block["input_layernorm"])
    h = np.asarray(x, np.float64) + qwen3_attention(a, block, positions, num_heads, num_kv_heads, cache)
    z = rms_norm(h, block["post_attention_layernorm"])
    return h + swiglu_mlp(z, block["gate_proj"], block["up_proj"], block["down_proj"])


def generate(params, prompt, max_new_tokens, num_heads, num_kv_heads, use_cache=True, temperature=0.0, top_k=None,
             top_p=None, rng=None):
    prompt = np.asarray(prompt)
    head = params.get("lm_head")
    head = np.asarray(params["embed_tokens"]).T if head is None else head
    rows = [list(map(int, row)) for row in prompt]
    caches = [[KVCache() for _ in params["layers"]] for _ in rows] if use_cache else None  # noqa: F821 - the notebook's
    for _ in range(max_new_tokens):
        logits = []
        for r, row in enumerate(rows):
            start = len(caches[r][0]) if use_cache else 0
            h = np.asarray(params["embed_tokens"], np.float64)[row[start:]][None]
            for layer, block in enumerate(params["layers"]):
                cache = caches[r][layer] if use_cache else None
                h = qwen3_block(h, block, list(range(start, len(row))), num_heads, num_kv_heads, cache)
            logits.append(rms_norm(h[0, -1], params["norm"]) @ head)
        logits = np.array(logits)
        if temperature == 0:
            chosen = [int(np.argmax(row)) for row in logits]
        else:
            chosen = [int(c) for c in sample(next_token_probs(logits, temperature, top_k, top_p), rng)]  # noqa: F821 - the notebook's
        for row, c in zip(rows, chosen, strict=True):
            row.append(c)
    return np.array(rows, dtype=np.int64)


def qwen3_kv_cache_bytes(config, seq_len, batch_size=1, bytes_per_element=2):
    head_dim = config["head_dim"] if config.get("head_dim") else config["hidden_size"] // config["num_attention_heads"]
    total = 0
    for _ in range(config["num_hidden_layers"]):
        for _ in ("keys", "values"):
            total += batch_size * config["num_key_value_heads"] * seq_len * head_dim * bytes_per_element
    return total
