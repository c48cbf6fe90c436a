"""The stored GPU reference outputs (autograder/graders/gpu_refs): intact, honest, and right within tolerance.

These run on the CPU: a float64 numpy implementation of the exercise contract, independent of torch, recomputes
every case from its stored inputs and must agree with every stored output within that output's tolerance.
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from autograder.graders.gpu_refs import store
from autograder.graders.tolerances import GPU

REPO = Path(__file__).resolve().parents[2]
BACKENDS = ("math", "flash", "efficient", "cudnn")
DTYPES = ("float32", "tf32", "float16", "bfloat16")


@pytest.fixture(scope="module")
def cases():
    return store.load_cases()


def attention(q, k, v, mask=None):
    """softmax(q kᵀ / sqrt(d)) v in float64, masked scores at -inf (True = may attend)."""
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])                       # (..., Tq, Tk)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True) @ v                               # (..., Tq, dv)


def lower_right(t_q, t_k):
    return np.tril(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q)                      # (Tq, Tk)


def recompute(case):
    """The contract's answer for ``case`` (only the stored rows of long cases), in float64."""
    x = {k: np.asarray(v, np.float64) if isinstance(v, np.ndarray) and v.dtype != bool else v
         for k, v in case.inputs.items()}
    if case.kind in ("sdpa", "sdpa_large_logits"):
        return attention(x["query"], x["key"], x["value"], x["mask"])
    if case.kind == "causal":
        return attention(x["query"], x["key"], x["value"], lower_right(x["t_q"], x["t_k"]))
    if case.kind == "gqa":
        group = x["query"].shape[1] // x["key"].shape[1]   # query head h uses key/value head h // group
        return attention(x["query"], np.repeat(x["key"], group, 1), np.repeat(x["value"], group, 1), x["mask"])
    if case.kind == "flash_long":
        t = x["key"].shape[-2]
        mask = lower_right(t, t)[case.rows] if x["causal"] else None
        return attention(x["query"][..., case.rows, :], x["key"], x["value"], mask)
    if case.kind == "self_attention":
        q, k, v = (x["x"] @ x[w] for w in ("w_q", "w_k", "w_v"))                     # (B, T, dk|dv)
        return attention(q, k, v, lower_right(q.shape[-2], q.shape[-2]) if x["causal"] else None)
    if case.kind == "mha":
        p = {name: np.asarray(a, np.float64) for name, a in case.inputs["params"].items()}
        heads, (b, t_q, dim) = x["num_heads"], x["x_q"].shape

        def split(a):                                                                # (B, T, D) -> (B, H, T, D/H)
            return a.reshape(b, -1, heads, dim // heads).transpose(0, 2, 1, 3)
        q, k, v = split(x["x_q"] @ p["w_q"] + p["b_q"]), split(x["x_kv"] @ p["w_k"] + p["b_k"]), \
            split(x["x_kv"] @ p["w_v"] + p["b_v"])
        merged = attention(q, k, v, x["mask"]).transpose(0, 2, 1, 3).reshape(b, t_q, -1)  # (B, Tq, H*dv)
        return merged @ p["w_o"] + p["b_o"]                                            # (B, Tq, D)
    raise AssertionError(f"unknown kind {case.kind}")


def manifests():
    return [(store.ROOT / name, store.read_manifest(store.ROOT / name)) for name in store.case_names()]


def test_every_stored_file_matches_its_sha256():
    for case_dir, manifest in manifests():
        for entry in [manifest["inputs"], *manifest["outputs"]]:
            assert store.sha256(case_dir / entry["file"]) == entry["sha256"], f"{case_dir.name}/{entry['file']}"


def test_every_stored_case_is_compared_by_a_grader(cases):
    """Every kind of stored case is named by a grader's ``GPU_CASES`` and every named kind is stored: none is kept
    that no student's output is compared with, and no grader asks for one that is not there."""
    from autograder.graders import gpu_checks

    used = gpu_checks.graders_of_kinds()
    stored = {case.kind for case in cases}
    assert stored == set(used), f"stored, no grader: {sorted(stored - set(used))}; named, not stored: " \
                                f"{sorted(set(used) - stored)}"
    assert used["flash_long"] == "flash_attention" and used["gqa"] == "grouped_query_attention"


def test_every_backend_and_dtype_is_stored_or_skipped_with_a_reason():
    for case_dir, manifest in manifests():
        stored = [(e["backend"], e["dtype"]) for e in manifest["outputs"] if e["dtype"] != "float64"]
        skipped = [(s["backend"], s["dtype"]) for s in manifest["skipped"]]
        assert sorted(stored + skipped) == sorted((b, d) for b in BACKENDS for d in DTYPES), case_dir.name
        assert all(s["reason"] for s in manifest["skipped"])
        assert ("math", "float64") in [(e["backend"], e["dtype"]) for e in manifest["outputs"]]
        device = manifest["device"]
        if device["type"] == "cpu":   # honest about the device: nothing CUDA-only from a CPU run
            assert device["name"].startswith("cpu (") and device["compute_capability"] is None
            assert not [s for s in stored if s[0] in ("efficient", "cudnn") or s[1] == "tf32"], case_dir.name


def test_loader_gives_the_contract_arguments(cases):
    kinds = {case.kind for case in cases}
    assert kinds == {"sdpa", "sdpa_large_logits", "causal", "self_attention", "mha", "gqa", "flash_long"}
    assert 8 <= len(cases) <= 12
    for case in cases:
        arrays = [a for a in case.inputs.values() if isinstance(a, np.ndarray) and a.dtype != bool]
        assert arrays and all(a.dtype == np.float32 for a in arrays), case.name
        assert all(r.output.shape == case.float64.shape and r.output.dtype == np.float64 for r in case.references)
        assert "백엔드" in case.references[0].describe_ko()
    long = store.load_cases("flash_long")
    assert len(long) == 2 and {c.inputs["causal"] for c in long} == {True, False}
    for case in long:
        assert case.inputs["query"].shape[-2] >= 4096 and 200 <= len(case.rows) <= 400
        assert case.float64.shape[-2] == len(case.rows)


def test_inputs_are_exact_in_float16_and_bfloat16(cases):
    for case in cases:
        values = [case.inputs[k] for k in case.inputs if isinstance(case.inputs[k], np.ndarray)]
        values += list(case.inputs.get("params", {}).values())
        for a in (a for a in values if a.dtype != bool):
            assert np.array_equal(a.astype(np.float16).astype(np.float32), a), case.name
            assert not (a.view(np.uint32) & 0xFFFF).any(), case.name        # bfloat16 = upper 16 bits


def test_float64_recomputation_agrees_with_every_stored_output(cases):
    for case in cases:
        expected = recompute(case)
        assert store.error_ratio(expected, case.float64, GPU["float64"]) <= 1, case.name
        for ref in case.references:
            ratio = store.error_ratio(expected, ref.output, ref.tolerance)
            assert ratio <= 1, f"{case.name} {ref.describe_ko()}: {ratio:.3g} of {ref.tolerance.describe()}"


def test_large_logits_overflow_a_softmax_without_max_subtraction():
    (case,) = store.load_cases("sdpa_large_logits")
    q, k = case.inputs["query"], case.inputs["key"]
    scores = q @ np.swapaxes(k, -1, -2) / np.float32(np.sqrt(q.shape[-1]))            # float32 (B, H, Tq, Tk)
    assert 100 <= np.abs(scores).max() <= 600
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    assert not np.isfinite(naive).all()
    assert {dtype for _, dtype, _ in case.skipped} >= {"tf32", "float16", "bfloat16"}


@pytest.mark.parametrize("damage", ["flip a byte", "delete a file"])
def test_stale_or_damaged_files_fail_loudly(tmp_path, damage):
    root = tmp_path / "cases"
    shutil.copytree(store.ROOT, root)
    name = store.case_names(root)[1]
    manifest = json.loads((root / name / "manifest.json").read_text())
    target = root / name / manifest["outputs"][-1]["file"]
    if damage == "flip a byte":
        data = bytearray(target.read_bytes())
        data[len(data) // 2] ^= 0xFF
        target.write_bytes(bytes(data))
    else:
        target.unlink()
    with pytest.raises(store.StaleReferenceError) as error:
        store.load_cases(root=root)
    assert name in str(error.value) and store.REGENERATE in str(error.value)


def test_gpu_refs_never_reach_release_or_solutions():
    folders = [REPO / f for f in ("release", "solutions") if (REPO / f).is_dir()]
    if not folders:
        pytest.skip("release/ and solutions/ do not exist yet")
    needles = [n.encode() for n in store.case_names()] + [b"gpu_refs"]
    for path in (p for folder in folders for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        assert not [n for n in needles if n in data], f"{path} mentions the hidden GPU references"


def test_total_size_is_under_20_mb():
    size = sum(p.stat().st_size for p in store.ROOT.rglob("*") if p.is_file())
    assert size < 20e6, f"{size / 1e6:.1f} MB"


def test_generate_check_reproduces_the_stored_arrays():
    """A fresh CPU run matches the stored arrays (those it can reproduce: CUDA-only ones are noted); ~5-10 s."""
    result = subprocess.run([sys.executable, "-m", "scripts.gpu_refs.generate", "--device", "cpu",
                             "--check"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
