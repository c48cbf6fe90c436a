# The `modern` assignment in float32 torch: torch.rsqrt for the RMSNorm, F.silu, torch's own rotation of the halves,
# F.scaled_dot_product_attention with enable_gqa (a part: allowed) and a boolean causal mask aligned bottom-right,
# torch tensors returned everywhere (the cache is the given KVCache, fed numpy arrays), and a generate on torch tokens.
import numpy as np
import torch
import torch.nn.functional as F


def _t(a):
    return (a if isinstance(a, torch.Tensor) else torch.as_tensor(np.asarray(a))).to(torch.float32)


def rms_norm(x, weight, eps=1e-6):
    x = _t(x)
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * _t(weight)


def swiglu_mlp(x, w_gate, w_up, w_down):
    x = _t(x)
    return (F.silu(x @ _t(w_gate)) * (x @ _t(w_up))) @ _t(w_down)


def _rope(z, positions):
    half = z.shape[-1] // 2
    inv = ROPE_THETA ** (-torch.arange(half, dtype=torch.float64) * 2 / z.shape[-1])  # noqa: F821 - the notebook's
    angles = torch.as_tensor(np.asarray(positions), dtype=torch.float64)[:, None] * inv          # (T, d/2)
    cos, sin = torch.cat([angles.cos()] * 2, -1).float(), torch.cat([angles.sin()] * 2, -1).float()
    rotated = torch.cat([-z[..., half:], z[..., :half]], dim=-1)                                  # rotate_half
    return z * cos + rotated * sin


def qwen3_attention(x, params, positions, num_heads, num_kv_heads, cache=None):
    x = _t(x)
    b, t, _ = x.shape
    dh = _t(params["q_proj"]).shape[1] // num_heads
    q = rms_norm((x @ _t(params["q_proj"])).view(b, t, num_heads, dh), params["q_norm"]).transpose(1, 2)
    k = rms_norm((x @ _t(params["k_proj"])).view(b, t, num_kv_heads, dh), params["k_norm"]).transpose(1, 2)
    v = (x @ _t(params["v_proj"])).view(b, t, num_kv_heads, dh).transpose(1, 2)
    q, k = _rope(q, positions), _rope(k, positions)
    if cache is not None:
        keys, values = cache.append(k.numpy(), v.numpy())
        k, v = _t(keys), _t(values)
    total = k.shape[2]
    mask = torch.ones(t, total, dtype=torch.bool).tril(diagonal=total - t)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)                  # (B, H, T, dh)
    return y.transpose(1, 2).reshape(b, t, num_heads * dh) @ _t(params["o_proj"])


def qwen3_block(x, block, positions, num_heads, num_kv_heads, cache=None):
    x = _t(x)
    h = x + _t(qwen3_attention(rms_norm(x, block["input_layernorm"]), block, positions, num_heads, num_kv_heads,
                               cache))
    return h + _t(swiglu_mlp(rms_norm(h, block["post_attention_layernorm"]), block["gate_proj"], block["up_proj"],
                             block["down_proj"]))


def generate(params, prompt, max_new_tokens, num_heads, num_kv_heads, use_cache=True, temperature=0.0, top_k=None,
             top_p=None, rng=None):
    tokens = torch.as_tensor(np.asarray(prompt), dtype=torch.long)
    embed = _t(params["embed_tokens"])
    head = embed.T if params.get("lm_head") is None else _t(params["lm_head"])
    caches = [KVCache() for _ in params["layers"]] if use_cache else [None] * len(params["layers"])  # noqa: F821 - the notebook's
    for _ in range(max_new_tokens):
        start = len(caches[0]) if use_cache else 0
        h = embed[tokens[:, start:]]
        positions = np.arange(start, tokens.shape[1])
        for block, cache in zip(params["layers"], caches, strict=True):
            h = _t(qwen3_block(h, block, positions, num_heads, num_kv_heads, cache))
        logits = _t(rms_norm(h[:, -1], params["norm"])) @ head
        if temperature == 0:
            chosen = torch.argmax(logits, dim=-1)
        else:
            chosen = torch.as_tensor(sample(next_token_probs(logits.double().numpy(), temperature, top_k, top_p), rng))  # noqa: F821 - the notebook's
        tokens = torch.cat([tokens, chosen[:, None].long()], dim=1)
    return tokens


def qwen3_kv_cache_bytes(config, seq_len, batch_size=1, bytes_per_element=2):
    head_dim = config.get("head_dim", None) or config["hidden_size"] // config["num_attention_heads"]
    one = torch.empty(batch_size, config["num_key_value_heads"], seq_len, head_dim,
                      dtype={1: torch.float8_e4m3fn, 2: torch.bfloat16, 4: torch.float32}[bytes_per_element],
                      device="meta")
    return 2 * config["num_hidden_layers"] * one.numel() * one.element_size()
