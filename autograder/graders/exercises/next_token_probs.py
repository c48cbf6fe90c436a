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
    if temperature == 0:                                                  # @GREEDY_IF
        return np.eye(z.shape[-1])[np.argmax(z, axis=-1)]                 # @GREEDY
    z = z / temperature                                                   # @TEMPERATURE
    if top_k is not None:
        kth = np.sort(z, axis=-1)[..., -min(top_k, z.shape[-1])][..., None]   # @TOPK
        z = np.where(z < kth, -np.inf, z)                                 # @TOPK_CUT
    p = softmax(z)                                                        # @SOFTMAX
    if top_p is not None:
        order = np.argsort(-p, axis=-1, kind="stable")                    # @ORDER
        ranked = np.take_along_axis(p, order, axis=-1)                    # @RANKED
        keep_ranked = np.cumsum(ranked, axis=-1) - ranked < top_p         # @CROSSING
        keep_ranked[..., 0] = True
        keep = np.zeros_like(keep_ranked)                                 # @UNSORT
        np.put_along_axis(keep, order, keep_ranked, axis=-1)              # @UNSORT_PUT
        p = np.where(keep, p, 0.0)
        p = p / p.sum(axis=-1, keepdims=True)                             # @RENORMALISE
    return p
'''

# Both filters in probability space, renormalised once at the end: each alone gives the right answer. Together,
# top-p reads the whole distribution's probabilities, not those of top-k's tokens renormalised; whether top-p runs
# first (and top-k then keeps those of its tokens among them) or second (on top-k's tokens not renormalised), it
# keeps the same tokens: the tokens of top-k whose more probable tokens hold less than top_p of the whole.
_PROBABILITY_SPACE = '''
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = np.array(logits, dtype=np.float64)
    if temperature == 0:
        return np.eye(z.shape[-1])[np.argmax(z, axis=-1)]
    z = z / temperature
    p = softmax(z)                                                        # 전체 분포
    # @FILTERS
    return p / p.sum(axis=-1, keepdims=True)                              # 마지막에 한 번 다시 정규화
'''

_TOP_K_ON_P = '''if top_k is not None:
    kth = np.sort(z, axis=-1)[..., -min(top_k, z.shape[-1])][..., None]
    p = np.where(z < kth, 0.0, p)'''

_TOP_P_ON_P = '''if top_p is not None:
    order = np.argsort(-p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1)
    keep_ranked = np.cumsum(ranked, axis=-1) - ranked < top_p
    keep_ranked[..., 0] = True
    keep = np.zeros_like(keep_ranked)
    np.put_along_axis(keep, order, keep_ranked, axis=-1)
    p = np.where(keep, p, 0.0)'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


def _filters(first: str, second: str) -> str:
    return rewritten(_PROBABILITY_SPACE, FILTERS=first + "\n" + second)


MISTAKES = [
    # ------------------------------------------------------------------------------------------- temperature
    Mistake(
        id="ntp_temperature_after_softmax",
        exercise="next_token_probs",
        title="온도로 로짓이 아니라 softmax 뒤의 확률을 나눔 (다시 정규화하면 온도가 아무 일도 하지 않음)",
        hint=("온도는 softmax 앞에서 로짓을 나눕니다: softmax(logits / temperature). 확률을 temperature로 나눈 뒤 "
              "합이 1이 되게 다시 나누면 원래 확률로 돌아가 분포가 날카로워지지도 평평해지지도 않습니다."),
        source=_with(TEMPERATURE="", SOFTMAX="p = softmax(z) / temperature\np = p / p.sum(axis=-1, keepdims=True)"),
    ),
    Mistake(
        id="ntp_temperature_multiplied",
        exercise="next_token_probs",
        title="로짓을 온도로 나누지 않고 곱함 (온도가 낮을수록 분포가 평평해지는 반대 효과)",
        hint=("온도는 로짓을 나눕니다: logits / temperature. 곱하면 temperature=0.5가 분포를 날카롭게 하는 대신 "
              "평평하게, temperature=2가 평평하게 하는 대신 날카롭게 만듭니다."),
        source=_with(TEMPERATURE="z = z * temperature"),
    ),
    Mistake(
        id="ntp_no_greedy_branch",
        exercise="next_token_probs",
        title="temperature=0을 따로 처리하지 않아 0으로 나눔 (확률이 NaN이 되거나 ZeroDivisionError)",
        hint=("temperature=0은 나눗셈 전에 따로 처리합니다: 가장 큰 로짓의 토큰에 확률 1, 나머지는 0인 원-핫 "
              "(np.argmax: 같은 값이면 번호가 작은 토큰). 로짓을 0으로 나누면 inf가 되고 softmax가 NaN을 냅니다."),
        source=_with(GREEDY_IF="", GREEDY=""),
    ),
    Mistake(
        id="ntp_greedy_last_argmax",
        exercise="next_token_probs",
        title="temperature=0에서 가장 큰 로짓이 여럿이면 번호가 가장 큰 토큰을 고름 (규칙은 번호가 작은 토큰)",
        hint=("탐욕적 선택은 np.argmax처럼 같은 값 가운데 번호가 가장 작은 토큰을 고릅니다. 오름차순 정렬의 "
              "마지막(np.argsort(z)[..., -1])이나 뒤집은 배열의 argmax는 같은 값 가운데 마지막 토큰을 고릅니다."),
        source=_with(GREEDY="return np.eye(z.shape[-1])[np.argsort(z, axis=-1, kind=\"stable\")[..., -1]]"),
    ),
    # ------------------------------------------------------------------------------------------- top-k
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
        id="ntp_top_k_one_too_many",
        exercise="next_token_probs",
        title="top-k에서 k번째가 아니라 (k+1)번째로 큰 로짓을 기준으로 잘라 토큰을 하나 더 남김",
        hint=("정렬한 로짓의 뒤에서 k번째(np.sort(z)[..., -k])가 k번째로 큰 값입니다. 인덱스를 0부터 세며 "
              "[..., -(k + 1)]이나 [..., -k - 1]을 쓰면 (k+1)번째 값이 기준이 되어 토큰이 하나 더 남습니다."),
        source=_with(TOPK="kth = np.sort(z, axis=-1)[..., -min(top_k + 1, z.shape[-1])][..., None]"),
    ),
    Mistake(
        id="ntp_top_k_drops_kth",
        exercise="next_token_probs",
        title="top-k에서 k번째 로짓과 같은 로짓까지 버림 (z <= kth: k - 1개만 남음)",
        hint=("버리는 것은 k번째로 큰 로짓보다 **작은** 로짓뿐입니다: z < kth. z <= kth로 쓰면 k번째 로짓(과 그와 "
              "같은 로짓)까지 -inf가 됩니다."),
        source=_with(TOPK_CUT="z = np.where(z <= kth, -np.inf, z)"),
    ),
    # ------------------------------------------------------------------------------------------- top-p
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
    Mistake(
        id="ntp_top_p_ascending",
        exercise="next_token_probs",
        title="top-p에서 확률을 오름차순으로 정렬해 놓고 내림차순의 규칙을 씀 (확률이 작은 토큰들이 남음)",
        hint=("np.argsort(p)는 작은 것부터 늘어놓습니다. '앞선 토큰들의 합이 top_p보다 작으면 남김'은 확률이 큰 "
              "토큰부터 늘어놓았을 때의 규칙이므로 np.argsort(-p)로 정렬하세요. (Hugging Face는 오름차순으로 정렬하고 "
              "누적 확률이 1 - top_p 이하인 토큰을 버리는, 같은 뜻의 다른 규칙을 씁니다.)"),
        source=_with(ORDER="order = np.argsort(p, axis=-1, kind=\"stable\")                # 오름차순"),
    ),
    Mistake(
        id="ntp_top_p_not_unsorted",
        exercise="next_token_probs",
        title="top-p에서 정렬된 순서로 정한 '남김' 표시를 원래 토큰 순서로 되돌리지 않음",
        hint=("keep_ranked는 확률이 큰 순서로 늘어놓은 자리의 표시입니다. np.put_along_axis(keep, order, keep_ranked, "
              "axis=-1)로 토큰 번호의 자리로 되돌린 뒤 확률에 적용하세요. 그대로 쓰면 번호가 작은 토큰들이 남습니다."),
        source=_with(UNSORT="keep = keep_ranked                                    # 정렬된 순서 그대로",
                     UNSORT_PUT=""),
    ),
    Mistake(
        id="ntp_top_p_on_logits",
        exercise="next_token_probs",
        title="top-p의 누적 합을 확률이 아니라 로짓으로 구함",
        hint=("top-p는 softmax로 구한 **확률**을 큰 것부터 더해 top_p와 비교합니다. 로짓은 확률이 아니라서(음수도 "
              "있고 합이 1이 아님) 로짓을 더해 top_p와 비교하면 남는 토큰이 규칙과 상관없어집니다."),
        source=_with(ORDER="order = np.argsort(-z, axis=-1, kind=\"stable\")",
                     RANKED="ranked = np.take_along_axis(z, order, axis=-1)                    # 로짓"),
    ),
    Mistake(
        id="ntp_top_p_keeps_ties",
        exercise="next_token_probs",
        title="top-p의 경계에서 확률이 같은 토큰을 모두 남김 (남기는 집합이 가장 작은 집합보다 큼)",
        hint=("top-p는 누적 확률이 top_p에 이르는 **가장 작은** 집합을 남깁니다. 경계에서 확률이 같은 토큰이 "
              "여럿이면 top_p에 이를 만큼만 남기세요(어느 것을 남기는지는 채점하지 않습니다). 자기보다 확률이 '큰' "
              "토큰들의 합만 보면 같은 확률의 토큰이 함께 남습니다."),
        source=_with(ORDER="order = np.argsort(-p, axis=-1, kind=\"stable\")",
                     CROSSING=("above = (ranked[..., None, :] > ranked[..., :, None]) * ranked[..., None, :]\n"
                               "keep_ranked = above.sum(axis=-1) < top_p                # 더 큰 토큰들의 합")),
    ),
    # ------------------------------------------------------------------------------------------- the order
    Mistake(
        id="ntp_top_p_on_whole_distribution",
        exercise="next_token_probs",
        title=("top-p의 누적 확률을 top-k가 남긴 토큰들의 분포가 아니라 전체 분포로 구함 (top-p를 top-k보다 먼저 "
               "적용했거나, top-k로 버린 뒤 다시 정규화하지 않은 확률에 top-p를 적용함: 둘은 같은 결과)"),
        hint=("Hugging Face의 순서는 온도, top-k, top-p입니다. top-k로 k개(동점 포함)만 남기고 **다시 정규화한** 분포, "
              "곧 남은 토큰들의 합이 1인 확률로 top-p의 누적 합을 구하세요. top-p를 먼저 적용하거나 top-k 뒤의 확률을 "
              "다시 정규화하지 않으면 누적 확률이 전체 분포의 것이라 top_p에 늦게 이르고 토큰이 더 남습니다. "
              "로짓에서 -inf로 버리고 softmax를 하면 저절로 다시 정규화됩니다."),
        source=_filters(_TOP_P_ON_P, _TOP_K_ON_P),
    ),
]


EXERCISE = Exercise(
    "next_token_probs",
    assignment="decoder",
    points=2,
    # Nothing is forbidden: numpy, torch and Keras have no routine that computes it. (transformers' warpers do; the
    # package installs transformers for its tests, which prove that a next_token_probs built on them is graded as
    # right, and for the modern assignment's references.)
    forbidden=None,
    mistakes=MISTAKES,
    # a call of it while generate is graded is answered with this (answers.py)
    answer=answers.NEXT_TOKEN_PROBS,
)
