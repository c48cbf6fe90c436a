"""`decoder_block` (decoder): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/decoder/test_decoder_block.py``, declares at its top the references and tolerances it
compares with.
"""
from autograder.graders import answers, forbidden
from autograder.graders.exercises import LAYER_STEPS, Exercise, Mistake, rewritten

# The correct decoder_block; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def decoder_block(x, block, num_heads):
    t = np.shape(x)[-2]                                                                  # @LENGTH
    a = layer_norm(x, block["ln_1"]["gamma"], block["ln_1"]["beta"])                     # @NORM_1
    h = x + multi_head_attention_layer(a, a, block["attn"], num_heads, causal_mask(t))   # @ATTEND
    z = layer_norm(h, block["ln_2"]["gamma"], block["ln_2"]["beta"])                     # @NORM_2
    return h + gelu(z @ block["w_1"] + block["b_1"]) @ block["w_2"] + block["b_2"]      # @MLP
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="block_post_norm",
        exercise="decoder_block",
        title="사후 정규화(post-norm): 잔차를 더한 뒤에 층 정규화를 함 (원래 트랜스포머, GPT-1의 배치)",
        hint=("이 과제의 블록은 GPT-2처럼 사전 정규화(pre-norm)입니다: 어텐션과 MLP에는 정규화한 값을 넣고, 잔차 "
              "연결에는 정규화하지 않은 x와 h를 그대로 더합니다: h = x + attn(ln_1(x)), h + mlp(ln_2(h))."),
        source=_with(NORM_1="",
                     ATTEND='a = multi_head_attention_layer(x, x, block["attn"], num_heads, causal_mask(t))\n'
                            'h = layer_norm(x + a, block["ln_1"]["gamma"], block["ln_1"]["beta"])',
                     NORM_2="",
                     MLP='m = gelu(h @ block["w_1"] + block["b_1"]) @ block["w_2"] + block["b_2"]\n'
                         'return layer_norm(h + m, block["ln_2"]["gamma"], block["ln_2"]["beta"])'),
    ),
    Mistake(
        id="block_residual_twice",
        exercise="decoder_block",
        title="잔차를 두 번 더함: 마지막에 h와 함께 블록의 입력 x를 또 더함",
        hint=("h = x + attn(...)에 이미 x가 들어 있습니다. 출력은 h + mlp(ln_2(h))이고 x를 다시 더하지 않습니다. "
              "모든 가중치 행렬이 0인 블록은 입력을 그대로 돌려주어야 합니다."),
        source=_with(MLP='return x + h + gelu(z @ block["w_1"] + block["b_1"]) @ block["w_2"] + block["b_2"]'),
    ),
    Mistake(
        id="block_no_causal_mask",
        exercise="decoder_block",
        title="블록의 셀프 어텐션에 인과 마스크를 주지 않음: 토큰이 미래를 봄",
        hint=("디코더 블록의 어텐션은 인과적입니다: multi_head_attention_layer(a, a, block[\"attn\"], num_heads, "
              "causal_mask(T))처럼 마스크를 넘기세요. 마지막 토큰을 바꿔도 앞 토큰들의 출력이 그대로여야 합니다."),
        source=_with(LENGTH="", ATTEND='h = x + multi_head_attention_layer(a, a, block["attn"], num_heads)'),
    ),
    Mistake(
        id="block_mlp_reads_x",
        exercise="decoder_block",
        title="MLP가 어텐션 뒤의 h가 아니라 블록의 입력 x를 정규화해 읽음",
        hint=("두 부분층은 차례로 이어집니다: MLP는 어텐션의 결과가 더해진 h를 봅니다: z = ln_2(h), "
              "출력 = h + mlp(z)."),
        source=_with(NORM_2='z = layer_norm(x, block["ln_2"]["gamma"], block["ln_2"]["beta"])'),
    ),
    Mistake(
        id="block_ln_1_twice",
        exercise="decoder_block",
        title="두 번째 층 정규화에도 ln_1의 gamma, beta를 씀",
        hint=("블록에는 층 정규화가 두 개 있고 gamma, beta도 각자 따로입니다: 어텐션 앞은 block[\"ln_1\"], "
              "MLP 앞은 block[\"ln_2\"]."),
        source=_with(NORM_2='z = layer_norm(h, block["ln_1"]["gamma"], block["ln_1"]["beta"])'),
    ),
    Mistake(
        id="block_relu_mlp",
        exercise="decoder_block",
        title="MLP의 활성화 함수로 GELU 대신 ReLU를 씀",
        hint=("GPT-2의 MLP는 GELU를 씁니다: gelu(z @ w_1 + b_1) @ w_2 + b_2. 주어진 gelu 함수(정확한 erf 버전)를 "
              "쓰세요."),
        source=_with(MLP='return h + np.maximum(z @ block["w_1"] + block["b_1"], 0) @ block["w_2"] + block["b_2"]'),
    ),
    Mistake(
        id="block_tanh_gelu",
        exercise="decoder_block",
        title=("GELU의 tanh 근사를 씀 (GPT-2 원래 코드의 식이자 keras.ops.gelu의 기본값 approximate=True): 정확한 "
               "erf 식과 최대 약 5e-4 다름"),
        hint=("이 과제의 GELU는 정확한(erf) 식 x·Φ(x)입니다. 주어진 gelu를 쓰거나, Keras라면 "
              "keras.ops.gelu(x, approximate=False), torch라면 F.gelu(x)(기본값 approximate=\"none\")를 쓰세요. "
              "0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))는 근사식입니다."),
        source=_with(MLP='u = z @ block["w_1"] + block["b_1"]\n'
                         'g = 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u ** 3)))\n'
                         'return h + g @ block["w_2"] + block["b_2"]'),
    ),
]

EXERCISE = Exercise(
    "decoder_block",
    assignment="decoder",
    points=3,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.BLOCK,
    mistakes=MISTAKES,
    # answered with their answers while it is graded, so that it is judged on its own logic (isolation.py)
    # (the earlier assignments' functions are given in the decoder notebook; a student may paste their own)
    callees=LAYER_STEPS + ("layer_norm",),
    # a call of it while another exercise is graded is answered with this (answers.py)
    answer=answers.DECODER_BLOCK,
)
