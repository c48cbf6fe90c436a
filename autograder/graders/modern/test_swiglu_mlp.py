"""swiglu_mlp(x, w_gate, w_up, w_down): (silu(x @ w_gate) * (x @ w_up)) @ w_down, silu(z) = z * sigmoid(z)."""
import numpy as np
import pytest

from autograder.graders import references, tolerances
from autograder.graders.attention.inputs import normal
from autograder.graders.compare import expect_close
from autograder.graders.modern import MODEL, block_params, store

# Judged against (forbidden routines and known mistakes: exercises/swiglu_mlp.py):
REFERENCE = references.swiglu_mlp
REFERENCES = ("float64 torch: F.silu(x @ w_gate) * (x @ w_up) @ w_down",
              "transformers' Qwen3MLP (stored: graders/modern/refs)",
              "KerasHub's Qwen3TransformerDecoder MLP layers (stored: graders/modern/refs)")
TOLERANCES = {"STUDENT": "against the float64 reference", "QWEN3_FLOAT32": "against the stored library outputs"}

CASES = [  # shape of x, hidden width F, dtype
    pytest.param((2, 5, 24), 40, np.float32, id="b2-t5-D24-F40-float32"),
    pytest.param((7, 16), 48, np.float32, id="2d-7x16-F48-float32"),
    pytest.param((3, 2, 4, 12), 20, np.float32, id="4d-D12-F20-float32"),
    pytest.param((2, 6, 10), 36, np.float64, id="b2-t6-D10-F36-float64"),
]


def weights(rng, d_model, hidden, dtype=np.float32):
    b = block_params(rng, d_model, 1, 1, 2, hidden)
    return tuple(b[k].astype(dtype) for k in ("gate_proj", "up_proj", "down_proj"))


@pytest.mark.points(0.8)
@pytest.mark.parametrize("shape, hidden, dtype", CASES)
def test_matches_float64_reference(student, rng, shape, hidden, dtype):
    """silu(x @ w_gate) * (x @ w_up)를 w_down으로 되돌린 값 (float64 참조)"""
    x = normal(rng, *shape, dtype=dtype)
    w_gate, w_up, w_down = weights(rng, shape[-1], hidden, dtype)
    got = student.swiglu_mlp(x, w_gate, w_up, w_down)
    expect_close(got, REFERENCE(x, w_gate, w_up, w_down), tol=tolerances.STUDENT, against="float64 SwiGLU",
                 call=student.last)


@pytest.mark.points(0.4)
def test_one_vector(student, rng):
    """벡터 하나 (D,)도 (D,)로: 앞의 축이 없어도 됨"""
    x = normal(rng, MODEL["d_model"])
    w_gate, w_up, w_down = weights(rng, MODEL["d_model"], MODEL["hidden"])
    got = student.swiglu_mlp(x, w_gate, w_up, w_down)
    expect_close(got, REFERENCE(x, w_gate, w_up, w_down), tol=tolerances.STUDENT, against="float64 SwiGLU",
                 call=student.last)


@pytest.mark.points(0.8)
@pytest.mark.parametrize("library, name", [pytest.param("hf", "transformers의 Qwen3MLP (float64)", id="transformers"),
                                           pytest.param("keras_hub", "KerasHub Qwen3 디코더 층의 MLP (float32)",
                                                        id="keras_hub")])
def test_matches_the_libraries_qwen3_mlp(student, library, name):
    """같은 가중치를 넣은 transformers의 Qwen3MLP, KerasHub Qwen3 디코더의 MLP와 같음 (저장해 둔 출력)"""
    case = store.load("mlp_b2_t5")
    i = case.inputs
    got = student.swiglu_mlp(i["x"], i["w_gate"], i["w_up"], i["w_down"])
    expect_close(got, case.outputs[library], tol=tolerances.QWEN3_FLOAT32, against=name, call=student.last)
