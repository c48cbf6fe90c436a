"""The stored cases: their fixed inputs and the torch reference each one is computed with.

Inputs are drawn from N(0, 1) (weights from N(0, 1/fan_in)) and rounded to a grid of at most 7 significant bits
(multiples of a power of two, at most 127 steps, about 4 standard deviations), so every value is exact in
float16 and bfloat16: one stored copy serves every dtype, and the low-precision runs differ from the float64
reference only by their own arithmetic. Scores q.k/sqrt(d) stay of order 1, except in the large-logit case.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

LOW_PRECISION = "scores of magnitude ~100-300: an error of |s| * 2**-11 (fp16, tf32) or |s| * 2**-8 (bf16) in a " \
                "score moves its softmax weight by 15% to over 100%, so no useful tolerance exists; float32 only"


@dataclass(frozen=True)
class Spec:
    """One case: its name, kind, seed, argument order and how to draw its inputs."""

    name: str
    kind: str
    seed: int
    arguments: tuple[str, ...]
    draw: Callable[["Source"], dict]
    skip_dtypes: dict = field(default_factory=dict)     # dtype -> reason, for every backend
    rows: Callable[[dict], np.ndarray] | None = None    # query rows to store (long cases)


class Source:
    """Random numbers from PCG64's raw 64-bit stream, which numpy keeps fixed across versions (the sampling
    methods of ``numpy.random.Generator`` may change, NEP 19): the same seed gives the same inputs on any machine."""

    def __init__(self, seed: int):
        self.bits = np.random.PCG64(seed)

    def uniform(self, *shape) -> np.ndarray:
        n = int(np.prod(shape))
        return ((self.bits.random_raw(n) >> np.uint64(11)) * 2.0 ** -53).reshape(shape)   # [0, 1), 53 bits

    def normal(self, *shape) -> np.ndarray:
        """Box-Muller; after the grid rounding below, a last-bit difference of log/cos between platforms
        could only matter for a value within an ulp of a rounding boundary."""
        return np.sqrt(-2.0 * np.log1p(-self.uniform(*shape))) * np.cos(2.0 * np.pi * self.uniform(*shape))


def grid(src: Source, shape, std: float = 1.0) -> np.ndarray:
    """N(0, std^2) rounded to multiples of 2**(floor(log2 std) - 5), clipped to 127 steps: exact in fp16 and bf16."""
    step = 2.0 ** (np.floor(np.log2(std)) - 5)
    return (np.clip(np.round(src.normal(*shape) * std / step), -127, 127) * step).astype(np.float32)


def key_mask(src: Source, *shape) -> np.ndarray:
    """Random bool mask (True = may attend), about 30% masked, with at least one visible key in every row."""
    mask = src.uniform(*shape) > 0.3                                                   # (..., Tq, Tk)
    rows = mask.reshape(-1, shape[-1])
    rows[np.arange(len(rows)), (src.uniform(len(rows)) * shape[-1]).astype(int)] = True
    return mask


def _qkv(src, b, hq, hkv, tq, tk, d):
    return grid(src, (b, hq, tq, d)), grid(src, (b, hkv, tk, d)), grid(src, (b, hkv, tk, d))


def _sdpa(b, h, tq, tk, d, masked, q_scale=1.0):
    def draw(src):
        q, k, v = _qkv(src, b, h, h, tq, tk, d)
        return {"query": q * np.float32(q_scale), "key": k, "value": v,
                "mask": key_mask(src, b, 1, tq, tk) if masked else None}
    return draw


def _causal(b, h, tq, tk, d):
    def draw(src):
        q, k, v = _qkv(src, b, h, h, tq, tk, d)
        return {"query": q, "key": k, "value": v, "t_q": tq, "t_k": tk}
    return draw


def _self_attention(b, t, dim, dk, causal):
    def draw(src):
        std = dim ** -0.5
        return {"x": grid(src, (b, t, dim)), "w_q": grid(src, (dim, dk), std), "w_k": grid(src, (dim, dk), std),
                "w_v": grid(src, (dim, dk), std), "causal": causal}
    return draw


def _mha(b, tq, tk, dim, heads, masked):
    def draw(src):
        std = dim ** -0.5
        params = {"w_q": grid(src, (dim, dim), std), "b_q": grid(src, (dim,), 0.1),
                  "w_k": grid(src, (dim, dim), std), "b_k": grid(src, (dim,), 0.1),
                  "w_v": grid(src, (dim, dim), std), "b_v": grid(src, (dim,), 0.1),
                  "w_o": grid(src, (dim, dim), std), "b_o": grid(src, (dim,), 0.1)}
        return {"x_q": grid(src, (b, tq, dim)), "x_kv": grid(src, (b, tk, dim)), "params": params,
                "num_heads": heads, "mask": key_mask(src, tq, tk) if masked else None}
    return draw


def _gqa(b, hq, hkv, tq, tk, d, masked):
    def draw(src):
        q, k, v = _qkv(src, b, hq, hkv, tq, tk, d)
        return {"query": q, "key": k, "value": v, "mask": key_mask(src, b, 1, tq, tk) if masked else None}
    return draw


def _flash_long(t, d, causal):
    def draw(src):
        q, k, v = _qkv(src, 1, 1, 1, t, t, d)
        return {"query": q, "key": k, "value": v, "causal": causal}
    return draw


def long_rows(inputs: dict) -> np.ndarray:
    """The first and last 16 query rows and 224 evenly spread ones (sorted, unique)."""
    t = inputs["query"].shape[-2]
    return np.unique(np.concatenate([np.arange(16), np.linspace(0, t - 1, 224).round(), np.arange(t - 16, t)])
                     ).astype(np.int64)


SDPA_ARGS = ("query", "key", "value", "mask")
SPECS = [
    Spec("sdpa_mask_b2_h4_tq7_tk13_d64", "sdpa", 101, SDPA_ARGS, _sdpa(2, 4, 7, 13, 64, masked=True)),
    Spec("sdpa_b2_h8_tq32_tk48_d128", "sdpa", 102, SDPA_ARGS, _sdpa(2, 8, 32, 48, 128, masked=False)),
    Spec("sdpa_large_logits_b1_h2_tq8_tk16_d64", "sdpa_large_logits", 103, SDPA_ARGS,
         _sdpa(1, 2, 8, 16, 64, masked=False, q_scale=128.0),
         skip_dtypes={"tf32": LOW_PRECISION, "float16": LOW_PRECISION, "bfloat16": LOW_PRECISION}),
    Spec("causal_lower_right_b2_h4_tq6_tk20_d64", "causal", 104, ("query", "key", "value", "t_q", "t_k"),
         _causal(2, 4, 6, 20, 64)),
    Spec("self_attention_causal_b2_t16_d48_dk64", "self_attention", 105, ("x", "w_q", "w_k", "w_v", "causal"),
         _self_attention(2, 16, 48, 64, causal=True)),
    Spec("mha_cross_mask_b2_h4_tq5_tk9_d256", "mha", 106, ("x_q", "x_kv", "params", "num_heads", "mask"),
         _mha(2, 5, 9, 256, 4, masked=True)),
    Spec("gqa_b2_hq8_hkv2_tq10_tk24_d64", "gqa", 107, SDPA_ARGS, _gqa(2, 8, 2, 10, 24, 64, masked=False)),
    Spec("gqa_mqa_mask_b1_hq4_hkv1_tq9_tk9_d128", "gqa", 108, SDPA_ARGS, _gqa(1, 4, 1, 9, 9, 128, masked=True)),
    Spec("flash_long_causal_t4096_d64", "flash_long", 109, ("query", "key", "value", "causal"),
         _flash_long(4096, 64, causal=True), rows=long_rows),
    Spec("flash_long_t4096_d64", "flash_long", 110, ("query", "key", "value", "causal"),
         _flash_long(4096, 64, causal=False), rows=long_rows),
]


# ---- torch references: inputs (numpy) -> output tensor, on ``device`` in ``dtype`` ----------------------------

def _tensors(inputs: dict, device, dtype) -> dict:
    """Arrays as tensors on ``device``: floats in ``dtype``, masks stay bool; scalars and None unchanged."""
    def convert(a):
        if isinstance(a, dict):
            return {k: convert(v) for k, v in a.items()}
        if not isinstance(a, np.ndarray):
            return a
        t = torch.from_numpy(a).to(device)
        return t if t.dtype == torch.bool else t.to(dtype)
    return {name: convert(a) for name, a in inputs.items()}


def sdpa(x: dict) -> torch.Tensor:
    return F.scaled_dot_product_attention(x["query"], x["key"], x["value"], attn_mask=x["mask"])   # (B, H, Tq, dv)


def causal(x: dict) -> torch.Tensor:
    """Query i sees key j iff j <= i + (Tk - Tq): ``causal_lower_right`` (``is_causal`` is top-left)."""
    bias = causal_lower_right(x["t_q"], x["t_k"])
    return F.scaled_dot_product_attention(x["query"], x["key"], x["value"], attn_mask=bias)       # (B, H, Tq, dv)


def self_attention(x: dict) -> torch.Tensor:
    q, k, v = (x["x"] @ x[w] for w in ("w_q", "w_k", "w_v"))                             # (B, T, dk|dv)
    out = F.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None], is_causal=x["causal"])  # (B, 1, T, dv)
    return out[:, 0]                                                                     # (B, T, dv)


def mha(x: dict) -> torch.Tensor:
    """torch.nn.MultiheadAttention holding the contract's weights (Q = x @ w_q + b_q, ...; True = may attend)."""
    p, dim = x["params"], x["x_q"].shape[-1]                   # params as in the contract, H * dk = H * dv = D
    layer = torch.nn.MultiheadAttention(dim, x["num_heads"], batch_first=True, device=x["x_q"].device,
                                        dtype=x["x_q"].dtype).eval()
    with torch.no_grad():
        layer.in_proj_weight.copy_(torch.cat([p["w_q"].T, p["w_k"].T, p["w_v"].T]))   # (3D, D)
        layer.in_proj_bias.copy_(torch.cat([p["b_q"], p["b_k"], p["b_v"]]))           # (3D,)
        layer.out_proj.weight.copy_(p["w_o"].T)                                        # (D, D)
        layer.out_proj.bias.copy_(p["b_o"])                                            # (D,)
    mask = None if x["mask"] is None else ~x["mask"]           # torch MHA: True = NOT allowed
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)             # the fused MHA kernel would bypass the pinned SDPA
    try:
        out, _ = layer(x["x_q"], x["x_kv"], x["x_kv"], attn_mask=mask, need_weights=False)   # (B, Tq, D)
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
    return out


def gqa(x: dict) -> torch.Tensor:
    return F.scaled_dot_product_attention(x["query"], x["key"], x["value"], attn_mask=x["mask"],
                                          enable_gqa=True)                                 # (B, Hq, Tq, d)


def flash_long(x: dict) -> torch.Tensor:
    return F.scaled_dot_product_attention(x["query"], x["key"], x["value"], is_causal=x["causal"])  # (1, 1, T, d)


REFERENCES = {"sdpa": sdpa, "sdpa_large_logits": sdpa, "causal": causal, "self_attention": self_attention,
              "mha": mha, "gqa": gqa, "flash_long": flash_long}


def reference(kind: str, inputs: dict, device, dtype) -> torch.Tensor:
    """The torch reference of ``kind`` on ``inputs`` (the backend is whatever ``sdpa_kernel`` pins around it)."""
    with torch.no_grad():
        return REFERENCES[kind](_tensors(inputs, device, dtype))
