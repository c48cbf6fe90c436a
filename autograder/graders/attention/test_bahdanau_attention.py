"""bahdanau_attention(query, key, value, w_q, w_k, v, mask=None): score(q, k) = v . tanh(q @ w_q + k @ w_k)."""
import keras
import numpy as np
import pytest

from autograder.graders import references, tolerances
from autograder.graders.attention import inputs
from autograder.graders.attention.inputs import hidden_keys_mask, key_mask, normal
from autograder.graders.compare import as_array, expect_close, expect_true

# Judged against (forbidden routines and known mistakes: exercises/bahdanau_attention.py):
REFERENCE = references.bahdanau_attention
REFERENCES = ("float64 projected tanh scores + torch.softmax", "Keras layers")
TOLERANCES = {"STUDENT_VS_KERAS": "against Keras", "STUDENT": "otherwise"}

# (leading dims, Tq, Tk, d, h, dv, mask): Tq != Tk, h != d, several batch shapes, every broadcastable mask form.
CASES = [
    pytest.param((2,), 5, 7, 8, 6, 4, None, id="b2-tq5-tk7-d8-h6-nomask"),
    pytest.param((3,), 4, 9, 6, 10, 6, "full", id="b3-tq4-tk9-d6-h10-mask"),
    pytest.param((2, 3), 6, 4, 4, 8, 5, "2d", id="b2h3-tq6-tk4-d4-h8-mask2d"),
    pytest.param((), 3, 11, 16, 12, 8, "keys", id="nobatch-tq3-tk11-d16-h12-keymask"),
]


def weights_of(rng, d, h):
    """Projections scaled like Glorot (activations of order 1) and a score vector v of N(0, 1)."""
    w_q = normal(rng, d, h) / np.float32(np.sqrt(d))                  # (d, h)
    w_k = normal(rng, d, h) / np.float32(np.sqrt(d))                  # (d, h)
    return w_q, w_k, normal(rng, h)                                   # v: (h,)


def draw(rng, lead, tq, tk, d, h, dv, mask_kind):
    """The shared inputs (query, key, value, mask), then this exercise's weights: ((q, k, v, w_q, w_k, v), mask)."""
    q, k, v, mask = inputs.draw(rng, lead, tq, tk, d, dv, mask_kind)
    return (q, k, v, *weights_of(rng, d, h)), mask


@pytest.mark.points(0.5)
@pytest.mark.parametrize("masked", [pytest.param(False, id="nomask"), pytest.param(True, id="keymask")])
def test_matches_keras_additive_attention(student, rng, masked):
    """keras.layers.AdditiveAttention에 [query @ w_q, value, key @ w_k]를 넣고 scale = v로 둔 것과 같은 출력"""
    b, tq, tk, d, h, dv = 2, 4, 6, 8, 5, 3
    q, k, v = normal(rng, b, tq, d), normal(rng, b, tk, d), normal(rng, b, tk, dv)
    w_q, w_k, score_v = weights_of(rng, d, h)
    value_mask = key_mask(rng, b, tk) if masked else None
    layer = keras.layers.AdditiveAttention(use_scale=True)
    layer.build([(b, tq, h), (b, tk, dv), (b, tk, h)])
    layer.scale.assign(score_v)                                                    # score = Σ v * tanh(q + k)
    expected = layer([q @ w_q, v, k @ w_k], mask=[None, value_mask] if masked else None)   # (B, Tq, dv)
    mask = value_mask[:, None, :] if masked else None                              # (B, 1, Tk)
    got = student.bahdanau_attention(q, k, v, w_q, w_k, score_v, mask)
    expect_close(got, keras.ops.convert_to_numpy(expected), tol=tolerances.STUDENT_VS_KERAS,
                 against="keras.layers.AdditiveAttention (scale = v)", call=student.last)


@pytest.mark.points(0.75)
@pytest.mark.parametrize("lead, tq, tk, d, h, dv, mask_kind", CASES)
def test_matches_float64_reference(student, rng, lead, tq, tk, d, h, dv, mask_kind):
    """float64 참조 구현(numpy + torch.softmax)과 같은 출력 (배치 모양, Tq != Tk, h != d, 여러 마스크)"""
    args, mask = draw(rng, lead, tq, tk, d, h, dv, mask_kind)
    got = student.bahdanau_attention(*args, mask)
    expect_close(got, REFERENCE(*args, mask), against="float64 Bahdanau 어텐션",
                 call=student.last)


@pytest.mark.points(0.25)
def test_weights_form_a_distribution(student, rng):
    """값으로 단위 행렬을 주면 출력 = 가중치: 0 이상, 행 합 1, 가려진 위치는 정확히 0"""
    b, tq, tk, d, h = 2, 5, 7, 6, 8
    (q, k, _, w_q, w_k, score_v), _ = draw(rng, (b,), tq, tk, d, h, 1, None)
    mask = key_mask(rng, b, tq, tk)
    eye = np.broadcast_to(np.eye(tk, dtype=np.float32), (b, tk, tk)).copy()          # (B, Tk, Tk)
    got = student.bahdanau_attention(q, k, eye, w_q, w_k, score_v, mask)
    weights = as_array(got, "가중치")
    expect_close(got, REFERENCE(q, k, eye, w_q, w_k, score_v, mask),
                 what="가중치 (값 = 단위 행렬)", against="float64 softmax(v · tanh(q W_q + k W_k))",
                 call=student.last)
    expect_true(np.all(weights >= 0), "어텐션 가중치에 음수가 있습니다.")
    expect_true(np.all(weights[~mask] == 0), "가려진(mask=False) 위치의 가중치가 정확히 0이 아닙니다.")
    expect_close(weights.sum(-1), np.ones((b, tq)), what="가중치의 행 합", against="확률의 합 1")


@pytest.mark.points(0.25)
def test_masked_keys_do_not_matter(student, rng):
    """가려진 키·값을 바꿔도 출력이 그대로"""
    (q, k, v, w_q, w_k, score_v), _ = draw(rng, (2,), 4, 7, 8, 6, 5, None)
    mask = hidden_keys_mask(rng, 7)                                    # (1, Tk)
    first = student.bahdanau_attention(q, k, v, w_q, w_k, score_v, mask)
    expect_close(first, REFERENCE(q, k, v, w_q, w_k, score_v, mask),
                 against="float64 Bahdanau 어텐션", call=student.last)
    hidden = ~mask[0]                                                  # (Tk,) keys nobody may see
    k2, v2 = k.copy(), v.copy()
    k2[:, hidden] = normal(rng, 2, int(hidden.sum()), 8) * 5
    v2[:, hidden] = normal(rng, 2, int(hidden.sum()), 5) * 5
    second = student.bahdanau_attention(q, k2, v2, w_q, w_k, score_v, mask)
    expect_close(second, as_array(first), what="가려진 키를 바꾼 뒤의 출력", against="바꾸기 전의 출력")


@pytest.mark.points(0.25)
def test_permuting_keys_and_values(student, rng):
    """키와 값을 같은 순서로 섞어도 출력이 그대로"""
    (q, k, v, w_q, w_k, score_v), mask = draw(rng, (2,), 5, 9, 8, 6, 6, "full")
    perm = rng.permutation(9)
    first = student.bahdanau_attention(q, k, v, w_q, w_k, score_v, mask)
    second = student.bahdanau_attention(q, k[:, perm], v[:, perm], w_q, w_k, score_v, mask[..., perm])
    expect_close(second, as_array(first), what="키·값을 섞은 뒤의 출력", against="섞기 전의 출력")
    expect_close(first, REFERENCE(q, k, v, w_q, w_k, score_v, mask),
                 against="float64 Bahdanau 어텐션")
