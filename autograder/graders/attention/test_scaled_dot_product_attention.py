"""scaled_dot_product_attention(query, key, value, mask=None, return_weights=False)."""
import math

import keras
import numpy as np
import pytest

from autograder.graders import gpu_checks, references
from autograder.graders.attention import properties
from autograder.graders.attention.inputs import draw
from autograder.graders.attention.keras_layers import expect_like_keras_attention
from autograder.graders.compare import as_array, expect_close, expect_true

# Judged against (forbidden routines and known mistakes: exercises/scaled_dot_product_attention.py):
REFERENCE = references.scaled_dot_product_attention
REFERENCES = ("float64 torch SDPA (math backend)", "keras.layers.Attention")
TOLERANCES = {"STUDENT_VS_KERAS": "against Keras", "STUDENT": "otherwise", "against_gpu": "stored GPU cases, by dtype"}
GPU_CASES = ("sdpa", "sdpa_large_logits")  # stored outputs of torch's SDPA backends in each dtype (gpu_refs)

# (leading dims, Tq, Tk, d, dv, mask): Tq != Tk, several batch shapes, masks of every broadcastable form.
CASES = [
    pytest.param((2,), 5, 7, 8, 6, None, id="b2-tq5-tk7-nomask"),
    pytest.param((3,), 4, 9, 16, 16, "full", id="b3-tq4-tk9-mask"),
    pytest.param((2, 3), 6, 4, 4, 5, "2d", id="b2h3-tq6-tk4-mask2d"),
    pytest.param((), 3, 11, 32, 8, "keys", id="nobatch-tq3-tk11-keymask"),
]


@pytest.mark.points(0.75)
@pytest.mark.parametrize("lead, tq, tk, d, dv, mask_kind", CASES)
def test_matches_torch_sdpa(student, rng, lead, tq, tk, d, dv, mask_kind):
    """torch.nn.functional.scaled_dot_product_attention (float64)와 같은 출력"""
    q, k, v, mask = draw(rng, lead, tq, tk, d, dv, mask_kind)
    got = student.scaled_dot_product_attention(q, k, v, mask)
    expect_close(got, REFERENCE(q, k, v, mask),
                 against="float64 torch scaled_dot_product_attention", call=student.last)


@pytest.fixture
def attention(student):
    """The student's scaled_dot_product_attention and its reference, for the shared tests (properties.py)."""
    return properties.Attention(student, "scaled_dot_product_attention", REFERENCE, "float64 torch")


def keras_scaled_attention(q, v, k):
    """keras.layers.Attention with its learned scale set to 1/√d."""
    layer = keras.layers.Attention(use_scale=True)
    layer.build([q.shape, v.shape, k.shape])
    layer.scale.assign(1.0 / math.sqrt(q.shape[-1]))
    return layer


@pytest.mark.points(0.5)
@pytest.mark.parametrize("masked", [pytest.param(False, id="nomask"), pytest.param(True, id="keymask")])
def test_matches_keras_attention(student, rng, masked):
    """keras.layers.Attention(스케일 1/√d)와 같은 출력"""
    expect_like_keras_attention(student, "scaled_dot_product_attention", rng, masked, keras_scaled_attention,
                                against="keras.layers.Attention", dv=8)


@pytest.mark.points(0.5)
def test_return_weights(student, rng):
    """return_weights=True: (출력, 가중치); 가중치는 0 이상, 행 합 1, 가려진 위치는 정확히 0"""
    q, k, v, mask = draw(rng, (2,), 5, 8, 8, 4, "full")
    result = student.scaled_dot_product_attention(q, k, v, mask, return_weights=True)
    expect_true(isinstance(result, (tuple, list)) and len(result) == 2,
                "return_weights=True일 때 (출력, 가중치) 두 값을 돌려주어야 합니다.")
    out, weights = REFERENCE(q, k, v, mask, return_weights=True)
    expect_close(result[0], out, what="출력", against="float64 torch", call=student.last, pick=lambda r: r[0])
    expect_close(result[1], weights, what="가중치", against="float64 softmax(QKᵀ/√d)", call=student.last,
                 pick=lambda r: r[1])
    w = as_array(result[1], "가중치")
    expect_true(np.all(w[~np.broadcast_to(mask, w.shape)] == 0),
                "가려진(mask=False) 위치의 가중치가 정확히 0이 아닙니다.")


# What holds for any attention (properties.py), on this module's ``attention``:
test_masked_keys_do_not_matter = properties.test_masked_keys_do_not_matter
test_permuting_keys_and_values = properties.test_permuting_keys_and_values


@pytest.mark.points(0.75)
@pytest.mark.parametrize("name", [name for kind in GPU_CASES for name in gpu_checks.params(kind)])
def test_matches_stored_torch_references(student, name):
    """저장된 torch SDPA 참조 출력과 일치 (모든 백엔드·자료형, 큰 로짓 포함)"""
    case = next(c for kind in GPU_CASES for c in gpu_checks.cases(kind) if c.name == name)
    args = case.inputs
    got = student.scaled_dot_product_attention(args["query"], args["key"], args["value"], args.get("mask"))
    gpu_checks.expect_matches_references(got, case, call=student.last)


test_matches_stored_torch_references.__doc__ = (
    f"저장된 torch SDPA 참조 출력과 일치 ({gpu_checks.describe('sdpa')}; 큰 로짓 포함)")
