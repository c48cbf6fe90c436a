"""dot_product_attention(query, key, value, mask=None): score = q . k, no scaling."""
import keras
import numpy as np
import pytest

from autograder.graders import references, tolerances
from autograder.graders.attention.inputs import draw, hidden_keys_mask, key_mask, normal
from autograder.graders.compare import as_array, expect_close, expect_true

# Judged against (forbidden routines and known mistakes: exercises/dot_product_attention.py):
REFERENCE = references.dot_product_attention
# reference: float64 torch SDPA with scale 1; keras.layers.Attention
# tolerance (tolerances.py): STUDENT_VS_KERAS against Keras, STUDENT otherwise

# (leading dims, Tq, Tk, d, dv, mask): Tq != Tk, several batch shapes, masks of every broadcastable form.
# d stays <= 16: unscaled scores of N(0, 1) inputs have a spread of sqrt(d), still far from float32 trouble.
CASES = [
    pytest.param((2,), 5, 7, 8, 6, None, id="b2-tq5-tk7-nomask"),
    pytest.param((3,), 4, 9, 4, 4, "full", id="b3-tq4-tk9-mask"),
    pytest.param((2, 3), 6, 4, 4, 5, "2d", id="b2h3-tq6-tk4-mask2d"),
    pytest.param((), 3, 11, 16, 8, "keys", id="nobatch-tq3-tk11-keymask"),
]


@pytest.mark.points(0.5)
@pytest.mark.parametrize("masked", [pytest.param(False, id="nomask"), pytest.param(True, id="keymask")])
def test_matches_keras_attention(student, rng, masked):
    """keras.layers.Attention(score_mode="dot", use_scale=False)와 같은 출력"""
    b, tq, tk, d, dv = 2, 4, 6, 8, 5
    q, k, v = normal(rng, b, tq, d), normal(rng, b, tk, d), normal(rng, b, tk, dv)
    value_mask = key_mask(rng, b, tk) if masked else None
    layer = keras.layers.Attention(score_mode="dot", use_scale=False)
    expected = layer([q, v, k], mask=[None, value_mask] if masked else None)       # (B, Tq, dv)
    mask = value_mask[:, None, :] if masked else None                              # (B, 1, Tk)
    got = student.dot_product_attention(q, k, v, mask)
    expect_close(got, keras.ops.convert_to_numpy(expected), tol=tolerances.STUDENT_VS_KERAS,
                 against="keras.layers.Attention(score_mode='dot')", call=student.last)


@pytest.mark.points(0.75)
@pytest.mark.parametrize("lead, tq, tk, d, dv, mask_kind", CASES)
def test_matches_torch_reference(student, rng, lead, tq, tk, d, dv, mask_kind):
    """float64 torch scaled_dot_product_attention(scale=1)와 같은 출력 (배치 모양, Tq != Tk, 여러 마스크)"""
    q, k, v, mask = draw(rng, lead, tq, tk, d, dv, mask_kind)
    got = student.dot_product_attention(q, k, v, mask)
    expect_close(got, REFERENCE(q, k, v, mask),
                 against="float64 torch scaled_dot_product_attention(scale=1)", call=student.last)


@pytest.mark.points(0.25)
def test_weights_form_a_distribution(student, rng):
    """값으로 단위 행렬을 주면 출력 = 가중치: 0 이상, 행 합 1, 가려진 위치는 정확히 0"""
    b, tq, tk, d = 2, 5, 7, 6
    q, k = normal(rng, b, tq, d), normal(rng, b, tk, d)
    mask = key_mask(rng, b, tq, tk)
    eye = np.broadcast_to(np.eye(tk, dtype=np.float32), (b, tk, tk)).copy()          # (B, Tk, Tk)
    got = student.dot_product_attention(q, k, eye, mask)
    weights = as_array(got, "가중치")
    expect_close(got, REFERENCE(q, k, eye, mask), what="가중치 (값 = 단위 행렬)",
                 against="float64 softmax(QKᵀ)", call=student.last)
    expect_true(np.all(weights >= 0), "어텐션 가중치에 음수가 있습니다.")
    expect_true(np.all(weights[~mask] == 0), "가려진(mask=False) 위치의 가중치가 정확히 0이 아닙니다.")
    expect_close(weights.sum(-1), np.ones((b, tq)), what="가중치의 행 합", against="확률의 합 1")


@pytest.mark.points(0.25)
def test_masked_keys_do_not_matter(student, rng):
    """가려진 키·값을 바꿔도 출력이 그대로"""
    q, k, v, _ = draw(rng, (2,), 4, 7, 8, 5, None)
    mask = hidden_keys_mask(rng, 7)                                    # (1, Tk)
    first = student.dot_product_attention(q, k, v, mask)
    expect_close(first, REFERENCE(q, k, v, mask), against="float64 torch",
                 call=student.last)
    hidden = ~mask[0]                                                  # (Tk,) keys nobody may see
    k2, v2 = k.copy(), v.copy()
    k2[:, hidden] = normal(rng, 2, int(hidden.sum()), 8) * 5
    v2[:, hidden] = normal(rng, 2, int(hidden.sum()), 5) * 5
    second = student.dot_product_attention(q, k2, v2, mask)
    expect_close(second, as_array(first), what="가려진 키를 바꾼 뒤의 출력", against="바꾸기 전의 출력")


@pytest.mark.points(0.25)
def test_permuting_keys_and_values(student, rng):
    """키와 값을 같은 순서로 섞어도 출력이 그대로"""
    q, k, v, mask = draw(rng, (2,), 5, 9, 8, 6, "full")
    perm = rng.permutation(9)
    first = student.dot_product_attention(q, k, v, mask)
    second = student.dot_product_attention(q, k[:, perm], v[:, perm], mask[..., perm])
    expect_close(second, as_array(first), what="키·값을 섞은 뒤의 출력", against="섞기 전의 출력")
    expect_close(first, REFERENCE(q, k, v, mask), against="float64 torch")
