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

import numpy as np

from autograder.graders import references

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
# is small and torch's per-call overhead is not: ~200 answers per submission), with the contract's signatures (a
# call that does not fit runs the student's own function). tests/test_isolation.py checks them against
# ``references.py``.
def _softmax(x, axis=-1):
    x = np.asarray(x, np.float64)
    top = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(top), top, 0.0))
    return e / np.sum(e, axis=axis, keepdims=True)


def _attention(query, key, value, mask, scale):
    q, k, v = (np.asarray(a, np.float64) for a in (query, key, value))
    scores = q @ np.swapaxes(k, -1, -2) * scale                                       # (..., Tq, Tk)
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    weights = _softmax(scores)                                                        # (..., Tq, Tk)
    return weights @ v, weights                                                       # (..., Tq, dv)


def _sdpa(query, key, value, mask=None, return_weights=False):
    out, weights = _attention(query, key, value, mask, np.shape(query)[-1] ** -0.5)
    return (out, weights) if return_weights else out


def _dot(query, key, value, mask=None):
    return _attention(query, key, value, mask, 1.0)[0]


def _mha(query, key, value, num_heads, mask=None):
    q, k, v = (references.split_heads(a, num_heads) for a in (query, key, value))    # (B, H, T, dh)
    return references.merge_heads(_sdpa(q, k, v, mask))                               # (B, Tq, C)


def _mha_layer(x_q, x_kv, params, num_heads, mask=None):
    p = {name: np.asarray(a, np.float64) for name, a in params.items()}
    q = np.asarray(x_q, np.float64) @ p["w_q"] + p["b_q"]                             # (B, Tq, H*dk)
    k = np.asarray(x_kv, np.float64) @ p["w_k"] + p["b_k"]                            # (B, Tk, H*dk)
    v = np.asarray(x_kv, np.float64) @ p["w_v"] + p["b_v"]                            # (B, Tk, H*dv)
    heads = _sdpa(*(references.split_heads(a, num_heads) for a in (q, k, v)), mask)   # (B, H, Tq, dv)
    return references.merge_heads(heads) @ p["w_o"] + p["b_o"]                        # (B, Tq, D)


def _layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, np.float64)
    mean = x.mean(axis=-1, keepdims=True)                                             # (..., 1)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)                              # (..., 1) biased
    return (x - mean) / np.sqrt(var + eps) * np.asarray(gamma, np.float64) + np.asarray(beta, np.float64)


def _decoder_block(x, block, num_heads):
    x = np.asarray(x, np.float64)
    a = _layer_norm(x, block["ln_1"]["gamma"], block["ln_1"]["beta"])                  # (B, T, D)
    h = x + _mha_layer(a, a, block["attn"], num_heads, references.causal_mask(x.shape[-2]))  # (B, T, D)
    z = _layer_norm(h, block["ln_2"]["gamma"], block["ln_2"]["beta"])                  # (B, T, D)
    w_1, b_1, w_2, b_2 = (np.asarray(block[k], np.float64) for k in ("w_1", "b_1", "w_2", "b_2"))
    return h + references.gelu(z @ w_1 + b_1) @ w_2 + b_2                             # (B, T, D)


REFERENCES = {
    "softmax": _softmax,
    "causal_mask": references.causal_mask,
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


def callees(exercise: str, defined) -> tuple:
    """The names that are proxies while ``exercise`` is called (those the notebook defines)."""
    return tuple(n for n in CALLEES.get(exercise, ()) if n in defined and n in REFERENCES)


# ----------------------------------------------------------------------------------------------- answers
class Answers:
    """Answers the proxies of one call: ``(header, arrays) -> (header, arrays)`` for ``StudentProcess.request``.

    Only the names allowed for the call in flight are answered; the names answered are collected in ``asked``.
    """

    def __init__(self, allowed):
        self.allowed = set(allowed)
        self.asked: set[str] = set()
        self.questions: list[tuple[str, tuple]] = []   # (name, shape of its first array argument), in order

    def __call__(self, header, arrays):
        from autograder.sandbox.runner import StudentCodeError, decode_value, encode_value

        name = header.get("name")
        if name not in self.allowed:
            return {"ok": False, "error": "RuntimeError",
                    "message": f"`{name}`의 참조 결과는 지금 채점 중인 함수에 주어지지 않습니다."}, []
        try:
            args = _scalars(decode_value(header.get("args"), arrays))
            kwargs = _scalars(decode_value(header.get("kwargs"), arrays))
            first = next((a for a in [*args, *kwargs.values()] if isinstance(a, np.ndarray)), None)
            self.questions.append((name, () if first is None else tuple(first.shape)))
            reference = REFERENCES[name]
            bound = SIGNATURES[name].bind(*args, **kwargs)
            if _work(name, bound.arguments) > MAX_ANSWER_ELEMENTS:
                raise ValueError("too big to answer here")
            value = reference(*args, **kwargs)
        except (StudentCodeError, Exception):  # noqa: BLE001 - arguments the reference cannot take
            return {"ok": True, "fallback": True}, []
        out: list = []
        encoded = encode_value(value, out)
        self.asked.add(name)
        return {"ok": True, "value": encoded}, out


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
def call_limit(args, kwargs, timeouts: dict) -> float:
    """Seconds one call may take, by what the reference needs on its inputs: ``call_floor`` when the arrays
    passed hold at most ``call_small`` elements (every grader input but one: the float64 reference needs
    milliseconds there), ``call`` otherwise (flash_attention's 8,192-token memory test: the reference itself
    needs seconds). Without ``call_floor`` every call gets ``call``."""
    ceiling = float(timeouts["call"])
    if "call_floor" not in timeouts or elements((args, kwargs)) > int(timeouts.get("call_small", 0)):
        return ceiling
    return min(ceiling, float(timeouts["call_floor"]))


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
