"""split_heads(x, num_heads): (B, T, C) -> (B, H, T, C // H); head h holds channels h*C/H .. (h+1)*C/H - 1."""
import pytest

from autograder.graders import references
from autograder.graders.attention.inputs import normal
from autograder.graders.compare import as_array, expect_close

# Judged against (forbidden routines and known mistakes: exercises/split_heads.py):
REFERENCE = references.split_heads
REFERENCES = ("numpy reshape + transpose",)
TOLERANCES = {"STUDENT": "every comparison"}

# (B, T, C, H): one head, one channel per head, T != dh, B = 1.
CASES = [
    pytest.param(2, 5, 12, 3, id="b2-t5-c12-h3"),
    pytest.param(1, 7, 8, 4, id="b1-t7-c8-h4"),
    pytest.param(3, 4, 6, 1, id="b3-t4-c6-h1"),
    pytest.param(2, 3, 10, 10, id="b2-t3-c10-h10"),
]


@pytest.mark.points(0.5)
@pytest.mark.parametrize("b, t, c, h", CASES)
def test_matches_reshape_transpose(student, rng, b, t, c, h):
    """numpy의 reshape(B, T, H, C/H) + transpose(0, 2, 1, 3)와 같은 결과"""
    x = normal(rng, b, t, c)
    got = student.split_heads(x, h)
    expect_close(got, x.reshape(b, t, h, c // h).transpose(0, 2, 1, 3), against="numpy reshape + transpose",
                 call=student.last)


@pytest.mark.points(0.25)
def test_head_holds_its_channel_block(student, rng):
    """헤드 h는 채널 h*C/H부터 (h+1)*C/H - 1까지를 그대로 가짐"""
    b, t, h = 2, 6, 4
    dh = int(rng.integers(2, 5))
    x = normal(rng, b, t, h * dh)
    got = as_array(student.split_heads(x, h))
    expect_close(got, REFERENCE(x, h), against="채널 블록", call=student.last)
    for head in range(h):
        expect_close(got[:, head], x[..., head * dh:(head + 1) * dh], what=f"헤드 {head}",
                     against=f"채널 {head * dh}..{(head + 1) * dh - 1}")


@pytest.mark.points(0.25)
def test_merging_back_gives_the_input(student, rng):
    """나눈 헤드를 다시 이어 붙이면 (numpy로 합쳐서) 원래 입력"""
    b, t, h, dh = 3, 5, 2, 6
    x = normal(rng, b, t, h * dh)
    got = as_array(student.split_heads(x, h))
    expect_close(got, REFERENCE(x, h), against="numpy reshape + transpose", call=student.last)
    expect_close(references.merge_heads(got), x, what="다시 합친 결과", against="원래 입력")
