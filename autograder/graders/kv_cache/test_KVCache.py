"""class KVCache: append(k, v) -> (keys, values) so far, concatenated on the time axis (axis 2); keys, values,
len(cache), nbytes.

The student's cache lives in the student's process (a ``Remote``): ``cache.append(k, v)`` runs there and returns
plain arrays. A failure is diagnosed by replaying the same appends on each known mistake's class here.
"""
import numpy as np
import pytest

from autograder.graders.attention.inputs import normal
from autograder.graders.compare import GradingFailure, as_array, expect_close, expect_true
from autograder.graders.diagnosis import of_replay, with_causes
from autograder.graders.kv_cache import number

# Judged against (forbidden routines and known mistakes: exercises/KVCache.py):
REFERENCES = ("numpy concatenation on the time axis (expected_observations below; references.KVCache)",)
TOLERANCES = {"STUDENT": "values", "EXACT": "sizes"}


def chunks_of(rng, b, h, d, sizes, dtype=np.float32):
    """Keys and values (B, H, t, d) of several appends."""
    return [(normal(rng, b, h, t, d, dtype=dtype), normal(rng, b, h, t, d, dtype=dtype)) for t in sizes]


def observe(cache, chunks) -> list:
    """What a cache shows along the appends: each append's (keys, values) and len, then keys, values."""
    seen = []
    for k, v in chunks:
        result = cache.append(k, v)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise GradingFailure("append(k, v)는 지금까지 쌓인 (keys, values) 두 값을 돌려주어야 합니다 "
                                 f"(지금은 {type(result).__name__}).")
        seen += [result[0], result[1], len(cache)]
    return seen + [cache.keys, cache.values]


def expected_observations(chunks) -> list:
    seen, total = [], 0
    for i in range(len(chunks)):
        keys = np.concatenate([k for k, _ in chunks[: i + 1]], axis=2)      # (B, H, T, d)
        values = np.concatenate([v for _, v in chunks[: i + 1]], axis=2)    # (B, H, T, d)
        total += chunks[i][0].shape[2]
        seen += [keys, values, total]
    return seen + [seen[-3], seen[-2]]


def labels(chunks) -> list:
    names, total = [], 0
    for i, (k, _) in enumerate(chunks):
        total += k.shape[2]
        names += [f"{i + 1}번째 append({k.shape[2]}토큰)가 돌려준 keys", f"{i + 1}번째 append가 돌려준 values",
                  f"{i + 1}번째 append 뒤 len(cache)"]
    return names + ["마지막 cache.keys", "마지막 cache.values"]


def check_scenario(student, chunks) -> list:
    """Run the appends on a fresh student cache and compare everything it shows, in order."""
    cache = student.KVCache()
    got = observe(cache, chunks)
    expected = expected_observations(chunks)
    for i, (what, g, e) in enumerate(zip(labels(chunks), got, expected, strict=False)):
        try:
            if isinstance(e, int):
                value = number(g, what)
                expect_true(value == e, f"{what}: {value}이(가) 나왔지만 {e}이어야 합니다.")
            else:
                if callable(g):
                    raise GradingFailure(f"{what}: 메서드가 아니라 속성(@property)이어야 합니다: "
                                         "cache.keys, cache.values.")
                expect_close(g, e, what=what, against="시간 축(axis 2)으로 이어 붙인 결과")
        except GradingFailure as failure:
            found = of_replay("KVCache", lambda cls: observe(cls(), chunks), got[: i + 1], expected[: i + 1])
            raise GradingFailure(with_causes(failure.message, found), found) from None
    return got


SCENARIOS = [  # (B, H, d, sizes of the appends): a prefill, then single tokens, then a chunk
    pytest.param(2, 3, 4, (5, 1, 1, 3), id="b2-h3-d4-prefill5-1-1-chunk3"),
    pytest.param(1, 8, 16, (1, 1, 1), id="b1-h8-d16-three-single-tokens"),
    pytest.param(3, 2, 8, (4, 2, 7), id="b3-h2-d8-4-2-7"),
]


@pytest.mark.points(0.8)
@pytest.mark.parametrize("b, h, d, sizes", SCENARIOS)
def test_append_returns_everything_so_far(student, rng, b, h, d, sizes):
    """append(k, v)는 지금까지 쌓인 (keys, values)를 시간 축(axis 2)으로 이어 붙여 돌려주고 len이 토큰 수"""
    check_scenario(student, chunks_of(rng, b, h, d, sizes))


@pytest.mark.points(0.2)
def test_new_cache_is_empty(student, rng):
    """새 캐시는 비어 있고 (len 0, nbytes 0), 첫 append 뒤에는 그 토큰들을 담음"""
    cache = student.KVCache()
    size = number(len(cache), "len(cache)")
    expect_true(size == 0, f"새 캐시의 len(cache)는 0이어야 합니다 (지금은 {size}).")
    nbytes = cache.nbytes
    expect_true(not callable(nbytes), "nbytes는 메서드가 아니라 속성(@property)이어야 합니다: cache.nbytes")
    nbytes = number(nbytes, "빈 캐시의 nbytes")
    expect_true(nbytes == 0, f"새 캐시의 nbytes는 0이어야 합니다 (지금은 {nbytes}).")
    k, v = chunks_of(rng, 2, 2, 4, (3,))[0]
    cache.append(k, v)
    size = number(len(cache), "len(cache)")
    expect_true(size == 3, f"빈 캐시에 3토큰을 넣은 뒤 len(cache)는 3이어야 합니다 (지금은 {size}).")
    expect_close(cache.keys, k, what="첫 append 뒤의 cache.keys", against="넣은 키")


@pytest.mark.points(0.4)
def test_keys_values_and_len_properties(student, rng):
    """keys, values 속성과 len(cache): float64 입력, 여러 번의 append 뒤에도 쌓인 그대로"""
    chunks = chunks_of(rng, 2, 4, 8, (6, 1, 2, 1), dtype=np.float64)
    check_scenario(student, chunks)


@pytest.mark.points(0.4)
@pytest.mark.parametrize("dtype", [pytest.param(np.float32, id="float32"), pytest.param(np.float16, id="float16")])
def test_nbytes(student, rng, dtype):
    """nbytes = 저장한 keys와 values의 바이트 합 (K와 V 둘 다, 저장한 자료형 그대로)"""
    chunks = chunks_of(rng, 2, 3, 8, (5, 1, 2), dtype=dtype)
    cache = student.KVCache()
    got = observe(cache, chunks)
    nbytes = cache.nbytes
    expect_true(not callable(nbytes), "nbytes는 메서드가 아니라 속성(@property)이어야 합니다: cache.nbytes")
    nbytes = number(nbytes, "cache.nbytes")
    keys, values = as_array(got[-2], "cache.keys"), as_array(got[-1], "cache.values")
    expect_close(keys, np.concatenate([k for k, _ in chunks], axis=2), what="cache.keys",
                 against="시간 축(axis 2)으로 이어 붙인 결과")
    # The student may keep the cache in the dtype it was given or convert it (float64, a torch tensor) as long
    # as it does so consistently: nbytes must count K and V at the size of one stored element. That size is the
    # input's itemsize or the itemsize of the arrays that come back (torch float16 arrives here as float32, so
    # the input's size stands for a half-precision tensor kept as such).
    elements = keys.size + values.size
    sizes = {np.dtype(dtype).itemsize, np.asarray(got[-2]).dtype.itemsize}
    accepted = sorted(elements * s for s in sizes)
    if nbytes not in accepted:
        found = of_replay("KVCache", lambda cls: observe(cls(), chunks) + [cls_nbytes(cls, chunks)],
                                got + [nbytes], expected_observations(chunks) + [accepted[0]])
        message = (f"cache.nbytes가 {nbytes:,}입니다. keys {keys.shape}와 values {values.shape}를 "
                   f"{np.dtype(dtype).name}로 저장했다면 {accepted[0]:,} 바이트여야 합니다 "
                   f"(K와 V 둘 다, 원소 하나의 바이트 x 원소 수).")
        raise GradingFailure(with_causes(message, found), found)


def cls_nbytes(cls, chunks):
    cache = cls()
    for k, v in chunks:
        cache.append(k, v)
    return cache.nbytes


@pytest.mark.points(0.2)
def test_caches_are_independent(student, rng):
    """두 캐시(예: 두 층)는 서로의 토큰을 나눠 갖지 않음"""
    first, second = student.KVCache(), student.KVCache()
    a, b = chunks_of(rng, 1, 2, 4, (3,))[0], chunks_of(rng, 1, 2, 4, (2,))[0]
    first.append(*a)
    second.append(*b)
    expect_true(number(len(first), "len") == 3 and number(len(second), "len") == 2,
                f"캐시 두 개에 3토큰, 2토큰을 넣었는데 len이 {len(first)}, {len(second)}입니다. 저장소를 클래스 "
                f"속성이 아니라 __init__에서 self.… 로 만드세요.")
    expect_close(second.keys, b[0], what="두 번째 캐시의 keys", against="그 캐시에 넣은 키")
    expect_close(first.values, a[1], what="첫 번째 캐시의 values", against="그 캐시에 넣은 값")
