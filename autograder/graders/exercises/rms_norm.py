"""`rms_norm` (modern): its exercise record (at the end) and its known mistakes."""
from autograder.graders import answers, forbidden
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct rms_norm; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def rms_norm(x, weight, eps=1e-6):
    x = np.asarray(x)
    ms = np.mean(x * x, axis=-1, keepdims=True)                    # @MEAN_SQUARE
    return x / np.sqrt(ms + eps) * weight                          # @NORMALISE
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="q3_rms_mean_subtracted",
        exercise="rms_norm",
        title="평균을 빼고 나눔 (층 정규화처럼 중심을 옮김: RMSNorm은 평균을 빼지 않음)",
        hint=("RMSNorm은 층 정규화에서 평균 빼기와 β를 없앤 것입니다: x / sqrt(mean(x²) + eps) * weight. x - mean(x)로 "
              "중심을 옮기면 층 정규화(β 없는)가 되어 평균이 0이 아닌 행에서 결과가 달라집니다."),
        source=_with(MEAN_SQUARE="x = x - np.mean(x, axis=-1, keepdims=True)\n"
                                 "ms = np.mean(x * x, axis=-1, keepdims=True)"),
    ),
    Mistake(
        id="q3_rms_eps_outside_sqrt",
        exercise="rms_norm",
        title="eps를 제곱근 밖에서 더함: x / (sqrt(mean(x²)) + eps)",
        hint=("eps는 제곱근 안에서 제곱 평균에 더합니다: np.sqrt(ms + eps). 값이 아주 작은 행(제곱 평균이 eps "
              "정도)에서 sqrt(ms + eps)와 sqrt(ms) + eps는 크게 다릅니다."),
        source=_with(NORMALISE="return x / (np.sqrt(ms) + eps) * weight"),
    ),
    Mistake(
        id="q3_rms_sum_not_mean",
        exercise="rms_norm",
        title="제곱의 평균이 아니라 합으로 나눔 (L2 노름으로 정규화)",
        hint=("RMS는 제곱의 **평균**의 제곱근입니다(root mean square). np.sum(x * x, ...)을 쓰면 L2 노름이 되어 결과가 "
              "sqrt(D)배 작아집니다. np.mean(x * x, axis=-1, keepdims=True)를 쓰세요."),
        source=_with(MEAN_SQUARE="ms = np.sum(x * x, axis=-1, keepdims=True)"),
    ),
    Mistake(
        id="q3_rms_gemma_plus_one",
        exercise="rms_norm",
        title="weight 대신 (1 + weight)를 곱함 (Gemma식 RMSNorm)",
        hint=("Gemma는 weight를 0 근처에 두고 (1 + weight)를 곱하지만, Qwen3(과 Llama)의 RMSNorm은 weight를 그대로 "
              "곱합니다(처음 값이 1). 마지막에 * weight만 하세요."),
        source=_with(NORMALISE="return x / np.sqrt(ms + eps) * (1 + weight)"),
    ),
    Mistake(
        id="q3_rms_all_axes",
        exercise="rms_norm",
        title="마지막 축이 아니라 배열 전체의 제곱 평균으로 나눔 (axis를 빠뜨림)",
        hint=("RMSNorm은 토큰마다, 곧 마지막 축(특징 D개)마다 따로 정규화합니다. np.mean(x * x)처럼 axis를 빠뜨리면 "
              "배치와 시퀀스 전체가 한 값으로 나뉩니다. axis=-1, keepdims=True를 주세요."),
        source=_with(MEAN_SQUARE="ms = np.mean(x * x)"),
    ),
]

EXERCISE = Exercise(
    "rms_norm",
    assignment="modern",
    points=2,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.RMS_NORM,
    mistakes=MISTAKES,
    # how a call is answered while an exercise that calls it is graded (isolation.py)
    answer=answers.RMS_NORM,
)
