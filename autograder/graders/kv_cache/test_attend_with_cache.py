"""attend_with_cache(query, key, value, cache): append the t newest keys/values to the cache, then attend from the
t queries to every cached token with causal_mask(t, len(cache)) (aligned bottom-right).

The cache is the student's own ``KVCache`` (a ``Remote``: it stays in the student's process), so this exercise
also needs a working ``KVCache``. A failure is diagnosed by replaying the same steps with each known mistake on a
trusted cache here (never on the student's cache, which a re-run would change).
"""
import numpy as np
import pytest

from autograder.graders import references
from autograder.graders.attention.inputs import normal
from autograder.graders.compare import GradingFailure, as_array, expect_close, expect_true
from autograder.graders.diagnosis import of_replay, with_causes
from autograder.graders.kv_cache import number

# Judged against (forbidden routines and known mistakes: exercises/attend_with_cache.py):
REFERENCES = ("float64 causal torch SDPA over the whole sequence (full_causal below)",)
TOLERANCES = {"STUDENT": "every comparison"}


def draw(rng, b, h, t, d, dtype=np.float32):
    return normal(rng, b, h, t, d, dtype=dtype), normal(rng, b, h, t, d, dtype=dtype), \
        normal(rng, b, h, t, d, dtype=dtype)


def steps_of(sizes):
    """Token ranges [a, b) of consecutive steps."""
    bounds = np.cumsum((0,) + tuple(sizes))
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))


def run_steps(attend, cache, q, k, v, steps) -> list:
    """The outputs of attend_with_cache over the steps, on one cache."""
    return [attend(q[:, :, a:b], k[:, :, a:b], v[:, :, a:b], cache) for a, b in steps]


def full_causal(q, k, v):
    """Causal attention over the whole sequence at once (float64 torch reference), (B, H, T, d)."""
    t = q.shape[2]
    return references.scaled_dot_product_attention(q, k, v, references.causal_mask(t))


def check_steps(student, q, k, v, sizes, cache=None) -> list:
    """Prefill/decode steps on a student cache; each step's output must equal the full causal attention's rows,
    and the cache must hold exactly the tokens appended so far."""
    steps = steps_of(sizes)
    cache = student.KVCache() if cache is None else cache
    expected = full_causal(q, k, v)
    outputs = []
    for a, b in steps:
        what = f"토큰 {a}" if b - a == 1 else f"토큰 {a}..{b - 1}"
        what += f" (새 토큰 {b - a}개, 캐시에 {a}개가 있을 때)"
        outputs.append(student.attend_with_cache(q[:, :, a:b], k[:, :, a:b], v[:, :, a:b], cache))
        try:
            expect_close(outputs[-1], expected[:, :, a:b], what=f"{what}의 출력",
                         against="전체 시퀀스의 인과 어텐션 (float64)")
        except GradingFailure as failure:
            found = of_replay("attend_with_cache",
                                    lambda fn: run_steps(fn, references.KVCache(), q, k, v, steps),
                                    outputs, [expected[:, :, s:e] for s, e in steps[: len(outputs)]])
            raise GradingFailure(with_causes(failure.message, found), found) from None
        size = number(len(cache), "len(cache)")
        expect_true(size == b, f"{what}: attend_with_cache 뒤 len(cache)는 {b}이어야 하는데 {size}입니다 "
                               f"(key, value를 캐시에 한 번씩 덧붙이세요).")
    return outputs


SCHEDULES = [  # (B, H, d, sizes of the steps, dtype)
    pytest.param(2, 3, 8, (5, 1, 1, 1, 2), np.float32, id="b2-h3-prefill5-decode3-chunk2"),
    pytest.param(1, 4, 16, (1,) * 8, np.float32, id="b1-h4-decode-from-empty"),
    pytest.param(3, 2, 8, (4, 3, 1, 5), np.float64, id="b3-h2-chunks-4-3-1-5-float64"),
    pytest.param(2, 2, 4, (9,), np.float32, id="b2-h2-prefill-only"),
]


@pytest.mark.points(1.6)
@pytest.mark.parametrize("b, h, d, sizes, dtype", SCHEDULES)
def test_prefill_and_decode_equal_full_causal_attention(student, rng, b, h, d, sizes, dtype):
    """프리필 + 한 토큰씩 디코딩 + 여러 토큰 덩어리의 출력이 전체 시퀀스의 인과 어텐션과 같음"""
    q, k, v = draw(rng, b, h, sum(sizes), d, dtype)
    check_steps(student, q, k, v, sizes)


@pytest.mark.points(0.6)
def test_cache_holds_what_was_appended(student, rng):
    """캐시에는 넣은 키·값이 순서대로 정확히 한 번씩 들어 있음"""
    sizes = (3, 1, 1, 2)
    q, k, v = draw(rng, 2, 3, sum(sizes), 8)
    cache = student.KVCache()
    check_steps(student, q, k, v, sizes, cache)
    expect_close(cache.keys, k, what="cache.keys", against="attend_with_cache에 넘긴 키를 이어 붙인 것")
    expect_close(cache.values, v, what="cache.values", against="attend_with_cache에 넘긴 값을 이어 붙인 것")


@pytest.mark.points(0.4)
def test_future_tokens_do_not_change_the_past(student, rng):
    """프리필에서 마지막 토큰의 키·값을 바꿔도 앞 토큰들의 출력은 그대로 (인과성)"""
    q, k, v = draw(rng, 2, 2, 6, 8)
    first = student.attend_with_cache(q, k, v, student.KVCache())
    expect_close(first, full_causal(q, k, v), against="전체 시퀀스의 인과 어텐션 (float64)")
    k2, v2 = k.copy(), v.copy()
    k2[:, :, -1] = normal(rng, 2, 2, 8) * 4
    v2[:, :, -1] = normal(rng, 2, 2, 8) * 4
    second = as_array(student.attend_with_cache(q, k2, v2, student.KVCache()))
    expect_close(second[:, :, :-1], as_array(first)[:, :, :-1], what="마지막 토큰을 바꾼 뒤 앞 토큰들의 출력",
                 against="바꾸기 전의 출력")


@pytest.mark.points(0.4)
def test_two_caches_interleaved(student, rng):
    """캐시 두 개(두 층 또는 두 요청)를 번갈아 써도 각자 자기 캐시만 봄"""
    qa, ka, va = draw(rng, 1, 2, 5, 8)
    qb, kb, vb = draw(rng, 1, 2, 5, 8)
    first, second = student.KVCache(), student.KVCache()
    expected_a, expected_b = full_causal(qa, ka, va), full_causal(qb, kb, vb)
    for a, b in steps_of((3, 1, 1)):
        for name, cache, (q, k, v), expected in (("첫 번째", first, (qa, ka, va), expected_a),
                                                 ("두 번째", second, (qb, kb, vb), expected_b)):
            got = student.attend_with_cache(q[:, :, a:b], k[:, :, a:b], v[:, :, a:b], cache)
            expect_close(got, expected[:, :, a:b], what=f"{name} 캐시의 토큰 {a}..{b - 1} 출력",
                         against="그 캐시의 시퀀스만의 인과 어텐션")
