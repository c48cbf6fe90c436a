"""The forbidden-routine rule of the contract: an exercise may not call the library routine it asks to write.

Two independent checks, both judged here on the trusted side:

* at run time, the routines that ran while a graded call was in flight (``sandbox/inside/monitor.guard``: the
  forbidden kernels at torch's dispatcher, Keras's and torch's Python-level attention routines seen from the kernels
  they reach, scipy's softmax; written to a pipe as they run, ``sandbox/logs.EventLog``) count against that call's
  exercise. The call alone decides, never the name of a function the student wrote;
* statically, the exercise's ``def`` in the submitted source is searched for the routine's name as an
  attribute, an imported name or a string (``getattr(F, "scaled_dot_product_attention")``).

Until each exercise is graded with the reference versions of the other contract functions it calls, an exercise
whose own solution calls another exercise that uses a forbidden routine (``self_attention`` calling the student's
``scaled_dot_product_attention`` built on torch's SDPA) loses its points too: the routine ran during its call.
"""
from __future__ import annotations

import ast
import functools

from autograder.graders import syntax

# Switching the run-time check off inside an exercise's own code counts as using what it hides.
SWITCHES = {"DisableTorchFunction", "DisableTorchFunctionSubclass", "_set_torch_function_mode",
            "_pop_torch_function_stack", "_push_on_torch_function_stack"}

# Run-time labels are the ones the monitor can write (``sandbox/inside/watched.py``: ``LABELS``;
# tests/sandbox/live/test_policy.py checks it). The other softmaxes (``torch.softmin``, ``keras.ops.softmax``,
# ``keras.activations.softmax``) end at a softmax kernel, reported as ``torch:softmax``; Keras's
# ``GroupedQueryAttention`` class is reported as ``keras:layers.GroupQueryAttention``. Every attention, normalisation
# and softmax routine of the installed torch and Keras is watched or allowed for a written reason
# (tests/sandbox/live/test_library_coverage.py enumerates them): flex attention is reported as SDPA, torch.ao's
# quantizable multi-head attention as ``multi_head_attention_forward``.
# A library module or kernel registration changed under the watch (``sandbox/inside/monitor.verifier``): the routines
# it hid could be any of a rule's, so every call it is seen in counts as using them.
TAMPERED = "guard:library_changed"
SOFTMAX = {
    "runtime": {"torch:softmax", "torch:log_softmax", "scipy:special.softmax", "scipy:special.log_softmax",
                TAMPERED},
    "names": {"softmax", "log_softmax", "softmin", "_softmax", "Softmax", "LogSoftmax", "Softmin", "Softmax2d",
              "_safe_softmax", "_masked_softmax"} | SWITCHES,
}
ATTENTION = {
    "runtime": {"torch:scaled_dot_product_attention", "torch:multi_head_attention_forward",
                "keras:layers.Attention", "keras:layers.AdditiveAttention", "keras:layers.MultiHeadAttention",
                "keras:layers.GroupQueryAttention", "keras:ops.dot_product_attention", TAMPERED},
    "names": {"scaled_dot_product_attention", "dot_product_attention", "multi_head_attention_forward",
              "Attention", "AdditiveAttention", "MultiHeadAttention", "MultiheadAttention",
              "GroupQueryAttention", "GroupedQueryAttention", "_scaled_dot_product_attention_math",
              # Keras attention layers' internals (the scoring, the weighted sum, MultiHeadAttention's core)
              "_calculate_scores", "_apply_scores", "_compute_attention", "_masked_softmax",
              # flex attention, torch.ao's quantizable and quantized multi-head attention, Keras's op class
              "flex_attention", "flex_attention_hop", "sdpa_dense", "math_attention", "DotProductAttention",
              "quantizable"} | SWITCHES,
}
CAUSAL = {"runtime": set(), "names": {"causal_lower_right", "causal_upper_left"}}
# Library RoPE (keras_hub.layers.RotaryEmbedding, torchtune's RotaryPositionalEmbeddings, transformers'
# apply_rotary_pos_emb); none is installed in the sandbox, so the source is what can show them.
ROPE = {"runtime": set(), "names": {"RotaryEmbedding", "RotaryPositionalEmbeddings", "apply_rotary_pos_emb"}}
# A layer norm: torch's normalisation kernels (layer, group, batch/instance and RMS norm each compute a layer norm of a
# reshaped or centred input) and Keras's normalisation layers and ops. Means and variances (np.var, torch.var_mean,
# keras.ops.moments) are building blocks, not layer norms, and stay allowed.
NORM = {
    "runtime": {"torch:layer_norm", "torch:group_norm", "torch:batch_norm", "torch:rms_norm",
                "keras:layers.LayerNormalization", "keras:layers.GroupNormalization",
                "keras:layers.BatchNormalization", "keras:layers.RMSNormalization", "keras:ops.normalization",
                "keras:layers.Normalization", TAMPERED},
    "names": {"layer_norm", "native_layer_norm", "LayerNorm", "LayerNormalization", "layer_normalization",
              "group_norm", "GroupNorm", "GroupNormalization", "batch_norm", "BatchNorm1d", "BatchNorm2d",
              "BatchNormalization", "batch_normalization", "instance_norm", "InstanceNorm1d", "rms_norm", "RMSNorm",
              "RMSNormalization", "rms_normalization", "Normalization", "native_group_norm", "BatchNorm3d",
              "InstanceNorm2d", "InstanceNorm3d", "LazyBatchNorm1d", "LazyInstanceNorm1d", "SyncBatchNorm",
              "_fused_rms_norm"} | SWITCHES,
}
# A decoder block or a whole model: the multi-head attention layers (the block's attention sublayer is the student's
# own multi_head_attention_layer) and torch's transformer layers (TransformerEncoderLayer(norm_first=True) with a
# causal mask is a pre-norm decoder block). Scaled dot-product attention, softmax and layer norms are parts
# another exercise asks for and stay allowed here.
BLOCK = {
    "runtime": {"torch:multi_head_attention_forward", "keras:layers.MultiHeadAttention",
                "keras:layers.GroupQueryAttention", TAMPERED},
    "names": {"MultiHeadAttention", "MultiheadAttention", "multi_head_attention_forward", "GroupQueryAttention",
              "GroupedQueryAttention", "_compute_attention", "_native_multi_head_attention", "Transformer",
              "TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder", "TransformerDecoder",
              "_transformer_encoder_layer_fwd"} | SWITCHES,
}
# Each exercise's record names its rule (one of the above, or None): ``exercises/<exercise>.py``.


def runtime_violations(rule: dict | None, events) -> list[str]:
    """Watched routines among ``events`` (those that ran while a graded call was in flight) that ``rule`` (the
    called exercise's, ``registry.record(name).forbidden``) forbids."""
    if not rule:
        return []
    return sorted(set(events) & rule["runtime"])


def static_violations(function: str, rule: dict | None, sources: list[str]) -> list[str]:
    """Names that ``rule`` forbids and that appear inside the submitted ``def function`` (or its imports)."""
    if not rule:
        return []
    names, found = rule["names"], set()
    aliases = _global_imports(sources, names)
    for source in sources:
        for definition in _definitions(source).get(function, ()):
            found |= _names_in(definition, names, aliases)
    return sorted(found)


def _global_imports(sources: list[str], names) -> dict[str, str]:
    """``{bound name: forbidden name}`` for the forbidden names that the notebook's global namespace holds as an
    import when the cells have run in order (``from torch.nn.functional import scaled_dot_product_attention``).

    A later top-level ``def``, ``class``, assignment or other import of the same name rebinds it: a scratch cell
    importing torch's routine above the notebook's own helper of the same name (kv_cache's numpy
    ``scaled_dot_product_attention``) leaves the helper in place, so calling it is not a use of torch's routine.
    Imports inside another function are local to it and bind nothing global.
    """
    aliases: dict[str, str] = {}
    for source in sources:
        for bound, imported in _bindings(source):
            if imported in names:
                aliases[bound] = imported
            else:
                aliases.pop(bound, None)
    return aliases


@functools.lru_cache(maxsize=512)
def _bindings(source: str) -> tuple:
    """The global names a cell's top-level statements bind, in order (read by ``_global_imports``, for every rule):
    ``(bound name, imported name)`` for each name of a ``from ... import``, ``(bound name, None)`` for any other
    import, ``def``, ``class`` or assignment."""
    events = []
    for node in _module_statements(source):
        if isinstance(node, ast.ImportFrom):
            events += [(alias.asname or alias.name, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            events += [(alias.asname or alias.name.split(".")[0], None) for alias in node.names]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            events.append((node.name, None))
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                events += [(name.id, None) for name in ast.walk(target) if isinstance(name, ast.Name)]
    return tuple(events)


def _module_statements(source: str):
    """The statements that run at a cell's top level, in order: inside if/for/while/with/try too, never inside a
    function or class body."""
    pending = [n for n in reversed(_body(source))]
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        children = []
        for field in ("body", "orelse", "finalbody", "handlers"):
            children.extend(getattr(node, field, []) or [])
        pending.extend(reversed([c for c in children if isinstance(c, (ast.stmt, ast.excepthandler))]))


def _body(source: str) -> tuple:
    """A cell's top-level statements (() when it does not parse)."""
    parsed = syntax.tree(source)
    return tuple(parsed.body) if parsed is not None else ()


@functools.lru_cache(maxsize=512)
def _definitions(source: str) -> dict:
    """``{name: its def and class statements}`` of every function and class a cell defines, nested ones included
    (looked up once per exercise, not searched for; {} when the cell does not parse). Read it, never change it."""
    found = {}
    for node in syntax.nodes(source):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.setdefault(node.name, []).append(node)
    return found


def _names_in(definition, names, aliases) -> set[str]:
    found = set()
    body = definition.body
    docstring = body[0] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else None
    for node in ast.walk(definition):
        if node is docstring or node is definition:
            continue
        if isinstance(node, ast.Attribute) and node.attr in names:
            found.add(node.attr)
        elif isinstance(node, ast.Name) and node.id in aliases:
            found.add(aliases[node.id])
        elif isinstance(node, ast.ImportFrom):
            found |= {a.name for a in node.names if a.name in names}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip() in names:
            if not (docstring is not None and node is docstring.value):
                found.add(node.value.strip())
    return found
