"""self_attention(x, w_q, w_k, w_v, causal=False): Q = x @ w_q, K = x @ w_k, V = x @ w_v, then SDPA."""
import keras
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from autograder.graders import gpu_checks, references, tolerances
from autograder.graders.attention import keras_layers
from autograder.graders.attention.inputs import normal
from autograder.graders.compare import as_array, expect_close, expect_true

# Judged against (forbidden routines and known mistakes: exercises/self_attention.py):
REFERENCE = references.self_attention
REFERENCES = ("float64 projections + torch SDPA", "Keras layers")
TOLERANCES = {"STUDENT_VS_KERAS": "against Keras", "STUDENT": "otherwise", "against_gpu": "stored GPU cases, by dtype"}
GPU_CASES = "self_attention"  # stored outputs of torch's SDPA backends in each dtype (gpu_refs)

# (leading dims, T, D, dk, dv, causal): dk != dv, dv == D (so that "x as values" can be named), batch shapes.
CASES = [
    pytest.param((2,), 6, 8, 4, 8, False, id="b2-t6-D8-dk4-dv8"),
    pytest.param((3,), 5, 8, 8, 4, True, id="b3-t5-D8-dk8-dv4-causal"),
    pytest.param((2, 3), 4, 6, 3, 5, True, id="b2x3-t4-D6-dk3-dv5-causal"),
    pytest.param((), 7, 16, 8, 6, False, id="nobatch-t7-D16-dk8-dv6"),
]


def projections(rng, d_model, dk, dv):
    """w_q, w_k, w_v scaled like Glorot, so that Q, K and V have entries of order 1."""
    scale = np.float32(1 / np.sqrt(d_model))
    return normal(rng, d_model, dk) * scale, normal(rng, d_model, dk) * scale, normal(rng, d_model, dv) * scale


def torch_self_attention(x, w_q, w_k, w_v, causal):
    """An independent float64 torch reference (T_q == T_k, so torch's top-left is_causal is right here)."""
    x, w_q, w_k, w_v = (torch.as_tensor(np.asarray(a, np.float64)) for a in (x, w_q, w_k, w_v))
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(x @ w_q, x @ w_k, x @ w_v, is_causal=causal).numpy()


@pytest.mark.points(0.5)
@pytest.mark.parametrize("lead, t, d_model, dk, dv, causal", CASES)
def test_matches_torch_reference(student, rng, lead, t, d_model, dk, dv, causal):
    """float64 torch 참조(Q, K, V 투영 + scaled_dot_product_attention)와 같은 출력"""
    x = normal(rng, *lead, t, d_model)
    w_q, w_k, w_v = projections(rng, d_model, dk, dv)
    got = student.self_attention(x, w_q, w_k, w_v, causal=causal)
    expect_close(got, REFERENCE(x, w_q, w_k, w_v, causal), against="float64 torch 셀프 어텐션",
                 call=student.last)
    expect_close(got, torch_self_attention(x, w_q, w_k, w_v, causal), against="float64 torch SDPA(is_causal)",
                 call=student.last)


@pytest.mark.points(0.5)
@pytest.mark.parametrize("causal", [pytest.param(False, id="full"), pytest.param(True, id="causal")])
def test_matches_keras_single_head(student, rng, causal):
    """keras.layers.MultiHeadAttention(헤드 1개, 편향 없음, 출력 투영 = 단위 행렬)과 같은 출력"""
    b, t, d_model, dk, dv = 2, 6, 8, 4, 5
    x = normal(rng, b, t, d_model)
    w_q, w_k, w_v = projections(rng, d_model, dk, dv)
    params = {"w_q": w_q, "w_k": w_k, "w_v": w_v, "w_o": np.eye(dv, dtype=np.float32)}   # no biases
    layer = keras_layers.multi_head_attention(params, 1, x.shape, x.shape)
    expected = keras.ops.convert_to_numpy(layer(x, x, use_causal_mask=causal))        # (B, T, dv)
    got = student.self_attention(x, w_q, w_k, w_v, causal=causal)
    expect_close(got, expected, tol=tolerances.STUDENT_VS_KERAS, against="keras.layers.MultiHeadAttention",
                 call=student.last)


@pytest.mark.points(0.5)
def test_causal_ignores_future_tokens(student, rng):
    """causal=True: 뒤쪽 토큰을 바꿔도 앞쪽 위치의 출력은 그대로"""
    b, t, d_model, dk, dv = 2, 7, 8, 4, 6
    x = normal(rng, b, t, d_model)
    w_q, w_k, w_v = projections(rng, d_model, dk, dv)
    first = student.self_attention(x, w_q, w_k, w_v, causal=True)
    expect_close(first, REFERENCE(x, w_q, w_k, w_v, True), against="float64 torch 셀프 어텐션",
                 call=student.last)
    cut = int(rng.integers(2, t - 1))                                  # tokens cut.. change
    x2 = x.copy()
    x2[:, cut:] = normal(rng, b, t - cut, d_model) * 3
    second = as_array(student.self_attention(x2, w_q, w_k, w_v, causal=True))
    expect_close(second[:, :cut], as_array(first)[:, :cut], what=f"앞쪽 {cut}개 위치의 출력",
                 against=f"{cut}번째 이후 토큰을 바꾸기 전의 출력")


@pytest.mark.points(0.5)
@pytest.mark.parametrize("causal", [pytest.param(False, id="full"), pytest.param(True, id="causal")])
def test_weights_form_a_distribution(student, rng, causal):
    """V가 단위 행렬이 되도록 x, w_v를 고르면 출력 = 가중치: 0 이상, 행 합 1, 인과이면 미래는 정확히 0"""
    t, extra, dk = 6, 3, 4
    x = np.concatenate([np.eye(t, dtype=np.float32), normal(rng, t, extra)], axis=-1)     # (T, T + extra)
    w_q, w_k, _ = projections(rng, t + extra, dk, 1)
    w_q, w_k = w_q * 3, w_k * 3                                                            # sharper weights
    w_v = np.concatenate([np.eye(t, dtype=np.float32), np.zeros((extra, t), np.float32)])  # x @ w_v = I
    got = student.self_attention(x, w_q, w_k, w_v, causal=causal)
    weights = as_array(got, "가중치")
    expect_close(got, REFERENCE(x, w_q, w_k, w_v, causal), what="가중치 (V = 단위 행렬)",
                 against="float64 softmax(QKᵀ/√dk)", call=student.last)
    expect_true(np.all(weights >= 0), "어텐션 가중치에 음수가 있습니다.")
    if causal:
        future = ~np.tril(np.ones((t, t), dtype=bool))
        expect_true(np.all(weights[future] == 0), "causal=True인데 미래 위치의 가중치가 정확히 0이 아닙니다.")
    expect_close(weights.sum(-1), np.ones(t), what="가중치의 행 합", against="확률의 합 1")


@pytest.mark.points(0.5)
def test_permuting_tokens(student, rng):
    """causal=False: 토큰 순서를 섞으면 출력도 같은 순서로 섞일 뿐 (순열 등변성)"""
    b, t, d_model, dk, dv = 2, 8, 6, 4, 3
    x = normal(rng, b, t, d_model)
    w_q, w_k, w_v = projections(rng, d_model, dk, dv)
    perm = rng.permutation(t)
    first = student.self_attention(x, w_q, w_k, w_v, causal=False)
    expect_close(first, REFERENCE(x, w_q, w_k, w_v), against="float64 torch 셀프 어텐션",
                 call=student.last)
    second = student.self_attention(x[:, perm], w_q, w_k, w_v, causal=False)
    expect_close(second, as_array(first)[:, perm], what="토큰을 섞은 입력의 출력",
                 against="원래 출력을 같은 순서로 섞은 것")


@pytest.mark.points(0.5)
@pytest.mark.parametrize("name", gpu_checks.params(GPU_CASES))
def test_matches_stored_torch_references(student, name):
    """저장된 torch 참조 출력(투영 + SDPA)과 일치"""
    case = gpu_checks.case(GPU_CASES, name)
    a = case.inputs
    got = student.self_attention(a["x"], a["w_q"], a["w_k"], a["w_v"], causal=bool(a["causal"]))
    gpu_checks.expect_matches_references(got, case, call=student.last)


test_matches_stored_torch_references.__doc__ = (
    f"저장된 torch 참조 출력(투영 + SDPA; {gpu_checks.describe(GPU_CASES)})과 일치")
