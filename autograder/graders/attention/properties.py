"""Property tests shared by the graders of the attention functions ``f(query, key, value, mask)`` (additive,
dot-product, scaled dot-product attention): what holds for any attention, whatever its score.

A grader module imports the tests it shares and gives them its function through the fixture ``attention``
(an ``Attention``)::

    @pytest.fixture
    def attention(student):
        return properties.Attention(student, "additive_attention", REFERENCE, "float64 가산 어텐션",
                                    weights_against="float64 softmax(Σ tanh(q + k))")

    from autograder.graders.attention.properties import test_permuting_keys_and_values  # noqa: E402, F401

pytest collects an imported test in the importing module: its id, its ``rng`` (seeded from that id) and its points
are the module's own, as if it were written there.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from autograder.graders.attention.inputs import draw, hidden_keys_mask, key_mask, normal
from autograder.graders.compare import as_array, expect_close, expect_true


@dataclass
class Attention:
    """The student's attention function ``name`` and what it is judged against."""

    student: object
    name: str
    reference: Callable          # float64, ``reference(q, k, v, mask)``
    against: str                 # the reference's name in the Korean messages
    weights_against: str = ""    # its name when the values are the identity (the output is the weights)

    def __call__(self, *args):
        return getattr(self.student, self.name)(*args)

    @property
    def last(self):
        return self.student.last


@pytest.mark.points(0.25)
def test_weights_form_a_distribution(attention, rng):
    """값으로 단위 행렬을 주면 출력 = 가중치: 0 이상, 행 합 1, 가려진 위치는 정확히 0"""
    b, tq, tk, d = 2, 5, 7, 6
    q, k = normal(rng, b, tq, d), normal(rng, b, tk, d)
    mask = key_mask(rng, b, tq, tk)
    eye = np.broadcast_to(np.eye(tk, dtype=np.float32), (b, tk, tk)).copy()          # (B, Tk, Tk)
    got = attention(q, k, eye, mask)
    weights = as_array(got, "가중치")
    expect_close(got, attention.reference(q, k, eye, mask), what="가중치 (값 = 단위 행렬)",
                 against=attention.weights_against, call=attention.last)
    expect_true(np.all(weights >= 0), "어텐션 가중치에 음수가 있습니다.")
    expect_true(np.all(weights[~mask] == 0), "가려진(mask=False) 위치의 가중치가 정확히 0이 아닙니다.")
    expect_close(weights.sum(-1), np.ones((b, tq)), what="가중치의 행 합", against="확률의 합 1")


@pytest.mark.points(0.25)
def test_masked_keys_do_not_matter(attention, rng):
    """가려진 키·값을 바꿔도 출력이 그대로"""
    q, k, v, _ = draw(rng, (2,), 4, 7, 8, 5, None)
    mask = hidden_keys_mask(rng, 7)                                    # (1, Tk)
    first = attention(q, k, v, mask)
    expect_close(first, attention.reference(q, k, v, mask), against=attention.against, call=attention.last)
    hidden = ~mask[0]                                                  # (Tk,) keys nobody may see
    k2, v2 = k.copy(), v.copy()
    k2[:, hidden] = normal(rng, 2, int(hidden.sum()), 8) * 5
    v2[:, hidden] = normal(rng, 2, int(hidden.sum()), 5) * 5
    second = attention(q, k2, v2, mask)
    expect_close(second, as_array(first), what="가려진 키를 바꾼 뒤의 출력", against="바꾸기 전의 출력")


@pytest.mark.points(0.25)
def test_permuting_keys_and_values(attention, rng):
    """키와 값을 같은 순서로 섞어도 출력이 그대로"""
    q, k, v, mask = draw(rng, (2,), 5, 9, 8, 6, "full")
    perm = rng.permutation(9)
    first = attention(q, k, v, mask)
    second = attention(q, k[:, perm], v[:, perm], mask[..., perm])
    expect_close(second, as_array(first), what="키·값을 섞은 뒤의 출력", against="섞기 전의 출력")
    expect_close(first, attention.reference(q, k, v, mask), against=attention.against)
