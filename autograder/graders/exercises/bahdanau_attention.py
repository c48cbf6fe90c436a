"""`bahdanau_attention` (attention): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/attention/test_bahdanau_attention.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import forbidden
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct bahdanau_attention; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def bahdanau_attention(query, key, value, w_q, w_k, v, mask=None):
    q = query @ w_q                                                # @QUERY
    k = key @ w_k                                                  # @KEY
    scores = np.tanh(q[..., :, None, :] + k[..., None, :, :]) @ v  # @SCORES
    if mask is not None:                                           # @IF_MASK
        scores = np.where(mask, scores, -np.inf)                   # @MASK
    return softmax(scores, axis=-1) @ value                        # @WEIGHTS
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="bahdanau_sum_instead_of_v",
        exercise="bahdanau_attention",
        title="v와의 내적 대신 tanh(...)를 그냥 합함",
        hint="점수는 v · tanh(q W_q + k W_k)입니다: .sum(-1) 대신 @ v로 h 축을 v와 내적하세요.",
        source=_with(SCORES="scores = np.tanh(q[..., :, None, :] + k[..., None, :, :]).sum(axis=-1)"),
    ),
    Mistake(
        id="bahdanau_swapped_projections",
        exercise="bahdanau_attention",
        title="질의에 w_k, 키에 w_q를 곱함 (투영이 뒤바뀜)",
        hint="질의는 query @ w_q, 키는 key @ w_k입니다. 모양이 같아 오류 없이 틀린 값이 나옵니다.",
        source=_with(QUERY="q = query @ w_k", KEY="k = key @ w_q"),
    ),
    Mistake(
        id="bahdanau_missing_tanh",
        exercise="bahdanau_attention",
        title="tanh를 빠뜨림 (점수가 선형이 되어 질의가 가중치에 영향을 주지 못함)",
        hint="점수는 v · tanh(q W_q + k W_k)입니다. tanh가 없으면 v·(q W_q)는 모든 키에 같아 softmax에서 사라집니다.",
        source=_with(SCORES="scores = (q[..., :, None, :] + k[..., None, :, :]) @ v"),
    ),
    Mistake(
        id="bahdanau_mask_after_softmax",
        exercise="bahdanau_attention",
        title="softmax 뒤에 가중치를 0으로 만들어 행 합이 1이 아님",
        hint="마스크는 softmax 전에 점수에 -inf로 넣으세요: np.where(mask, scores, -np.inf).",
        source=_with(QUERY="", KEY="",
                     SCORES="scores = np.tanh((query @ w_q)[..., :, None, :] + (key @ w_k)[..., None, :, :]) @ v",
                     IF_MASK="weights = softmax(scores, axis=-1)\n"
                             "if mask is not None:",
                     MASK="weights = np.where(mask, weights, 0.0)", WEIGHTS="return weights @ value"),
    ),
    Mistake(
        id="bahdanau_softmax_over_queries",
        exercise="bahdanau_attention",
        title="softmax를 질의 축(axis=-2)으로 취함",
        hint="점수 (..., Tq, Tk)에서 정규화는 키 축, 즉 마지막 축(axis=-1)입니다.",
        source=_with(QUERY="", KEY="",
                     SCORES="scores = np.tanh((query @ w_q)[..., :, None, :] + (key @ w_k)[..., None, :, :]) @ v",
                     WEIGHTS="return softmax(scores, axis=-2) @ value"),
    ),
    Mistake(
        id="bahdanau_tanh_after_v",
        exercise="bahdanau_attention",
        title="v와의 내적을 tanh 안에서 함: tanh(v · (q W_q + k W_k))",
        hint="점수는 v · tanh(q W_q + k W_k)입니다: tanh를 h개 성분마다 먼저 취하고, 그다음 v로 모으세요.",
        source=_with(QUERY="", KEY="",
                     SCORES="scores = np.tanh(((query @ w_q)[..., :, None, :] + (key @ w_k)[..., None, :, :]) @ v)"),
    ),
]

EXERCISE = Exercise(
    "bahdanau_attention",
    assignment="attention",
    points=2,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.ATTENTION,
    mistakes=MISTAKES,
    # answered with their answers while it is graded, so that it is judged on its own logic (isolation.py)
    callees=("softmax",),
)
