# The `decoder` assignment in torch, in the inputs' own precision (float32 stays float32): the layer norm from
# torch.var_mean(unbiased=False), the block on the notebook's multi_head_attention_layer called with torch tensors,
# the notebook's KVCache given torch tensors (it keeps numpy arrays; its keys and values come back as tensors), its
# own masked attention, logits for every position and the last row taken afterwards, torch.argmax or the notebook's
# sample from a torch next_token_probs (topk, a stable descending sort, scatter). Returns torch tensors.
import torch
import torch.nn.functional as F


def _t(x, like=None):
    if isinstance(x, torch.Tensor):
        return x
    t = torch.as_tensor(x)
    return t if like is None or not t.is_floating_point() else t.to(like.dtype)


def layer_norm(x, gamma, beta, eps=1e-5):
    x = _t(x)
    var, mean = torch.var_mean(x, dim=-1, keepdim=True, unbiased=False)
    return (x - mean) * torch.rsqrt(var + eps) * _t(gamma, x) + _t(beta, x)


def _ln(x, weights):
    return layer_norm(x, weights["gamma"], weights["beta"])


def _mlp(h, block):
    z = _ln(h, block["ln_2"])
    return h + F.gelu(z @ _t(block["w_1"], h) + _t(block["b_1"], h)) @ _t(block["w_2"], h) + _t(block["b_2"], h)


def decoder_block(x, block, num_heads):
    x = _t(x)
    t = x.shape[-2]
    mask = torch.ones(t, t, dtype=torch.bool).tril()
    a = _ln(x, block["ln_1"])
    attn = {name: _t(w, x) for name, w in block["attn"].items()}
    y = multi_head_attention_layer(a, a, attn, num_heads, mask)   # noqa: F821 - the notebook's
    return _mlp(x + _t(y, x), block)


def _cached_block(h, block, num_heads, cache):
    b, t, d = h.shape
    p = {name: _t(w, h) for name, w in block["attn"].items()}
    a = _ln(h, block["ln_1"])
    q, k, v = ((a @ p[f"w_{n}"] + p[f"b_{n}"]).view(b, t, num_heads, d // num_heads).transpose(1, 2) for n in "qkv")
    keys, values = (_t(a, h) for a in cache.append(k, v))                            # (B, H, T, dh)
    total = keys.shape[2]
    scores = q @ keys.transpose(-1, -2) / (d // num_heads) ** 0.5                   # (B, H, t, T)
    visible = torch.arange(total)[None, :] <= torch.arange(total - t, total)[:, None]
    weights = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
    y = (weights @ values).transpose(1, 2).reshape(b, t, d)
    return _mlp(h + y @ p["w_o"] + p["b_o"], block)


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = _t(logits)
    z = z.double() if not z.is_floating_point() else z
    if temperature == 0:
        return F.one_hot(torch.argmax(z, dim=-1), z.shape[-1]).to(z.dtype)
    z = z / temperature
    if top_k is not None and top_k < z.shape[-1]:
        kth = torch.topk(z, top_k, dim=-1).values[..., -1:]                           # (B, 1)
        z = z.masked_fill(z < kth, float("-inf"))
    p = torch.softmax(z, dim=-1)                                                      # (B, V)
    if top_p is not None and top_p < 1:
        ranked, order = torch.sort(p, dim=-1, descending=True, stable=True)
        drop = (torch.cumsum(ranked, dim=-1) - ranked) >= top_p                       # the crossing token stays
        drop[..., 0] = False
        p = p.masked_fill(drop.scatter(-1, order, drop), 0.0)
        p = p / p.sum(dim=-1, keepdim=True)
    return p


def generate(params, prompt, max_new_tokens, num_heads, use_cache=True, temperature=0.0, top_k=None, top_p=None,
             rng=None):
    wte = _t(params["wte"])
    wpe = _t(params["wpe"], wte)
    tokens = torch.as_tensor(prompt, dtype=torch.long)
    caches = [KVCache() for _ in params["blocks"]]   # noqa: F821 - the notebook's
    seen = 0
    for _ in range(max_new_tokens):
        start = seen if use_cache else 0
        fresh = tokens[:, start:]
        h = wte[fresh] + wpe[start:tokens.shape[1]]
        for block, cache in zip(params["blocks"], caches, strict=True):
            h = _cached_block(h, block, num_heads, cache) if use_cache else _t(decoder_block(h, block, num_heads), h)
        seen = tokens.shape[1]
        logits = _ln(h, params["ln_f"]) @ wte.T                                      # (B, t, V)
        if temperature == 0:
            chosen = torch.argmax(logits[:, -1], dim=-1)
        else:
            chosen = torch.as_tensor(sample(next_token_probs(logits[:, -1], temperature, top_k, top_p), rng))  # noqa
        tokens = torch.cat([tokens, chosen[:, None].long()], dim=1)
    return tokens
