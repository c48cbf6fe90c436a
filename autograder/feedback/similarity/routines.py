"""The library routines of the forbidden rules, read from the installed packages' files (never imported) and
fingerprinted once per process: what a unit pasted from a library is compared with."""
from __future__ import annotations

import ast
import functools
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from autograder.feedback.similarity.fingerprints import Piece, fingerprint
from autograder.sandbox.inside.routines import Routine

# The library routines of the forbidden rules (``autograder/graders/forbidden.py``: their run-time labels, as the
# monitor reports them: ``Routine``), as files of the installed packages: (label, package, file inside it, what to
# take).
# ``"*"`` takes every function of the file (methods included); a name takes that top-level function or class
# (with its methods); ``"CLASS.METHOD"`` takes that one method of a top-level class; ``"doc:NAME"`` takes the code
# blocks of the docstring assigned to NAME.
LIBRARY = (
    (Routine.KERAS_ATTENTION, "keras", "src/layers/attention/attention.py", ("*",)),
    (Routine.KERAS_ADDITIVE_ATTENTION, "keras", "src/layers/attention/additive_attention.py", ("*",)),
    (Routine.KERAS_MULTI_HEAD_ATTENTION, "keras", "src/layers/attention/multi_head_attention.py", ("*",)),
    (Routine.KERAS_GROUP_QUERY_ATTENTION, "keras", "src/layers/attention/grouped_query_attention.py", ("*",)),
    (Routine.KERAS_DOT_PRODUCT_ATTENTION, "keras", "src/ops/nn.py", ("dot_product_attention",)),
    (Routine.KERAS_DOT_PRODUCT_ATTENTION, "keras", "src/backend/torch/nn.py",
     ("_get_large_negative", "_can_use_flash_attention", "dot_product_attention")),
    (Routine.KERAS_DOT_PRODUCT_ATTENTION, "keras", "src/backend/numpy/nn.py",
     ("_get_large_negative", "_apply_masks", "_dot_product_attention_xla", "dot_product_attention")),
    (Routine.TORCH_SOFTMAX, "torch", "nn/functional.py", ("softmax",)),
    (Routine.TORCH_SOFTMAX, "torch", "_refs/__init__.py", ("softmax",)),
    (Routine.TORCH_SOFTMAX, "torch", "_refs/nn/functional/__init__.py", ("softmax",)),
    (Routine.TORCH_SOFTMAX, "torch", "_refs/special/__init__.py", ("softmax",)),
    (Routine.TORCH_SOFTMAX, "torch", "_decomp/decompositions.py",
     ("safe_softmax", "_softmax", "_softmax_unbacked_safe_amax")),
    (Routine.TORCH_LOG_SOFTMAX, "torch", "nn/functional.py", ("log_softmax",)),
    (Routine.TORCH_LOG_SOFTMAX, "torch", "_refs/__init__.py", ("log_softmax",)),
    (Routine.TORCH_LOG_SOFTMAX, "torch", "_refs/nn/functional/__init__.py", ("log_softmax",)),
    (Routine.TORCH_LOG_SOFTMAX, "torch", "_refs/special/__init__.py", ("log_softmax",)),
    (Routine.TORCH_LOG_SOFTMAX, "torch", "_decomp/decompositions.py", ("_log_softmax",)),
    (Routine.TORCH_SDPA, "torch", "nn/functional.py", ("doc:scaled_dot_product_attention",)),
    (Routine.TORCH_SDPA, "torch", "_decomp/decompositions.py",
     ("scaled_dot_product_flash_attention_for_cpu",)),
    (Routine.TORCH_MULTI_HEAD_ATTENTION, "torch", "nn/functional.py",
     ("multi_head_attention_forward", "_in_projection_packed", "_in_projection")),
    (Routine.TORCH_MULTI_HEAD_ATTENTION, "torch", "nn/modules/activation.py", ("MultiheadAttention",)),
    # the causal mask's rule (forbidden.CAUSAL): torch's square mask and causal biases, Keras's layers' causal masks
    (Routine.TORCH_CAUSAL_MASK, "torch", "nn/modules/transformer.py", ("_generate_square_subsequent_mask",)),
    (Routine.TORCH_CAUSAL_MASK, "torch", "nn/attention/bias.py",
     ("CausalBias", "causal_upper_left", "causal_lower_right")),
    (Routine.KERAS_CAUSAL_MASK, "keras", "src/layers/attention/multi_head_attention.py",
     ("MultiHeadAttention._compute_causal_mask",)),
    (Routine.KERAS_CAUSAL_MASK, "keras", "src/layers/attention/grouped_query_attention.py",
     ("GroupedQueryAttention._compute_causal_mask",)),
    (Routine.KERAS_CAUSAL_MASK, "keras", "src/layers/attention/attention.py", ("Attention._calculate_score_mask",)),
    (Routine.SCIPY_SOFTMAX, "scipy", "special/_logsumexp.py", ("softmax",)),
    (Routine.SCIPY_LOG_SOFTMAX, "scipy", "special/_logsumexp.py", ("log_softmax",)),
    # layer_norm's rule (forbidden.NORM): torch's normalisation functions, modules and reference decompositions,
    # Keras's normalisation layers and ops
    (Routine.TORCH_LAYER_NORM, "torch", "nn/functional.py", ("layer_norm",)),
    (Routine.TORCH_LAYER_NORM, "torch", "nn/modules/normalization.py", ("LayerNorm",)),
    (Routine.TORCH_LAYER_NORM, "torch", "_refs/__init__.py", ("native_layer_norm",)),
    (Routine.TORCH_LAYER_NORM, "torch", "_refs/nn/functional/__init__.py", ("layer_norm",)),
    (Routine.TORCH_GROUP_NORM, "torch", "nn/functional.py", ("group_norm",)),
    (Routine.TORCH_GROUP_NORM, "torch", "nn/modules/normalization.py", ("GroupNorm",)),
    (Routine.TORCH_GROUP_NORM, "torch", "_refs/__init__.py", ("native_group_norm",)),
    (Routine.TORCH_GROUP_NORM, "torch", "_refs/nn/functional/__init__.py", ("group_norm",)),
    (Routine.TORCH_BATCH_NORM, "torch", "nn/functional.py", ("batch_norm", "instance_norm")),
    (Routine.TORCH_BATCH_NORM, "torch", "nn/modules/batchnorm.py", ("_NormBase", "_BatchNorm")),
    (Routine.TORCH_BATCH_NORM, "torch", "_decomp/decompositions.py",
     ("native_batch_norm_helper", "native_batch_norm", "_native_batch_norm_legit")),
    (Routine.TORCH_RMS_NORM, "torch", "nn/functional.py", ("rms_norm",)),
    (Routine.TORCH_RMS_NORM, "torch", "nn/modules/normalization.py", ("RMSNorm",)),
    (Routine.KERAS_LAYER_NORMALIZATION, "keras", "src/layers/normalization/layer_normalization.py", ("*",)),
    (Routine.KERAS_GROUP_NORMALIZATION, "keras", "src/layers/normalization/group_normalization.py", ("*",)),
    (Routine.KERAS_BATCH_NORMALIZATION, "keras", "src/layers/normalization/batch_normalization.py", ("*",)),
    (Routine.KERAS_RMS_NORMALIZATION, "keras", "src/layers/normalization/rms_normalization.py", ("*",)),
    (Routine.KERAS_NORMALIZATION, "keras", "src/layers/preprocessing/normalization.py", ("*",)),
    (Routine.KERAS_NORMALIZATION_OPS, "keras", "src/ops/nn.py",
     ("layer_normalization", "_layer_normalization", "rms_normalization", "_rms_normalization",
      "batch_normalization")),
    (Routine.KERAS_NORMALIZATION_OPS, "keras", "src/backend/torch/nn.py", ("batch_normalization",)),
    # the modern assignment's rules (forbidden.RMS_NORM, SWIGLU, QWEN3_ATTENTION, QWEN3_BLOCK): the two libraries' Qwen3
    # (but for TOO_SHORT below)
    (Routine.TRANSFORMERS_QWEN3_ATTENTION, "transformers", "models/qwen3/modeling_qwen3.py",
     ("Qwen3Attention", "eager_attention_forward", "apply_rotary_pos_emb", "repeat_kv")),
    (Routine.TRANSFORMERS_QWEN3_DECODER, "transformers", "models/qwen3/modeling_qwen3.py",
     ("Qwen3DecoderLayer", "Qwen3Model", "Qwen3ForCausalLM")),
    (Routine.KERAS_HUB_QWEN3_NORM, "keras_hub", "src/models/qwen3/qwen3_layernorm.py", ("*",)),
    (Routine.KERAS_HUB_QWEN3_ATTENTION, "keras_hub", "src/models/qwen3/qwen3_attention.py", ("*",)),
    (Routine.KERAS_HUB_QWEN3_DECODER, "keras_hub", "src/models/qwen3/qwen3_decoder.py", ("*",)),
    (Routine.KERAS_HUB_QWEN3_DECODER, "keras_hub", "src/models/qwen3/qwen3_backbone.py", ("Qwen3Backbone",)),
)

# Routines of the rules whose source is too short to be told from a student's own by fingerprints (transformers'
# Qwen3RMSNorm and Qwen3MLP: a forward of three lines and of one, under min_match once names and strings are
# filtered): the forbidden-routine watch sees them at run time; the similarity report does not read them.
TOO_SHORT = frozenset({Routine.TRANSFORMERS_QWEN3_NORM, Routine.TRANSFORMERS_QWEN3_MLP})


def package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)   # a top-level name: found without importing it
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


def package_version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "?"


def _doc_code(docstring: str) -> str:
    """The ``.. code-block:: python`` blocks of a docstring, dedented."""
    import textwrap

    blocks, lines, i = [], docstring.splitlines(), 0
    while i < len(lines):
        if lines[i].strip().startswith(".. code-block:: python"):
            indent = len(lines[i]) - len(lines[i].lstrip())
            i += 1
            block = []
            while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                block.append(lines[i])
                i += 1
            blocks.append(textwrap.dedent("\n".join(block)).strip("\n"))
        else:
            i += 1
    return "\n\n".join(blocks[:1])   # the first block: the reference implementation


def _without_docstring(node, lines) -> str:
    """A routine's source without its docstrings (its own and its methods'): shorter to tokenise and to read."""
    drop = set()
    for inner in ast.walk(node):
        body = getattr(inner, "body", None)
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body and \
                isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
                isinstance(body[0].value.value, str):
            drop.update(range(body[0].lineno, body[0].end_lineno + 1))
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "".join(lines[i - 1] for i in range(start, node.end_lineno + 1) if i not in drop)


_TOP = re.compile(r"^(?:@|def |async def |class |[A-Za-z_][A-Za-z0-9_]* = )")


def _top_level(source: str, names) -> list:
    """The top-level statements of a file that define one of ``names`` (a ``def``, a ``class``, an assignment),
    parsed on their own: a large file (torch's ``functional.py``) is not parsed whole. Each block runs from its
    first line (decorators included) to the next line that starts at column 0 with a name or a decorator; a block
    that does not parse on its own makes the whole file parsed instead."""
    lines = source.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if _TOP.match(line)]
    found = []
    for n, i in enumerate(starts):
        head = lines[i]
        if head.startswith("@"):
            continue
        match = re.match(r"(?:async def |def |class )?([A-Za-z_][A-Za-z0-9_]*)", head)
        if not match or match.group(1) not in names:
            continue
        first = i
        while first > 0 and lines[first - 1].startswith("@"):
            first -= 1
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        while end > i + 1 and lines[end - 1].startswith("@"):
            end -= 1
        try:
            tree = ast.parse("".join(lines[first:end]))
        except SyntaxError:
            return list(ast.parse(source).body), lines
        found.append((tree.body[0], lines[first:end]))
    return found, None


def routines(source: str, wanted) -> list[tuple[str, str]]:
    """``[(qualified name, source)]`` of the routines of one file that ``wanted`` names (see ``LIBRARY``),
    without docstrings."""
    found = []

    def functions(node, lines, prefix=""):
        for child in getattr(node, "body", []):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((prefix + child.name, _without_docstring(child, lines)))
            elif isinstance(child, ast.ClassDef):
                functions(child, lines, prefix + child.name + ".")

    if "*" in wanted:
        tree = ast.parse(source)
        functions(tree, source.splitlines(keepends=True))
        return found
    names = {w.removeprefix("doc:").split(".")[0] for w in wanted}
    blocks, whole = _top_level(source, names)
    if whole is not None:   # the file had to be parsed whole
        blocks = [(node, whole) for node in blocks]
    for want in wanted:
        name = want.removeprefix("doc:")
        for node, lines in blocks:
            if want.startswith("doc:") and isinstance(node, ast.Assign) and \
                    any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                docs = [c.value for c in ast.walk(node) if isinstance(c, ast.Constant)
                        and isinstance(c.value, str) and "code-block" in c.value]
                if docs:
                    found.append((f"{name} (documentation)", _doc_code(docs[0])))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == want:
                found.append((want, _without_docstring(node, lines)))
            elif isinstance(node, ast.ClassDef) and node.name == want:
                functions(node, lines, want + ".")
            elif isinstance(node, ast.ClassDef) and want.startswith(node.name + "."):   # one method of the class
                found.extend((want, _without_docstring(child, lines)) for child in node.body
                             if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
                             and f"{node.name}.{child.name}" == want)
    return found


@dataclass
class Library:
    pieces: list            # one Piece per label: its routines, one after another
    sources: list           # (label, "package version: file", [routine names]) read
    missing: list           # (label, why) of what could not be read


@functools.lru_cache(maxsize=None)
def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def library() -> Library:
    """The library routines of ``LIBRARY`` read from the installed files, one piece per run-time label (read and
    fingerprinted once per process)."""
    by_label: dict[str, list] = {}
    sources, missing = [], []
    for routine, package, relative, wanted in LIBRARY:
        label = str(routine)   # a plain string, as the event log and the report read it
        base = package_dir(package)
        if base is None:
            missing.append((label, f"{package} is not installed"))
            continue
        path = base / relative
        try:
            found = routines(_read(path), wanted)
        except (OSError, SyntaxError, UnicodeDecodeError) as exc:
            missing.append((label, f"{package}/{relative}: {type(exc).__name__}"))
            continue
        names = [name for name, _ in found]
        lost = [w for w in wanted if w != "*" and not any(n == w.removeprefix("doc:") or
                                                          n.startswith(w.removeprefix("doc:") + ".") or
                                                          n.startswith(w.removeprefix("doc:") + " ")
                                                          for n in names)]
        if lost:
            missing.append((label, f"{package}/{relative}: not found: {', '.join(lost)}"))
        sources.append((label, f"{package} {package_version(package)}: {relative}", names))
        where = f"{package}/{relative}"
        by_label.setdefault(label, []).extend((f"{where}: {name}", code) for name, code in found)
    pieces = []
    for label, found in by_label.items():
        code, parts = "", []
        for title, text in found:
            parts.append((title, len(code), len(code) + len(text)))
            code += text + "\n"
        piece = Piece(label, "", code, parts=parts)
        piece.fingerprint = fingerprint(code)
        pieces.append(piece)
    return Library(pieces, sources, missing)
