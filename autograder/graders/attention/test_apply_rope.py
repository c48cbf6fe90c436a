"""apply_rope(x, positions, base=10000.0): rotary position embedding in the rotate-half layout.

For i < d/2 the pair (x[..., i], x[..., i + d/2]) is turned by the angle positions * base ** (-2i / d)
(GPT-NeoX, Hugging Face transformers' Llama port, Keras Hub's RotaryEmbedding; Meta's reference Llama code and
RoFormer pair adjacent components, the same up to a fixed permutation of W_q/W_k's output rows). Checked against a
float64 reference (which agrees with keras_hub.layers.RotaryEmbedding to 4e-6 in float32, checked once by hand:
keras-hub is not a dependency) and against the contract's properties: norms kept, position 0 the identity, scores
depending only on m - n.

Positions stay below 100 wherever a float32 student result meets ``tolerances.STUDENT``: a float32 angle
p * f carries a relative error of about 2u, so |error| <= 100 * 1.2e-7 * |x| ~ 5e-5 for |x| <= 4, inside
atol = rtol = 1e-4. Larger positions are used only where both sides of the comparison come from the student.
"""
import numpy as np
import pytest

from autograder.graders import references, tolerances
from autograder.graders.attention.inputs import normal
from autograder.graders.compare import as_array, expect_close, expect_true

# Judged against (forbidden routines and known mistakes: exercises/apply_rope.py):
REFERENCE = references.apply_rope
REFERENCES = ("float64 rotate-half RoPE",)
TOLERANCES = {
    "STUDENT": "the rotated vectors",
    "ROPE_SCORES": "scores of rotated vectors",
    "ROPE_LEAK_ATOL": "components outside a rotated unit vector's plane",
}


def positions_of(kind, rng, t):
    if kind == "arange":
        return np.arange(t)
    if kind == "offset":                                      # a block that continues a cached prefix
        return np.arange(t) + int(rng.integers(5, 40))
    return rng.choice(64, size=t, replace=False)              # any order, not starting at 0


# (leading dims, T, d, positions, base, dtype)
CASES = [
    pytest.param((), 5, 8, "arange", None, np.float32, id="t5-d8-arange"),
    pytest.param((2,), 6, 16, "offset", None, np.float64, id="b2-t6-d16-offset-float64"),
    pytest.param((2, 3), 4, 4, "shuffled", None, np.float32, id="b2x3-t4-d4-shuffled"),
    pytest.param((2, 2), 7, 64, "offset", 500.0, np.float64, id="b2xh2-t7-d64-base500-float64"),
    pytest.param((3,), 3, 2, "shuffled", 10.0, np.float32, id="b3-t3-d2-base10"),
]


def call(student, x, positions, base):
    if base is None:
        return student.apply_rope(x, positions)
    return student.apply_rope(x, positions, base=base)


@pytest.mark.points(1.0)
@pytest.mark.parametrize("lead, t, d, kind, base, dtype", CASES)
def test_matches_float64_reference(student, rng, lead, t, d, kind, base, dtype):
    """float64 참조(회전 반쪽 방식, 각도 = 위치 × base^(-2i/d))와 같은 출력 (여러 배치 차원, float32/float64)"""
    x = normal(rng, *lead, t, d, dtype=dtype)
    positions = positions_of(kind, rng, t)
    got = call(student, x, positions, base)
    expected = REFERENCE(x, positions, 10000.0 if base is None else base)
    expect_close(got, expected, against="float64 RoPE 참조", call=student.last)


@pytest.mark.points(0.25)
def test_position_zero_is_identity(student, rng):
    """위치 0에서는 회전각이 0이라 입력이 그대로 나옴"""
    x = normal(rng, 2, 4, 8)
    got = student.apply_rope(x, np.zeros(4, dtype=np.int64))
    expect_close(got, x, what="위치 0의 출력", against="입력 x (회전각 0)", call=student.last)


@pytest.mark.points(0.25)
def test_norms_are_kept(student, rng):
    """회전이므로 각 벡터의 길이(노름)가 바뀌지 않음"""
    x = normal(rng, 3, 6, 16)
    positions = rng.choice(90, size=6, replace=False)
    got = student.apply_rope(x, positions)
    expect_close(got, REFERENCE(x, positions), against="float64 RoPE 참조", call=student.last)
    expect_close(np.linalg.norm(as_array(got), axis=-1), np.linalg.norm(x.astype(np.float64), axis=-1),
                 what="벡터의 노름", against="입력의 노름")


@pytest.mark.points(0.25)
def test_scores_depend_only_on_relative_position(student, rng):
    """apply_rope(q, m) · apply_rope(k, n)은 m - n에만 달림: 모든 위치를 같은 만큼 옮겨도 점수가 같음"""
    t, d = 5, 8
    q, k = normal(rng, t, d, dtype=np.float64), normal(rng, t, d, dtype=np.float64)
    positions = np.arange(t)
    shift = int(rng.integers(30, 90))
    q0 = student.apply_rope(q, positions)
    expect_close(q0, REFERENCE(q, positions), against="float64 RoPE 참조", call=student.last)
    k0 = student.apply_rope(k, positions)
    q1, k1 = student.apply_rope(q, positions + shift), student.apply_rope(k, positions + shift)
    before = as_array(q0) @ as_array(k0).T                                          # (T, T)
    after = as_array(q1) @ as_array(k1).T                                           # (T, T)
    expect_true(np.all(np.isfinite(after)), "위치를 옮긴 출력에 NaN/inf가 있습니다.")
    expect_close(after, before, what=f"모든 위치를 {shift}만큼 옮긴 뒤의 점수 q·k",
                 tol=tolerances.ROPE_SCORES, against="옮기기 전의 점수")


@pytest.mark.points(0.25)
def test_rotates_pairs_i_and_i_plus_half(student, rng):
    """회전 반쪽 방식: 단위 벡터 e_i는 위치 p에서 (i, i + d/2) 평면 안에서 각도 p·base^(-2i/d)만큼 돎"""
    d = 8
    i = int(rng.integers(0, d // 2))
    x = np.zeros((1, d))
    x[0, i] = 1.0
    p = int(rng.integers(1, 20))
    got = as_array(student.apply_rope(x, np.array([p])))
    expected = REFERENCE(x, np.array([p]))
    expect_close(got, expected, what=f"위치 {p}의 단위 벡터 e_{i}", against="float64 RoPE 참조",
                 call=student.last)
    outside = np.delete(got[0], [i, i + d // 2])
    expect_true(np.allclose(outside, 0, atol=tolerances.ROPE_LEAK_ATOL),
                f"e_{i}를 돌린 결과가 성분 {i}, {i + d // 2} 밖으로 새어 나갔습니다. 짝은 (i, i + d/2)입니다.")
