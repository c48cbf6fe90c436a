"""`self_attention` (attention): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/attention/test_self_attention.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import forbidden
from autograder.graders.exercises import ATTENTION_STEPS, Exercise, Mistake, rewritten

# The correct self_attention; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def self_attention(x, w_q, w_k, w_v, causal=False):
    q, k, v = x @ w_q, x @ w_k, x @ w_v                                 # @PROJECT
    mask = causal_mask(x.shape[-2]) if causal else None                 # @MASK
    return scaled_dot_product_attention(q, k, v, mask)                  # @ATTEND
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="self_attention_no_value_projection",
        exercise="self_attention",
        title="값에 w_v를 곱하지 않고 x를 그대로 씀",
        hint="V = x @ w_v입니다. 질의·키·값 모두 각자의 가중치 행렬로 투영하세요.",
        source=_with(PROJECT="q = x @ w_q\nk = x @ w_k", ATTEND="return scaled_dot_product_attention(q, k, x, mask)"),
    ),
    Mistake(
        id="self_attention_scale_by_model_dim",
        exercise="self_attention",
        title="√dk 대신 입력 차원 √D로 나눔",
        hint="스케일은 질의·키의 차원 dk = w_q.shape[1]로 정합니다. 입력 x의 차원 D가 아닙니다.",
        source=_with(MASK="scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(x.shape[-1])\n"
                          "if causal:\n"
                          "    scores = np.where(causal_mask(x.shape[-2]), scores, -np.inf)",
                     ATTEND="return softmax(scores, axis=-1) @ v"),
    ),
    Mistake(
        id="self_attention_ignores_causal",
        exercise="self_attention",
        title="causal=True일 때도 마스크를 쓰지 않음",
        hint="causal이면 causal_mask(T)를 scaled_dot_product_attention의 mask로 넘기세요.",
        source=_with(MASK="", ATTEND="return scaled_dot_product_attention(q, k, v)"),
    ),
    Mistake(
        id="self_attention_no_scale",
        exercise="self_attention",
        title="점수를 √dk로 나누지 않음",
        hint="Q Kᵀ를 √dk (dk = w_q.shape[1])로 나누세요. scaled_dot_product_attention을 부르면 저절로 됩니다.",
        source=_with(MASK="scores = q @ np.swapaxes(k, -1, -2)\n"
                          "if causal:\n"
                          "    scores = np.where(causal_mask(x.shape[-2]), scores, -np.inf)",
                     ATTEND="return softmax(scores, axis=-1) @ v"),
    ),
    Mistake(
        id="self_attention_scale_by_dk",
        exercise="self_attention",
        title="√dk가 아니라 dk로 나눔",
        hint="스케일은 1/√dk입니다: np.sqrt(dk) 또는 dk ** 0.5로 나누세요.",
        source=_with(MASK="scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1]\n"
                          "if causal:\n"
                          "    scores = np.where(causal_mask(x.shape[-2]), scores, -np.inf)",
                     ATTEND="return softmax(scores, axis=-1) @ v"),
    ),
    Mistake(
        id="self_attention_future_mask",
        exercise="self_attention",
        title="인과 마스크로 np.triu를 씀: 과거가 아니라 미래를 봄",
        hint="causal=True이면 각 위치는 자기 자신과 과거만 봅니다: causal_mask(T) (아래 삼각형, True = 볼 수 있음).",
        source=_with(PROJECT="t = x.shape[-2]",
                     MASK="mask = np.triu(np.ones((t, t), dtype=bool)) if causal else None",
                     ATTEND="return scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, mask)"),
    ),
]

EXERCISE = Exercise(
    "self_attention",
    assignment="attention",
    points=3,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.ATTENTION,
    mistakes=MISTAKES,
    # answered with their answers while it is graded, so that it is judged on its own logic (isolation.py)
    callees=ATTENTION_STEPS,
)
