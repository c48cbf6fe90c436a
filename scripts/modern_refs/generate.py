"""Regenerate the `modern` graders' stored references: ``python -m scripts.modern_refs.generate`` (from the
repository root; ``--check`` computes everything again and compares with the stored files, writing nothing).

Each case's inputs are drawn from its own seed by the graders' own helpers (``autograder/graders/modern``: numpy's
PCG64, the same on every machine), then run through Hugging Face transformers' Qwen3 (float64) and KerasHub's Qwen3
(float32) holding those weights (``qwen3.py``); ``generate`` cases store the tokens of
``Qwen3ForCausalLM.generate(do_sample=False)``, the ``cache`` case the bytes of the caches both libraries allocate.
A case whose stored output is farther from the float64 reference (references.py) than half the tolerance it is
graded with is refused, not stored; a generate case whose transformers tokens are not the float64 reference's is
refused too.

GPU outputs (bfloat16 and float16 Qwen3 on CUDA) have their place in the manifest (``gpu``) and are not generated
here: no GPU was lent when this was written, and a CPU emulation would be a fake.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np

from autograder.graders import references, tolerances
from autograder.graders.modern import MODEL, block_params, model_and_prompt, store
from scripts.modern_refs import qwen3

H, KV, DH, D, FF = MODEL["num_heads"], MODEL["num_kv_heads"], MODEL["head_dim"], MODEL["d_model"], MODEL["hidden"]

# name: (kind, seed, what), the inputs drawn in ``inputs``
CASES = {
    "mlp_b2_t5": ("mlp", 101, "x (2, 5, 24); w_gate, w_up (24, 40); w_down (40, 24)"),
    "attention_gqa_b2_t7": ("attention", 102, "x (2, 7, 24), 4 query and 2 KV heads, positions 0..6"),
    "attention_mha_b2_t5": ("attention", 103, "x (2, 5, 24), 4 query and 4 KV heads, positions 0..4"),
    "attention_mqa_b1_t6_from9": ("attention", 104, "x (1, 6, 24), 4 query heads and 1 KV head, positions 9..14 "
                                                    "(transformers only: KerasHub's RoPE starts at a cache index)"),
    "block_gqa_b2_t7": ("block", 105, "x (2, 7, 24), 4 query and 2 KV heads, positions 0..6"),
    "block_gqa_b1_t5_from3": ("block", 106, "x (1, 5, 24), positions 3..7 (transformers only)"),
    "generate_tied_b2_p3_n8": ("generate", 107, "tied embedding; prompt (2, 3); 8 new tokens"),
    "generate_untied_b1_p5_n7": ("generate", 108, "untied lm_head; prompt (1, 5); 7 new tokens"),
    "cache_b2": ("cache", 109, "the tied model of the graders' size, batch 2, prompts of 5, 12 and 33 tokens"),
}
CACHE_LENGTHS = (5, 12, 33)


def inputs(kind: str, seed: int, name: str) -> tuple[dict, dict]:
    """``(inputs, args)`` of a case: arrays (nested for a block or model) and scalar arguments."""
    rng = np.random.default_rng(seed)
    if kind == "mlp":
        b = block_params(rng, D, H, KV, DH, FF)
        x = rng.standard_normal((2, 5, D)).astype(np.float32)
        return {"x": x, "w_gate": b["gate_proj"], "w_up": b["up_proj"], "w_down": b["down_proj"]}, {}
    if kind in ("attention", "block"):
        heads, kv_heads = {"attention_mha_b2_t5": (4, 4), "attention_mqa_b1_t6_from9": (4, 1)}.get(name, (H, KV))
        shape, start = {"attention_mqa_b1_t6_from9": ((1, 6), 9), "block_gqa_b1_t5_from3": ((1, 5), 3),
                        "attention_mha_b2_t5": ((2, 5), 0)}.get(name, ((2, 7), 0))
        block = block_params(rng, D, heads, kv_heads, DH, FF)
        x = rng.standard_normal((*shape, D)).astype(np.float32)
        positions = np.arange(start, start + shape[1])
        return {"x": x, "block": block, "positions": positions}, {"num_heads": heads, "num_kv_heads": kv_heads}
    if kind == "generate":
        tied = "untied" not in name
        batch, prompt_len, new = (2, 3, 8) if tied else (1, 5, 7)
        params, prompt, _ = model_and_prompt(rng, batch, prompt_len, new, tied=tied)
        return {"model": params, "prompt": prompt}, {"num_heads": H, "num_kv_heads": KV, "max_new_tokens": new}
    if kind == "cache":
        params, _, _ = model_and_prompt(rng, 1, 2, 1)
        return {"model": params}, {"num_heads": H, "num_kv_heads": KV, "batch_size": 2,
                                   "lengths": list(CACHE_LENGTHS), "bytes_per_element": 4}
    raise ValueError(kind)


def outputs(kind: str, i: dict, args: dict) -> tuple[dict, dict]:
    """``(outputs, distances)``: the libraries' outputs and their max distance from the float64 reference."""
    if kind == "mlp":
        ref = references.swiglu_mlp(i["x"], i["w_gate"], i["w_up"], i["w_down"])
        out = {"hf": qwen3.hf_mlp(i["x"], i["w_gate"], i["w_up"], i["w_down"]),
               "keras_hub": qwen3.kh_mlp(i["x"], i["w_gate"], i["w_up"], i["w_down"])}
    elif kind in ("attention", "block"):
        h, kv = args["num_heads"], args["num_kv_heads"]
        fn = references.qwen3_attention if kind == "attention" else references.qwen3_block
        ref = fn(i["x"], i["block"], i["positions"], h, kv)
        hf = qwen3.hf_attention if kind == "attention" else qwen3.hf_block
        out = {"hf": hf(i["x"], i["block"], i["positions"], h, kv)}
        if i["positions"][0] == 0:
            kh = qwen3.kh_attention if kind == "attention" else qwen3.kh_block
            out["keras_hub"] = kh(i["x"], i["block"], h, kv)
    elif kind == "generate":
        n = args["max_new_tokens"]
        ref = references.qwen3_generate(i["model"], i["prompt"], n, args["num_heads"], args["num_kv_heads"])
        out = {"tokens": qwen3.hf_generate(i["model"], i["prompt"], n)}
        if not np.array_equal(out["tokens"], ref):
            raise SystemExit(f"refused: transformers' greedy tokens {out['tokens'].tolist()} are not the float64 "
                             f"reference's {ref.tolist()}")
        return out, {"tokens": "equal to the float64 reference's"}
    elif kind == "cache":
        b, lengths, bpe = args["batch_size"], args["lengths"], args["bytes_per_element"]
        out = {"hf_bytes": np.array([qwen3.hf_cache_bytes(i["model"], b, n) for n in lengths], np.int64),
               "keras_hub_bytes": np.array([qwen3.kh_cache_bytes(i["model"], b, n) for n in lengths], np.int64)}
        config = {"num_hidden_layers": len(i["model"]["layers"]), "num_key_value_heads": KV, "head_dim": DH}
        formula = [references.qwen3_kv_cache_bytes(config, n, b, bpe) for n in lengths]
        for library, got in out.items():
            if got.tolist() != formula:
                raise SystemExit(f"refused: {library} {got.tolist()} is not the formula's {formula}")
        return out, {k: "equal to kv_cache_bytes(layers, KV heads, head_dim, T, B, 4)" for k in out}
    else:
        raise ValueError(kind)
    bound = tolerances.QWEN3_FLOAT32
    distances = {}
    for library, value in out.items():
        distances[library] = float(np.max(np.abs(value - ref)))
        if not np.allclose(value, ref, atol=bound.atol / 2, rtol=bound.rtol / 2):   # half for the student's error
            raise SystemExit(f"refused: {library}'s output is {distances[library]:.2e} from the float64 reference "
                             f"(more than half of {bound.describe()})")
    return out, distances


def versions() -> dict:
    import keras
    import keras_hub
    import torch
    import transformers

    return {"transformers": transformers.__version__, "keras_hub": keras_hub.__version__,
            "keras": keras.__version__, "torch": torch.__version__, "numpy": np.__version__,
            "python": platform.python_version(), "machine": f"cpu ({platform.machine()})"}


def generate(root: Path) -> dict:
    root.mkdir(parents=True, exist_ok=True)
    cases = {}
    for name, (kind, seed, what) in CASES.items():
        i, args = inputs(kind, seed, name)
        out, distances = outputs(kind, i, args)
        path = root / f"{name}.npz"
        store.save_npz(path, **store.flatten(i), **out)
        cases[name] = {"kind": kind, "seed": seed, "what": what, "args": args, "file": path.name,
                       "sha256": store.sha256(path), "outputs": sorted(out),
                       "max_distance_from_float64": distances}
        print(f"{name}: {', '.join(f'{k} {v}' for k, v in distances.items())}", flush=True)
    manifest = {
        "regenerate": store.REGENERATE,
        "libraries": versions(),
        "outputs": {"hf": "transformers' Qwen3 (Qwen3Attention, Qwen3DecoderLayer, Qwen3MLP) in float64; its "
                          "RMSNorm and rotary angles compute in float32 by design",
                    "keras_hub": "KerasHub's Qwen3 (Qwen3Attention, Qwen3TransformerDecoder and its MLP layers) in "
                                 "float32 (its RMSNorm casts to float32; its QK-norm's epsilon is 1e-5)",
                    "tokens": "Qwen3ForCausalLM.generate(do_sample=False), float64 weights, its own KV cache",
                    "hf_bytes": "bytes of the keys and values in Qwen3ForCausalLM's DynamicCache after a float32 "
                                "prefill of each length",
                    "keras_hub_bytes": "bytes of the cache tensor Qwen3CausalLM._build_cache allocates (float32) "
                                       "for each length"},
        "tolerance": {"name": "QWEN3_FLOAT32", **vars(tolerances.QWEN3_FLOAT32)},
        "gpu": {"cases": [], "status": "not generated: no GPU was lent when these were made. A GPU run would add "
                                       "bfloat16/float16 outputs of transformers' Qwen3 on CUDA for the block and "
                                       "generate cases here, and the graders would name them in GPU_CASES."},
        "cases": cases,
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare a fresh generation with the stored files")
    args = parser.parse_args(argv)
    if not args.check:
        generate(store.ROOT)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp))
        stored = store.manifest()
        differ = [n for n in fresh["cases"] if fresh["cases"][n]["sha256"] != stored["cases"].get(n, {}).get("sha256")]
    print("the stored references are current" if not differ else f"differ: {', '.join(differ)}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
