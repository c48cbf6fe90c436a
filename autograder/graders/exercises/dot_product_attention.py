"""`dot_product_attention` (attention): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/attention/test_dot_product_attention.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import answers, forbidden
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct dot_product_attention; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def dot_product_attention(query, key, value, mask=None):
    scores = query @ np.swapaxes(key, -1, -2)                      # @SCORES
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)                   # @MASK
    return softmax(scores, axis=-1) @ value                        # @WEIGHTS
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="dot_scaled_by_sqrt_d",
        exercise="dot_product_attention",
        title="스케일하지 않아야 할 내적 점수를 √d로 나눔",
        hint="dot_product_attention의 점수는 q · k 그대로입니다. √d로 나누는 것은 scaled_dot_product_attention입니다.",
        source=_with(SCORES="scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])"),
    ),
    Mistake(
        id="dot_key_T_on_batches",
        exercise="dot_product_attention",
        title="key.T로 전치해 배치 입력에서 모든 축이 뒤집힘",
        hint="3차원 이상에서 .T는 모든 축을 뒤집습니다. 마지막 두 축만 바꾸려면 np.swapaxes(key, -1, -2)를 쓰세요.",
        source=_with(SCORES="scores = query @ key.T"),
        diagnosable=False,   # batched inputs raise an error (shown to the student); 2-D inputs are right
    ),
    Mistake(
        id="dot_mask_with_zero",
        exercise="dot_product_attention",
        title="가린 점수를 -inf가 아니라 0으로 둠",
        hint=("점수 0은 exp(0) = 1이라 가린 키도 가중치를 받습니다. 가린 점수는 -inf로 두세요: np.where(mask, "
              "scores, -np.inf)."),
        source=_with(MASK="scores = np.where(mask, scores, 0.0)"),
    ),
    Mistake(
        id="dot_mask_after_softmax",
        exercise="dot_product_attention",
        title="softmax 뒤에 가중치를 0으로 만들어 행 합이 1이 아님",
        hint=("마스크는 softmax 전에 점수에 -inf로 넣으세요. 뒤에서 0으로 만들면 남은 가중치의 합이 1보다 "
              "작아집니다."),
        source=_with(SCORES="weights = softmax(query @ np.swapaxes(key, -1, -2), axis=-1)",
                     MASK="weights = weights * mask", WEIGHTS="return weights @ value"),
    ),
    Mistake(
        id="dot_softmax_over_queries",
        exercise="dot_product_attention",
        title="softmax를 질의 축(axis=-2)으로 취함",
        hint="점수 (..., Tq, Tk)에서 정규화는 키 축, 즉 마지막 축(axis=-1)입니다.",
        source=_with(WEIGHTS="return softmax(scores, axis=-2) @ value"),
    ),
]

EXERCISE = Exercise(
    "dot_product_attention",
    assignment="attention",
    points=2,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.ATTENTION,
    mistakes=MISTAKES,
    # answered with their answers while it is graded, so that it is judged on its own logic (isolation.py)
    callees=("softmax",),
    # a call of it while another exercise is graded is answered with this (answers.py)
    answer=answers.DOT_PRODUCT_ATTENTION,
)
