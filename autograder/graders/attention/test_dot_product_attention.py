"""dot_product_attention(query, key, value, mask=None): score = q . k, no scaling."""
import keras
import pytest

from autograder.graders import references
from autograder.graders.attention import properties
from autograder.graders.attention.inputs import draw
from autograder.graders.attention.keras_layers import expect_like_keras_attention
from autograder.graders.compare import expect_close

# Judged against (forbidden routines and known mistakes: exercises/dot_product_attention.py):
REFERENCE = references.dot_product_attention
REFERENCES = ("float64 torch SDPA with scale 1", "keras.layers.Attention")
TOLERANCES = {"STUDENT_VS_KERAS": "against Keras", "STUDENT": "otherwise"}

# (leading dims, Tq, Tk, d, dv, mask): Tq != Tk, several batch shapes, masks of every broadcastable form.
# d stays <= 16: unscaled scores of N(0, 1) inputs have a spread of sqrt(d), still far from float32 trouble.
CASES = [
    pytest.param((2,), 5, 7, 8, 6, None, id="b2-tq5-tk7-nomask"),
    pytest.param((3,), 4, 9, 4, 4, "full", id="b3-tq4-tk9-mask"),
    pytest.param((2, 3), 6, 4, 4, 5, "2d", id="b2h3-tq6-tk4-mask2d"),
    pytest.param((), 3, 11, 16, 8, "keys", id="nobatch-tq3-tk11-keymask"),
]


@pytest.fixture
def attention(student):
    """The student's dot_product_attention and its reference, for the shared tests (properties.py)."""
    return properties.Attention(student, "dot_product_attention", REFERENCE, "float64 torch",
                                weights_against="float64 softmax(QKᵀ)")


@pytest.mark.points(0.5)
@pytest.mark.parametrize("masked", [pytest.param(False, id="nomask"), pytest.param(True, id="keymask")])
def test_matches_keras_attention(student, rng, masked):
    """keras.layers.Attention(score_mode="dot", use_scale=False)와 같은 출력"""
    expect_like_keras_attention(student, "dot_product_attention", rng, masked,
                                lambda q, v, k: keras.layers.Attention(score_mode="dot", use_scale=False),
                                against="keras.layers.Attention(score_mode='dot')")


@pytest.mark.points(0.75)
@pytest.mark.parametrize("lead, tq, tk, d, dv, mask_kind", CASES)
def test_matches_torch_reference(student, rng, lead, tq, tk, d, dv, mask_kind):
    """float64 torch scaled_dot_product_attention(scale=1)와 같은 출력 (배치 모양, Tq != Tk, 여러 마스크)"""
    q, k, v, mask = draw(rng, lead, tq, tk, d, dv, mask_kind)
    got = student.dot_product_attention(q, k, v, mask)
    expect_close(got, REFERENCE(q, k, v, mask),
                 against="float64 torch scaled_dot_product_attention(scale=1)", call=student.last)


# What holds for any attention (properties.py), on this module's ``attention``:
test_weights_form_a_distribution = properties.test_weights_form_a_distribution
test_masked_keys_do_not_matter = properties.test_masked_keys_do_not_matter
test_permuting_keys_and_values = properties.test_permuting_keys_and_values
