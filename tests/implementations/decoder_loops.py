# The `decoder` assignment with explicit loops: the layer norm one row at a time (two passes over the row), the
# block's attention one head and one query at a time over the keys it may see (no mask at all), the GELU from
# math.erf, next_token_probs one row at a time in Python lists (top-p by adding tokens until the mass reaches p),
# and a generate that runs each sequence of the batch on its own with its own per-block caches (the notebook's
# KVCache, one row at a time), then draws the step's tokens for the whole batch with the notebook's sample.
import math

import numpy as np


def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=np.float64)
    rows = x.reshape(-1, x.shape[-1])
    out = np.empty_like(rows)
    for r, row in enumerate(rows):
        mean = sum(row) / len(row)
        var = sum((value - mean) ** 2 for value in row) / len(row)
        out[r] = [(value - mean) / math.sqrt(var + eps) for value in row]
    return out.reshape(x.shape) * gamma + beta


def _gelu(u):
    flat = [0.5 * value * (1.0 + math.erf(value / math.sqrt(2.0))) for value in np.ravel(u)]
    return np.array(flat).reshape(np.shape(u))


def _attend(q, keys, values):
    """One query (dh,) against keys and values (n, dh), all visible."""
    scores = [float(q @ k) / math.sqrt(len(q)) for k in keys]
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    total = sum(weights)
    return sum(w / total * v for w, v in zip(weights, values, strict=True))


def _mlp(h, block):
    z = layer_norm(h, block["ln_2"]["gamma"], block["ln_2"]["beta"])
    return h + _gelu(z @ block["w_1"] + block["b_1"]) @ block["w_2"] + block["b_2"]


def decoder_block(x, block, num_heads):
    x = np.asarray(x, dtype=np.float64)
    b, t, d = x.shape
    dh = d // num_heads
    p = block["attn"]
    a = layer_norm(x, block["ln_1"]["gamma"], block["ln_1"]["beta"])
    q, k, v = (a @ p[f"w_{n}"] + p[f"b_{n}"] for n in "qkv")                        # (B, T, D)
    y = np.zeros((b, t, d))
    for i in range(b):
        for head in range(num_heads):
            cols = slice(head * dh, (head + 1) * dh)
            for pos in range(t):
                y[i, pos, cols] = _attend(q[i, pos, cols], k[i, : pos + 1, cols], v[i, : pos + 1, cols])
    return _mlp(x + y @ p["w_o"] + p["b_o"], block)


def _row_step(h, params, num_heads, caches):
    """The t newest tokens of one sequence, h (1, t, D), through the blocks with its caches."""
    _, t, d = h.shape
    dh = d // num_heads
    for block, cache in zip(params["blocks"], caches, strict=True):
        p = block["attn"]
        a = layer_norm(h, block["ln_1"]["gamma"], block["ln_1"]["beta"])
        q, k, v = (a @ p[f"w_{n}"] + p[f"b_{n}"] for n in "qkv")                    # (1, t, D)
        split = [x.reshape(1, t, num_heads, dh).transpose(0, 2, 1, 3) for x in (k, v)]
        keys, values = cache.append(*split)                                         # (1, H, T, dh)
        total = keys.shape[2]
        y = np.zeros((1, t, d))
        for head in range(num_heads):
            for pos in range(t):
                seen = total - t + pos + 1
                y[0, pos, head * dh:(head + 1) * dh] = _attend(q[0, pos, head * dh:(head + 1) * dh],
                                                               keys[0, head, :seen], values[0, head, :seen])
        h = _mlp(h + y @ p["w_o"] + p["b_o"], block)
    return h


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    rows = []
    for row in np.asarray(logits, dtype=np.float64).tolist():
        v = len(row)
        if temperature == 0:
            best = max(range(v), key=lambda i: (row[i], -i))                        # first index on ties
            rows.append([1.0 if i == best else 0.0 for i in range(v)])
            continue
        z = [x / temperature for x in row]
        if top_k is not None and top_k < v:
            kth = sorted(z, reverse=True)[top_k - 1]
            z = [x if x >= kth else -math.inf for x in z]
        top = max(z)
        e = [math.exp(x - top) for x in z]
        total = sum(e)
        p = [x / total for x in e]
        if top_p is not None and top_p < 1:
            kept, mass = set(), 0.0
            for i in sorted(range(v), key=lambda i: (-p[i], i)):                    # most probable first
                if mass >= top_p:
                    break
                kept.add(i)
                mass += p[i]
            p = [p[i] / mass if i in kept else 0.0 for i in range(v)]
        rows.append(p)
    return np.array(rows)


def generate(params, prompt, max_new_tokens, num_heads, use_cache=True, temperature=0.0, top_k=None, top_p=None,
             rng=None):
    prompt = np.asarray(prompt)
    seqs = [[int(token) for token in row] for row in prompt]
    caches = [[KVCache() for _ in params["blocks"]] for _ in seqs]   # noqa: F821 - the notebook's, per row
    for _ in range(max_new_tokens):
        logits = []
        for seq, row_caches in zip(seqs, caches, strict=True):
            start = len(row_caches[0]) if use_cache else 0
            x = params["wte"][seq[start:]][None] + params["wpe"][start:len(seq)][None]     # (1, t, D)
            if use_cache:
                h = _row_step(x, params, num_heads, row_caches)
            else:
                h = x
                for block in params["blocks"]:
                    h = decoder_block(h, block, num_heads)
            last = layer_norm(np.asarray(h)[0, -1], params["ln_f"]["gamma"], params["ln_f"]["beta"])
            logits.append([float(last @ e) for e in params["wte"]])
        if temperature == 0:
            chosen = [max(range(len(row)), key=lambda i: (row[i], -i)) for row in logits]   # first index on ties
        else:
            chosen = sample(next_token_probs(np.array(logits), temperature, top_k, top_p), rng)  # noqa: F821
        for seq, token in zip(seqs, chosen, strict=True):
            seq.append(int(token))
    return np.array(seqs, dtype=np.int64).reshape(len(prompt), prompt.shape[1] + max_new_tokens)
