"""attend_with_rope_cache(query, key, value, cache, base=10000.0): the t newest tokens sit at absolute positions
len(cache) .. len(cache) + t - 1 (before appending); rotate query and key there with apply_rope (rotate-half),
append the rotated keys and the values, attend with causal_mask(t, len(cache)).

The reference is the whole sequence at once: RoPE at positions 0..T-1, then causal attention (float64). A prefill
followed by decoding steps must add up to it, and the cache must hold the keys already rotated at their absolute
positions (the contract: a cache that keeps raw keys and rotates all of them again at every step gives the right
outputs but costs O(T) rotations per token and breaks every other user of the cache).

As for attend_with_cache, the cache is the student's own ``KVCache`` (a ``Remote``), and a failure is diagnosed by
replaying the same steps with each known mistake on a trusted cache in this process.
"""
import numpy as np
import pytest

from autograder.graders import references
from autograder.graders.attention.inputs import normal
from autograder.graders.compare import GradingFailure, expect_close, expect_true
from autograder.graders.diagnosis import of_replay, with_causes
from autograder.graders.kv_cache import number

# Judged against (forbidden routines and known mistakes: exercises/attend_with_rope_cache.py):
REFERENCE = references.rope_causal_attention
REFERENCES = ("float64 RoPE at positions 0..T-1, then causal torch SDPA",)
TOLERANCES = {"STUDENT": "every comparison"}


def draw(rng, b, h, t, d, dtype=np.float32):
    return tuple(normal(rng, b, h, t, d, dtype=dtype) for _ in range(3))


def steps_of(sizes):
    """Token ranges [a, b) of consecutive steps."""
    bounds = np.cumsum((0,) + tuple(sizes))
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))


def call(attend, q, k, v, a, b, cache, base):
    """One step; the default base is left to the function (the contract's 10000.0) when base is None."""
    args = (q[:, :, a:b], k[:, :, a:b], v[:, :, a:b], cache)
    return attend(*args) if base is None else attend(*args, base=base)


def replay(attend, q, k, v, steps, base) -> list:
    """A mistake's observations on a trusted cache: each step's output, then the cached keys."""
    cache = references.KVCache()
    return [call(attend, q, k, v, a, b, cache, base) for a, b in steps] + [cache.keys]


def check_steps(student, q, k, v, sizes, base=None, check_cache=False):
    """Prefill/decode steps on a fresh student cache: every step's output equals the rows of the whole-sequence
    RoPE attention, the cache grows by exactly the new tokens, and (check_cache) it holds the rotated keys."""
    steps = steps_of(sizes)
    theta = 10000.0 if base is None else base
    expected = REFERENCE(q, k, v, theta)                    # (B, H, T, d)
    rotated = references.apply_rope(k, np.arange(k.shape[2]), theta)              # (B, H, T, d)
    wanted = [expected[:, :, a:b] for a, b in steps] + [rotated]
    cache = student.KVCache()
    observed = []

    def named(failure):
        found = of_replay("attend_with_rope_cache", lambda fn: replay(fn, q, k, v, steps, base),
                                observed, wanted[: len(observed)])
        return GradingFailure(with_causes(failure.message, found), found)

    for a, b in steps:
        what = f"토큰 {a}" if b - a == 1 else f"토큰 {a}..{b - 1}"
        what += f" (위치 {a}부터, 새 토큰 {b - a}개, 캐시에 {a}개가 있을 때)"
        observed.append(call(student.attend_with_rope_cache, q, k, v, a, b, cache, base))
        try:
            expect_close(observed[-1], expected[:, :, a:b], what=f"{what}의 출력",
                         against="전체 시퀀스에 RoPE를 적용한 인과 어텐션 (float64)")
        except GradingFailure as failure:
            raise named(failure) from None
        size = number(len(cache), "len(cache)")
        expect_true(size == b, f"{what}: attend_with_rope_cache 뒤 len(cache)는 {b}이어야 하는데 {size}입니다 "
                               f"(회전한 키와 값을 캐시에 한 번씩 덧붙이세요).")
    if check_cache:
        observed.append(cache.keys)
        try:
            expect_close(observed[-1], rotated, what="cache.keys",
                         against="각 토큰의 절대 위치로 한 번 회전한 키 (apply_rope(key, 위치))")
        except GradingFailure as failure:
            raise named(failure) from None
        expect_close(cache.values, v, what="cache.values", against="넘긴 값을 회전 없이 이어 붙인 것")


SCHEDULES = [  # (B, H, d, sizes of the steps, dtype)
    pytest.param(2, 3, 8, (5, 1, 1, 1, 2), np.float32, id="b2-h3-d8-prefill5-decode3-chunk2"),
    pytest.param(1, 2, 16, (1,) * 7, np.float32, id="b1-h2-d16-decode-from-empty"),
    pytest.param(2, 2, 8, (4, 3, 1), np.float64, id="b2-h2-d8-chunks-4-3-1-float64"),
]


@pytest.mark.points(1.5)
@pytest.mark.parametrize("b, h, d, sizes, dtype", SCHEDULES)
def test_prefill_and_decode_equal_full_rope_attention(student, rng, b, h, d, sizes, dtype):
    """프리필 + 디코딩의 출력이 전체 시퀀스(위치 0..T-1에 RoPE)의 인과 어텐션과 같음"""
    q, k, v = draw(rng, b, h, sum(sizes), d, dtype)
    check_steps(student, q, k, v, sizes)


@pytest.mark.points(0.5)
def test_prefill_only(student, rng):
    """프롬프트 전체를 한 번에 넣으면 (위치 0..T-1) 전체 RoPE 인과 어텐션과 같음"""
    q, k, v = draw(rng, 2, 2, 9, 8)
    check_steps(student, q, k, v, (9,))


@pytest.mark.points(0.6)
def test_cache_holds_keys_rotated_at_their_positions(student, rng):
    """캐시에는 각자 절대 위치로 한 번 회전한 키와 회전하지 않은 값이 순서대로 들어 있음"""
    q, k, v = draw(rng, 2, 2, 7, 8)
    check_steps(student, q, k, v, (3, 1, 1, 2), check_cache=True)


@pytest.mark.points(0.4)
def test_base_is_used(student, rng):
    """base 인자(예: Llama 3의 500000)를 회전 주파수에 씀"""
    q, k, v = draw(rng, 1, 2, 6, 8)
    check_steps(student, q, k, v, (4, 1, 1), base=500_000.0)

