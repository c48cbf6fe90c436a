"""`attend_with_rope_cache` (kv_cache): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/kv_cache/test_attend_with_rope_cache.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import forbidden
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct attend_with_rope_cache; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def attend_with_rope_cache(query, key, value, cache, base=10000.0):
    t, start = np.shape(query)[-2], len(cache)                                          # @SIZES
    positions = np.arange(start, start + t)                                             # @POSITIONS
    q = apply_rope(query, positions, base)                                              # @QUERY
    keys, values = cache.append(apply_rope(key, positions, base), value)                # @APPEND
    return scaled_dot_product_attention(q, keys, values, causal_mask(t, len(cache)))    # @ATTEND
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="rope_positions_restart",
        exercise="attend_with_rope_cache",
        title="단계마다 위치를 0부터 다시 셈 (np.arange(t)): 디코딩한 토큰이 모두 위치 0에 놓임",
        hint="새 토큰들의 절대 위치는 len(cache) .. len(cache) + t - 1입니다 (덧붙이기 전의 len(cache)부터).",
        source=_with(SIZES="t = np.shape(query)[-2]", POSITIONS="positions = np.arange(t)"),
    ),
    Mistake(
        id="rope_rerotates_cached_keys",
        exercise="attend_with_rope_cache",
        title="이미 회전해 캐시에 넣은 키를 단계마다 다시 회전함 (캐시된 키가 두 번 이상 돌아감)",
        hint="캐시의 키는 넣을 때 한 번, 자기 절대 위치로 회전되어 있습니다. append가 돌려준 keys를 그대로 쓰세요.",
        source=_with(APPEND="keys, values = cache.append(apply_rope(key, positions, base), value)\n"
                            "keys = apply_rope(keys, np.arange(len(cache)), base)"),
    ),
    Mistake(
        id="rope_caches_unrotated_keys",
        exercise="attend_with_rope_cache",
        title="회전하지 않은 키를 캐시에 넣고 그대로 어텐션함 (질의만 회전됨)",
        hint="cache.append에는 apply_rope(key, 위치)로 회전한 키를 넘기세요. 캐시의 키와 새 질의가 모두 회전되어 "
             "있어야 점수가 위치의 차이에만 의존합니다.",
        source=_with(APPEND="k = apply_rope(key, positions, base)\n"
                            "keys, values = cache.append(key, value)"),
    ),
    Mistake(
        id="rope_rotates_whole_cache_each_step",
        exercise="attend_with_rope_cache",
        title="회전하지 않은 키를 캐시에 두고 단계마다 캐시 전체를 회전함: 출력은 맞지만 캐시 내용이 계약과 다름",
        hint="계약은 키를 절대 위치로 회전한 뒤 캐시에 넣는 것입니다. 그러면 단계마다 캐시 전체(T개)를 다시 돌리는 "
             "O(T) 계산이 사라지고, cache.keys는 회전된 키입니다.",
        source=_with(APPEND="keys, values = cache.append(key, value)\n"
                            "keys = apply_rope(keys, np.arange(len(cache)), base)"),
    ),
    Mistake(
        id="rope_freq_i_over_d",
        exercise="attend_with_rope_cache",
        title="회전 주파수를 base ** (-2i/d)가 아니라 base ** (-i/d)로 계산함 (직접 쓴 회전에서)",
        hint="짝 i (i < d/2)의 각속도는 base ** (-2i / d)입니다. 지수에 2가 빠지면 뒤쪽 짝이 너무 빨리 돕니다. "
             "주어진 apply_rope를 쓰면 이 실수가 생기지 않습니다.",
        source=_with(POSITIONS="d = np.shape(query)[-1]\n"
                               "angle = np.arange(start, start + t)[:, None] * base ** (-np.arange(d // 2) / d)\n"
                               "cos, sin = np.cos(angle), np.sin(angle)\n"
                               "def rotate(x):\n"
                               "    x1, x2 = x[..., : d // 2], x[..., d // 2:]\n"
                               "    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)",
                     QUERY="",
                     APPEND="keys, values = cache.append(rotate(np.asarray(key)), value)",
                     ATTEND=("return scaled_dot_product_attention(rotate(np.asarray(query)), keys, values, "
                             "causal_mask(t, len(cache)))")),
    ),
    Mistake(
        id="rope_interleaved_pairs",
        exercise="attend_with_rope_cache",
        title="이웃한 성분 (x[2i], x[2i+1])을 짝지어 회전함 (회전 반쪽 방식이 아니라 이웃 짝 방식)",
        hint="이 과정의 RoPE는 GPT-NeoX, Hugging Face transformers의 Llama 구현, Keras Hub와 같은 "
             "회전 반쪽 방식입니다: 짝은 (x[..., i], x[..., i + d/2])입니다(이웃 짝 방식은 Meta의 Llama "
             "참조 코드와 RoFormer). 주어진 apply_rope를 쓰면 이 실수가 생기지 않습니다.",
        source=_with(POSITIONS="d = np.shape(query)[-1]\n"
                               "angle = np.arange(start, start + t)[:, None] * base ** (-2 * np.arange(d // 2) / d)\n"
                               "cos, sin = np.cos(angle), np.sin(angle)\n"
                               "def rotate(x):\n"
                               "    even, odd = x[..., 0::2], x[..., 1::2]\n"
                               "    out = np.empty(np.shape(x))\n"
                               "    out[..., 0::2] = even * cos - odd * sin\n"
                               "    out[..., 1::2] = even * sin + odd * cos\n"
                               "    return out",
                     QUERY="",
                     APPEND="keys, values = cache.append(rotate(np.asarray(key)), value)",
                     ATTEND=("return scaled_dot_product_attention(rotate(np.asarray(query)), keys, values, "
                             "causal_mask(t, len(cache)))")),
    ),
    Mistake(
        id="rope_positions_after_append",
        exercise="attend_with_rope_cache",
        title="위치를 append한 뒤의 len(cache)부터 셈: 새 토큰들이 t칸씩 밀린 위치에서 회전됨",
        hint=("새 토큰의 위치는 덧붙이기 전의 len(cache)부터 len(cache) + t - 1까지입니다. 위치를 먼저 구하고 그다음 "
              "append하세요."),
        source=_with(SIZES="t = np.shape(query)[-2]",
                     POSITIONS="positions = np.arange(len(cache) + t, len(cache) + 2 * t)",
                     QUERY="",
                     APPEND="keys, values = cache.append(apply_rope(key, positions, base), value)\n"
                            "q = apply_rope(query, positions, base)"),
    ),
    Mistake(
        id="rope_rotates_values",
        exercise="attend_with_rope_cache",
        title="값(V)도 회전함",
        hint="RoPE는 질의와 키만 돌립니다. 값은 그대로 캐시에 넣고 그대로 섞으세요.",
        source=_with(QUERY="",
                     APPEND=("keys, values = cache.append(apply_rope(key, positions, base), "
                             "apply_rope(value, positions, base))\n"
                             "q = apply_rope(query, positions, base)")),
    ),
    Mistake(
        id="rope_query_not_rotated",
        exercise="attend_with_rope_cache",
        title="키만 회전하고 질의는 회전하지 않음",
        hint=("점수가 위치의 차이에만 달리려면 질의도 자기 위치에서 같은 방식으로 돌려야 합니다: apply_rope(query, "
              "positions, base)."),
        source=_with(POSITIONS="",
                     QUERY="",
                     APPEND="keys, values = cache.append(apply_rope(key, np.arange(start, start + t), base), value)",
                     ATTEND="return scaled_dot_product_attention(query, keys, values, causal_mask(t, len(cache)))"),
    ),
]

EXERCISE = Exercise(
    "attend_with_rope_cache",
    assignment="kv_cache",
    points=3,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.ATTENTION,
    mistakes=MISTAKES,
)
