"""merge_heads(x): (B, H, T, dh) -> (B, T, H * dh), the inverse of split_heads."""
import numpy as np
import pytest

from autograder.graders import references
from autograder.graders.attention.inputs import normal
from autograder.graders.compare import as_array, expect_close

# Judged against (forbidden routines and known mistakes: exercises/merge_heads.py):
REFERENCES = ("numpy transpose + reshape (the inverse of references.split_heads)",)
TOLERANCES = {"STUDENT": "every comparison"}

# (B, H, T, dh): one head, dh = 1, T != dh, B = 1.
CASES = [
    pytest.param(2, 3, 5, 4, id="b2-h3-t5-dh4"),
    pytest.param(1, 4, 7, 2, id="b1-h4-t7-dh2"),
    pytest.param(3, 1, 4, 6, id="b3-h1-t4-dh6"),
    pytest.param(2, 10, 3, 1, id="b2-h10-t3-dh1"),
]


@pytest.mark.points(0.5)
@pytest.mark.parametrize("b, h, t, dh", CASES)
def test_matches_transpose_reshape(student, rng, b, h, t, dh):
    """numpy의 transpose(0, 2, 1, 3) + reshape(B, T, H * dh)와 같은 결과"""
    x = normal(rng, b, h, t, dh)
    got = student.merge_heads(x)
    expect_close(got, x.transpose(0, 2, 1, 3).reshape(b, t, h * dh), against="numpy transpose + reshape",
                 call=student.last)


@pytest.mark.points(0.25)
def test_heads_are_concatenated_in_order(student, rng):
    """출력의 채널 h*dh .. (h+1)*dh - 1은 헤드 h 그대로 (헤드 순서대로 이어 붙임)"""
    b, h, t = 2, 4, 6
    dh = int(rng.integers(2, 5))
    x = normal(rng, b, h, t, dh)
    got = as_array(student.merge_heads(x))
    expect_close(got, np.concatenate([x[:, i] for i in range(h)], axis=-1), against="헤드를 차례로 이어 붙인 것",
                 call=student.last)
    for head in range(h):
        expect_close(got[..., head * dh:(head + 1) * dh], x[:, head], what=f"채널 {head * dh}..{(head + 1) * dh - 1}",
                     against=f"헤드 {head}")


@pytest.mark.points(0.25)
def test_inverse_of_split_heads(student, rng):
    """numpy로 헤드를 나눈 것을 합치면 원래 입력 (split_heads의 역연산)"""
    b, t, h, dh = 3, 5, 3, 4
    x = normal(rng, b, t, h * dh)
    got = student.merge_heads(references.split_heads(x, h).astype(np.float32))
    expect_close(got, x, what="다시 합친 결과", against="나누기 전의 입력", call=student.last)
