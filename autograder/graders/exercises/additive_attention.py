"""`additive_attention` (attention): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/attention/test_additive_attention.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import forbidden
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct additive_attention; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def additive_attention(query, key, value, mask=None):
    scores = np.tanh(query[..., :, None, :] + key[..., None, :, :]).sum(axis=-1)  # @SCORES
    if mask is not None:                                                          # @IF_MASK
        scores = np.where(mask, scores, -np.inf)                                  # @MASK
    return softmax(scores, axis=-1) @ value                                       # @WEIGHTS
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="additive_product_instead_of_sum",
        exercise="additive_attention",
        title="tanh(q + k) 대신 tanh(q * k)로 점수를 계산",
        hint="가산 어텐션의 점수는 질의와 키를 더한 뒤 tanh를 취해 d 축으로 더한 값입니다: tanh(q + k).sum(-1).",
        source=_with(SCORES="scores = np.tanh(query[..., :, None, :] * key[..., None, :, :]).sum(axis=-1)"),
    ),
    Mistake(
        id="additive_mask_with_zero",
        exercise="additive_attention",
        title="가린 점수를 -inf가 아니라 0으로 둠",
        hint="가산 점수는 음수일 수도 있어서 0은 오히려 큰 점수가 됩니다. 가린 점수는 -inf로 두세요.",
        source=_with(MASK="scores = np.where(mask, scores, 0.0)"),
    ),
    Mistake(
        id="additive_missing_tanh",
        exercise="additive_attention",
        title="tanh를 빠뜨림: 점수가 Σ(q + k) = Σq + Σk가 되어 질의가 가중치를 바꾸지 못함",
        hint=("점수는 Σ_c tanh(q_c + k_c)입니다. tanh 없이 더하면 Σq는 행마다 같은 상수라 softmax에서 사라지고 키만 "
              "남습니다."),
        source=_with(SCORES="scores = (query[..., :, None, :] + key[..., None, :, :]).sum(axis=-1)"),
    ),
    Mistake(
        id="additive_mask_after_softmax",
        exercise="additive_attention",
        title="softmax 뒤에 가중치를 0으로 만들어 행 합이 1이 아님",
        hint=("마스크는 softmax 전에 점수에 -inf로 넣으세요: np.where(mask, scores, -np.inf). 뒤에서 0으로 만들면 "
              "남은 가중치의 합이 1보다 작아집니다."),
        source=_with(IF_MASK="weights = softmax(scores, axis=-1)\n"
                             "if mask is not None:",
                     MASK="weights = weights * mask", WEIGHTS="return weights @ value"),
    ),
    Mistake(
        id="additive_softmax_over_queries",
        exercise="additive_attention",
        title="softmax를 질의 축(axis=-2)으로 취함",
        hint="점수 (..., Tq, Tk)에서 정규화는 키 축, 즉 마지막 축(axis=-1)입니다: 질의마다 키들에 대한 분포.",
        source=_with(WEIGHTS="return softmax(scores, axis=-2) @ value"),
    ),
    Mistake(
        id="additive_mean_instead_of_sum",
        exercise="additive_attention",
        title="tanh(q + k)를 d 축으로 더하지 않고 평균을 냄 (점수가 1/d로 작아짐)",
        hint=("점수는 합 Σ_c tanh(q_c + k_c)입니다. np.mean은 d로 나눈 값이라 softmax가 더 평평해집니다: "
              ".sum(axis=-1)을 쓰세요."),
        source=_with(SCORES="scores = np.tanh(query[..., :, None, :] + key[..., None, :, :]).mean(axis=-1)"),
    ),
]

EXERCISE = Exercise(
    "additive_attention",
    assignment="attention",
    points=2,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.ATTENTION,
    mistakes=MISTAKES,
    # answered with their answers while it is graded, so that it is judged on its own logic (isolation.py)
    callees=("softmax",),
)
