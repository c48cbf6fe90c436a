"""What a proxy's answer costs, known before it is computed: exact bytes and operations from the broadcast shapes of
every argument (``need``), so that a question is answered here, in a forked child, or refused (``isolation.py``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


class Unfit(ValueError):
    """Arguments the reference cannot take (the student's own function runs instead, as for any argument that is
    not plain data)."""


@dataclass(frozen=True)
class Need:
    """What a reference needs for some arguments, known before it runs (``need``)."""

    peak: int      # bytes it allocates at most at one time: float64 copies, temporaries, the result, sending it
    result: int    # bytes of the answer
    work: int      # arithmetic operations, about (a multiply-add, an exp, a comparison: one each)

    @property
    def mb(self) -> float:
        return self.peak / (1 << 20)


F64 = 8   # bytes of a float64: every reference computes in float64
# numpy's own working memory in any of these (the buffers of a ufunc's iterator: 8,192 elements of 8 bytes for up
# to four operands, the arrays' headers), counted once on top of the arrays
NUMPY_OVERHEAD = 1 << 18
LIST_ELEMENTS = 1 << 16   # a nested list (plain data on the wire) with more numbers than this is not converted here


def need(size, arguments: dict) -> Need:
    """What an answer needs for ``arguments`` (its signature's ``bind(...).arguments``), ``size`` being its sizing
    function below: exactly from the broadcast shapes of every argument, or ``Unfit`` for arguments it cannot take.
    Counted as the answers of ``answers.py`` allocate: the float64 copy of each array argument, the score matrix of the
    broadcast batch (and a bigger one when a mask broadcasts it further), softmax's per-row temporaries, the output, and
    a contiguous copy where the answer is a view that has to be copied to be sent (``split_heads``).
    tests/graders/test_isolation.py checks the peak against what numpy really allocates (``tracemalloc``) for every
    answer."""
    sized = size(dict(arguments))
    return Need(sized.peak + NUMPY_OVERHEAD, sized.result, sized.work)


# ----------------------------------------------------------------------------------------------- one per answer
def softmax(a: dict) -> Need:
    return _need_softmax(a["x"], a.get("axis", -1))


def causal_mask(a: dict) -> Need:
    return _need_causal_mask(a["t_q"], a.get("t_k"))


def attention(a: dict) -> Need:
    """``scaled_dot_product_attention`` and ``dot_product_attention``."""
    weights = a.get("return_weights", False)
    if not isinstance(weights, (bool, int, type(None))):
        raise Unfit("return_weights")
    return _need_attention(_shape(a["query"]), _shape(a["key"]), _shape(a["value"]), a.get("mask"),
                           bool(weights), copies=True)


def split_heads(a: dict) -> Need:
    return _need_heads(_shape(a["x"]), a["num_heads"], split=True)


def merge_heads(a: dict) -> Need:
    return _need_heads(_shape(a["x"]), None, split=False)


def multi_head_attention(a: dict) -> Need:
    return _need_mha(a)


def multi_head_attention_layer(a: dict) -> Need:
    return _need_mha_layer(_shape(a["x_q"]), _shape(a["x_kv"]), a["params"], a["num_heads"], a.get("mask"),
                           copy_x=True)


def layer_norm(a: dict) -> Need:
    if not isinstance(a.get("eps", 1e-5), (int, float)):
        raise Unfit("eps")
    return _need_layer_norm(_shape(a["x"]), a["gamma"], a["beta"])


def decoder_block(a: dict) -> Need:
    return _need_decoder_block(_shape(a["x"]), a["block"], a["num_heads"])


def next_token_probs(a: dict) -> Need:
    shape = _shape(a["logits"])
    temperature, top_k, top_p = a.get("temperature", 1.0), a.get("top_k"), a.get("top_p")
    if not shape or shape[-1] == 0 or type(temperature) not in (int, float) or temperature < 0:
        raise Unfit("logits, temperature")
    if not (top_k is None or (type(top_k) is int and top_k > 0)) or not (top_p is None or type(top_p) in (int, float)):
        raise Unfit("top_k, top_p")
    n = math.prod(shape)
    # the copy (the result), top-k's partition, softmax's copy and temporaries, top-p's order (int64), ranked,
    # cumsum, before, keep (1 byte) and its copy: about ten arrays of the logits' size
    return Need(11 * F64 * n + (3 * F64 + 1) * (n // shape[-1]), F64 * n, 30 * n)


def kv_cache_bytes(a: dict) -> Need:
    if not all(type(v) in (int, float) for v in a.values()):
        raise Unfit("numbers only")
    return Need(0, 0, len(a))


def rms_norm(a: dict) -> Need:
    if not isinstance(a.get("eps", 1e-6), (int, float)):
        raise Unfit("eps")
    return _need_rms_norm(_shape(a["x"]), a["weight"])


def swiglu_mlp(a: dict) -> Need:
    return _need_swiglu(_shape(a["x"]), _shape(a["w_gate"]), _shape(a["w_up"]), _shape(a["w_down"]), copy_x=True)


def qwen3_attention(a: dict) -> Need:
    if a.get("cache") is not None:
        raise Unfit("a cache")
    return _need_qwen3_attention(_shape(a["x"]), a["params"], a["positions"], a["num_heads"], a["num_kv_heads"],
                                 copy_x=True)


def qwen3_block(a: dict) -> Need:
    if a.get("cache") is not None:
        raise Unfit("a cache")
    return _need_qwen3_block(_shape(a["x"]), a["block"], a["positions"], a["num_heads"], a["num_kv_heads"])


# ----------------------------------------------------------------------------------------------- the parts
def _need_softmax(x, axis) -> Need:
    shape = _shape(x)
    if type(axis) is not int or not shape or not -len(shape) <= axis < len(shape) or shape[axis] == 0:
        raise Unfit("axis")
    n = math.prod(shape)
    rows = n // shape[axis]
    # the copy (the result); per row: max, isfinite (1 byte), where, sum
    return Need(F64 * n + (3 * F64 + 1) * rows, F64 * n, 5 * n)


def _need_causal_mask(t_q, t_k) -> Need:
    t_k = t_q if t_k is None else t_k
    if type(t_q) is not int or type(t_k) is not int or t_q < 0 or t_k < 0:
        raise Unfit("lengths")
    return Need(t_q * t_k + F64 * (t_k + 2 * t_q), t_q * t_k, t_q * t_k)      # the bool result; three aranges


def _need_attention(q, k, v, mask, weights: bool, copies: bool) -> Need:
    if min(len(q), len(k), len(v)) < 2 or q[-1] != k[-1] or k[-2] != v[-2] or k[-2] == 0:
        raise Unfit("shapes")
    t_q, d, t_k, d_v = q[-2], q[-1], k[-2], v[-1]
    scores = _broadcast(q[:-2], k[:-2]) + (t_q, t_k)
    full, mask_size = scores, 0
    if mask is not None:
        m = _shape(mask)
        full, mask_size = _broadcast(scores, m), math.prod(m)
    out = _broadcast(full[:-2], v[:-2]) + (t_q, d_v)
    s, f, o = math.prod(scores), math.prod(full), math.prod(out)
    rows = f // t_k
    peak = (F64 * (math.prod(q) + math.prod(k) + math.prod(v)) if copies else 0)   # float64 copies of q, k, v
    peak += F64 * s + (F64 * f if full != scores else 0)                           # scores (and the broadcast ones)
    peak += 2 * mask_size + (3 * F64 + 1) * rows + F64 * o                         # mask and ~mask, softmax, output
    result = F64 * (o + (f if weights else 0))
    return Need(peak, result, s * d + 5 * f + o * t_k)


def _need_heads(shape, num_heads, split: bool) -> Need:
    if split:
        if len(shape) != 3 or type(num_heads) is not int or num_heads < 1 or shape[2] % num_heads:
            raise Unfit("heads")
    elif len(shape) != 4:
        raise Unfit("heads")
    n = math.prod(shape)
    return Need(2 * F64 * n, F64 * n, n)   # the float64 copy and the contiguous one (sent, or merged)


def _need_mha(a) -> Need:
    return _need_heads_attention(_shape(a["query"]), _shape(a["key"]), _shape(a["value"]), a["num_heads"],
                                 a.get("mask"))


def _need_heads_attention(q, k, v, heads, mask) -> Need:
    """``_mha`` for queries, keys and values of these shapes: their float64 copies (none where they are float64
    already; counted all the same), the attention of the split heads and the merged output."""
    for shape in (q, k, v):
        _need_heads(shape, heads, split=True)
    if q[2] != k[2]:
        raise Unfit("channels")
    split = [(s[0], heads, s[1], s[2] // heads) for s in (q, k, v)]                # (B, H, T, dh)
    attention = _need_attention(*split, mask, weights=False, copies=False)
    out = attention.result // F64
    copies = F64 * (math.prod(q) + math.prod(k) + math.prod(v))
    return Need(copies + attention.peak + F64 * out, attention.result, attention.work + out)


def _weights(params, names: str) -> dict:
    """The shapes of the arrays ``names`` of a parameter dict (``Unfit`` for anything else)."""
    if not isinstance(params, dict):
        raise Unfit("params")
    return {name: _shape(params[name]) for name in names.split()}


def _need_linear(x, w, b, copy_x: bool) -> Need:
    """``_linear``: the float64 copies of x (unless it is float64 already), w and b, and the output."""
    if len(x) < 1 or len(w) != 2 or x[-1] != w[0] or b not in ((w[1],), ()):
        raise Unfit("a linear layer's shapes")
    out = math.prod(x[:-1]) * w[1]
    peak = F64 * ((math.prod(x) if copy_x else 0) + math.prod(w) + out + math.prod(b))
    return Need(peak, F64 * out, out * x[-1])


def _need_mha_layer(x_q, x_kv, params, heads, mask, copy_x: bool) -> Need:
    p = _weights(params, "w_q b_q w_k b_k w_v b_v w_o b_o")
    if len(x_q) != 3 or len(x_kv) != 3 or x_q[0] != x_kv[0]:
        raise Unfit("shapes")
    q = _need_linear(x_q, p["w_q"], p["b_q"], copy_x)
    k = _need_linear(x_kv, p["w_k"], p["b_k"], copy_x)
    v = _need_linear(x_kv, p["w_v"], p["b_v"], copy_x)
    qs, ks, vs = (x_q[:2] + (p["w_q"][1],)), (x_kv[:2] + (p["w_k"][1],)), (x_kv[:2] + (p["w_v"][1],))
    attention = _need_heads_attention(qs, ks, vs, heads, mask)       # counts q, k and v (alive while attending)
    o = _need_linear(qs[:2] + (vs[2],), p["w_o"], p["b_o"], copy_x=False)
    peak = max(q.peak, q.result + k.peak, q.result + k.result + v.peak, attention.peak,
               attention.result + o.peak)
    return Need(peak, o.result, q.work + k.work + v.work + attention.work + o.work)


def _need_layer_norm(x, gamma, beta) -> Need:
    if not x or _shape(gamma) not in ((x[-1],), ()) or _shape(beta) not in ((x[-1],), ()):
        raise Unfit("layer_norm's shapes")
    n, rows = math.prod(x), math.prod(x) // max(x[-1], 1)
    # the result, the means, the variances, float64 copies of gamma and beta
    return Need(F64 * (n + 2 * rows + 2 * x[-1]), F64 * n, 8 * n)


def _need_decoder_block(x, block, heads) -> Need:
    if len(x) != 3 or not isinstance(block, dict) or not all(isinstance(block.get(k), dict) for k in
                                                            ("ln_1", "ln_2", "attn")):
        raise Unfit("block")
    b, t, d = x
    n = F64 * b * t * d                                                              # one (B, T, D) float64 array
    ln_1 = _need_layer_norm(x, block["ln_1"].get("gamma"), block["ln_1"].get("beta"))
    ln_2 = _need_layer_norm(x, block["ln_2"].get("gamma"), block["ln_2"].get("beta"))
    mask = _need_causal_mask(t, None)
    attn = _need_mha_layer(x, x, block["attn"], heads, np.ones((t, t), bool), copy_x=False)
    w = _weights(block, "w_1 b_1 w_2 b_2")
    up = _need_linear(x, w["w_1"], w["b_1"], copy_x=False)
    hidden = up.result                                                               # one (B, T, F) float64 array
    down = _need_linear(x[:2] + (w["w_1"][1],), w["w_2"], w["b_2"], copy_x=False)
    if down.result != n:
        raise Unfit("the MLP's shapes")
    peak = max(n + ln_1.peak,                                         # h, then the first norm
               2 * n + mask.peak + attn.peak,                         # h, a, the mask, attention
               n + ln_2.peak,                                         # h, the second norm
               2 * n + up.peak,                                       # h, z, the first linear layer
               n + 2 * hidden,                                        # h, u, the GELU
               n + hidden + down.peak)                                # h, gelu(u), the second linear layer
    return Need(peak, n, ln_1.work + attn.work + ln_2.work + up.work + 10 * hidden // F64 + down.work)


def _need_rms_norm(x, weight) -> Need:
    if not x or _shape(weight) not in ((x[-1],), ()):
        raise Unfit("rms_norm's shapes")
    n, rows = math.prod(x), math.prod(x) // max(x[-1], 1)
    # the result, the mean squares, a float64 copy of the weight
    return Need(F64 * (n + rows + x[-1]), F64 * n, 4 * n)


def _need_swiglu(x, w_gate, w_up, w_down, copy_x: bool) -> Need:
    if len(x) < 1 or len(w_gate) != 2 or w_up != w_gate or w_down != w_gate[::-1] or x[-1] != w_gate[0]:
        raise Unfit("the MLP's shapes")
    rows, d, f = math.prod(x[:-1]), x[-1], w_gate[1]
    hidden, weight = F64 * rows * f, F64 * d * f
    # the float64 copy of x; gate and up (and a weight's copy while each is computed); silu's temporary; the output
    peak = F64 * rows * d * copy_x + max(2 * hidden + weight, 3 * hidden, hidden + weight + F64 * rows * d)
    return Need(peak, F64 * rows * d, 3 * rows * d * f + 6 * rows * f)


def _need_qwen3_attention(x, params, positions, heads, kv_heads, copy_x: bool) -> Need:
    p = _weights(params, "q_proj k_proj v_proj o_proj q_norm k_norm")
    if len(x) != 3 or type(heads) is not int or type(kv_heads) is not int or min(heads, kv_heads) < 1 \
            or heads % kv_heads or any(len(p[k]) != 2 or p[k][0] != x[-1] for k in ("q_proj", "k_proj", "v_proj")):
        raise Unfit("shapes")
    b, t, d = x
    dh = p["q_proj"][1] // heads
    if dh * heads != p["q_proj"][1] or p["k_proj"][1] != kv_heads * dh or p["v_proj"][1] != kv_heads * dh \
            or p["o_proj"] != (heads * dh, d) or p["q_norm"] != (dh,) or p["k_norm"] != (dh,) \
            or _shape(positions) != (t,) or dh % 2:
        raise Unfit("shapes")
    weights = F64 * sum(math.prod(w) for w in p.values())
    q, kv = F64 * b * t * heads * dh, F64 * b * t * kv_heads * dh
    group = heads // kv_heads
    scores = F64 * b * heads * t * t
    rope = F64 * t * dh * 3                                        # angles, cos, sin (T, d/2) and the rotated half
    # x and the weights in float64; q, k, v and their normed copies; the scores and the weights (in place), the
    # tiled mask; the merged heads and the output
    peak = (F64 * b * t * d * copy_x + weights + 2 * q + 3 * kv + rope + scores + group * t * t * 2
            + 2 * F64 * b * t * heads * dh)
    work = 2 * b * t * d * (heads + 2 * kv_heads) * dh + 2 * b * heads * t * t * dh + 5 * b * heads * t * t \
        + b * t * heads * dh * d
    return Need(peak, F64 * b * t * d, work)


def _need_qwen3_block(x, block, positions, heads, kv_heads) -> Need:
    if len(x) != 3 or not isinstance(block, dict):
        raise Unfit("block")
    n = F64 * math.prod(x)
    norm_1 = _need_rms_norm(x, block.get("input_layernorm"))
    attn = _need_qwen3_attention(x, block, positions, heads, kv_heads, copy_x=False)
    norm_2 = _need_rms_norm(x, block.get("post_attention_layernorm"))
    mlp = _need_swiglu(x, _shape(block.get("gate_proj")), _shape(block.get("up_proj")), _shape(block.get("down_proj")),
                       copy_x=False)
    peak = max(n + norm_1.peak, 2 * n + attn.peak, n + norm_2.peak, 2 * n + mlp.peak)
    return Need(peak, n, norm_1.work + attn.work + norm_2.work + mlp.work)


def _broadcast(*shapes) -> tuple:
    try:
        return tuple(int(n) for n in np.broadcast_shapes(*shapes))
    except ValueError:
        raise Unfit("shapes do not broadcast") from None


def _shape(value) -> tuple:
    """The shape of an array argument (a number: ``()``), without converting anything; a nested list is measured by
    walking it (at most ``LIST_ELEMENTS`` numbers)."""
    if isinstance(value, np.ndarray):
        return tuple(value.shape)
    if type(value) in (bool, int, float):
        return ()
    if type(value) in (list, tuple):
        shape, level, count = [], [value], 0
        while level and type(level[0]) in (list, tuple):
            lengths = {len(item) if type(item) in (list, tuple) else -1 for item in level}
            if len(lengths) != 1 or -1 in lengths:
                raise Unfit("ragged")
            shape.append(lengths.pop())
            level = [x for item in level for x in item]
            count += len(level)
            if count > LIST_ELEMENTS:
                raise Unfit("a long list")
        if not all(type(x) in (bool, int, float) for x in level):
            raise Unfit("not numbers")
        return tuple(shape)
    raise Unfit(type(value).__name__)
