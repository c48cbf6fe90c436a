"""The `modern` graders' stored references: what Hugging Face transformers' and KerasHub's Qwen3 computed on fixed
inputs, read with numpy only (grading never imports either library: transformers' Qwen3 takes ~3 s to import).

Layout (``refs/``, written by ``python -m scripts.modern_refs.generate``): ``manifest.json`` (the libraries'
versions, and per case its kind, scalar arguments, file, sha256 and the measured distance of each stored output from
the float64 reference) and one ``<case>.npz`` per case: the inputs (``x``, ``positions``, ``prompt``; a block's
weights as ``block.<name>``, a model's as ``model.embed_tokens``, ``model.layers.<i>.<name>``, ``model.norm`` and
``model.lm_head``) and the outputs (``hf``: transformers in float64; ``keras_hub``: KerasHub in float32;
``tokens``: ``Qwen3ForCausalLM.generate(do_sample=False)``; ``hf_bytes``, ``keras_hub_bytes``: the bytes of the
caches the two allocate). A file that does not match its sha256 stops the grader that reads it with the reason.

GPU outputs of the same cases (bfloat16/float16 Qwen3 on CUDA) have their place here too (``manifest.json``'s
``gpu``), generated when a GPU is lent: until then the manifest says so and no grader declares GPU cases.
"""
from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from autograder.graders.gpu_refs.store import save_npz, sha256  # noqa: F401 (the same file format)

ROOT = Path(__file__).with_name("refs")
REGENERATE = "python -m scripts.modern_refs.generate"


class StaleReferenceError(RuntimeError):
    """A stored file is missing, damaged or out of step with the manifest."""


@dataclass(frozen=True)
class Case:
    """One stored case: ``inputs`` (arrays, a ``block`` or ``model`` dict rebuilt), ``outputs`` (arrays) and
    ``args`` (the scalar arguments: num_heads, num_kv_heads, max_new_tokens, lengths...)."""

    name: str
    kind: str
    args: dict
    inputs: dict
    outputs: dict


def _stale(problem: str) -> StaleReferenceError:
    return StaleReferenceError(f"modern's stored references: {problem}. Regenerate them with `{REGENERATE}` "
                               "(autograder/graders/modern/store.py).")


@cache
def manifest(root: Path = ROOT) -> dict:
    try:
        return json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise _stale(f"manifest.json is missing or unreadable ({error})") from error


def flatten(inputs: dict) -> dict:
    """Arrays of ``inputs`` with a block's or a model's weights under dotted names (``model.layers.0.q_proj``)."""
    out = {}
    for name, value in inputs.items():
        if name == "block":
            out.update({f"block.{k}": v for k, v in value.items()})
        elif name == "model":
            for k, v in value.items():
                if k == "layers":
                    out.update({f"model.layers.{i}.{n}": w for i, block in enumerate(v) for n, w in block.items()})
                else:
                    out[f"model.{k}"] = v
        else:
            out[name] = value
    return out


def unflatten(arrays: dict) -> dict:
    """``flatten``'s inverse."""
    out: dict = {}
    for name, value in arrays.items():
        parts = name.split(".")
        if parts[0] == "block":
            out.setdefault("block", {})[parts[1]] = value
        elif parts[0] == "model" and parts[1] == "layers":
            layers = out.setdefault("model", {}).setdefault("layers", {})
            layers.setdefault(int(parts[2]), {})[parts[3]] = value
        elif parts[0] == "model":
            out.setdefault("model", {})[parts[1]] = value
        else:
            out[name] = value
    if "model" in out:
        out["model"]["layers"] = [out["model"]["layers"][i] for i in sorted(out["model"]["layers"])]
    return out


@cache
def load(name: str, root: Path = ROOT) -> Case:
    """The stored case ``name``, its file checked against the manifest's sha256."""
    entry = manifest(root)["cases"].get(name)
    if entry is None:
        raise _stale(f"no case {name!r} in manifest.json")
    path = root / entry["file"]
    if not path.is_file() or sha256(path) != entry["sha256"]:
        raise _stale(f"{entry['file']} is missing or does not match its sha256 in manifest.json")
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files}
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise _stale(f"{entry['file']} cannot be read ({error})") from error
    outputs = {k: arrays.pop(k) for k in entry["outputs"]}
    return Case(name, entry["kind"], dict(entry.get("args", {})), unflatten(arrays), outputs)


def names(kind: str | None = None, root: Path = ROOT) -> list[str]:
    """The stored cases (of ``kind``), in the manifest's order."""
    return [n for n, e in manifest(root)["cases"].items() if kind is None or e["kind"] == kind]
