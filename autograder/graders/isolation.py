"""A mistake costs its own points, once, fast: each exercise is graded on its own logic, in its own time.

* **Isolation.** While exercise X is called, the other contract functions X may build on (``CALLEES``) are, in
  the student's process, proxies that ask this side for the reference result (``inside.proxies.Isolated``); ``Answers``
  answers them here with the float64 references of ``references.py`` (the answer key never enters the sandbox:
  only the answer for the arguments asked). A wrong, hanging or crashing ``softmax`` therefore costs
  ``softmax``'s points and not those of every exercise that calls it. The relation is a ladder (no exercise may
  ask for one that may ask for it, and none may ask for a function that computes its own result: ``softmax`` may
  not ask for ``scaled_dot_product_attention``, ``flash_attention`` not for any attention), so a proxy never
  gives away what the exercise itself asks for. Classes are not replaced: ``attend_with_cache`` works on the
  student's own ``KVCache`` (the grader creates it), and its feedback says so when ``KVCache`` lost points.
* **An answer's cost.** A question is sized before it is answered (``need``: exact bytes and operations from the
  broadcast shapes of every argument); a small one is answered here, a bigger one in a forked child under
  ``answer_mb`` and the call's deadline (``bounded.compute``), one over ``answer_mb`` refused with a Korean reason.
  The answers' time is the call's time. So a proxy question never costs the grader more than the student's own
  call may (issue 21).
* **The note.** ``dependency_notes`` says, for an exercise whose code calls another contract function that lost
  points, that in the real notebook this exercise would give wrong results too.
* **Time.** ``call_limit``: a call whose inputs are small (the reference needs milliseconds) may take
  ``call_floor`` seconds, a big one ``call``; all calls of one function together ``exercise`` seconds, and all
  calls of a submission ``calls`` seconds (``plugin.Student``). From ``course_config.py``'s ``timeouts``.
"""
from __future__ import annotations

import ast
import functools
import inspect
import math
import time
from dataclasses import dataclass

import numpy as np

from autograder.graders import bounded, references
from autograder.messages import Reason

_ATTENTION = ("softmax", "causal_mask", "scaled_dot_product_attention", "dot_product_attention")
_HEADS = _ATTENTION + ("split_heads", "merge_heads")
_LAYER = _HEADS + ("multi_head_attention", "multi_head_attention_layer")

# exercise -> the other contract functions it may call that are answered with the reference while it is graded.
CALLEES = {
    # attention
    "additive_attention": ("softmax",),
    "bahdanau_attention": ("softmax",),
    "dot_product_attention": ("softmax",),
    "scaled_dot_product_attention": ("softmax",),
    "self_attention": _ATTENTION,
    "multi_head_attention": _HEADS,
    "multi_head_attention_layer": _HEADS + ("multi_head_attention",),
    # kv_cache (softmax, causal_mask and scaled_dot_product_attention are given in its notebook)
    "max_cached_tokens": ("kv_cache_bytes",),
    "grouped_query_attention": _ATTENTION,
    "attend_with_cache": _ATTENTION,
    "flash_attention": ("causal_mask",),
    # decoder (the earlier assignments' functions are given in its notebook; a student may paste their own)
    "decoder_block": _LAYER + ("layer_norm",),
    "generate": _LAYER + ("layer_norm", "decoder_block"),
}

# Contract functions an exercise depends on without naming them in its code (the cache it is given).
IMPLIED = {"attend_with_cache": ("KVCache",)}


# The answers are float64 numpy versions of ``references.py`` (the same formulas; numpy because a proxy's question
# is small and torch's per-call overhead is not: ~300 answers per submission), with the contract's signatures (a
# call that does not fit runs the student's own function). tests/test_isolation.py checks them against
# ``references.py``. They work in place where they can, so that what they allocate is what ``need`` counts.
def _softmax(x, axis=-1):
    e = np.array(x, np.float64)                                                       # a copy: the result
    top = np.max(e, axis=axis, keepdims=True)
    e -= np.where(np.isfinite(top), top, 0.0)
    np.exp(e, out=e)
    e /= np.sum(e, axis=axis, keepdims=True)
    return e


def _causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    return np.arange(t_k)[None, :] <= np.arange(t_q)[:, None] + (t_k - t_q)           # (Tq, Tk)


def _attention(query, key, value, mask, scale):
    q, k, v = (np.asarray(a, np.float64) for a in (query, key, value))
    scores = q @ np.swapaxes(k, -1, -2)                                               # (..., Tq, Tk)
    scores *= scale
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        shape = np.broadcast_shapes(scores.shape, mask.shape)
        if shape != scores.shape:                                                     # a mask with more batch axes
            scores = np.array(np.broadcast_to(scores, shape))
        np.copyto(scores, -np.inf, where=~mask)
    top = np.max(scores, axis=-1, keepdims=True)                                      # softmax, in place
    scores -= np.where(np.isfinite(top), top, 0.0)
    np.exp(scores, out=scores)
    scores /= np.sum(scores, axis=-1, keepdims=True)                                  # (..., Tq, Tk) weights
    return scores @ v, scores                                                         # (..., Tq, dv)


def _sdpa(query, key, value, mask=None, return_weights=False):
    out, weights = _attention(query, key, value, mask, np.shape(query)[-1] ** -0.5)
    return (out, weights) if return_weights else out


def _dot(query, key, value, mask=None):
    return _attention(query, key, value, mask, 1.0)[0]


def _mha(query, key, value, num_heads, mask=None):
    q, k, v = (references.split_heads(a, num_heads) for a in (query, key, value))    # (B, H, T, dh)
    return references.merge_heads(_sdpa(q, k, v, mask))                               # (B, Tq, C)


def _linear(x, w, b):
    out = np.asarray(x, np.float64) @ np.asarray(w, np.float64)                       # (..., out)
    out += np.asarray(b, np.float64)
    return out


def _mha_layer(x_q, x_kv, params, num_heads, mask=None):
    q = _linear(x_q, params["w_q"], params["b_q"])                                    # (B, Tq, H*dk)
    k = _linear(x_kv, params["w_k"], params["b_k"])                                   # (B, Tk, H*dk)
    v = _linear(x_kv, params["w_v"], params["b_v"])                                   # (B, Tk, H*dv)
    heads = _mha(q, k, v, num_heads, mask)                                            # (B, Tq, H*dv)
    del q, k, v
    return _linear(heads, params["w_o"], params["b_o"])                               # (B, Tq, D)


def _layer_norm(x, gamma, beta, eps=1e-5):
    out = np.array(x, np.float64)                                                     # (..., D) the result
    out -= out.mean(axis=-1, keepdims=True)
    scale = np.einsum("...d,...d->...", out, out)[..., None]                          # (..., 1)
    scale /= out.shape[-1]                                                            # the biased variance
    scale += eps
    np.sqrt(scale, out=scale)
    out /= scale
    out *= np.asarray(gamma, np.float64)
    out += np.asarray(beta, np.float64)
    return out


def _gelu(z):
    """The exact (erf) GELU, z * Phi(z), in float64 (torch's erf, computed in place on numpy's memory)."""
    import torch

    out = z * 0.7071067811865476                                                      # (..., F)
    erf = torch.from_numpy(out)
    torch.special.erf(erf, out=erf)
    out += 1.0
    out *= 0.5
    out *= z
    return out


def _decoder_block(x, block, num_heads):
    h = np.array(x, np.float64)                                                       # (B, T, D) the result
    a = _layer_norm(h, block["ln_1"]["gamma"], block["ln_1"]["beta"])                 # (B, T, D)
    h += _mha_layer(a, a, block["attn"], num_heads, _causal_mask(h.shape[-2]))        # (B, T, D)
    del a
    z = _layer_norm(h, block["ln_2"]["gamma"], block["ln_2"]["beta"])                 # (B, T, D)
    u = _linear(z, block["w_1"], block["b_1"])                                        # (B, T, F)
    del z
    u = _gelu(u)                                                                      # (B, T, F)
    h += _linear(u, block["w_2"], block["b_2"])                                       # (B, T, D)
    return h


REFERENCES = {
    "softmax": _softmax,
    "causal_mask": _causal_mask,
    "scaled_dot_product_attention": _sdpa,
    "dot_product_attention": _dot,
    "split_heads": references.split_heads,
    "merge_heads": references.merge_heads,
    "multi_head_attention": _mha,
    "multi_head_attention_layer": _mha_layer,
    "kv_cache_bytes": references.kv_cache_bytes,
    "layer_norm": _layer_norm,
    "decoder_block": _decoder_block,
}
SIGNATURES = {name: inspect.signature(function) for name, function in REFERENCES.items()}


# ----------------------------------------------------------------------------------------------- sizes
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


def need(name: str, arguments: dict) -> Need:
    """What ``REFERENCES[name]`` needs for ``arguments`` (``SIGNATURES[name].bind(...).arguments``), exactly from the
    broadcast shapes of every argument, or ``Unfit`` for arguments it cannot take. Counted as the references above
    allocate: the float64 copy of each array argument, the score matrix of the broadcast batch (and a bigger one
    when a mask broadcasts it further), softmax's per-row temporaries, the output, and a contiguous copy where the
    answer is a view that has to be copied to be sent (``split_heads``). tests/test_isolation.py checks the peak
    against what numpy really allocates (``tracemalloc``) for every reference."""
    sized = _need(name, dict(arguments))
    return Need(sized.peak + NUMPY_OVERHEAD, sized.result, sized.work)


def _need(name: str, a: dict) -> Need:
    if name == "softmax":
        return _need_softmax(a["x"], a.get("axis", -1))
    if name == "causal_mask":
        return _need_causal_mask(a["t_q"], a.get("t_k"))
    if name in ("scaled_dot_product_attention", "dot_product_attention"):
        weights = a.get("return_weights", False)
        if not isinstance(weights, (bool, int, type(None))):
            raise Unfit("return_weights")
        return _need_attention(_shape(a["query"]), _shape(a["key"]), _shape(a["value"]), a.get("mask"),
                               bool(weights), copies=True)
    if name == "split_heads":
        return _need_heads(_shape(a["x"]), a["num_heads"], split=True)
    if name == "merge_heads":
        return _need_heads(_shape(a["x"]), None, split=False)
    if name == "multi_head_attention":
        return _need_mha(a)
    if name == "multi_head_attention_layer":
        return _need_mha_layer(_shape(a["x_q"]), _shape(a["x_kv"]), a["params"], a["num_heads"], a.get("mask"),
                               copy_x=True)
    if name == "layer_norm":
        if not isinstance(a.get("eps", 1e-5), (int, float)):
            raise Unfit("eps")
        return _need_layer_norm(_shape(a["x"]), a["gamma"], a["beta"])
    if name == "decoder_block":
        return _need_decoder_block(_shape(a["x"]), a["block"], a["num_heads"])
    if name == "kv_cache_bytes":
        if not all(type(v) in (int, float) for v in a.values()):
            raise Unfit("numbers only")
        return Need(0, 0, len(a))
    raise Unfit(name)


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


def callees(exercise: str, defined) -> tuple:
    """The names that are proxies while ``exercise`` is called (those the notebook defines)."""
    return tuple(n for n in CALLEES.get(exercise, ()) if n in defined and n in REFERENCES)


# ----------------------------------------------------------------------------------------------- answers
# A question is answered here, in the grading process, when it needs at most INLINE_BYTES and INLINE_WORK (the
# largest of the 294 questions the solutions of `attention` and `kv_cache` ask needs 0.8 MiB and 0.5 M operations:
# a 16 MiB, 33 M operation answer takes at most tens of milliseconds on a loaded core, inside the call's time);
# a bigger one, up to ``answer_mb``, in a forked child under that memory limit and the call's deadline
# (``bounded.compute``); a question over ``answer_mb`` is refused with a Korean reason (the call fails: it costs
# that exercise). Every answer's time is part of the call's, so the budgets of the student's calls (``call``,
# ``exercise``, ``calls``) bound the answers too.
INLINE_BYTES = 16 << 20
INLINE_WORK = 1 << 25
CHILD_SLACK = 64 << 20   # address space a forked child may map beyond ``answer_mb``: thread stacks, malloc's arenas
_FALLBACK = {"ok": True, "fallback": True}


def answer_mb() -> int:
    """The most memory one proxy answer may take (``COURSE["sandbox"]["answer_mb"]``)."""
    from autograder.sandbox.policy import Limits

    return int(Limits.from_course().answer_mb)


class Answers:
    """Answers the proxies of one call: ``(header, arrays, deadline) -> (header, arrays)`` for
    ``StudentProcess.request``.

    Only the names allowed for the call in flight are answered; the names answered are collected in ``asked``, the
    Korean reasons of the questions refused (over ``answer_mb``, or a child that ran out of memory or time) in
    ``refused``, and the largest growth of a child that computed an answer (bytes) in ``apart_peak``.
    """

    def __init__(self, allowed, limit_mb: float | None = None):
        self.allowed = set(allowed)
        self.asked: set[str] = set()
        self.refused: list[str] = []
        self.apart_peak = 0
        self.limit = int((answer_mb() if limit_mb is None else limit_mb) * (1 << 20))
        self.questions: list[tuple[str, tuple]] = []   # (name, shape of its first array argument), in order

    def __call__(self, header, arrays, deadline: float | None = None):
        from autograder.sandbox.errors import StudentCodeError
        from autograder.sandbox.remote import decode_value, encode_value

        name = header.get("name")
        if name not in self.allowed:
            return {"ok": False, "error": "RuntimeError", "message": Reason.NOT_GIVEN_NOW.korean(name=name)}, []
        try:
            args = _scalars(decode_value(header.get("args"), arrays))
            kwargs = _scalars(decode_value(header.get("kwargs"), arrays))
            first = next((a for a in [*args, *kwargs.values()] if isinstance(a, np.ndarray)), None)
            self.questions.append((name, () if first is None else tuple(first.shape)))
            sized = need(name, SIGNATURES[name].bind(*args, **kwargs).arguments)
        except (StudentCodeError, Exception):  # noqa: BLE001 - arguments the reference cannot take
            return _FALLBACK, []
        limit_mb = self.limit >> 20
        if sized.peak > self.limit:
            return self._refuse(Reason.ANSWER_TOO_BIG.korean(asked=name, need_mb=sized.mb, limit_mb=limit_mb))
        try:
            if sized.peak <= INLINE_BYTES and sized.work <= INLINE_WORK:
                value = REFERENCES[name](*args, **kwargs)
            else:
                if deadline is None:
                    from autograder.sandbox.policy import Timeouts

                    deadline = time.monotonic() + float(Timeouts.from_course().call)
                value, peak = bounded.compute(REFERENCES[name], args, kwargs, limit=self.limit + CHILD_SLACK,
                                              deadline=deadline, result_bytes=sized.result)
                self.apart_peak = max(self.apart_peak, peak)
        except bounded.Refused as exc:
            reason = Reason.ANSWER_TIME if exc.why == "time" else Reason.ANSWER_MEMORY
            return self._refuse(reason.korean(asked=name, limit_mb=limit_mb))
        except Exception:  # noqa: BLE001 - the reference does not take these arguments after all
            return _FALLBACK, []
        out: list = []
        encoded = encode_value(value, out)
        self.asked.add(name)
        return {"ok": True, "value": encoded}, out

    def _refuse(self, reason: str):
        self.refused.append(reason)
        return {"ok": False, "error": "RuntimeError", "message": reason}, []

# The most numbers an answer may make the grader compute (2^24 float64: 128 MiB): bigger questions run the
# student's own function in the student's process, so a proxy cannot make the grader allocate without bound.
MAX_ANSWER_ELEMENTS = 1 << 24


def _work(name: str, arguments: dict) -> int:
    """How many numbers the reference computes for these arguments (the score matrix of an attention)."""
    if name == "causal_mask":
        t_q = arguments.get("t_q")
        t_k = arguments.get("t_k")
        t_k = t_q if t_k is None else t_k
        return int(t_q) * int(t_k) if isinstance(t_q, int) and isinstance(t_k, int) else 0
    total = elements(arguments)
    if name in ("scaled_dot_product_attention", "dot_product_attention"):
        query, key = np.shape(arguments.get("query")), np.shape(arguments.get("key"))
        if len(query) >= 2 and len(key) >= 2:
            total += int(np.prod(query[:-1], dtype=np.int64)) * int(key[-2])
    elif name in ("multi_head_attention", "multi_head_attention_layer", "decoder_block"):
        query = np.shape(arguments.get("query", arguments.get("x_q", arguments.get("x"))))
        key = np.shape(arguments.get("key", arguments.get("x_kv", arguments.get("x"))))
        heads = arguments.get("num_heads")
        if len(query) >= 2 and len(key) >= 2 and isinstance(heads, int) and heads > 0:
            total += heads * int(np.prod(query[:-1], dtype=np.int64)) * int(key[-2])   # the score matrices
        block = arguments.get("block")
        if name == "decoder_block" and isinstance(block, dict) and len(query) >= 2:
            hidden = np.shape(block.get("w_1"))
            total += int(np.prod(query[:-1], dtype=np.int64)) * int(hidden[-1] if hidden else 0)   # the MLP
    return total


def _scalars(value):
    """0-d arrays (a numpy number the student passed) as Python numbers, in lists, tuples and dicts too."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value.item()
    if isinstance(value, (list, tuple)):
        return type(value)(_scalars(v) for v in value)
    if isinstance(value, dict):
        return {k: _scalars(v) for k, v in value.items()}
    return value


# ----------------------------------------------------------------------------------------------- time
def call_limit(args, kwargs, timeouts) -> float:
    """Seconds one call may take (``timeouts``: ``policy.Timeouts``), by what the reference needs on its inputs:
    ``call_floor`` when the arrays passed hold at most ``call_small`` elements (every grader input but one: the
    float64 reference needs milliseconds there), ``call`` otherwise (flash_attention's 8,192-token memory test: the
    reference itself needs seconds)."""
    ceiling = float(timeouts.call)
    if elements((args, kwargs)) > int(timeouts.call_small):
        return ceiling
    return min(ceiling, float(timeouts.call_floor))


def elements(value) -> int:
    """How many numbers the arrays in ``value`` (nested in lists, tuples and dicts) hold."""
    if isinstance(value, np.ndarray):
        return int(value.size)
    if isinstance(value, (list, tuple)):
        return sum(elements(v) for v in value)
    if isinstance(value, dict):
        return sum(elements(v) for v in value.values())
    return 0


# ----------------------------------------------------------------------------------------------- the note
def calls_in_source(exercise: str, sources, contract) -> set[str]:
    """The contract functions the submitted ``def exercise`` calls, directly or through the notebook's own
    top-level helpers (not through other contract functions)."""
    defs = _top_level_defs(tuple(sources))
    found, seen, todo = set(), set(), [exercise]
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        for used in defs[name]:
            if used == exercise:
                continue
            if used in contract:
                found.add(used)
            elif used in defs:
                todo.append(used)
    return found | set(IMPLIED.get(exercise, ())) & set(contract)


@functools.lru_cache(maxsize=64)
def _top_level_defs(sources: tuple) -> dict:
    """``{name: names it reads}`` of every top-level function and class of the cells (the last one wins)."""
    defs = {}
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defs[node.name] = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return defs


def dependency_notes(exercise: str, calls, lost) -> list[str]:
    """Korean notes: ``exercise`` calls the student's own ``calls``; those in ``lost`` lost points."""
    return [f"`{exercise}`는 직접 만든 `{name}`를 호출합니다. `{name}`가 틀려서 실제로는 이 함수도 틀린 결과를 "
            f"냅니다." for name in sorted(set(calls) & set(lost))]
