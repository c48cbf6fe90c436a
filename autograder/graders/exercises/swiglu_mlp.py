"""`swiglu_mlp` (modern): its exercise record (at the end) and its known mistakes."""
from autograder.graders import answers, forbidden
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct swiglu_mlp; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def swiglu_mlp(x, w_gate, w_up, w_down):
    gate = np.asarray(x) @ w_gate                                  # @GATE
    up = np.asarray(x) @ w_up                                      # @UP
    act = gate / (1 + np.exp(-gate))                               # @ACT
    return (act * up) @ w_down                                     # @DOWN
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="q3_swiglu_gate_up_swapped",
        exercise="swiglu_mlp",
        title="게이트와 업 투영을 바꿈: silu(x @ w_up) * (x @ w_gate)",
        hint=("SiLU는 **게이트** 쪽(x @ w_gate, Hugging Face의 gate_proj)에만 씁니다: silu(x @ w_gate) * (x @ w_up). "
              "두 행렬의 모양이 같아서 바꿔도 오류는 나지 않지만 값은 전혀 다릅니다."),
        source=_with(GATE="gate = np.asarray(x) @ w_up", UP="up = np.asarray(x) @ w_gate"),
    ),
    Mistake(
        id="q3_swiglu_sigmoid_not_silu",
        exercise="swiglu_mlp",
        title="SiLU 대신 시그모이드를 씀: sigmoid(x @ w_gate) * (x @ w_up) (원래의 GLU)",
        hint=("SiLU(Swish)는 z · sigmoid(z)입니다. 시그모이드만 곱하면 Dauphin 등(2017)의 GLU가 됩니다. "
              "gate / (1 + np.exp(-gate))처럼 z를 한 번 더 곱하세요."),
        source=_with(ACT="act = 1 / (1 + np.exp(-gate))"),
    ),
    Mistake(
        id="q3_swiglu_gelu",
        exercise="swiglu_mlp",
        title="SiLU 대신 GELU를 씀 (GeGLU)",
        hint=("Qwen3(와 Llama)의 MLP는 SwiGLU, 곧 SiLU 게이트입니다(config의 hidden_act = \"silu\"). GELU를 쓰면 "
              "Gemma의 GeGLU가 됩니다. silu(z) = z / (1 + exp(-z))."),
        source=_with(ACT="act = F.gelu(torch.from_numpy(np.asarray(gate, np.float64))).numpy()"),
    ),
    Mistake(
        id="q3_swiglu_silu_after_product",
        exercise="swiglu_mlp",
        title="곱한 뒤에 SiLU를 씀: silu((x @ w_gate) * (x @ w_up))",
        hint=("게이트에만 SiLU를 쓰고 그 결과를 업 투영과 곱합니다: silu(x @ w_gate) * (x @ w_up). 곱한 값 "
              "전체에 SiLU를 쓰면 다른 함수가 됩니다."),
        source=_with(ACT="act = gate * up / (1 + np.exp(-gate * up))", DOWN="return act @ w_down"),
    ),
    Mistake(
        id="q3_swiglu_silu_on_both",
        exercise="swiglu_mlp",
        title="게이트와 업 투영 둘 다에 SiLU를 씀: silu(x @ w_gate) * silu(x @ w_up)",
        hint=("SwiGLU에서 활성화 함수는 게이트 하나에만 씁니다. 업 투영 x @ w_up은 그대로(선형으로) 곱합니다: "
              "silu(x @ w_gate) * (x @ w_up)."),
        source=_with(DOWN="return (act * (up / (1 + np.exp(-up)))) @ w_down"),
    ),
]

EXERCISE = Exercise(
    "swiglu_mlp",
    assignment="modern",
    points=2,
    forbidden=forbidden.SWIGLU,
    mistakes=MISTAKES,
    answer=answers.SWIGLU_MLP,
)
