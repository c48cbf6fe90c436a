"""Each exercise on its own logic (autograder/graders/isolation.py, inside.proxies.Isolated) and a hung call's cost.

A student process whose ``softmax`` is wrong: while ``attention`` is called with ``softmax`` isolated, the proxy
answers with the float64 reference in the caller's kind (numpy of the input's dtype, torch of the input's dtype),
the student's own ``softmax`` is back afterwards, a proxy kept for later is refused, arguments that are not plain
data run the student's own function, and a hung call is interrupted (the process lives on, nothing is replayed).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

from autograder import settings  # noqa: E402
from autograder.graders import isolation  # noqa: E402
from autograder.sandbox import lanes  # noqa: E402
from autograder.sandbox.runner import StudentCodeError, StudentProcess  # noqa: E402

CELLS = [
    "import time\nimport numpy as np\nimport torch",
    "def softmax(x, axis=-1):\n    return np.zeros(np.shape(x))          # wrong",
    "_kept = []\n\n"
    "def attention(scores, as_torch=False):\n"
    "    _kept.append(softmax)\n"
    "    x = torch.as_tensor(scores, dtype=torch.float32) if as_torch else np.asarray(scores, dtype=np.float32)\n"
    "    w = softmax(x, axis=-1)\n"
    "    kind = float(isinstance(w, torch.Tensor)) + 10 * float(str(w.dtype).endswith('float32'))\n"
    "    return w, kind",
    "def later(x):\n    return _kept[-1](x)",
    "def own(x):\n    return softmax(x)",
    "class Box:\n    pass\n\ndef odd(x):\n    return softmax(Box())",
    "def causal_mask(t_q, t_k=None):\n    return np.zeros((1, 1), dtype=bool)          # wrong",
    "def mask_rows(n):\n    return float(causal_mask(n).shape[0])",
    "def spin():\n    while True:\n        pass",
    "def one():\n    return 1.0",
]


@pytest.fixture(scope="module")
def proc():
    sandboxed = settings.sandboxed()
    with StudentProcess(CELLS, call_timeout=1, sandboxed=sandboxed, lane=lanes.shared(sandboxed)) as p:
        p.start()
        yield p


def isolated_call(proc, name, *args):
    answers = isolation.Answers(["softmax"])
    reply = proc.graded_call(name, args, {}, isolate=["softmax"], answer=answers)
    return reply, answers


@pytest.mark.parametrize("as_torch, kind", [pytest.param(False, 10.0, id="numpy-float32"),
                                            pytest.param(True, 11.0, id="torch-float32")])
def test_proxy_answers_with_the_reference_in_the_callers_kind(proc, as_torch, kind):
    scores = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 5.0]])
    reply, answers = isolated_call(proc, "attention", scores, as_torch)
    weights, got_kind = reply["value"]
    assert np.allclose(weights, np.exp(scores) / np.exp(scores).sum(-1, keepdims=True), atol=1e-6)
    assert got_kind == kind
    assert answers.asked == {"softmax"} and reply["asked"] == ["softmax"]


def test_the_students_own_function_is_back_after_the_call(proc):
    isolated_call(proc, "attention", np.ones((2, 3)))
    assert np.array_equal(proc.call("own", np.ones(3))["value"], np.zeros(3))       # the wrong one, unchanged


def test_a_kept_proxy_is_refused_outside_its_call(proc):
    isolated_call(proc, "attention", np.ones((2, 3)))
    with pytest.raises(StudentCodeError, match="RuntimeError"):
        proc.call("later", np.ones(3))
    # and a proxy of the call in flight whose name the grader did not allow for it
    with pytest.raises(StudentCodeError, match="RuntimeError"):
        proc.graded_call("own", (np.ones(3),), {}, isolate=["softmax"], answer=isolation.Answers([]))


def test_arguments_that_are_not_data_run_the_students_own_function(proc):
    reply, answers = isolated_call(proc, "odd", np.ones(3))
    assert np.all(np.asarray(reply["value"]) == 0)                  # the student's own softmax ran (zeros)
    assert answers.asked == set()


def test_questions_too_big_to_answer_run_the_students_own_function(proc):
    """A proxy cannot make the grader compute without bound (a 10^5 x 10^5 mask): the student's own runs."""
    answers = isolation.Answers(["causal_mask"])
    assert proc.graded_call("mask_rows", (4,), {}, isolate=["causal_mask"], answer=answers)["value"] == 4.0
    assert answers.asked == {"causal_mask"}
    answers = isolation.Answers(["causal_mask"])
    assert proc.graded_call("mask_rows", (100_000,), {}, isolate=["causal_mask"], answer=answers)["value"] == 1.0
    assert answers.asked == set()


def test_a_hung_call_is_interrupted_and_recognised_once(proc):
    restarts = proc.restarts
    with pytest.raises(StudentCodeError) as first:
        proc.call("spin")
    assert first.value.kind == "timeout"
    with pytest.raises(StudentCodeError) as again:
        proc.call("spin")
    assert again.value.message == first.value.message                # at once, the same message
    assert proc.call("one")["value"] == 1.0
    assert proc.restarts == restarts and proc.interrupted == 1     # the process lived on: nothing replayed


def test_call_limits_scale_with_the_inputs():
    timeouts = {"call": 20, "call_floor": 2.0, "call_small": 1000}
    assert isolation.call_limit((np.ones(10),), {}, timeouts) == 2.0
    assert isolation.call_limit((np.ones((100, 100)),), {"mask": None}, timeouts) == 20
    assert isolation.call_limit((np.ones(10),), {}, {"call": 20}) == 20


def test_the_callee_table_is_a_ladder():
    """No exercise may ask for one that may ask for it (directly or not), nor for itself; flash_attention and
    softmax ask for no attention at all (the proxy would compute their own result)."""
    for exercise in isolation.CALLEES:
        seen, todo = set(), list(isolation.CALLEES[exercise])
        while todo:
            name = todo.pop()
            assert name != exercise, f"{exercise} may reach itself through {seen}"
            if name not in seen:
                seen.add(name)
                todo += isolation.CALLEES.get(name, ())
    assert "softmax" not in isolation.CALLEES
    assert set(isolation.CALLEES["flash_attention"]) <= {"causal_mask"}


def test_dependency_notes():
    sources = ["import numpy as np\n\ndef _helper(s):\n    return softmax(s)\n\n"
               "def scaled_dot_product_attention(q, k, v, mask=None):\n    return _helper(q @ k.T) @ v\n",
               "def softmax(x, axis=-1):\n    return x\n"]
    contract = {"softmax", "scaled_dot_product_attention"}
    calls = isolation.calls_in_source("scaled_dot_product_attention", sources, contract)
    assert calls == {"softmax"}
    notes = isolation.dependency_notes("scaled_dot_product_attention", calls, {"softmax"})
    assert notes == ["`scaled_dot_product_attention`는 직접 만든 `softmax`를 호출합니다. `softmax`가 틀려서 "
                     "실제로는 이 함수도 틀린 결과를 냅니다."]
    assert isolation.dependency_notes("scaled_dot_product_attention", calls, set()) == []


def test_the_answers_are_the_references():
    """The proxies' float64 numpy answers equal references.py (torch, float64), masks and fully masked keys too."""
    from autograder.graders import references

    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(2, 3, 5, 4)), rng.normal(size=(2, 3, 7, 4)), rng.normal(size=(2, 3, 7, 6))
    mask = rng.random((2, 1, 5, 7)) < 0.6
    mask[..., 0] = True
    answer = isolation.REFERENCES
    assert np.allclose(answer["softmax"](q, axis=1), references.softmax(q, axis=1), atol=1e-12)
    assert np.allclose(answer["softmax"](np.array([[0.0, -np.inf, 1.0]])),
                       references.softmax(np.array([[0.0, -np.inf, 1.0]])), atol=1e-12)
    for m in (None, mask):
        out, w = answer["scaled_dot_product_attention"](q, k, v, m, return_weights=True)
        ref_out, ref_w = references.scaled_dot_product_attention(q, k, v, m, return_weights=True)
        assert np.allclose(out, ref_out, atol=1e-12) and np.allclose(w, ref_w, atol=1e-12)
        assert np.allclose(answer["dot_product_attention"](q, k, v, m), references.dot_product_attention(q, k, v, m),
                           atol=1e-12)
    x = rng.normal(size=(2, 5, 12))
    assert np.allclose(answer["multi_head_attention"](x, x[:, :4], x[:, :4], 3),
                       references.multi_head_attention(x, x[:, :4], x[:, :4], 3), atol=1e-12)
