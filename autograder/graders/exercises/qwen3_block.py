"""`qwen3_block` (modern): its exercise record (at the end) and its known mistakes."""
from autograder.graders import answers, forbidden
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct qwen3_block; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def qwen3_block(x, block, positions, num_heads, num_kv_heads, cache=None):
    a = rms_norm(x, block["input_layernorm"])                                              # @NORM_1
    h = x + qwen3_attention(a, block, positions, num_heads, num_kv_heads, cache)          # @ATTENTION
    z = rms_norm(h, block["post_attention_layernorm"])                                     # @NORM_2
    return h + swiglu_mlp(z, block["gate_proj"], block["up_proj"], block["down_proj"])    # @MLP
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="q3_block_post_norm",
        exercise="qwen3_block",
        title="사후 정규화(post-norm): 잔차를 더한 뒤에 RMSNorm함",
        hint=("Qwen3는 사전 정규화(pre-norm)입니다: 부분층의 **입력**만 정규화하고 잔차 경로에는 정규화하지 않은 값을 "
              "더합니다. h = x + attention(rms_norm(x)), 출력 = h + mlp(rms_norm(h))."),
        source=_with(NORM_1="a = x",
                     ATTENTION=("h = rms_norm(x + qwen3_attention(a, block, positions, num_heads, num_kv_heads, cache),"
                                "\n             block[\"input_layernorm\"])"),
                     NORM_2="z = h",
                     MLP=("return rms_norm(h + swiglu_mlp(z, block[\"gate_proj\"], block[\"up_proj\"], "
                          "block[\"down_proj\"]),\n                block[\"post_attention_layernorm\"])")),
    ),
    Mistake(
        id="q3_block_parallel",
        exercise="qwen3_block",
        title="어텐션과 MLP를 나란히 계산함 (GPT-J·PaLM식 병렬 블록: MLP가 어텐션의 결과를 보지 못함)",
        hint=("Qwen3의 블록은 차례로 계산합니다: MLP는 어텐션의 결과를 더한 h를 정규화해서 받습니다. "
              "z = rms_norm(h, post_attention_layernorm)에서 h 대신 x를 쓰면 병렬 블록이 됩니다."),
        source=_with(NORM_2="z = rms_norm(x, block[\"post_attention_layernorm\"])"),
    ),
    Mistake(
        id="q3_block_norms_swapped",
        exercise="qwen3_block",
        title="두 RMSNorm의 가중치를 바꿔 씀 (어텐션 앞에 post_attention_layernorm)",
        hint=("어텐션 앞의 정규화는 input_layernorm, MLP 앞은 post_attention_layernorm입니다(이름의 post는 "
              "'어텐션 다음'이라는 뜻이지 사후 정규화가 아닙니다)."),
        source=_with(NORM_1="a = rms_norm(x, block[\"post_attention_layernorm\"])",
                     NORM_2="z = rms_norm(h, block[\"input_layernorm\"])"),
    ),
    Mistake(
        id="q3_block_mlp_residual_from_x",
        exercise="qwen3_block",
        title="MLP의 결과를 h가 아니라 블록의 입력 x에 더함 (어텐션의 잔차가 사라짐)",
        hint=("잔차는 부분층마다 한 번씩 이어집니다: 출력 = h + mlp(...), h = x + attention(...). x에 더하면 어텐션이 "
              "더한 값이 출력에서 빠집니다."),
        source=_with(MLP="return x + swiglu_mlp(z, block[\"gate_proj\"], block[\"up_proj\"], block[\"down_proj\"])"),
    ),
    Mistake(
        id="q3_block_attention_on_raw_x",
        exercise="qwen3_block",
        title="어텐션에 정규화하지 않은 x를 넣음 (input_layernorm을 빠뜨림)",
        hint=("사전 정규화 블록에서 어텐션은 rms_norm(x, block[\"input_layernorm\"])을 받습니다. 잔차로 더하는 쪽만 "
              "정규화하지 않은 x입니다."),
        source=_with(NORM_1="a = x"),
    ),
]

EXERCISE = Exercise(
    "qwen3_block",
    assignment="modern",
    points=3,
    forbidden=forbidden.QWEN3_BLOCK,
    mistakes=MISTAKES,
    # answered with their answers while it is graded, so that it is judged on its own logic (isolation.py); a call
    # with a cache is the student's own (the cache is state in the student's process)
    callees=("rms_norm", "qwen3_attention", "swiglu_mlp"),
    answer=answers.QWEN3_BLOCK,
)
