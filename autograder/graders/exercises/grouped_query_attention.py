"""`grouped_query_attention` (kv_cache): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/kv_cache/test_grouped_query_attention.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import forbidden
from autograder.graders.exercises import ATTENTION_STEPS, Exercise, Mistake, rewritten

# The correct grouped_query_attention; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def grouped_query_attention(query, key, value, mask=None):
    hq, hkv = query.shape[1], key.shape[1]
    if hq % hkv != 0:                                       # @CHECK
        raise ValueError("Hq must be a multiple of Hkv")    # @RAISE
    g = hq // hkv                                           # @GROUP
    k = np.repeat(key, g, axis=1)                           # @KEYS
    v = np.repeat(value, g, axis=1)                         # @VALUES
    return scaled_dot_product_attention(query, k, v, mask)  # @ATTEND
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="gqa_tiled_heads",
        exercise="grouped_query_attention",
        title="KV 헤드를 np.tile로 반복해 질의 헤드 h가 KV 헤드 h % Hkv를 봄",
        hint="질의 헤드 h는 KV 헤드 h // (Hq // Hkv)를 봅니다 (연속한 g 개가 한 그룹). np.tile은 0,1,0,1,...로 "
             "섞고, np.repeat(k, g, axis=1)은 0,0,1,1,...로 그룹을 만듭니다.",
        source=_with(KEYS="k = np.tile(key, (1, g, 1, 1))", VALUES="v = np.tile(value, (1, g, 1, 1))"),
    ),
    Mistake(
        id="gqa_assert_instead_of_value_error",
        exercise="grouped_query_attention",
        title="헤드 수가 맞지 않을 때 ValueError가 아니라 assert (AssertionError)",
        hint="계약은 ValueError입니다: if hq % hkv != 0: raise ValueError(...). assert는 python -O에서 사라지고 "
             "예외 종류도 다릅니다.",
        source=_with(CHECK='assert hq % hkv == 0, "Hq must be a multiple of Hkv"', RAISE=""),
    ),
    Mistake(
        id="gqa_scale_by_all_heads",
        exercise="grouped_query_attention",
        title="헤드 차원 √d가 아니라 모든 질의 헤드의 폭 √(Hq·d)로 나눔",
        hint=("점수는 헤드마다 q · k / √d입니다 (d = query.shape[-1]). 반복한 K, V를 주어진 "
              "scaled_dot_product_attention에 넘기면 저절로 됩니다."),
        source=_with(CHECK="if hq % hkv:", RAISE='raise ValueError("heads")', GROUP="",
                     KEYS="k = np.repeat(key, hq // hkv, axis=1)", VALUES="v = np.repeat(value, hq // hkv, axis=1)",
                     ATTEND="scores = query @ np.swapaxes(k, -1, -2) / np.sqrt(hq * query.shape[-1])\n"
                            "if mask is not None:\n"
                            "    scores = np.where(mask, scores, -np.inf)\n"
                            "return softmax(scores, axis=-1) @ v"),
    ),
]

EXERCISE = Exercise(
    "grouped_query_attention",
    assignment="kv_cache",
    points=3,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.ATTENTION,
    mistakes=MISTAKES,
    # answered with their answers while it is graded, so that it is judged on its own logic (isolation.py)
    # (softmax, causal_mask and scaled_dot_product_attention are given in the kv_cache notebook)
    callees=ATTENTION_STEPS,
)
