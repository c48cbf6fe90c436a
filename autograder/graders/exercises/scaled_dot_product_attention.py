"""`scaled_dot_product_attention` (attention): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/attention/test_scaled_dot_product_attention.py``, declares at its top the references, tolerances
and stored GPU cases it compares with.
"""
from autograder.graders import answers, forbidden
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct scaled_dot_product_attention; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    d = query.shape[-1]                                            # @DIM
    scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(d)         # @SCORES
    if mask is not None:                                           # @IF_MASK
        scores = np.where(mask, scores, -np.inf)                   # @MASK
    weights = softmax(scores, axis=-1)                             # @WEIGHTS
    out = weights @ value
    return (out, weights) if return_weights else out               # @RETURN
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="sdpa_missing_scale",
        exercise="scaled_dot_product_attention",
        title="점수를 √d로 나누지 않음",
        hint="점수는 Q Kᵀ / √d입니다 (d = query.shape[-1]). 나누지 않으면 softmax가 너무 뾰족해집니다.",
        source=_with(DIM="", SCORES="scores = query @ np.swapaxes(key, -1, -2)"),
    ),
    Mistake(
        id="sdpa_scale_by_d",
        exercise="scaled_dot_product_attention",
        title="√d가 아니라 d로 나눔",
        hint="스케일은 1/√d입니다: np.sqrt(d) 또는 d ** 0.5로 나누세요.",
        source=_with(SCORES="scores = query @ np.swapaxes(key, -1, -2) / d"),
    ),
    Mistake(
        id="sdpa_mask_after_softmax",
        exercise="scaled_dot_product_attention",
        title="softmax 뒤에 가중치를 0으로 만들어 행 합이 1이 아님",
        hint="마스크는 softmax 전에 점수에 -inf로 넣으세요. 뒤에서 0으로 만들면 남은 가중치의 합이 1보다 작아집니다.",
        source=_with(IF_MASK="weights = softmax(scores, axis=-1)\n"
                             "if mask is not None:",
                     MASK="weights = weights * mask", WEIGHTS=""),
    ),
    Mistake(
        id="sdpa_inverted_mask",
        exercise="scaled_dot_product_attention",
        title="마스크를 반대로 씀 (True를 가림)",
        hint="이 과제의 규칙은 True = 볼 수 있음입니다. np.where(mask, scores, -np.inf)처럼 False인 곳을 가리세요.",
        source=_with(MASK="scores = np.where(mask, -np.inf, scores)"),
    ),
    Mistake(
        id="sdpa_mask_with_zero",
        exercise="scaled_dot_product_attention",
        title="가린 점수를 -inf가 아니라 0으로 둠",
        hint="점수 0은 exp(0) = 1이라 가린 키도 가중치를 받습니다. 가린 점수는 -inf (또는 아주 큰 음수)로 두세요.",
        source=_with(MASK="scores = scores * mask"),
    ),
    Mistake(
        id="sdpa_softmax_over_queries",
        exercise="scaled_dot_product_attention",
        title="softmax를 질의 축(axis=-2)으로 취함",
        hint="점수 행렬 (..., Tq, Tk)에서 정규화는 키 축, 즉 마지막 축(axis=-1)입니다: 질의마다 키들에 대한 분포.",
        source=_with(WEIGHTS="weights = softmax(scores, axis=-2)"),
    ),
    Mistake(
        id="sdpa_weights_unmasked",
        exercise="scaled_dot_product_attention",
        title="return_weights=True일 때 마스크를 넣기 전의 가중치를 돌려줌 (출력은 맞음)",
        hint=("돌려주는 weights는 출력을 만든 바로 그 가중치여야 합니다: 가려진 위치가 정확히 0이고 행 합이 1인, "
              "마스크를 넣은 뒤의 softmax."),
        source=_with(IF_MASK="", MASK="",
                     WEIGHTS="unmasked = softmax(scores, axis=-1)\n"
                             "weights = unmasked if mask is None "
                             "else softmax(np.where(mask, scores, -np.inf), axis=-1)",
                     RETURN="return (out, unmasked) if return_weights else out"),
    ),
    Mistake(
        id="sdpa_exp_without_max",
        exercise="scaled_dot_product_attention",
        title="softmax를 직접 쓰며 최댓값을 빼지 않아 큰 점수에서 exp가 넘침 (inf/NaN)",
        hint=("float32 점수가 88을 넘으면 exp가 inf가 됩니다. 직접 만든 softmax를 부르거나, exp를 취하기 전에 행마다 "
              "최댓값을 빼세요 (가린 위치는 그대로 -inf)."),
        source=_with(DIM="",
                     SCORES="scores = query @ np.swapaxes(key, -1, -2) * query.shape[-1] ** -0.5\n"
                            "e = np.exp(scores)",
                     MASK="e = np.where(mask, e, 0.0)",
                     WEIGHTS="weights = e / np.sum(e, axis=-1, keepdims=True)"),
    ),
    Mistake(
        id="sdpa_normalizes_over_all",
        exercise="scaled_dot_product_attention",
        title="softmax를 직접 쓰며 키 축이 아니라 (Tq, Tk) 전체의 합으로 나눔",
        hint=("가중치는 질의마다(행마다) 합이 1입니다: 지수의 합은 키 축 axis=-1을 따라서만 구하세요 "
              "(keepdims=True)."),
        source=_with(WEIGHTS="e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))\n"
                             "weights = e / np.sum(e, axis=(-2, -1), keepdims=True)"),
    ),
]

EXERCISE = Exercise(
    "scaled_dot_product_attention",
    assignment="attention",
    points=3,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.ATTENTION,
    mistakes=MISTAKES,
    # answered with their answers while it is graded, so that it is judged on its own logic (isolation.py)
    callees=("softmax",),
    # a call of it while another exercise is graded is answered with this (answers.py)
    answer=answers.SCALED_DOT_PRODUCT_ATTENTION,
)
