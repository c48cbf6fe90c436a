"""multi_head_attention(query, key, value, num_heads, mask=None): split heads, SDPA per head, merge."""
import keras
import numpy as np
import pytest

from autograder.graders import references, tolerances
from autograder.graders.attention import keras_layers
from autograder.graders.attention.inputs import key_mask, normal
from autograder.graders.compare import as_array, expect_close, expect_true

# Judged against (forbidden routines and known mistakes: exercises/multi_head_attention.py):
REFERENCE = references.multi_head_attention
REFERENCES = ("float64 per-head torch SDPA", "keras.layers.MultiHeadAttention")
TOLERANCES = {"STUDENT_VS_KERAS": "against Keras", "STUDENT": "otherwise"}

# (B, Tq, Tk, C, H, mask): Tq != Tk, one head, every mask form of the contract: (Tq, Tk), (B, 1, Tq, Tk),
# (B, H, Tq, Tk).
CASES = [
    pytest.param(2, 5, 7, 12, 3, None, id="b2-tq5-tk7-c12-h3-nomask"),
    pytest.param(3, 4, 6, 8, 2, "2d", id="b3-tq4-tk6-c8-h2-mask2d"),
    pytest.param(2, 6, 4, 16, 4, "b1", id="b2-tq6-tk4-c16-h4-maskB1"),
    pytest.param(2, 3, 9, 12, 4, "bh", id="b2-tq3-tk9-c12-h4-maskBH"),
    pytest.param(1, 5, 5, 6, 1, "b1", id="b1-t5-c6-h1-maskB1"),
]


def head_mask(rng, kind, b, h, tq, tk):
    if kind == "2d":
        return key_mask(rng, tq, tk)                   # (Tq, Tk)
    if kind == "b1":
        return key_mask(rng, b, 1, tq, tk)             # (B, 1, Tq, Tk)
    if kind == "bh":
        return key_mask(rng, b, h, tq, tk)             # (B, H, Tq, Tk)
    return None


def per_head_concatenation(query, key, value, num_heads, mask=None):
    """Attention of every head on its own block of channels (float64 torch SDPA), concatenated over channels."""
    b, tq, c = query.shape
    tk, dh = key.shape[1], c // num_heads
    full = None if mask is None else np.broadcast_to(mask, (b, num_heads, tq, tk)).copy()      # (B, H, Tq, Tk)
    pieces = []
    for head in range(num_heads):
        cols = slice(head * dh, (head + 1) * dh)
        pieces.append(references.scaled_dot_product_attention(
            query[..., cols], key[..., cols], value[..., cols], None if full is None else full[:, head]))
    return np.concatenate(pieces, axis=-1)                                             # (B, Tq, C)


@pytest.mark.points(1.0)
@pytest.mark.parametrize("b, tq, tk, c, h, mask_kind", CASES)
def test_matches_per_head_concatenation(student, rng, b, tq, tk, c, h, mask_kind):
    """헤드마다 따로 계산한 float64 어텐션(스케일 1/√(C/H))을 이어 붙인 것과 같은 출력"""
    q, k, v = normal(rng, b, tq, c), normal(rng, b, tk, c), normal(rng, b, tk, c)
    mask = head_mask(rng, mask_kind, b, h, tq, tk)
    got = student.multi_head_attention(q, k, v, h, mask)
    expect_close(got, per_head_concatenation(q, k, v, h, mask), against="헤드별 float64 어텐션의 연결",
                 call=student.last)
    expect_close(got, REFERENCE(q, k, v, h, mask), against="float64 멀티헤드 참조",
                 call=student.last)


@pytest.mark.points(0.5)
@pytest.mark.parametrize("masked", [pytest.param(False, id="nomask"), pytest.param(True, id="mask")])
def test_matches_keras_with_identity_projections(student, rng, masked):
    """투영을 단위 행렬로, 편향을 없앤 keras.layers.MultiHeadAttention과 같은 출력"""
    b, tq, tk, h, dh = 2, 4, 6, 3, 4
    c = h * dh
    q, k, v = normal(rng, b, tq, c), normal(rng, b, tk, c), normal(rng, b, tk, c)
    attention_mask = key_mask(rng, b, tq, tk) if masked else None                     # Keras: (B, Tq, Tk)
    identity = np.eye(c, dtype=np.float32)
    params = {"w_q": identity, "w_k": identity, "w_v": identity, "w_o": identity}      # no biases
    layer = keras_layers.multi_head_attention(params, h, q.shape, v.shape, k.shape)
    expected = keras.ops.convert_to_numpy(layer(q, v, k, attention_mask=attention_mask))  # (B, Tq, C)
    got = student.multi_head_attention(q, k, v, h, None if attention_mask is None else attention_mask[:, None])
    expect_close(got, expected, tol=tolerances.STUDENT_VS_KERAS, against="keras.layers.MultiHeadAttention",
                 call=student.last)


@pytest.mark.points(0.5)
def test_weights_form_a_distribution(student, rng):
    """값의 헤드마다 단위 행렬을 넣으면 출력 = 헤드별 가중치: 0 이상, 행 합 1, 가려진 위치는 정확히 0"""
    b, tq, tk, h = 2, 5, 6, 3
    c = h * tk                                                                         # dh = Tk
    q, k = normal(rng, b, tq, c), normal(rng, b, tk, c)
    eye = np.tile(np.eye(tk, dtype=np.float32), (b, 1, h))                             # (B, Tk, H*Tk)
    mask = key_mask(rng, b, h, tq, tk)                                                 # (B, H, Tq, Tk)
    got = student.multi_head_attention(q, k, eye, h, mask)
    expect_close(got, per_head_concatenation(q, k, eye, h, mask), what="헤드별 가중치 (값 = 단위 행렬)",
                 against="헤드별 float64 softmax(QKᵀ/√dh)", call=student.last)
    weights = as_array(got).reshape(b, tq, h, tk).transpose(0, 2, 1, 3)              # (B, H, Tq, Tk)
    expect_true(np.all(weights >= 0), "어텐션 가중치에 음수가 있습니다.")
    expect_true(np.all(weights[~mask] == 0),
                "가려진(mask=False) 위치의 가중치가 정확히 0이 아닙니다 (헤드마다 다른 마스크 (B, H, Tq, Tk)).")
    expect_close(weights.sum(-1), np.ones((b, h, tq)), what="가중치의 행 합", against="확률의 합 1")


@pytest.mark.points(0.5)
def test_keys_masked_for_one_head_do_not_matter(student, rng):
    """헤드 h가 보지 않는 키에서 헤드 h의 채널만 바꿔도 출력이 그대로 (마스크는 (B, H, Tq, Tk))"""
    b, tq, tk, h, dh = 2, 4, 7, 3, 4
    c = h * dh
    q, k, v = normal(rng, b, tq, c), normal(rng, b, tk, c), normal(rng, b, tk, c)
    visible = np.stack([np.stack([rng.permutation(tk) < rng.integers(2, tk - 1) for _ in range(h)])
                        for _ in range(b)])                                            # (B, H, Tk)
    mask = np.broadcast_to(visible[:, :, None, :], (b, h, tq, tk)).copy()              # (B, H, Tq, Tk)
    first = student.multi_head_attention(q, k, v, h, mask)
    expect_close(first, per_head_concatenation(q, k, v, h, mask), against="헤드별 float64 어텐션의 연결",
                 call=student.last)
    k2, v2 = k.copy(), v.copy()
    for i in range(b):
        for head in range(h):
            hidden = np.flatnonzero(~visible[i, head])
            cols = slice(head * dh, (head + 1) * dh)
            k2[i, hidden, cols] = normal(rng, len(hidden), dh) * 5
            v2[i, hidden, cols] = normal(rng, len(hidden), dh) * 5
    second = student.multi_head_attention(q, k2, v2, h, mask)
    expect_close(second, as_array(first), what="가려진 키의 해당 헤드 채널을 바꾼 뒤의 출력",
                 against="바꾸기 전의 출력")


@pytest.mark.points(0.5)
def test_permuting_keys_and_values(student, rng):
    """키와 값(과 마스크의 키 축)을 같은 순서로 섞어도 출력이 그대로"""
    b, tq, tk, h, c = 2, 5, 8, 4, 16
    q, k, v = normal(rng, b, tq, c), normal(rng, b, tk, c), normal(rng, b, tk, c)
    mask = key_mask(rng, b, 1, tq, tk)                                                 # (B, 1, Tq, Tk)
    perm = rng.permutation(tk)
    first = student.multi_head_attention(q, k, v, h, mask)
    second = student.multi_head_attention(q, k[:, perm], v[:, perm], h, mask[..., perm])
    expect_close(second, as_array(first), what="키·값을 섞은 뒤의 출력", against="섞기 전의 출력")
    expect_close(first, per_head_concatenation(q, k, v, h, mask), against="헤드별 float64 어텐션의 연결")
