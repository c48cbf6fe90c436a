"""The stored reference outputs: file format, sha256 checks and the loader the graders use (numpy only).

Layout: ``cases/index.json`` lists the cases; ``cases/<case>/manifest.json`` describes one case (device, versions,
seed, shapes, and per stored output its backend, dtype, tolerance and sha256); ``inputs.npz`` holds the inputs and
one ``<backend>-<dtype>.npz`` per output holds the array ``output``. Every ``.npz`` is a plain numpy zip without
pickle, written with fixed timestamps so that equal arrays give equal bytes.
"""
from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from autograder.graders.tolerances import Tolerance, against_gpu
from autograder.messages import Verdict

ROOT = Path(__file__).with_name("cases")
REGENERATE = "python -m scripts.gpu_refs.generate"
BF16_BITS = "bfloat16 bit patterns as uint16 (the upper half of the float32 of the same value)"


class StaleReferenceError(RuntimeError):
    """A stored file is missing, corrupted or out of step with its manifest."""


@dataclass
class Reference:
    """One stored output of a torch reference with one SDPA backend pinned, in one dtype."""

    backend: str            # "math" | "flash" | "efficient" | "cudnn"
    dtype: str              # "float32" | "tf32" | "float16" | "bfloat16" | "float64"
    output: np.ndarray      # float64 copy of the stored output (only the rows ``Case.rows`` for long cases)
    tolerance: Tolerance    # tolerances.against_gpu(dtype): a student's result vs this output
    device: str             # e.g. "NVIDIA H200 (sm_90)" or "cpu (x86_64, AVX512)"

    def describe_ko(self) -> str:
        return Verdict.STORED_OUTPUT.korean(device=self.device, backend=self.backend, dtype=self.dtype)


@dataclass
class Case:
    """Fixed inputs of one exercise call and every stored output for them."""

    name: str                   # e.g. "sdpa_mask_b2_h4_tq7_tk13_d64"
    kind: str   # "sdpa" | "sdpa_large_logits" | "causal" | "self_attention" | "mha" | "gqa" | "flash_long"
    inputs: dict                # the student's function's arguments (float32 arrays, bool masks, scalars)
    rows: np.ndarray | None     # query rows stored for long cases (None = all)
    float64: np.ndarray         # float64 math-backend reference (same rows)
    references: list[Reference]
    skipped: list[tuple[str, str, str]]   # (backend, dtype, reason)


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def save_npz(path: Path, **arrays: np.ndarray) -> None:
    """``np.savez_compressed`` with fixed timestamps, so equal arrays give equal bytes (and sha256)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.ascontiguousarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            archive.writestr(info, buffer.getvalue(), compress_type=zipfile.ZIP_DEFLATED)


def decode(array: np.ndarray, stored_as: str) -> np.ndarray:
    """The float64 values of a stored array (bfloat16 is stored as its bit patterns)."""
    if stored_as == BF16_BITS:
        return (array.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return array.astype(np.float64)


def error_ratio(got: np.ndarray, expected: np.ndarray, tol: Tolerance) -> float:
    """max |got - expected| / (atol + rtol |expected|): at most 1 means every element is within ``tol``."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    if got.shape != expected.shape or not np.isfinite(got).all():
        return float("inf")
    return float((np.abs(got - expected) / (tol.atol + tol.rtol * np.abs(expected))).max())


def _stale(case: str, problem: str) -> StaleReferenceError:
    return StaleReferenceError(f"GPU reference case {case!r}: {problem}. The stored references are stale or "
                               f"damaged; regenerate them with `{REGENERATE}` (on a CUDA GPU, see "
                               f"autograder/graders/gpu_refs/README.md).")


def read_arrays(case_dir: Path, entry: dict) -> dict[str, np.ndarray]:
    """The arrays of the file ``entry`` names, after checking its sha256."""
    path = case_dir / entry["file"]
    if not path.is_file():
        raise _stale(case_dir.name, f"{entry['file']} is missing")
    if sha256(path) != entry["sha256"]:
        raise _stale(case_dir.name, f"{entry['file']} does not match the sha256 in manifest.json")
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise _stale(case_dir.name, f"{entry['file']} cannot be read ({error})") from error


def read_manifest(case_dir: Path) -> dict:
    path = case_dir / "manifest.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise _stale(case_dir.name, f"manifest.json is missing or unreadable ({error})") from error


def case_names(root: Path = ROOT) -> list[str]:
    try:
        return json.loads((root / "index.json").read_text(encoding="utf-8"))["cases"]
    except (OSError, ValueError, KeyError) as error:
        raise _stale("index", f"{root / 'index.json'} is missing or unreadable ({error})") from error


def load_inputs(case_dir: Path, manifest: dict) -> dict:
    """The arguments in the contract's order: float32 arrays (stored exactly as float16), bool masks, scalars."""
    spec = manifest["inputs"]
    arrays = {name: a if a.dtype == bool else a.astype(np.float32) for name, a in read_arrays(case_dir, spec).items()}
    inputs = {}
    for name in spec["arguments"]:
        if name in spec["values"]:
            inputs[name] = spec["values"][name]
        elif name in arrays:
            inputs[name] = arrays[name]
        else:   # a dict argument (mha's params), stored as "params.w_q", ...
            inputs[name] = {key.split(".", 1)[1]: a for key, a in arrays.items() if key.startswith(name + ".")}
    return inputs


def load_case(case_dir: Path, manifest: dict | None = None) -> Case:
    manifest = manifest or read_manifest(case_dir)
    device = manifest["device"]["name"]
    references = []
    for entry in manifest["outputs"]:
        output = decode(read_arrays(case_dir, entry)["output"], entry["stored_as"])
        if list(output.shape) != entry["shape"]:
            raise _stale(case_dir.name, f"{entry['file']} has shape {output.shape}, the manifest says {entry['shape']}")
        references.append(Reference(entry["backend"], entry["dtype"], output, against_gpu(entry["dtype"]), device))
    float64 = next((r.output for r in references if r.dtype == "float64"), None)
    if float64 is None:
        raise _stale(case_dir.name, "the manifest lists no float64 reference")
    rows = manifest.get("rows")
    return Case(name=manifest["case"], kind=manifest["kind"], inputs=load_inputs(case_dir, manifest),
                rows=None if rows is None else np.asarray(rows, dtype=np.int64), float64=float64,
                references=references,
                skipped=[(s["backend"], s["dtype"], s["reason"]) for s in manifest["skipped"]])


def load_cases(kind: str | None = None, root: Path = ROOT) -> list[Case]:
    """Every stored case (of ``kind`` if given), each file checked against its sha256 first.

    Raises ``StaleReferenceError`` naming the case and the regeneration command when anything is missing or
    does not match its manifest.
    """
    cases = []
    for name in case_names(Path(root)):
        case_dir = Path(root) / name
        manifest = read_manifest(case_dir)
        if manifest.get("case") != name:
            raise _stale(name, f"manifest.json describes {manifest.get('case')!r}")
        if kind is None or manifest["kind"] == kind:
            cases.append(load_case(case_dir, manifest))
    return cases
