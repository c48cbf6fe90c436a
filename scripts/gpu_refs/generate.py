"""Regenerate every stored reference output: ``python -m scripts.gpu_refs.generate`` (from the repository root).

For each case of ``cases.SPECS``: draw the inputs from the case's seed, compute the float64 math-backend reference,
then run the case's torch reference once per SDPA backend (pinned with ``torch.nn.attention.sdpa_kernel``) and dtype
(float32, float32 with TF32, float16, bfloat16). A combination the device does not support is recorded in the
manifest as skipped with torch's reason, never replaced by another backend: the profiler must see the pinned
backend's kernel run, else the output is not stored. An output that a correct float64 answer would not pass
within ``tolerances.against_gpu(dtype)`` is not stored either (recorded as rejected).

    --device cuda|cpu|auto   where to compute (auto: cuda when available); the manifests say which
    --check                  regenerate into a temporary folder and compare with the stored files, writing nothing
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

from autograder.graders.gpu_refs import store
from scripts.gpu_refs.cases import SPECS, Source, Spec, reference
from autograder.graders.tolerances import against_gpu

# The profiler's kineto library logs a line at every start and stop unless told otherwise (read at its first use).
os.environ.setdefault("KINETO_LOG_LEVEL", "6")

BACKENDS = {"math": SDPBackend.MATH, "flash": SDPBackend.FLASH_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
# Substrings of the profiler's op names that show which backend really ran.
KERNEL_OPS = {"math": "_scaled_dot_product_attention_math", "flash": "flash_attention",
              "efficient": "efficient_attention", "cudnn": "cudnn_attention"}
DTYPES = {"float32": torch.float32, "tf32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
CUDA_ONLY = {"efficient": "CUDA-only backend (memory-efficient attention has no CPU kernel)",
             "cudnn": "CUDA-only backend (cuDNN attention has no CPU kernel)"}
NO_TF32_ON_CPU = "TF32 is a CUDA tensor-core mode; the CPU computes float32 matmuls in full float32"
TOLERANCE_RULE = "a result r passes against a stored output o when |r - o| <= atol + rtol * |o| element-wise"


class Unsupported(Exception):
    """The pinned backend cannot (or did not) compute this combination; the message is the reason."""


def describe_device(device: torch.device) -> dict:
    """The manifest's honest account of where the outputs were computed."""
    info = {"type": device.type, "torch": torch.__version__, "numpy": np.__version__,
            "python": platform.python_version(), "cuda": torch.version.cuda,
            "fp16_bf16_reduction_math_sdp": torch.backends.cuda.fp16_bf16_reduction_math_sdp_allowed()}
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        gpu = torch.cuda.get_device_name(device)
        return {**info, "name": f"{gpu} (sm_{major}{minor})", "gpu": gpu, "compute_capability": f"{major}.{minor}",
                "cudnn": torch.backends.cudnn.version()}
    capability = torch.backends.cpu.get_cpu_capability()
    processor = platform.processor() or platform.machine()
    return {**info, "name": f"cpu ({processor}, {capability})", "processor": processor, "model": _cpu_model(),
            "cpu_capability": capability, "compute_capability": None, "cudnn": None}


def _cpu_model() -> str | None:
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), None)


@contextmanager
def float32_matmul(tf32: bool):
    """TF32 on or off for float32 matmuls, whatever the process had before."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def _reason(error: Exception, caught: list) -> str:
    messages = [str(w.message).split(" (Triggered internally")[0].strip() for w in caught]
    first = (str(error).strip().splitlines() or [type(error).__name__])[0]
    text = "; ".join(dict.fromkeys([first, *messages]))
    return text[:600]


def run(spec: Spec, inputs: dict, device: torch.device, backend: str, dtype: str) -> tuple[torch.Tensor, list[str]]:
    """The case's reference with ``backend`` pinned, and the attention ops the profiler saw."""
    torch_dtype = torch.float64 if dtype == "float64" else DTYPES[dtype]
    with warnings.catch_warnings(record=True) as caught, sdpa_kernel(BACKENDS[backend]), \
            float32_matmul(dtype == "tf32"), profile(activities=[ProfilerActivity.CPU]) as prof:
        warnings.simplefilter("always")
        try:
            out = reference(spec.kind, inputs, device, torch_dtype)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
        except RuntimeError as error:
            if backend == "math":
                raise
            raise Unsupported(_reason(error, caught)) from error
    kernels = sorted({e.name for e in prof.events() if any(op in e.name for op in KERNEL_OPS.values())})
    ran = {b for b, op in KERNEL_OPS.items() if any(op in k for k in kernels)}
    if ran != {backend}:
        raise Unsupported(f"dispatched to {kernels} instead of the pinned {backend} backend")
    if not torch.isfinite(out).all():
        raise Unsupported(f"the output is not finite ({int((~torch.isfinite(out)).sum())} NaN/inf values)")
    return out, kernels


def encode(out: torch.Tensor) -> tuple[np.ndarray, str]:
    """The array to store and what it holds (bfloat16 as its bit patterns: numpy has no bfloat16)."""
    out = out.detach().cpu().contiguous()
    if out.dtype == torch.bfloat16:
        return out.view(torch.int16).numpy().view(np.uint16), store.BF16_BITS
    return out.numpy(), str(out.dtype).removeprefix("torch.")


def _input_arrays(inputs: dict) -> dict[str, np.ndarray]:
    """Float inputs as float16 (exact: checked, also for bfloat16), masks as bool; dicts flattened to "a.b"."""
    arrays = {}
    for name, value in inputs.items():
        if isinstance(value, dict):
            arrays.update({f"{name}.{k}": v for k, v in value.items()})
        elif isinstance(value, np.ndarray):
            arrays[name] = value
    for name, a in arrays.items():
        if a.dtype != bool:
            exact_bf16 = not (a.astype(np.float32).view(np.uint32) & 0xFFFF).any()
            if not (exact_bf16 and np.array_equal(a.astype(np.float16).astype(np.float32), a)):
                raise ValueError(f"input {name} is not exact in float16 and bfloat16")
            arrays[name] = a.astype(np.float16)
    return arrays


def _tolerance(dtype: str) -> dict:
    tol = against_gpu(dtype)
    return {"atol": tol.atol, "rtol": tol.rtol, "why": tol.why}


def generate_case(spec: Spec, device: torch.device, device_info: dict, case_dir: Path, log) -> dict:
    """Compute and write one case; returns its manifest."""
    case_dir.mkdir(parents=True)
    inputs = spec.draw(Source(spec.seed))
    rows = spec.rows(inputs) if spec.rows else None

    def pick(out):
        return out if rows is None else out[..., torch.from_numpy(rows).to(out.device), :]

    arrays = _input_arrays(inputs)
    store.save_npz(case_dir / "inputs.npz", **arrays)
    manifest = {
        "case": spec.name, "kind": spec.kind, "seed": spec.seed,
        "rng": f"cases.Source({spec.seed}): numpy.random.PCG64({spec.seed}).random_raw, Box-Muller normals",
        "device": device_info,
        "generated_by": f"python -m scripts.gpu_refs.generate --device {device.type}",
        "shapes": {name: list(a.shape) for name, a in arrays.items()},
        "inputs": {"file": "inputs.npz", "sha256": store.sha256(case_dir / "inputs.npz"),
                   "arguments": list(spec.arguments),
                   "stored_as": "float16, every value exact in float16 and bfloat16 (given as float32); masks bool",
                   "arrays": {name: str(a.dtype) for name, a in arrays.items()},
                   "values": {k: v for k, v in inputs.items() if not isinstance(v, (np.ndarray, dict))}},
        "rows": None if rows is None else rows.tolist(),
        "tolerance_rule": TOLERANCE_RULE,
        "outputs": [], "skipped": [],
    }

    def write(backend, dtype, out, kernels, float64):
        array, stored_as = encode(pick(out))
        value = store.decode(array, stored_as)
        tol = against_gpu(dtype)
        error = 0.0 if float64 is None else float(np.abs(float64 - value).max())
        ratio = 0.0 if float64 is None else store.error_ratio(float64, value, tol)
        if ratio > 1:
            raise Unsupported(f"rejected: a correct float64 answer would fail against it "
                              f"(max error {error:.3g}, {tol.describe()})")
        name = f"{backend}-{dtype}.npz"
        store.save_npz(case_dir / name, output=array)
        manifest["outputs"].append({
            "backend": backend, "dtype": dtype, "file": name, "sha256": store.sha256(case_dir / name),
            "shape": list(array.shape), "stored_as": stored_as, "kernels": kernels, "tolerance": _tolerance(dtype),
            "float64_vs_this": {"max_abs_error": error, "worst_ratio_to_tolerance": ratio}})
        log(f"  {backend + '/' + dtype:18s} stored   max|float64 - it| {error:.2e}  worst ratio {ratio:.4f}  {kernels}")
        return value

    out, kernels = run(spec, inputs, device, "math", "float64")
    float64 = write("math", "float64", out, kernels, None)
    for backend in BACKENDS:
        for dtype in DTYPES:
            reason = spec.skip_dtypes.get(dtype)
            if reason is None and device.type == "cpu":
                reason = CUDA_ONLY.get(backend) or (NO_TF32_ON_CPU if dtype == "tf32" else None)
            try:
                if reason:
                    raise Unsupported(reason)
                write(backend, dtype, *run(spec, inputs, device, backend, dtype), float64)
            except Unsupported as skip:
                manifest["skipped"].append({"backend": backend, "dtype": dtype, "reason": str(skip)})
                log(f"  {backend + '/' + dtype:18s} skipped  {skip}")
    manifest["shapes"]["output"] = manifest["outputs"][0]["shape"]
    (case_dir / "manifest.json").write_text(_json(manifest), encoding="utf-8")
    return manifest


def _json(data) -> str:
    """Indented JSON with every list of plain numbers (shapes, rows) on one line."""
    text = json.dumps(data, indent=1, ensure_ascii=False)
    return re.sub(r"\[[-0-9.,eE\s]*\]", lambda m: json.dumps(json.loads(m.group(0))), text) + "\n"


def generate(root: Path, device: torch.device, log=print) -> None:
    """Write every case under ``root`` (which must not exist yet) and its index."""
    info = describe_device(device)
    root.mkdir(parents=True)
    for spec in SPECS:
        log(f"{spec.name}  ({spec.kind}, {info['name']})")
        generate_case(spec, device, info, root / spec.name, log)
    index = {"cases": [spec.name for spec in SPECS], "device": info["name"],
             "regenerate": store.REGENERATE, "note": "see README.md beside this folder"}
    (root / "index.json").write_text(_json(index), encoding="utf-8")


def compare(stored: Path, fresh: Path) -> tuple[list[str], list[str]]:
    """Problems and notes (a line per case): inputs must be equal, outputs within their tolerance (the manifest's).

    An output only one side has is a problem on the same device, and a note across devices (a CPU run cannot
    reproduce the CUDA-only backends of a GPU run).
    """
    problems, notes = [], []
    for name in dict.fromkeys(store.case_names(fresh) + store.case_names(stored)):
        if not (stored / name).is_dir() or not (fresh / name).is_dir():
            problems.append(f"{name}: present in only one of stored / regenerated")
            continue
        old, new = store.read_manifest(stored / name), store.read_manifest(fresh / name)
        a, b = store.read_arrays(stored / name, old["inputs"]), store.read_arrays(fresh / name, new["inputs"])
        if a.keys() != b.keys() or any(not np.array_equal(a[k], b[k]) for k in a) \
                or old["inputs"]["values"] != new["inputs"]["values"] or old["rows"] != new["rows"]:
            problems.append(f"{name}: regenerated inputs differ from the stored ones (seed or cases.py changed?)")
            continue
        same_device = old["device"]["name"] == new["device"]["name"]
        old_out = {(e["backend"], e["dtype"]): e for e in old["outputs"]}
        new_out = {(e["backend"], e["dtype"]): e for e in new["outputs"]}
        ratios, unmatched = {}, []
        for key in dict.fromkeys([*old_out, *new_out]):
            if key in old_out and key in new_out:
                x = store.decode(store.read_arrays(stored / name, old_out[key])["output"], old_out[key]["stored_as"])
                y = store.decode(store.read_arrays(fresh / name, new_out[key])["output"], new_out[key]["stored_as"])
                ratios["/".join(key)] = store.error_ratio(y, x, against_gpu(key[1]))
            else:
                unmatched.append(f"{'/'.join(key)} ({'stored' if key in old_out else 'regenerated'} only)")
        worst = max(ratios, key=ratios.get)
        line = f"{name}: {len(ratios)} outputs compared, worst ratio to tolerance {ratios[worst]:.3g} ({worst})"
        bad = [k for k, r in ratios.items() if r > 1]
        if bad or (unmatched and same_device):
            problems.append(f"{line}; outside tolerance: {bad}; unmatched: {unmatched}")
        else:
            notes.append(line + (f"; not comparable across devices ({old['device']['name']} stored, "
                                 f"{new['device']['name']} now): {', '.join(unmatched)}" if unmatched else ""))
    return problems, notes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.gpu_refs.generate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    parser.add_argument("--check", action="store_true", help="compare a fresh run with the stored files")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device")
    device = torch.device("cuda" if args.device == "cuda" or
                          (args.device == "auto" and torch.cuda.is_available()) else "cpu")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gpu_refs_") as tmp:
        fresh = Path(tmp) / "cases"
        generate(fresh, device, log=(lambda *a: None) if args.check else print)
        if args.check:
            problems, notes = compare(store.ROOT, fresh)
            print("\n".join(notes + [f"PROBLEM {p}" for p in problems]))
            print(f"--check on {device.type}: {len(problems)} problem(s) in {len(problems) + len(notes)} cases, "
                  f"{time.perf_counter() - start:.1f} s")
            return 1 if problems else 0
        old = store.ROOT.with_name("cases.old")
        shutil.rmtree(old, ignore_errors=True)
        if store.ROOT.exists():
            store.ROOT.rename(old)
        shutil.copytree(fresh, store.ROOT)
        shutil.rmtree(old, ignore_errors=True)
    size = sum(p.stat().st_size for p in store.ROOT.rglob("*") if p.is_file())
    print(f"wrote {len(SPECS)} cases to {store.ROOT} ({size / 1e6:.2f} MB) in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
