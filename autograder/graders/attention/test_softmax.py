"""softmax(x, axis=-1): any shape, numerically stable."""
import keras
import numpy as np
import pytest

from autograder.graders import references, tolerances
from autograder.graders.attention.inputs import normal
from autograder.graders.compare import as_array, expect_close, expect_true

# Judged against (forbidden routines and known mistakes: exercises/softmax.py):
REFERENCE = references.softmax
REFERENCES = ("float64 torch.softmax", "keras.ops.softmax")
TOLERANCES = {
    "STUDENT_VS_KERAS": "against Keras",
    "STABILITY": "large logits",
    "FLOAT16": "float16 inputs",
    "WORKED_EXAMPLE": "the text's printed values",
    "STUDENT": "otherwise",
}

SHAPES = [pytest.param((7,), -1, id="1d"), pytest.param((3, 5), -1, id="2d-last"),
          pytest.param((4, 6), 0, id="2d-axis0"), pytest.param((2, 3, 5), 1, id="3d-axis1")]


@pytest.mark.points(0.75)
@pytest.mark.parametrize("shape, axis", SHAPES)
def test_matches_keras_softmax(student, rng, shape, axis):
    """keras.ops.softmax와 같은 값 (여러 모양과 축)"""
    x = normal(rng, *shape) * 3
    got = student.softmax(x, axis=axis)
    expected = keras.ops.convert_to_numpy(keras.ops.softmax(x, axis=axis))
    expect_close(got, expected, tol=tolerances.STUDENT_VS_KERAS, against="keras.ops.softmax", call=student.last)
    expect_close(got, REFERENCE(x, axis), against="float64 torch.softmax", call=student.last)


@pytest.mark.points(0.25)
def test_worked_example(student):
    """본문의 예: softmax([4.06, 5.65, 3.51]) ≈ [0.154, 0.757, 0.089]"""
    x = np.array([4.06, 5.65, 3.51])
    got = student.softmax(x)
    expect_close(got, REFERENCE(x), against="float64 torch.softmax", call=student.last)
    expect_close(got, [0.154, 0.757, 0.089], tol=tolerances.WORKED_EXAMPLE, against="본문의 계산")


@pytest.mark.points(0.5)
@pytest.mark.parametrize("scale", [pytest.param(1000.0, id="plus-1000"), pytest.param(-1000.0, id="minus-1000")])
def test_large_logits_are_stable(student, rng, scale):
    """±1000 크기의 float32 로짓에서도 inf/NaN 없이 올바른 값 (최댓값 빼기)"""
    x = (scale + rng.integers(-3, 4, size=(3, 6))).astype(np.float32)
    got = student.softmax(x)
    expect_close(got, REFERENCE(x), tol=tolerances.STABILITY, what="큰 로짓의 softmax",
                 against="float64 torch.softmax", call=student.last)


@pytest.mark.points(0.25)
def test_float16_input(student, rng):
    """float16 입력에서도 inf/NaN 없이 올바른 값"""
    x = (normal(rng, 4, 5) * 4).astype(np.float16)
    got = student.softmax(x)
    expect_close(got, REFERENCE(x.astype(np.float64)), tol=tolerances.FLOAT16, what="float16 softmax",
                 against="float64 torch.softmax", call=student.last)


@pytest.mark.points(0.25)
def test_probability_properties(student, rng):
    """결과는 0 이상이고 축을 따라 합이 1, 입력에 상수를 더해도 변하지 않음"""
    x = normal(rng, 5, 8) * 2
    p = as_array(student.softmax(x, axis=-1))
    shifted = as_array(student.softmax(x + np.float32(7.5), axis=-1))
    expect_true(p.shape == x.shape and np.all(p >= 0), f"softmax 결과에 음수가 있거나 모양이 다릅니다 {p.shape}.")
    expect_close(p.sum(-1), np.ones(5), what="행 합", against="확률의 합 1")
    expect_close(shifted, p, what="상수를 더한 입력의 softmax", against="원래 입력의 softmax")
