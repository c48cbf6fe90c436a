"""`next_token_probs` (decoder): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/decoder/test_next_token_probs.py``, declares at its top the references and tolerances it
compares with. Every mistake below is a whole ``next_token_probs`` as a student writes it.
"""
from autograder.graders import answers
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct next_token_probs (Hugging Face's warpers in their order); each mistake rewrites the line(s) marked
# ``# @NAME``.
_TEMPLATE = '''
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = np.array(logits, dtype=np.float64)
    if temperature == 0:
        return np.eye(z.shape[-1])[np.argmax(z, axis=-1)]
    z = z / temperature                                                   # @TEMPERATURE
    if top_k is not None:
        kth = np.sort(z, axis=-1)[..., -min(top_k, z.shape[-1])][..., None]   # @TOPK
        z = np.where(z < kth, -np.inf, z)                                 # @TOPK_CUT
    p = softmax(z)                                                        # @SOFTMAX
    if top_p is not None:
        order = np.argsort(-p, axis=-1, kind="stable")                    # @ORDER
        ranked = np.take_along_axis(p, order, axis=-1)
        keep_ranked = np.cumsum(ranked, axis=-1) - ranked < top_p         # @CROSSING
        keep_ranked[..., 0] = True
        keep = np.zeros_like(keep_ranked)
        np.put_along_axis(keep, order, keep_ranked, axis=-1)
        p = np.where(keep, p, 0.0)
        p = p / p.sum(axis=-1, keepdims=True)                             # @RENORMALISE
    return p
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="ntp_temperature_after_softmax",
        exercise="next_token_probs",
        title="온도로 로짓이 아니라 softmax 뒤의 확률을 나눔 (다시 정규화하면 온도가 아무 일도 하지 않음)",
        hint=("온도는 softmax 앞에서 로짓을 나눕니다: softmax(logits / temperature). 확률을 temperature로 나눈 뒤 "
              "합이 1이 되게 다시 나누면 원래 확률로 돌아가 분포가 날카로워지지도 평평해지지도 않습니다."),
        source=_with(TEMPERATURE="", SOFTMAX="p = softmax(z) / temperature\np = p / p.sum(axis=-1, keepdims=True)"),
    ),
    Mistake(
        id="ntp_top_k_breaks_ties",
        exercise="next_token_probs",
        title="top-k에서 k번째 로짓과 같은 로짓을 버리고 정확히 k개만 남김 (동점을 끊음)",
        hint=("Hugging Face의 TopKLogitsWarper처럼 k번째로 큰 로짓보다 작은 것만 버립니다: z < kth. argsort로 k개를 "
              "고르면 k번째와 같은 로짓 중 일부가 번호 순서로 잘려 나갑니다."),
        source=_with(TOPK="cut = np.argsort(z, axis=-1, kind=\"stable\")[..., :-top_k]   # k개만 남김",
                     TOPK_CUT="z = z.copy()\nnp.put_along_axis(z, cut, -np.inf, axis=-1)"),
    ),
    Mistake(
        id="ntp_top_p_drops_crossing",
        exercise="next_token_probs",
        title="top-p에서 누적 확률이 top_p를 넘게 만드는 토큰을 버림 (top_p에 못 미치는 집합이 남음)",
        hint=("남기는 집합은 누적 확률이 top_p에 '이르는' 가장 작은 집합입니다: 누적 확률이 top_p를 넘게 만드는 그 "
              "토큰까지 남깁니다. 그 토큰 앞까지의 누적 확률(자기 자신 빼고)이 top_p보다 작으면 남기세요."),
        source=_with(CROSSING="keep_ranked = np.cumsum(ranked, axis=-1) <= top_p"),
    ),
    Mistake(
        id="ntp_no_renormalise",
        exercise="next_token_probs",
        title="top-p로 토큰을 버린 뒤 다시 정규화하지 않음 (행의 합이 1보다 작음)",
        hint="버린 토큰의 확률을 0으로 만든 뒤 남은 확률을 그 합으로 나누어 행의 합이 다시 1이 되게 하세요.",
        source=_with(RENORMALISE=""),
    ),
    Mistake(
        id="ntp_top_p_in_token_order",
        exercise="next_token_probs",
        title="top-p의 누적 확률을 확률 순서가 아니라 토큰 번호 순서로 더함",
        hint=("top-p는 가장 확률이 큰 토큰부터 더합니다: 확률을 내림차순으로 정렬(np.argsort(-p))한 순서로 누적 확률을 "
              "구하고, 남길지 정한 뒤 원래 토큰 순서로 되돌리세요."),
        source=_with(ORDER="order = np.indices(p.shape)[-1]                     # 번호 순서 그대로"),
    ),
]

EXERCISE = Exercise(
    "next_token_probs",
    assignment="decoder",
    points=2,
    # No library routine computes it (the course's environment has no transformers), so nothing is forbidden.
    forbidden=None,
    mistakes=MISTAKES,
    # a call of it while generate is graded is answered with this (answers.py)
    answer=answers.NEXT_TOKEN_PROBS,
)
