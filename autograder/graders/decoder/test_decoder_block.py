"""decoder_block(x, block, num_heads): a pre-norm causal GPT-2 block,
h = x + multi_head_attention_layer(ln_1(x), ln_1(x), block["attn"], num_heads, causal_mask(T)), then
h + gelu(ln_2(h) @ w_1 + b_1) @ w_2 + b_2 with the exact (erf) GELU.

While it is graded, the contract functions it builds on (layer_norm, multi_head_attention_layer, causal_mask, the
attention helpers) are answered by the references (isolation.py): it is judged on how it wires them.
"""
import numpy as np
import pytest

from autograder.graders import references, tolerances
from autograder.graders.attention.inputs import normal
from autograder.graders.compare import as_array, expect_close
from autograder.graders.decoder import block_params, keras_block

# Judged against (forbidden routines and known mistakes: exercises/decoder_block.py):
REFERENCE = references.decoder_block
REFERENCES = ("float64 references.decoder_block", "keras_block (LayerNormalization, MultiHeadAttention, Dense)")
TOLERANCES = {"STUDENT": "against the float64 reference", "STUDENT_VS_KERAS": "against the Keras layers"}

CASES = [  # B, T, D, heads, MLP width, dtype
    pytest.param(2, 6, 16, 4, 64, np.float32, id="b2-t6-D16-h4-F64"),
    pytest.param(1, 9, 24, 3, 48, np.float32, id="b1-t9-D24-h3-F48"),
    pytest.param(3, 5, 8, 2, 32, np.float64, id="b3-t5-D8-h2-F32-float64"),
]


def draw(rng, b, t, d_model, heads, hidden, dtype=np.float32):
    block = block_params(rng, d_model, heads, hidden)
    if dtype != np.float32:
        block = {k: ({n: a.astype(dtype) for n, a in v.items()} if isinstance(v, dict) else v.astype(dtype))
                 for k, v in block.items()}
    return normal(rng, b, t, d_model, dtype=dtype), block


@pytest.mark.points(1.5)
@pytest.mark.parametrize("b, t, d_model, heads, hidden, dtype", CASES)
def test_matches_reference(student, rng, b, t, d_model, heads, hidden, dtype):
    """사전 정규화 + 인과 멀티헤드 셀프 어텐션 + 잔차 + GELU MLP + 잔차 (float64 참조)"""
    x, block = draw(rng, b, t, d_model, heads, hidden, dtype)
    got = student.decoder_block(x, block, heads)
    expect_close(got, REFERENCE(x, block, heads), tol=tolerances.STUDENT, against="float64 디코더 블록",
                 call=student.last)


@pytest.mark.points(0.8)
def test_matches_keras_layers(student, rng):
    """Keras 층(LayerNormalization, MultiHeadAttention, Dense)에 같은 가중치를 넣어 만든 블록과 같음"""
    x, block = draw(rng, 2, 7, 12, 3, 40)
    got = student.decoder_block(x, block, 3)
    expect_close(got, keras_block(block, 3, x), tol=tolerances.STUDENT_VS_KERAS,
                 against="Keras LayerNormalization + MultiHeadAttention(use_causal_mask=True) + Dense",
                 call=student.last)


@pytest.mark.points(0.4)
def test_future_tokens_do_not_change_the_past(student, rng):
    """마지막 토큰의 입력을 바꿔도 앞 토큰들의 출력은 그대로 (인과 마스크)"""
    x, block = draw(rng, 2, 6, 16, 4, 32)
    first = as_array(student.decoder_block(x, block, 4))
    expect_close(first, REFERENCE(x, block, 4), against="float64 디코더 블록", call=student.last)
    changed = x.copy()
    changed[:, -1] = normal(rng, 2, 16) * np.float32(3)
    second = as_array(student.decoder_block(changed, block, 4))
    expect_close(second[:, :-1], first[:, :-1], what="마지막 토큰을 바꾼 뒤 앞 토큰들의 출력",
                 against="바꾸기 전의 출력 (미래 토큰은 과거의 출력에 영향을 주지 않아야 함)")


@pytest.mark.points(0.3)
def test_zero_sublayers_pass_the_input_through(student, rng):
    """출력 투영 w_o, b_o와 MLP의 w_2, b_2가 0인 블록은 입력을 그대로 돌려줌 (잔차 연결이 한 번씩)"""
    x, block = draw(rng, 2, 5, 8, 2, 16)
    block["attn"] = {**block["attn"], "w_o": np.zeros_like(block["attn"]["w_o"]),
                     "b_o": np.zeros_like(block["attn"]["b_o"])}
    block.update(w_2=np.zeros_like(block["w_2"]), b_2=np.zeros_like(block["b_2"]))
    got = student.decoder_block(x, block, 2)
    expect_close(got, x, what="어텐션과 MLP가 0을 더하는 블록의 출력", tol=tolerances.STUDENT,
                 against="입력 x 그대로 (잔차 연결)", call=student.last)
