"""The `modern` graders' stored references are what the two libraries compute, and the float32 bound holds.

The graders read stored outputs (autograder/graders/modern/refs: no grading imports transformers or keras_hub); here
the libraries run live (scripts/modern_refs/qwen3.py holds the notebook's weights in transformers' Qwen3ForCausalLM
and KerasHub's Qwen3Backbone) and must reproduce every stored case: transformers' float64 outputs, KerasHub's float32
ones, Qwen3ForCausalLM.generate's greedy tokens, and the bytes of the caches both allocate, which the KV-cache formula
must equal at three lengths. The distances that tolerances.QWEN3_FLOAT32 documents are measured and printed here.
"""
from __future__ import annotations

import inspect
import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

from autograder.graders import references, registry, tolerances  # noqa: E402
from autograder.graders.modern import store  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def live():
    """The libraries' adapters (importing transformers' Qwen3 and keras_hub: ~5 s)."""
    from scripts.modern_refs import generate, qwen3

    return generate, qwen3


def test_the_stored_references_are_what_the_libraries_compute(live, capsys):
    """Every stored case again, live: transformers' float64 outputs within 1e-12 of the stored ones, KerasHub's within
    1e-6 (float32 on the same machine kind), the greedy tokens equal; the distances of both from
    the float64 reference (references.py) within half of QWEN3_FLOAT32 (what scripts/modern_refs refuses beyond)."""
    generate, _ = live
    rows = []
    for name, (kind, seed, _) in generate.CASES.items():
        if kind == "cache":   # the next test runs it (and checks the formula against it)
            continue
        inputs, args = generate.inputs(kind, seed, name)
        outputs, distances = generate.outputs(kind, inputs, args)
        case = store.load(name)
        assert store.flatten(inputs).keys() == store.flatten(case.inputs).keys()
        for key, value in store.flatten(inputs).items():
            np.testing.assert_array_equal(value, store.flatten(case.inputs)[key], err_msg=f"{name}: {key}")
        assert sorted(outputs) == sorted(case.outputs), name
        for library, value in outputs.items():
            if library in ("tokens", "hf_bytes", "keras_hub_bytes"):
                np.testing.assert_array_equal(value, case.outputs[library], err_msg=f"{name}: {library}")
            else:
                atol = 1e-12 if library == "hf" else 1e-6
                np.testing.assert_allclose(value, case.outputs[library], atol=atol, rtol=0, err_msg=name)
        rows.append(f"  {name:<28} " + ", ".join(f"{k} {v if isinstance(v, str) else f'{v:.1e}'}"
                                                 for k, v in distances.items()))
    with capsys.disabled():
        print("\nmodern references: distance of each library's stored output from the float64 reference")
        print("\n".join(rows))


def test_the_formula_equals_the_bytes_both_libraries_allocate(live):
    """transformers' DynamicCache after a prefill and KerasHub's Qwen3CausalLM cache hold exactly the bytes of the KV-
    cache formula of the model's config, at three lengths (float32, batch 2), and so do the stored numbers."""
    _, qwen3 = live
    case = store.load("cache_b2")
    model, a = case.inputs["model"], case.args
    config = {"num_hidden_layers": len(model["layers"]), "num_key_value_heads": a["num_kv_heads"],
              "head_dim": model["layers"][0]["q_norm"].shape[0], "hidden_size": model["embed_tokens"].shape[1],
              "num_attention_heads": a["num_heads"]}
    for index, length in enumerate(a["lengths"]):
        formula = references.qwen3_kv_cache_bytes(config, length, a["batch_size"], a["bytes_per_element"])
        assert qwen3.hf_cache_bytes(model, a["batch_size"], length) == formula == case.outputs["hf_bytes"][index]
        assert qwen3.kh_cache_bytes(model, a["batch_size"], length) == formula == case.outputs["keras_hub_bytes"][index]
    assert len(set(a["lengths"])) == 3


def test_a_float32_implementation_is_far_inside_the_bound(capsys):
    """The torch float32 implementation (tests/implementations/modern_torch.py) on the stored cases: within a tenth of
    QWEN3_FLOAT32 of the float64 reference (the bound leaves room for KerasHub's float32 error on the other side)."""
    from tests.helpers import inprocess, notebooks

    given = inprocess.notebook_code(notebooks.solution_notebook("modern"), "modern")
    ns = inprocess.namespace(given, "ROPE_THETA = 1_000_000.0", notebooks.implementation("modern_torch"))
    worst = {}
    for name in store.names("attention") + store.names("block"):
        case = store.load(name)
        i, a = case.inputs, case.args
        fn = ns["qwen3_attention"] if case.kind == "attention" else ns["qwen3_block"]
        exact = (references.qwen3_attention if case.kind == "attention" else references.qwen3_block)(
            i["x"], i["block"], i["positions"], a["num_heads"], a["num_kv_heads"])
        got = np.asarray(fn(i["x"], i["block"], i["positions"], a["num_heads"], a["num_kv_heads"]), np.float64)
        worst[name] = float(np.max(np.abs(got - exact)))
    with capsys.disabled():
        print("\nmodern: a float32 torch implementation against the float64 reference: "
              + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))
    assert max(worst.values()) < tolerances.QWEN3_FLOAT32.atol / 10


def test_the_libraries_qwen3_classes_are_known_by_their_code(live):
    """The forbidden-routine watch knows transformers' and KerasHub's Qwen3 classes by the code compiled from their
    installed source (watched.SOURCE_ROUTINES, never imported in the student's process): the code of the imported
    classes' methods is recognised as the routine its rule names."""
    import keras_hub.src.models.qwen3 as kh
    from transformers.models.qwen3 import modeling_qwen3 as hf

    from autograder.sandbox.inside import recognise, watched

    known, _, _ = recognise.recogniser(watched.source_codes())
    expected = {
        hf.Qwen3RMSNorm.forward: "transformers:Qwen3RMSNorm", hf.Qwen3MLP.forward: "transformers:Qwen3MLP",
        hf.Qwen3Attention.forward: "transformers:Qwen3Attention", hf.repeat_kv: "transformers:Qwen3Attention",
        hf.Qwen3DecoderLayer.forward: "transformers:Qwen3DecoderLayer",
        hf.Qwen3ForCausalLM.forward: "transformers:Qwen3DecoderLayer",
        kh.qwen3_layernorm.Qwen3LayerNorm.call: "keras_hub:Qwen3LayerNorm",
        kh.qwen3_attention.Qwen3Attention.call: "keras_hub:Qwen3Attention",
        kh.qwen3_decoder.Qwen3TransformerDecoder.call: "keras_hub:Qwen3TransformerDecoder",
        kh.qwen3_causal_lm.Qwen3CausalLM.call_with_cache: "keras_hub:Qwen3TransformerDecoder",
    }
    for function, label in expected.items():
        assert known(inspect.unwrap(function).__code__) == f"{label}\n".encode(), function
    assert known(references.qwen3_block.__code__) is None
    labels = {r.name: r.forbidden.labels for r in registry.of_assignment("modern") if r.forbidden}
    assert "transformers:Qwen3RMSNorm" in labels["rms_norm"] and "torch:rms_norm" in labels["rms_norm"]
    assert "transformers:Qwen3MLP" in labels["swiglu_mlp"]
    assert "keras_hub:Qwen3Attention" in labels["qwen3_attention"] and "torch:scaled_dot_product_attention" \
        not in labels["qwen3_attention"]
    assert "transformers:Qwen3DecoderLayer" in labels["qwen3_block"] and labels["generate"] == labels["qwen3_block"]


def test_the_gpu_cases_have_a_place_and_are_not_faked():
    """No GPU was lent: the manifest says so, and no modern grader declares GPU cases it could not have."""
    gpu = store.manifest()["gpu"]
    assert gpu["cases"] == [] and "not generated" in gpu["status"]
    for grader in (registry.GRADERS / "modern").glob("test_*.py"):
        assert "GPU_CASES" not in registry.declared(grader), grader
