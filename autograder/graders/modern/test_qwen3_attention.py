"""qwen3_attention(x, params, positions, num_heads, num_kv_heads, cache=None): q/k/v projections, RMSNorm of each
head (q_norm, k_norm), RoPE (rotate-half, base ROPE_THETA) at ``positions``, causal grouped-query attention (query
head h uses KV head h // (H / Hkv)), o_proj; with the notebook's given ``KVCache`` the rotated keys and the values
(Hkv heads, not repeated) are appended and every cached token is attended to.

While it is graded, the student's ``rms_norm`` is answered by the reference (isolation.py); the cache is the
student's own ``KVCache`` (a ``Remote``: it stays in the student's process), and a failure with one is diagnosed by
replaying the steps with each known mistake on a trusted cache here.
"""
import numpy as np
import pytest

from autograder.graders import references, tolerances
from autograder.graders.attention.inputs import normal
from autograder.graders.compare import GradingFailure, as_array, expect_close
from autograder.graders.diagnosis import by_id, of_replay, with_causes
from autograder.graders.modern import MODEL, random_block, store

# Judged against (forbidden routines and known mistakes: exercises/qwen3_attention.py):
REFERENCE = references.qwen3_attention
REFERENCES = ("float64 torch: rms_norm per head, apply_rope (base 1e6), SDPA with enable_gqa, o_proj",
              "transformers' Qwen3Attention (stored: graders/modern/refs)",
              "KerasHub's Qwen3Attention (stored: graders/modern/refs)")
TOLERANCES = {"STUDENT": "against the float64 reference", "QWEN3_FLOAT32": "against the stored library outputs"}

D = MODEL["d_model"]
CASES = [  # B, T, H, Hkv, first position, dtype
    pytest.param(2, 7, 4, 2, 0, np.float32, id="gqa-b2-t7-h4-kv2"),
    pytest.param(1, 6, 4, 1, 5, np.float32, id="mqa-b1-t6-h4-kv1-from5"),
    pytest.param(2, 5, 4, 4, 0, np.float32, id="mha-b2-t5-h4-kv4"),
    pytest.param(3, 4, 4, 2, 11, np.float64, id="gqa-b3-t4-from11-float64"),
]


def draw(rng, b, t, heads, kv_heads, dtype=np.float32):
    block = {k: v.astype(dtype) for k, v in random_block(rng, heads, kv_heads).items()}
    return normal(rng, b, t, D, dtype=dtype), block


@pytest.mark.points(1.2)
@pytest.mark.parametrize("b, t, heads, kv_heads, start, dtype", CASES)
def test_matches_float64_reference(student, rng, b, t, heads, kv_heads, start, dtype):
    """QK-norm, RoPE, GQA, 인과 마스크, 출력 투영까지 float64 참조와 같음 (GQA, MQA, MHA, 0이 아닌 위치)"""
    x, block = draw(rng, b, t, heads, kv_heads, dtype)
    positions = np.arange(start, start + t)
    got = student.qwen3_attention(x, block, positions, heads, kv_heads)
    expect_close(got, REFERENCE(x, block, positions, heads, kv_heads), tol=tolerances.STUDENT,
                 against=f"float64 Qwen3 어텐션 (H={heads}, H_kv={kv_heads}, 위치 {start}..{start + t - 1})",
                 call=student.last)


LIBRARIES = {"hf": "transformers의 Qwen3Attention (float64)",
             "keras_hub": "KerasHub의 Qwen3Attention (float32, Keras 층)"}
STORED = [pytest.param(library, name, id=f"{library}-{name}") for name in store.names("attention")
          for library in LIBRARIES if library in store.manifest()["cases"][name]["outputs"]]


@pytest.mark.points(1.4)
@pytest.mark.parametrize("library, name", STORED)
def test_matches_the_libraries_qwen3_attention(student, library, name):
    """같은 가중치 행렬을 넣은 transformers와 KerasHub의 Qwen3Attention과 같음 (저장해 둔 출력)"""
    case = store.load(name)
    i, a = case.inputs, case.args
    got = student.qwen3_attention(i["x"], i["block"], i["positions"], a["num_heads"], a["num_kv_heads"])
    expect_close(got, case.outputs[library], tol=tolerances.QWEN3_FLOAT32, against=f"{LIBRARIES[library]}, {name}",
                 call=student.last)


def replay(fn, x, block, steps, heads, kv_heads):
    """The outputs of ``fn`` over the steps on one trusted cache, then its keys (what the grader observed)."""
    cache = references.KVCache()
    outs = [fn(x[:, a:e], block, np.arange(a, e), heads, kv_heads, cache) for a, e in steps]
    return outs + [cache.keys]


SCHEDULES = [  # B, H, Hkv, sizes of the steps
    pytest.param(2, 4, 2, (5, 1, 1, 1), id="gqa-b2-prefill5-decode3"),
    pytest.param(1, 4, 1, (3, 1, 2, 1), id="mqa-b1-prefill3-steps-1-2-1"),
]


@pytest.mark.points(1.4)
@pytest.mark.parametrize("b, heads, kv_heads, sizes", SCHEDULES)
def test_prefill_and_decode_with_the_given_cache(student, rng, b, heads, kv_heads, sizes):
    """주어진 KVCache로 프리필 뒤 한 토큰씩: 출력이 전체 시퀀스의 어텐션과 같고, 캐시에는 RoPE를 돌린 키가 KV 헤드
    H_kv개로 (반복하지 않고) 쌓임"""
    t = sum(sizes)
    x, block = draw(rng, b, t, heads, kv_heads)
    bounds = np.cumsum((0,) + sizes)
    steps = list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))
    full = REFERENCE(x, block, np.arange(t), heads, kv_heads)
    trusted = references.KVCache()
    REFERENCE(x, block, np.arange(t), heads, kv_heads, trusted)
    cache, outputs = student.KVCache(), []
    for a, e in steps:
        what = f"위치 {a}" if e - a == 1 else f"위치 {a}..{e - 1}"
        what += f" (새 토큰 {e - a}개, 캐시에 {a}개가 있을 때)"
        outputs.append(student.qwen3_attention(x[:, a:e], block, np.arange(a, e), heads, kv_heads, cache))
        try:
            expect_close(outputs[-1], full[:, a:e], what=f"{what}의 출력", tol=tolerances.STUDENT,
                         against="전체 시퀀스의 Qwen3 어텐션 (float64)")
        except GradingFailure as failure:
            found = of_replay("qwen3_attention", lambda fn: replay(fn, x, block, steps, heads, kv_heads),
                              outputs, [full[:, s:f] for s, f in steps[: len(outputs)]], "modern")
            raise GradingFailure(with_causes(failure.message, found), found) from None
    keys = as_array(cache.keys, "cache.keys")
    expected = trusted.keys
    if keys.ndim == 4 and keys.shape[1] == heads != kv_heads and keys.shape[2] == t:
        found = [by_id("q3_attn_caches_repeated_heads")]
        raise GradingFailure(with_causes(
            f"출력은 맞지만 캐시의 키가 {keys.shape}입니다: KV 헤드 {kv_heads}개가 아니라 질의 헤드 {heads}개만큼 "
            f"반복해서 넣어 캐시가 {heads // kv_heads}배 큽니다. 기대 모양 {expected.shape} (B, H_kv, T, head_dim).",
            found), found)
    expect_close(keys, expected, what="모든 단계 뒤 cache.keys (QK-norm과 RoPE를 거친 키)", tol=tolerances.STUDENT,
                 against="전체 시퀀스의 회전된 키 (float64)")
