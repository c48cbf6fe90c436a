"""Each exercise on its own logic (autograder/graders/isolation.py, inside.proxies.Isolated) and a hung call's cost.

A student process whose ``softmax`` is wrong: while ``attention`` is called with ``softmax`` isolated, the proxy
answers with the float64 reference in the caller's kind (numpy of the input's dtype, torch of the input's dtype),
the student's own ``softmax`` is back afterwards, a proxy kept for later is refused, arguments that are not plain
data run the student's own function, and a hung call is interrupted (the process lives on, nothing is replayed).
"""
from __future__ import annotations

import functools
from dataclasses import replace
import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

from autograder.sandbox import bubblewrap  # noqa: E402
from autograder.graders import bounded, isolation, sizing  # noqa: E402
from autograder.messages import Reason  # noqa: E402
from autograder.sandbox import lanes  # noqa: E402
from autograder.sandbox.errors import Failure, StudentCodeError  # noqa: E402
from autograder.sandbox.policy import Timeouts  # noqa: E402
from autograder.sandbox.process import StudentProcess  # noqa: E402

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
    sandboxed = bubblewrap.sandboxed()
    with StudentProcess(CELLS, lanes.shared(sandboxed), timeouts=replace(Timeouts.from_course(), call=1)) as p:
        p.start()
        yield p


def isolated_call(proc, name, *args):
    answers = isolation.Answers(["softmax"])
    reply = proc.calls.graded_call(name, args, {}, isolate=["softmax"], answer=answers)
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
    assert np.array_equal(proc.calls.call("own", np.ones(3))["value"], np.zeros(3))       # the wrong one, unchanged


def test_a_kept_proxy_is_refused_outside_its_call(proc):
    isolated_call(proc, "attention", np.ones((2, 3)))
    with pytest.raises(StudentCodeError, match="RuntimeError"):
        proc.calls.call("later", np.ones(3))
    # and a proxy of the call in flight whose name the grader did not allow for it
    with pytest.raises(StudentCodeError, match="RuntimeError"):
        proc.calls.graded_call("own", (np.ones(3),), {}, isolate=["softmax"], answer=isolation.Answers([]))


def test_arguments_that_are_not_data_run_the_students_own_function(proc):
    reply, answers = isolated_call(proc, "odd", np.ones(3))
    assert np.all(np.asarray(reply["value"]) == 0)                  # the student's own softmax ran (zeros)
    assert answers.asked == set()


def test_a_question_too_big_to_answer_is_refused_with_a_reason(proc):
    """A proxy cannot make the grader compute without bound (a 10^5 x 10^5 mask, 10 GB): the size is known from the
    arguments before anything is computed, the question is refused at once, and the call fails with the Korean
    reason (the student's code gets it as an exception)."""
    answers = isolation.Answers(["causal_mask"])
    assert proc.calls.graded_call("mask_rows", (4,), {}, isolate=["causal_mask"], answer=answers)["value"] == 4.0
    assert answers.asked == {"causal_mask"} and not answers.refused
    answers = isolation.Answers(["causal_mask"])
    with pytest.raises(StudentCodeError) as refused:
        proc.calls.graded_call("mask_rows", (100_000,), {}, isolate=["causal_mask"], answer=answers)
    assert answers.asked == set() and len(answers.refused) == 1
    assert Reason.ANSWER_TOO_BIG.found_in(answers.refused[0]) and answers.refused[0] in refused.value.message
    assert f"{isolation.need('causal_mask', {'t_q': 100_000}).mb:,.0f} MiB" in answers.refused[0]   # 10^10 bytes


def test_a_hung_call_is_interrupted_and_recognised_once(proc):
    restarts = proc.restarts
    with pytest.raises(StudentCodeError) as first:
        proc.calls.call("spin")
    assert first.value.kind is Failure.TIMEOUT
    with pytest.raises(StudentCodeError) as again:
        proc.calls.call("spin")
    assert again.value.message == first.value.message                # at once, the same message
    assert proc.calls.call("one")["value"] == 1.0
    assert proc.restarts == restarts and proc.calls.interrupted == 1     # the process lived on: nothing replayed


def test_call_limits_scale_with_the_inputs():
    timeouts = replace(Timeouts.from_course(), call=20, call_floor=2.0, call_small=1000)
    assert isolation.call_limit((np.ones(10),), {}, timeouts) == 2.0
    assert isolation.call_limit((np.ones((100, 100)),), {"mask": None}, timeouts) == 20
    assert isolation.call_limit((np.ones(10),), {}, replace(timeouts, call_floor=30)) == 20   # never above call


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
    assert notes == ["`scaled_dot_product_attention`은 직접 만든 `softmax`를 호출합니다. `softmax`가 틀려서 "
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
    block = _block(lambda *shape: rng.normal(size=shape), 12, 3, 24)
    causal = np.tril(np.ones((5, 5), bool))
    assert np.allclose(answer["multi_head_attention_layer"](x, x[:, :4], block["attn"], 3),
                       references.multi_head_attention_layer(x, x[:, :4], block["attn"], 3), atol=1e-12)
    assert np.allclose(answer["multi_head_attention_layer"](x, x, block["attn"], 3, causal),
                       references.multi_head_attention_layer(x, x, block["attn"], 3, causal), atol=1e-12)
    assert np.allclose(answer["layer_norm"](x, block["ln_1"]["gamma"], block["ln_1"]["beta"], eps=1e-3),
                       references.layer_norm(x, block["ln_1"]["gamma"], block["ln_1"]["beta"], eps=1e-3), atol=1e-12)
    assert np.allclose(answer["decoder_block"](x, block, 3), references.decoder_block(x, block, 3), atol=1e-12)


# ----------------------------------------------------------------------------------------------- answers bounded
def _f32(rng, *shape):
    return rng.normal(size=shape).astype(np.float32)


def _sizes_cases():
    """(name, args, kwargs) for every reference: broadcast batches, masks that broadcast further, float16/32/64,
    returned weights, heads of other sizes for the values."""
    rng = np.random.default_rng(0)
    f = functools.partial(_f32, rng)
    mask = lambda *s: rng.random(s) < 0.5                                            # noqa: E731
    return [
        ("softmax", (f(64, 500, 30),), {"axis": 1}),
        ("softmax", (f(2000, 300).astype(np.float16),), {}),
        ("softmax", (rng.normal(size=(300, 700)),), {"axis": 0}),
        ("causal_mask", (3000, 4000), {}),
        ("causal_mask", (2500,), {}),
        ("scaled_dot_product_attention", (f(4, 2, 300, 16), f(4, 2, 400, 16), f(4, 2, 400, 8)), {}),
        ("scaled_dot_product_attention", (f(16, 1, 256, 4), f(1, 16, 256, 4), f(1, 16, 256, 4)), {}),
        ("scaled_dot_product_attention", (f(1, 256, 4), f(1, 256, 4), f(1, 256, 4), mask(16, 1, 256)), {}),
        ("scaled_dot_product_attention", (f(2, 3, 300, 16), f(2, 3, 400, 16), f(2, 3, 400, 8), mask(300, 400)),
         {"return_weights": True}),
        ("dot_product_attention", (f(4, 300, 16), f(4, 400, 16), f(1, 400, 8), mask(4, 300, 400)), {}),
        ("split_heads", (f(8, 500, 64), 4), {}),
        ("merge_heads", (f(8, 4, 500, 16),), {}),
        ("multi_head_attention", (f(4, 300, 64), f(4, 400, 64), f(4, 400, 64), 4), {}),
        ("multi_head_attention", (f(1, 300, 64), f(8, 400, 64), f(8, 400, 32), 8, mask(8, 1, 300, 400)), {}),
        ("multi_head_attention", tuple(np.ones((1, 3000, 1), np.float16) for _ in range(3)) + (1,), {}),
        ("kv_cache_bytes", (32, 8, 128, 8192), {"batch_size": 4}),
        ("layer_norm", (f(64, 300, 128), f(128), f(128)), {}),
        ("layer_norm", (f(4000, 16), f(16), f(16)), {"eps": 1e-3}),
        ("multi_head_attention_layer", (f(4, 300, 64), f(4, 400, 64), _layer_params(f, 64, 4, 16, 8), 4), {}),
        ("multi_head_attention_layer", (f(2, 300, 32), f(2, 300, 32), _layer_params(f, 32, 2, 16, 16), 2,
                                        np.tril(np.ones((300, 300), bool))), {}),
        ("decoder_block", (f(4, 300, 64), _block(f, 64, 4, 256), 4), {}),
        ("decoder_block", (f(2, 600, 32), _block(f, 32, 2, 128), 2), {}),
    ]


def _layer_params(f, d, heads, dk, dv) -> dict:
    """multi_head_attention_layer's params (contract layout) of random float32 weights."""
    return {"w_q": f(d, heads * dk), "b_q": f(heads * dk), "w_k": f(d, heads * dk), "b_k": f(heads * dk),
            "w_v": f(d, heads * dv), "b_v": f(heads * dv), "w_o": f(heads * dv, d), "b_o": f(d)}


def _block(f, d, heads, hidden) -> dict:
    """A decoder block (contract layout) of random float32 weights."""
    return {"ln_1": {"gamma": f(d), "beta": f(d)}, "ln_2": {"gamma": f(d), "beta": f(d)},
            "attn": _layer_params(f, d, heads, d // heads, d // heads),
            "w_1": f(d, hidden), "b_1": f(hidden), "w_2": f(hidden, d), "b_2": f(d)}


@pytest.mark.parametrize("name, args, kwargs",
                         [pytest.param(*c, id=f"{c[0]}-{i}") for i, c in enumerate(_sizes_cases())])
def test_sizes_are_known_before_the_answer_is_computed(name, args, kwargs):
    """``isolation.need`` counts, from the shapes alone, what the reference then really allocates (numpy's
    allocations as ``tracemalloc`` sees them, the answer made contiguous to be sent included): never less, and
    at most a quarter more plus numpy's fixed overhead; the result's bytes exactly."""
    import tracemalloc

    sized = isolation.need(name, isolation.SIGNATURES[name].bind(*args, **kwargs).arguments)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        value = isolation.REFERENCES[name](*args, **kwargs)
        values = value if isinstance(value, tuple) else (value,)
        sent = [np.ascontiguousarray(v) for v in values]                  # what write_frame sends
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak <= sized.peak <= 1.25 * peak + 2 * sizing.NUMPY_OVERHEAD, (peak, sized.peak)
    assert sized.result == sum(np.asarray(v).nbytes for v in values if isinstance(v, np.ndarray))
    del sent


@pytest.mark.parametrize("name, args", [
    pytest.param("multi_head_attention", tuple(np.ones((1, 16000, 1), np.float16) for _ in range(3)) + (1,),
                 id="issue21-mha-16000-tokens"),
    pytest.param("scaled_dot_product_attention", (np.ones((64, 1, 256, 1)), np.ones((1, 64, 256, 1)),
                                                  np.ones((1, 64, 256, 1))), id="issue21-sdpa-broadcast-batch"),
    pytest.param("softmax", (np.ones((1, 1)),), id="small"),
])
def test_the_issues_questions_are_refused_before_anything_is_computed(name, args):
    """The questions of issue 21 (6.3 GB and 6.6 GB of float64 temporaries on the old grader) are refused in
    microseconds, allocating nothing; a small question is answered."""
    import time
    import tracemalloc

    from autograder.sandbox.remote import encode_value

    arrays: list = []
    header = {"name": name, "args": encode_value(list(args), arrays), "kwargs": encode_value({}, arrays)}
    answers = isolation.Answers([name])
    tracemalloc.start()
    try:
        start = time.perf_counter()
        reply, out = answers(header, arrays, time.monotonic() + 2)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    if name == "softmax":
        assert reply["ok"] and answers.asked == {"softmax"}
        return
    assert not reply["ok"] and answers.refused == [reply["message"]]
    assert Reason.ANSWER_TOO_BIG.found_in(reply["message"])
    assert seconds < 0.05 and peak < 1 << 20, (seconds, peak)


def test_a_bigger_question_is_computed_apart_within_its_limits():
    """Between the small questions answered in the grader and the refused ones: computed in a forked child (the
    same answer), its memory growth reported; a child that would need more than its limit, or more time than the
    call has left, is stopped and the question refused with the reason."""
    import time

    from autograder.sandbox.remote import encode_value

    rng = np.random.default_rng(1)
    q, k, v = rng.normal(size=(8, 600, 32)), rng.normal(size=(8, 700, 32)), rng.normal(size=(8, 700, 16))
    arrays: list = []
    header = {"name": "scaled_dot_product_attention", "args": encode_value([q, k, v], arrays),
              "kwargs": encode_value({}, arrays)}
    sized = isolation.need(header["name"], {"query": q, "key": k, "value": v})
    assert isolation.INLINE_BYTES < sized.peak < isolation.answer_mb() << 20          # the middle path
    answers = isolation.Answers([header["name"]])
    reply, out = answers(header, arrays, time.monotonic() + 30)
    assert reply["ok"] and np.allclose(out[0], isolation.REFERENCES[header["name"]](q, k, v), atol=1e-12)
    assert 0 < answers.apart_peak <= answers.limit + isolation.CHILD_SLACK
    # no time left for it: stopped at the call's deadline
    answers = isolation.Answers([header["name"]])
    start = time.perf_counter()
    reply, _ = answers(header, arrays, time.monotonic() + 0.05)
    assert not reply["ok"] and Reason.ANSWER_TIME.found_in(reply["message"]) and time.perf_counter() - start < 1.0


def test_a_child_past_its_memory_or_time_is_stopped():
    """``bounded.compute``: past its address-space limit the child gets a MemoryError (the grader does not), past
    the deadline it is killed, a function that raises is Unanswerable, and no child is left behind."""
    import time

    before = _children()
    assert bounded.compute(np.ones, ((100, 100),), {}, limit=64 << 20, deadline=time.monotonic() + 10,
                           result_bytes=80_000)[0].sum() == 10_000
    with pytest.raises(bounded.Refused) as memory:
        bounded.compute(np.ones, ((4000, 4000),), {}, limit=64 << 20, deadline=time.monotonic() + 10,
                        result_bytes=8 * 4000 ** 2)
    assert memory.value.why == "memory"
    start = time.perf_counter()
    with pytest.raises(bounded.Refused) as late:
        bounded.compute(time.sleep, (60,), {}, limit=64 << 20, deadline=time.monotonic() + 0.3, result_bytes=0)
    assert late.value.why == "time" and time.perf_counter() - start < 2
    with pytest.raises(bounded.Unanswerable):
        bounded.compute(np.reshape, (np.ones(3), (2, 2)), {}, limit=64 << 20, deadline=time.monotonic() + 10,
                        result_bytes=32)
    assert _children() == before                                              # every child was reaped


def _children() -> set:
    found = set()
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as fh:
            found |= {int(n) for n in fh.read().split()}
    return found


def _qwen3_block(f, d, heads, kv_heads, dh, hidden) -> dict:
    """A Qwen3 block (the modern notebook's layout) of random float32 weights."""
    return {"input_layernorm": f(d), "q_proj": f(d, heads * dh), "k_proj": f(d, kv_heads * dh),
            "v_proj": f(d, kv_heads * dh), "o_proj": f(heads * dh, d), "q_norm": f(dh), "k_norm": f(dh),
            "post_attention_layernorm": f(d), "gate_proj": f(d, hidden), "up_proj": f(d, hidden),
            "down_proj": f(hidden, d)}


def _modern_sizes_cases():
    rng = np.random.default_rng(1)
    f = functools.partial(_f32, rng)
    return [
        ("rms_norm", (f(64, 300, 128), f(128)), {}),
        ("rms_norm", (f(4000, 16), f(16)), {"eps": 1e-3}),
        ("swiglu_mlp", (f(4, 300, 64), f(64, 256), f(64, 256), f(256, 64)), {}),
        ("qwen3_attention", (f(4, 300, 64), _qwen3_block(f, 64, 8, 2, 16, 128), np.arange(300), 8, 2), {}),
        ("qwen3_attention", (f(3, 200, 24), _qwen3_block(f, 24, 4, 1, 8, 40), np.arange(5, 205), 4, 1), {}),
        ("qwen3_block", (f(4, 300, 64), _qwen3_block(f, 64, 8, 2, 16, 256), np.arange(300), 8, 2), {}),
        ("qwen3_block", (f(2, 600, 24), _qwen3_block(f, 24, 4, 2, 8, 64), np.arange(600), 4, 2), {}),
    ]


@pytest.mark.parametrize("name, args, kwargs",
                         [pytest.param(*c, id=f"{c[0]}-{i}") for i, c in enumerate(_modern_sizes_cases())])
def test_modern_sizes_are_known_before_the_answer_is_computed(name, args, kwargs):
    """``test_sizes_are_known_before_the_answer_is_computed`` for the modern assignment's answers (RMSNorm, SwiGLU,
    Qwen3's attention and block: their shapes' arithmetic differs from the GPT-2 block's)."""
    test_sizes_are_known_before_the_answer_is_computed(name, args, kwargs)


def test_the_modern_answers_are_the_references():
    """The modern proxies' float64 numpy answers equal references.py (torch); a call with a cache is not theirs to
    answer (the student's own function runs: ``sizing.Unfit``)."""
    from autograder.graders import references, sizing

    rng = np.random.default_rng(2)
    block = _qwen3_block(lambda *s: rng.normal(size=s) / 3, 24, 4, 2, 8, 40)
    x, positions = rng.normal(size=(2, 7, 24)), np.arange(3, 10)
    answer = isolation.REFERENCES
    assert np.allclose(answer["rms_norm"](x, block["input_layernorm"], eps=1e-3),
                       references.rms_norm(x, block["input_layernorm"], eps=1e-3), atol=1e-12)
    assert np.allclose(answer["swiglu_mlp"](x, block["gate_proj"], block["up_proj"], block["down_proj"]),
                       references.swiglu_mlp(x, block["gate_proj"], block["up_proj"], block["down_proj"]), atol=1e-12)
    for heads, kv_heads in ((4, 2), (4, 4)):
        b = {**block, **_qwen3_block(lambda *s: rng.normal(size=s) / 3, 24, heads, kv_heads, 8, 40)}
        assert np.allclose(answer["qwen3_attention"](x, b, positions, heads, kv_heads),
                           references.qwen3_attention(x, b, positions, heads, kv_heads), atol=1e-12)
        assert np.allclose(answer["qwen3_block"](x, b, positions, heads, kv_heads),
                           references.qwen3_block(x, b, positions, heads, kv_heads), atol=1e-12)
    with pytest.raises(sizing.Unfit):
        isolation.need("qwen3_attention", {"x": x, "params": block, "positions": positions, "num_heads": 4,
                                           "num_kv_heads": 2, "cache": references.KVCache()})
