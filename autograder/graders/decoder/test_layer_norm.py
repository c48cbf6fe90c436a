"""layer_norm(x, gamma, beta, eps=1e-5): over the last axis, (x - mean) / sqrt(var + eps) * gamma + beta with the
biased variance."""
import keras
import numpy as np
import pytest

from autograder.graders import references, tolerances
from autograder.graders.attention.inputs import normal
from autograder.graders.compare import expect_close
from autograder.graders.decoder import norm_params

# Judged against (forbidden routines and known mistakes: exercises/layer_norm.py):
REFERENCE = references.layer_norm
REFERENCES = ("torch.nn.functional.layer_norm in float64", "keras.layers.LayerNormalization")
TOLERANCES = {"STUDENT": "against torch", "STUDENT_VS_KERAS": "against Keras"}

CASES = [  # shape of x, dtype
    pytest.param((2, 5, 16), np.float32, id="b2-t5-D16-float32"),
    pytest.param((7, 8), np.float32, id="2d-7x8-float32"),
    pytest.param((2, 3, 4, 12), np.float32, id="4d-D12-float32"),
    pytest.param((3, 6, 10), np.float64, id="b3-t6-D10-float64"),
]


def draw(rng, shape, dtype=np.float32, scale=1.0, offset=0.0):
    x = (normal(rng, *shape) * np.float32(scale) + np.float32(offset)).astype(dtype)
    weights = norm_params(rng, shape[-1])
    return x, weights["gamma"].astype(dtype), weights["beta"].astype(dtype)


@pytest.mark.points(0.8)
@pytest.mark.parametrize("shape, dtype", CASES)
def test_matches_torch_layer_norm(student, rng, shape, dtype):
    """마지막 축의 평균과 편향 분산으로 정규화한 값 (torch.nn.functional.layer_norm, float64)"""
    x, gamma, beta = draw(rng, shape, dtype, scale=2.0, offset=0.5)
    got = student.layer_norm(x, gamma, beta)
    expect_close(got, REFERENCE(x, gamma, beta), tol=tolerances.STUDENT, against="torch layer_norm (float64)",
                 call=student.last)


@pytest.mark.points(0.4)
def test_matches_keras_layer_normalization(student, rng):
    """keras.layers.LayerNormalization(epsilon=1e-5)에 같은 gamma, beta를 넣은 결과"""
    x, gamma, beta = draw(rng, (2, 6, 24))
    layer = keras.layers.LayerNormalization(epsilon=1e-5)
    layer.build(x.shape)
    layer.gamma.assign(gamma)
    layer.beta.assign(beta)
    expected = keras.ops.convert_to_numpy(layer(x))
    got = student.layer_norm(x, gamma, beta)
    expect_close(got, expected, tol=tolerances.STUDENT_VS_KERAS, against="keras.layers.LayerNormalization",
                 call=student.last)


@pytest.mark.points(0.4)
def test_rows_of_small_variance(student, rng):
    """분산이 eps 정도로 작은 행: eps는 분산에 더한 뒤 제곱근 (eps를 제곱근 밖에서 더하면 41 % 달라짐)"""
    x, gamma, beta = draw(rng, (3, 4, 16), scale=3e-3)             # var ~ 1e-5 = eps
    got = student.layer_norm(x, gamma, beta)
    expect_close(got, REFERENCE(x, gamma, beta), what="분산이 작은 행의 출력", tol=tolerances.STUDENT,
                 against="torch layer_norm (float64)", call=student.last)


@pytest.mark.points(0.2)
def test_eps_argument(student, rng):
    """eps 인자를 씀: eps=0.01과 분산이 비슷한 입력"""
    x, gamma, beta = draw(rng, (2, 5, 8), scale=0.1)
    got = student.layer_norm(x, gamma, beta, eps=1e-2)
    expect_close(got, REFERENCE(x, gamma, beta, eps=1e-2), what="eps=0.01일 때의 출력", tol=tolerances.STUDENT,
                 against="torch layer_norm (float64)", call=student.last)


@pytest.mark.points(0.2)
def test_constant_rows_give_beta(student, rng):
    """값이 모두 같은 행(분산 0)은 NaN 없이 beta가 됨"""
    _, gamma, beta = draw(rng, (1, 12))
    # (3, 12): each row one value, a dyadic number, so that even a float32 mean is exactly that value (a mean that
    # is off by one ulp leaves x - mean ~ 1e-7, which the division by sqrt(eps) turns into ~1e-4)
    x = np.repeat(rng.choice(np.float32([-3.0, -1.5, -0.25, 0.5, 2.0, 4.75]), size=(3, 1)), 12, axis=1)
    got = student.layer_norm(x, gamma, beta)
    expect_close(got, np.broadcast_to(beta, x.shape), what="값이 모두 같은 행의 출력", tol=tolerances.STUDENT,
                 against="beta (분산 0인 행은 0으로 정규화된 뒤 beta만 남음)", call=student.last)
