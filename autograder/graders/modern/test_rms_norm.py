"""rms_norm(x, weight, eps=1e-6): over the last axis, x / sqrt(mean(x^2) + eps) * weight (no mean subtracted)."""
import keras
import numpy as np
import pytest

from autograder.graders import references, tolerances
from autograder.graders.attention.inputs import normal
from autograder.graders.compare import expect_close
from autograder.graders.modern import norm_weight

# Judged against (forbidden routines and known mistakes: exercises/rms_norm.py):
REFERENCE = references.rms_norm
REFERENCES = ("torch.nn.functional.rms_norm in float64", "keras.layers.RMSNormalization",
              "keras.ops.rms_normalization")
TOLERANCES = {"STUDENT": "against torch", "STUDENT_VS_KERAS": "against Keras"}

CASES = [  # shape of x, dtype
    pytest.param((2, 5, 24), np.float32, id="b2-t5-D24-float32"),
    pytest.param((7, 8), np.float32, id="2d-7x8-float32"),
    pytest.param((2, 3, 4, 8), np.float32, id="4d-heads-dh8-float32"),
    pytest.param((3, 6, 10), np.float64, id="b3-t6-D10-float64"),
]


def draw(rng, shape, dtype=np.float32, scale=1.0, offset=0.0):
    """x (its rows' means far from 0 when ``offset`` is, so that subtracting them matters) and a weight."""
    x = (normal(rng, *shape) * np.float32(scale) + np.float32(offset)).astype(dtype)
    return x, norm_weight(rng, shape[-1]).astype(dtype)


@pytest.mark.points(0.8)
@pytest.mark.parametrize("shape, dtype", CASES)
def test_matches_torch_rms_norm(student, rng, shape, dtype):
    """마지막 축의 제곱 평균의 제곱근으로 나누고 weight를 곱한 값 (torch.nn.functional.rms_norm, float64)"""
    x, weight = draw(rng, shape, dtype, scale=2.0, offset=0.7)
    got = student.rms_norm(x, weight)
    expect_close(got, REFERENCE(x, weight), tol=tolerances.STUDENT, against="torch rms_norm (float64)",
                 call=student.last)


@pytest.mark.points(0.4)
def test_matches_keras_rms_normalization(student, rng):
    """keras.layers.RMSNormalization(epsilon=1e-6)에 같은 weight(scale)를 넣은 결과"""
    x, weight = draw(rng, (2, 6, 24), offset=0.5)
    layer = keras.layers.RMSNormalization(epsilon=1e-6)
    layer.build(x.shape)
    layer.scale.assign(weight)
    expected = keras.ops.convert_to_numpy(layer(x))
    got = student.rms_norm(x, weight)
    expect_close(got, expected, tol=tolerances.STUDENT_VS_KERAS, against="keras.layers.RMSNormalization",
                 call=student.last)


@pytest.mark.points(0.2)
def test_one_vector_matches_keras_ops(student, rng):
    """벡터 하나 (D,): keras.ops.rms_normalization과 같음 (앞의 축이 없어도 됨)"""
    x, weight = draw(rng, (16,), offset=-0.4)
    expected = keras.ops.convert_to_numpy(keras.ops.rms_normalization(x, weight, epsilon=1e-6))
    got = student.rms_norm(x, weight)
    expect_close(got, expected, tol=tolerances.STUDENT_VS_KERAS, against="keras.ops.rms_normalization",
                 call=student.last)


@pytest.mark.points(0.4)
def test_rows_of_small_mean_square(student, rng):
    """제곱 평균이 eps(1e-6) 정도로 작은 행: eps는 제곱 평균에 더한 뒤 제곱근"""
    x, weight = draw(rng, (3, 4, 16), scale=1e-3)             # mean(x^2) ~ 1e-6 = eps
    got = student.rms_norm(x, weight)
    expect_close(got, REFERENCE(x, weight), what="제곱 평균이 작은 행의 출력", tol=tolerances.STUDENT,
                 against="torch rms_norm (float64)", call=student.last)


@pytest.mark.points(0.2)
def test_eps_argument(student, rng):
    """eps 인자를 씀: eps=0.01과 제곱 평균이 비슷한 입력"""
    x, weight = draw(rng, (2, 5, 8), scale=0.1)
    got = student.rms_norm(x, weight, eps=1e-2)
    expect_close(got, REFERENCE(x, weight, eps=1e-2), what="eps=0.01일 때의 출력", tol=tolerances.STUDENT,
                 against="torch rms_norm (float64)", call=student.last)
