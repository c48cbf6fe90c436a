# The `decoder` assignment in float64 numpy with einsum, its own attention (no multi_head_attention_layer): the
# layer norm from np.var, the block's heads as einsum subscripts, next_token_probs keeping a token when the mass of
# the tokens ranked above it is below top_p (einsum over pairs; of tokens of equal probability the higher number
# ranks first, as in Hugging Face's TopPLogitsWarper), and a generate whose cached path has its own
# attention over the notebook's KVCache (the prompt in one append, then one token a step).
import numpy as np


def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=np.float64)
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred / np.sqrt(np.var(x, axis=-1, keepdims=True) + eps) * gamma + beta


def _heads(x, w, b, num_heads):
    y = np.einsum("btd,de->bte", x, np.asarray(w, np.float64)) + b                # (B, T, C)
    bsz, t, c = y.shape
    return y.reshape(bsz, t, num_heads, c // num_heads)                           # (B, T, H, dh)


def _attention(q, k, v, first_position):
    """q (B, t, H, dh) at positions first_position.., k and v (B, T, H, dh) at 0..T-1, causal."""
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1])             # (B, H, t, T)
    rows = first_position + np.arange(q.shape[1])[:, None]
    scores = np.where(np.arange(k.shape[1])[None, :] <= rows, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    out = np.einsum("bhqk,bkhd->bqhd", weights, v)                                  # (B, t, H, dh)
    return out.reshape(out.shape[0], out.shape[1], -1)                             # (B, t, C)


def _mlp(h, block):
    import torch

    z = layer_norm(h, block["ln_2"]["gamma"], block["ln_2"]["beta"])
    u = np.einsum("btd,df->btf", z, np.asarray(block["w_1"], np.float64)) + block["b_1"]
    g = torch.nn.functional.gelu(torch.from_numpy(u)).numpy()
    return h + np.einsum("btf,fd->btd", g, np.asarray(block["w_2"], np.float64)) + block["b_2"]


def decoder_block(x, block, num_heads):
    x = np.asarray(x, dtype=np.float64)
    p = block["attn"]
    a = layer_norm(x, block["ln_1"]["gamma"], block["ln_1"]["beta"])
    q, k, v = (_heads(a, p[f"w_{n}"], p[f"b_{n}"], num_heads) for n in "qkv")
    h = x + np.einsum("btc,cd->btd", _attention(q, k, v, 0), np.asarray(p["w_o"], np.float64)) + p["b_o"]
    return _mlp(h, block)


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = np.asarray(logits, dtype=np.float64)                                          # (B, V)
    b, v = z.shape
    if temperature == 0:
        out = np.zeros((b, v))
        out[np.arange(b), z.argmax(axis=-1)] = 1.0
        return out
    z = z / temperature
    if top_k is not None and top_k < v:
        kth = np.partition(z, v - top_k, axis=-1)[:, v - top_k, None]                 # (B, 1)
        z = np.where(z >= kth, z, -np.inf)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)                                             # (B, V)
    if top_p is not None and top_p < 1:
        ahead = (p[:, None, :] > p[:, :, None]) | ((p[:, None, :] == p[:, :, None]) & np.triu(np.ones((v, v), bool), 1))
        above = np.einsum("bij,bj->bi", ahead, p)                # (B, V) mass ranked above: of equal ones, the higher
        p = np.where(above < top_p, p, 0.0)
        p /= p.sum(axis=-1, keepdims=True)
    return p


def generate(params, prompt, max_new_tokens, num_heads, use_cache=True, temperature=0.0, top_k=None, top_p=None,
             rng=None):
    wte, wpe = np.asarray(params["wte"], np.float64), np.asarray(params["wpe"], np.float64)
    tokens = np.array(prompt, dtype=np.int64)

    def next_of(h):
        last = layer_norm(h[:, -1], params["ln_f"]["gamma"], params["ln_f"]["beta"])
        logits = np.einsum("bd,vd->bv", last, wte)                                    # (B, V)
        if temperature == 0:
            return logits.argmax(-1)
        return sample(next_token_probs(logits, temperature, top_k, top_p), rng)      # noqa: F821 - the notebook's

    if not use_cache:
        for _ in range(max_new_tokens):
            h = wte[tokens] + wpe[: tokens.shape[1]]
            for block in params["blocks"]:
                h = decoder_block(h, block, num_heads)
            tokens = np.concatenate([tokens, next_of(h)[:, None]], axis=1)
        return tokens

    caches = [KVCache() for _ in params["blocks"]]   # noqa: F821 - the notebook's

    def step(start, stop):
        """Run the tokens start..stop-1 through the blocks (their K, V join each block's cache)."""
        h = wte[tokens[:, start:stop]] + wpe[start:stop]                                  # (B, t, D)
        for block, cache in zip(params["blocks"], caches, strict=True):
            p = block["attn"]
            a = layer_norm(h, block["ln_1"]["gamma"], block["ln_1"]["beta"])
            q, k, v = (_heads(a, p[f"w_{n}"], p[f"b_{n}"], num_heads) for n in "qkv")   # (B, t, H, dh)
            keys, values = cache.append(k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3))  # (B, H, T, dh)
            y = _attention(q, keys.transpose(0, 2, 1, 3), values.transpose(0, 2, 1, 3), start)
            h = _mlp(h + np.einsum("btc,cd->btd", y, np.asarray(p["w_o"], np.float64)) + p["b_o"], block)
        return h

    for _ in range(max_new_tokens):
        h = step(len(caches[0]), tokens.shape[1])     # the whole prompt first (prefill), then the newest token
        tokens = np.concatenate([tokens, next_of(h)[:, None]], axis=1)
    return tokens
