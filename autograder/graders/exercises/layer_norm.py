"""`layer_norm` (decoder): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/decoder/test_layer_norm.py``, declares at its top the references and tolerances it compares
with.
"""
from autograder.graders import answers, forbidden
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct layer_norm; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def layer_norm(x, gamma, beta, eps=1e-5):                           # @SIGNATURE
    x = np.asarray(x)                                               # @INPUT
    mean = x.mean(axis=-1, keepdims=True)                           # @MEAN
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)            # @VARIANCE
    return (x - mean) / np.sqrt(var + eps) * gamma + beta           # @NORMALISE
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="ln_unbiased_variance",
        exercise="layer_norm",
        title="분산을 D가 아니라 D - 1로 나눔 (불편 분산, torch.var의 기본값)",
        hint=("층 정규화의 분산은 편향 분산 mean((x - mean)²)입니다. torch.var와 torch.std는 기본이 D - 1로 나누는 "
              "불편 분산이니 unbiased=False(또는 correction=0)를 주고, np.var는 기본값(ddof=0) 그대로 쓰세요."),
        source=_with(INPUT="t = torch.as_tensor(np.asarray(x, dtype=np.float64))",
                     MEAN="mean = t.mean(dim=-1, keepdim=True)",
                     VARIANCE="var = torch.var(t, dim=-1, keepdim=True)",
                     NORMALISE="out = (t - mean) / torch.sqrt(var + eps)\n"
                               "return out.numpy() * gamma + beta"),
    ),
    Mistake(
        id="ln_eps_outside_sqrt",
        exercise="layer_norm",
        title="eps를 제곱근 밖에서 더함: (x - 평균) / (√분산 + eps)",
        hint=("eps는 분산에 더한 뒤 제곱근을 취합니다: (x - mean) / sqrt(var + eps). 분산이 eps 정도로 작은 행"
              "(거의 일정한 값)에서 두 식의 차이가 큽니다."),
        source=_with(VARIANCE="std = x.std(axis=-1, keepdims=True)",
                     NORMALISE="return (x - mean) / (std + eps) * gamma + beta"),
    ),
    Mistake(
        id="ln_no_eps",
        exercise="layer_norm",
        title="eps를 더하지 않아 값이 모두 같은 행에서 0으로 나눔",
        hint=("분산이 0인 행(모든 원소가 같음)이 있으면 sqrt(var)가 0이 되어 NaN이 나옵니다. eps 인자를 분산에 "
              "더하세요: sqrt(var + eps)."),
        source=_with(NORMALISE="return (x - mean) / np.sqrt(var) * gamma + beta"),
    ),
    Mistake(
        id="ln_divides_by_variance",
        exercise="layer_norm",
        title="표준편차가 아니라 분산으로 나눔 (제곱근을 빠뜨림)",
        hint="정규화는 표준편차 sqrt(var + eps)로 나눕니다. 분산 var + eps로 나누면 크기가 맞지 않습니다.",
        source=_with(NORMALISE="return (x - mean) / (var + eps) * gamma + beta"),
    ),
    Mistake(
        id="ln_batch_axis",
        exercise="layer_norm",
        title="평균과 분산을 마지막 축이 아니라 배치 축(axis 0)에서 구함 (배치 정규화)",
        hint=("층 정규화는 토큰마다 자기 특징 D개의 평균과 분산을 씁니다: axis=-1, keepdims=True. 배치 축으로 구하면 "
              "다른 시퀀스의 값이 섞이는 배치 정규화가 됩니다."),
        source=_with(MEAN="mean = x.mean(axis=0, keepdims=True)",
                     VARIANCE="var = ((x - mean) ** 2).mean(axis=0, keepdims=True)"),
    ),
    Mistake(
        id="ln_gamma_beta_swapped",
        exercise="layer_norm",
        title="gamma와 beta를 바꿔 씀 (정규화한 값에 beta를 곱하고 gamma를 더함)",
        hint="gamma는 곱하는 배율(처음 값 1), beta는 더하는 이동(처음 값 0)입니다: normed * gamma + beta.",
        source=_with(NORMALISE="return (x - mean) / np.sqrt(var + eps) * beta + gamma"),
    ),
    Mistake(
        id="ln_keras_default_eps",
        exercise="layer_norm",
        title="eps의 기본값이 1e-5가 아니라 1e-3 (keras.layers.LayerNormalization의 기본값 epsilon=1e-3)",
        hint=("이 과제의 기본값은 PyTorch와 GPT-2처럼 eps=1e-5입니다. Keras의 LayerNormalization은 기본이 "
              "epsilon=1e-3이라, 분산이 작은 행에서 결과가 크게 달라집니다. 함수 머리를 "
              "layer_norm(x, gamma, beta, eps=1e-5)로 두세요."),
        source=_with(SIGNATURE="def layer_norm(x, gamma, beta, eps=1e-3):"),
    ),
]

EXERCISE = Exercise(
    "layer_norm",
    assignment="decoder",
    points=2,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.NORM,
    mistakes=MISTAKES,
    # a call of it while another exercise is graded is answered with this (answers.py)
    answer=answers.LAYER_NORM,
)
