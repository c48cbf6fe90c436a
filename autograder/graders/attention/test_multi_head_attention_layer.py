"""multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None): projections with biases, heads, w_o."""
import keras
import numpy as np
import pytest

from autograder.graders import gpu_checks, references, tolerances
from autograder.graders.attention import keras_layers
from autograder.graders.attention.inputs import key_mask, normal
from autograder.graders.compare import as_array, expect_close

# Judged against (forbidden routines and known mistakes: exercises/multi_head_attention_layer.py):
REFERENCE = references.multi_head_attention_layer
REFERENCES = (
    "float64 projections + per-head torch SDPA + output projection",
    "keras.layers.MultiHeadAttention (keras_layer below)",
)
TOLERANCES = {"STUDENT_VS_KERAS": "against Keras", "STUDENT": "otherwise", "against_gpu": "stored GPU cases, by dtype"}
GPU_CASES = "mha"  # stored outputs of torch's SDPA backends in each dtype (gpu_refs)

# Keras cases: (B, Tq, Tk, D, H, dk, dv, mask). Tk = None means self-attention (x_kv is x_q). Keras's
# attention_mask is (B, Tq, Tk), so the masks here are (Tq, Tk) or (B, 1, Tq, Tk).
KERAS_CASES = [
    pytest.param(2, 6, None, 16, 4, 4, 4, None, id="self-b2-t6-D16-h4-dk4-dv4"),
    pytest.param(2, 5, None, 12, 3, 4, 6, "causal", id="self-causal-b2-t5-D12-h3-dk4-dv6"),
    pytest.param(2, 4, 7, 8, 2, 3, 5, "b1", id="cross-b2-tq4-tk7-D8-h2-dk3-dv5-maskB1"),
    pytest.param(3, 5, 3, 10, 1, 6, 4, None, id="cross-b3-tq5-tk3-D10-h1-dk6-dv4"),
]
# Reference cases add the per-head mask (B, H, Tq, Tk), which Keras cannot take.
REFERENCE_CASES = [
    pytest.param(2, 4, 6, 12, 3, 2, 5, "bh", id="cross-b2-tq4-tk6-D12-h3-dk2-dv5-maskBH"),
    pytest.param(2, 5, None, 8, 2, 4, 4, "2d", id="self-b2-t5-D8-h2-dk4-dv4-mask2d"),
    pytest.param(1, 3, 8, 6, 1, 5, 3, "b1", id="cross-b1-tq3-tk8-D6-h1-dk5-dv3-maskB1"),
    pytest.param(3, 7, None, 16, 4, 3, 4, "bh", id="self-b3-t7-D16-h4-dk3-dv4-maskBH"),
]


def layer_params(rng, d_model, h, dk, dv):
    """Weights scaled like Glorot and non-zero biases (a layer that ignores a bias must fail)."""
    def w(n_in, n_out):
        return normal(rng, n_in, n_out) / np.float32(np.sqrt(n_in))

    def bias(n):
        return normal(rng, n) * np.float32(0.5)

    return {"w_q": w(d_model, h * dk), "b_q": bias(h * dk), "w_k": w(d_model, h * dk), "b_k": bias(h * dk),
            "w_v": w(d_model, h * dv), "b_v": bias(h * dv), "w_o": w(h * dv, d_model), "b_o": bias(d_model)}


def draw(rng, b, tq, tk, d_model, h, dk, dv, mask_kind):
    """Inputs of one case; for self-attention x_kv is the very same array as x_q."""
    x_q = normal(rng, b, tq, d_model)
    x_kv = x_q if tk is None else normal(rng, b, tk, d_model)
    tk = tq if tk is None else tk
    if mask_kind == "causal":
        mask = np.tril(np.ones((tq, tk), dtype=bool), k=tk - tq)        # (Tq, Tk)
    elif mask_kind == "2d":
        mask = key_mask(rng, tq, tk)                                    # (Tq, Tk)
    elif mask_kind == "b1":
        mask = key_mask(rng, b, 1, tq, tk)                              # (B, 1, Tq, Tk)
    elif mask_kind == "bh":
        mask = key_mask(rng, b, h, tq, tk)                              # (B, H, Tq, Tk)
    else:
        mask = None
    return x_q, x_kv, layer_params(rng, d_model, h, dk, dv), mask


def keras_layer(params, num_heads, x_q, x_kv, mask):
    """keras.layers.MultiHeadAttention with the student's weights; the mask goes in as (B, Tq, Tk)."""
    b, tq, _ = x_q.shape
    tk = x_kv.shape[1]
    layer = keras_layers.multi_head_attention(params, num_heads, x_q.shape, x_kv.shape)
    attention_mask = None if mask is None else np.broadcast_to(mask, (b, 1, tq, tk))[:, 0].copy()  # (B, Tq, Tk)
    return keras.ops.convert_to_numpy(layer(x_q, x_kv, x_kv, attention_mask=attention_mask))  # (B, Tq, D)


@pytest.mark.points(1.5)
@pytest.mark.parametrize("b, tq, tk, d_model, h, dk, dv, mask_kind", KERAS_CASES)
def test_matches_keras_multi_head_attention(student, rng, b, tq, tk, d_model, h, dk, dv, mask_kind):
    """같은 가중치 행렬을 넣은 keras.layers.MultiHeadAttention(num_heads, key_dim=dk, value_dim=dv)와 같은 출력"""
    x_q, x_kv, params, mask = draw(rng, b, tq, tk, d_model, h, dk, dv, mask_kind)
    got = student.multi_head_attention_layer(x_q, x_kv, params, h, mask)
    expect_close(got, keras_layer(params, h, x_q, x_kv, mask), tol=tolerances.STUDENT_VS_KERAS,
                 against="keras.layers.MultiHeadAttention", call=student.last)


@pytest.mark.points(0.5)
@pytest.mark.parametrize("b, tq, tk, d_model, h, dk, dv, mask_kind", REFERENCE_CASES)
def test_matches_float64_reference(student, rng, b, tq, tk, d_model, h, dk, dv, mask_kind):
    """float64 참조(투영 + 헤드별 torch SDPA + 출력 투영)와 같은 출력 (헤드마다 다른 마스크 포함)"""
    x_q, x_kv, params, mask = draw(rng, b, tq, tk, d_model, h, dk, dv, mask_kind)
    got = student.multi_head_attention_layer(x_q, x_kv, params, h, mask)
    expect_close(got, REFERENCE(x_q, x_kv, params, h, mask),
                 against="float64 멀티헤드 어텐션 층", call=student.last)


@pytest.mark.points(0.5)
def test_causal_self_attention_ignores_future_tokens(student, rng):
    """인과 셀프 어텐션: 뒤쪽 토큰을 바꿔도 앞쪽 위치의 출력은 그대로"""
    b, t, d_model, h, dk, dv = 2, 7, 12, 3, 4, 2
    x, _, params, mask = draw(rng, b, t, None, d_model, h, dk, dv, "causal")
    first = student.multi_head_attention_layer(x, x, params, h, mask)
    expect_close(first, REFERENCE(x, x, params, h, mask),
                 against="float64 멀티헤드 어텐션 층", call=student.last)
    cut = int(rng.integers(2, t - 1))
    x2 = x.copy()
    x2[:, cut:] = normal(rng, b, t - cut, d_model) * 3
    second = as_array(student.multi_head_attention_layer(x2, x2, params, h, mask))
    expect_close(second[:, :cut], as_array(first)[:, :cut], what=f"앞쪽 {cut}개 위치의 출력",
                 against=f"{cut}번째 이후 토큰을 바꾸기 전의 출력")


@pytest.mark.points(0.5)
def test_masked_keys_do_not_matter(student, rng):
    """교차 어텐션: 모든 질의가 가린 키·값 위치의 x_kv를 바꿔도 출력이 그대로"""
    b, tq, tk, d_model, h, dk, dv = 2, 4, 7, 8, 2, 4, 3
    x_q, x_kv, params, _ = draw(rng, b, tq, tk, d_model, h, dk, dv, None)
    visible = np.stack([rng.permutation(tk) < rng.integers(2, tk - 1) for _ in range(b)])   # (B, Tk)
    mask = np.broadcast_to(visible[:, None, None, :], (b, 1, tq, tk)).copy()                # (B, 1, Tq, Tk)
    first = student.multi_head_attention_layer(x_q, x_kv, params, h, mask)
    expect_close(first, REFERENCE(x_q, x_kv, params, h, mask),
                 against="float64 멀티헤드 어텐션 층", call=student.last)
    x_kv2 = x_kv.copy()
    for i in range(b):
        hidden = np.flatnonzero(~visible[i])
        x_kv2[i, hidden] = normal(rng, len(hidden), d_model) * 5
    second = student.multi_head_attention_layer(x_q, x_kv2, params, h, mask)
    expect_close(second, as_array(first), what="가려진 키 위치의 x_kv를 바꾼 뒤의 출력", against="바꾸기 전의 출력")


@pytest.mark.points(0.5)
def test_permuting_keys_and_values(student, rng):
    """교차 어텐션: x_kv의 토큰(과 마스크의 키 축)을 같은 순서로 섞어도 출력이 그대로"""
    b, tq, tk, d_model, h, dk, dv = 2, 5, 8, 12, 3, 4, 4
    x_q, x_kv, params, mask = draw(rng, b, tq, tk, d_model, h, dk, dv, "bh")
    perm = rng.permutation(tk)
    first = student.multi_head_attention_layer(x_q, x_kv, params, h, mask)
    second = student.multi_head_attention_layer(x_q, x_kv[:, perm], params, h, mask[..., perm])
    expect_close(second, as_array(first), what="x_kv를 섞은 뒤의 출력", against="섞기 전의 출력")
    expect_close(first, REFERENCE(x_q, x_kv, params, h, mask),
                 against="float64 멀티헤드 어텐션 층")


@pytest.mark.points(0.5)
@pytest.mark.parametrize("name", gpu_checks.params(GPU_CASES))
def test_matches_stored_torch_multihead_attention(student, name):
    """가중치 행렬을 넣은 torch.nn.MultiheadAttention의 저장된 참조 출력과 일치 (교차 어텐션, 마스크)"""
    case = gpu_checks.case(GPU_CASES, name)
    a = case.inputs
    got = student.multi_head_attention_layer(a["x_q"], a["x_kv"], a["params"], int(a["num_heads"]), a.get("mask"))
    gpu_checks.expect_matches_references(got, case, call=student.last)


test_matches_stored_torch_multihead_attention.__doc__ = (
    "가중치 행렬을 넣은 torch.nn.MultiheadAttention의 저장된 참조 출력과 일치 "
    f"(교차 어텐션, 마스크; {gpu_checks.describe(GPU_CASES)})")
