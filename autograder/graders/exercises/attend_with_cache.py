"""`attend_with_cache` (kv_cache): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/kv_cache/test_attend_with_cache.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import forbidden
from autograder.graders.exercises import ATTENTION_STEPS, Exercise, Mistake, rewritten

# The correct attend_with_cache; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def attend_with_cache(query, key, value, cache):
    keys, values = cache.append(key, value)                                                             # @APPEND
    return scaled_dot_product_attention(query, keys, values, causal_mask(query.shape[-2], len(cache)))  # @ATTEND
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="attend_top_left_mask",
        exercise="attend_with_cache",
        title="인과 마스크를 왼쪽 위에 맞춤 (np.tril에 오프셋 없음): 새 토큰이 캐시된 과거를 못 봄",
        hint="새 토큰 t 개가 캐시 T 개를 볼 때 질의 i는 j <= i + (T - t)인 키를 봅니다: causal_mask(t, len(cache)).",
        source=_with(ATTEND="t, total = query.shape[-2], len(cache)\n"
                            "mask = np.tril(np.ones((t, total), dtype=bool))\n"
                            "return scaled_dot_product_attention(query, keys, values, mask)"),
    ),
    Mistake(
        id="attend_ignores_cached_keys",
        exercise="attend_with_cache",
        title="캐시에 덧붙이기만 하고 어텐션은 새 토큰의 K, V로만 함",
        hint="append가 돌려준 (keys, values), 즉 캐시 전체로 어텐션해야 새 토큰이 과거를 봅니다.",
        source=_with(APPEND="cache.append(key, value)",
                     ATTEND="return scaled_dot_product_attention(query, key, value, causal_mask(query.shape[-2]))"),
    ),
    Mistake(
        id="attend_square_mask",
        exercise="attend_with_cache",
        title="마스크를 causal_mask(t) (t x t)로 만들어 캐시가 있을 때 여러 토큰 덩어리에서 모양이 맞지 않음",
        hint="점수 행렬은 (t, len(cache))입니다: causal_mask(t, len(cache)). t = 1일 때만 우연히 맞습니다.",
        source=_with(ATTEND="return scaled_dot_product_attention(query, keys, values, causal_mask(query.shape[-2]))"),
        diagnosable=False,   # a multi-token chunk after a prefill raises a broadcasting error (no output)
    ),
    Mistake(
        id="attend_no_mask",
        exercise="attend_with_cache",
        title="마스크 없이 캐시 전체를 봄: 여러 토큰을 한 번에 넣으면 앞 토큰이 뒤 토큰(미래)을 봄",
        hint=("새 토큰 t개는 causal_mask(t, len(cache))로 미래를 가려야 합니다. 한 토큰씩 디코딩할 때만 마스크가 "
              "필요 없어 보입니다."),
        source=_with(ATTEND="return scaled_dot_product_attention(query, keys, values)"),
    ),
]

EXERCISE = Exercise(
    "attend_with_cache",
    assignment="kv_cache",
    points=3,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.ATTENTION,
    mistakes=MISTAKES,
    # answered with their answers while it is graded, so that it is judged on its own logic (isolation.py)
    # (softmax, causal_mask and scaled_dot_product_attention are given in the kv_cache notebook)
    callees=ATTENTION_STEPS,
    # it depends on the cache it is given without naming KVCache in its code (the dependency note)
    implied=("KVCache",),
)
