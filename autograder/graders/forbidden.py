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
from dataclasses import dataclass

from autograder.graders import syntax
from autograder.sandbox.inside.routines import Routine

# Switching the run-time check off inside an exercise's own code counts as using what it hides.
SWITCHES = frozenset({"DisableTorchFunction", "DisableTorchFunctionSubclass", "_set_torch_function_mode",
                      "_pop_torch_function_stack", "_push_on_torch_function_stack"})


class RuleError(ValueError):
    """A forbidden rule that is not well formed: the module that declares it stops at import, naming it."""


@dataclass(frozen=True)
class Rule:
    """The library routines an exercise may not call, as the two checks see them.

    Args:
        name: what the rule is called in messages (``"softmax"``), an identifier.
        runtime: the routines whose use while a graded call is in flight costs the call, as the monitor reports
            them (``Routine`` members: a label the monitor never writes cannot be named).
        names: the names (identifiers) that may not appear in the exercise's ``def`` as an attribute, an imported
            name or a string.

    Raises:
        RuleError: naming the rule, for a name that is not an identifier, a run-time label that is not a
            ``Routine``, or a forbidden name that is not an identifier (a string given where a set is expected
            is one).

    Example:

    >>> Rule("causal", runtime=(), names={"causal_lower_right"}).names
    frozenset({'causal_lower_right'})
    """

    name: str
    runtime: frozenset[Routine]
    names: frozenset[str]

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise RuleError(f"forbidden rule {self.name!r}: its name must be an identifier")
        for field in ("runtime", "names"):
            if isinstance(getattr(self, field), (str, bytes)):
                raise RuleError(f"forbidden rule {self.name!r}: {field} must be a set, not the string "
                                f"{getattr(self, field)!r}")
        runtime, names = frozenset(self.runtime), frozenset(self.names)
        unknown = sorted(repr(label) for label in runtime if not isinstance(label, Routine))
        if unknown:
            raise RuleError(f"forbidden rule {self.name!r}: {', '.join(unknown)} is not a Routine "
                            "(autograder/sandbox/inside/routines.py: the labels the monitor reports)")
        malformed = sorted(repr(n) for n in names if not isinstance(n, str) or not n.isidentifier())
        if malformed:
            raise RuleError(f"forbidden rule {self.name!r}: {', '.join(malformed)} is not a name (an identifier)")
        object.__setattr__(self, "runtime", runtime)
        object.__setattr__(self, "names", names)

    @property
    def labels(self) -> frozenset[str]:
        """The run-time labels as plain strings, as the event log reads them."""
        return frozenset(str(routine) for routine in self.runtime)


# Run-time labels are the ones the monitor can write (``Routine``; ``sandbox/inside/watched.py``: ``LABELS``). The
# other softmaxes (``torch.softmin``, ``keras.ops.softmax``, ``keras.activations.softmax``) end at a softmax kernel,
# reported as ``torch:softmax``; Keras's ``GroupedQueryAttention`` class is reported as
# ``keras:layers.GroupQueryAttention``. Every attention, normalisation and softmax routine of the installed torch and
# Keras is watched or allowed for a written reason (tests/sandbox/live/test_library_coverage.py enumerates them): flex
# attention is reported as SDPA, torch.ao's quantizable multi-head attention as ``multi_head_attention_forward``.
# A library module or kernel registration changed under the watch (``sandbox/inside/monitor.verifier``): the routines
# it hid could be any of a rule's, so every call it is seen in counts as using them.
TAMPERED = Routine.LIBRARY_CHANGED
SOFTMAX = Rule(
    "softmax",
    runtime={Routine.TORCH_SOFTMAX, Routine.TORCH_LOG_SOFTMAX, Routine.SCIPY_SOFTMAX, Routine.SCIPY_LOG_SOFTMAX,
             TAMPERED},
    names={"softmax", "log_softmax", "softmin", "_softmax", "Softmax", "LogSoftmax", "Softmin", "Softmax2d",
           "_safe_softmax", "_masked_softmax",
           # torch.distributions' categorical family normalises its logits (``Categorical(logits=x).logits``)
           "Categorical", "OneHotCategorical", "RelaxedOneHotCategorical", "ExpRelaxedCategorical",
           "logits_to_probs"} | SWITCHES,
)
ATTENTION = Rule(
    "attention",
    runtime={Routine.TORCH_SDPA, Routine.TORCH_MULTI_HEAD_ATTENTION, Routine.KERAS_ATTENTION,
             Routine.KERAS_ADDITIVE_ATTENTION, Routine.KERAS_MULTI_HEAD_ATTENTION,
             Routine.KERAS_GROUP_QUERY_ATTENTION, Routine.KERAS_DOT_PRODUCT_ATTENTION, TAMPERED},
    names={"scaled_dot_product_attention", "dot_product_attention", "multi_head_attention_forward",
           "Attention", "AdditiveAttention", "MultiHeadAttention", "MultiheadAttention",
           "GroupQueryAttention", "GroupedQueryAttention", "_scaled_dot_product_attention_math",
           # Keras attention layers' internals (the scoring, the weighted sum, MultiHeadAttention's core)
           "_calculate_scores", "_apply_scores", "_compute_attention", "_masked_softmax",
           # flex attention, torch.ao's quantizable and quantized multi-head attention, Keras's op class
           "flex_attention", "flex_attention_hop", "sdpa_dense", "math_attention", "DotProductAttention",
           "quantizable"} | SWITCHES,
)
# torch's causal attention biases (``torch.nn.attention.bias``: ``CausalBias(...)._materialize()``), nn.Transformer's
# square mask and Keras's attention layers' causal masks, seen at run time by what they compute (a triangle, running
# sums) with their code on the stack, and named in the source.
CAUSAL = Rule("causal", runtime={Routine.TORCH_CAUSAL_MASK, Routine.KERAS_CAUSAL_MASK, TAMPERED},
              names={"causal_lower_right", "causal_upper_left", "CausalBias", "CausalVariant", "_materialize",
                     "generate_square_subsequent_mask", "_generate_square_subsequent_mask", "_compute_causal_mask",
                     "_calculate_score_mask"} | SWITCHES)
# Library RoPE (keras_hub.layers.RotaryEmbedding, torchtune's RotaryPositionalEmbeddings, transformers'
# apply_rotary_pos_emb); none is installed in the sandbox, so the source is what can show them.
ROPE = Rule("rope", runtime=(), names={"RotaryEmbedding", "RotaryPositionalEmbeddings", "apply_rotary_pos_emb"})
# A layer norm: torch's normalisation kernels (layer, group, batch/instance and RMS norm each compute a layer norm of a
# reshaped or centred input) and Keras's normalisation layers and ops. Means and variances (np.var, torch.var_mean,
# keras.ops.moments) are building blocks, not layer norms, and stay allowed.
NORM = Rule(
    "norm",
    runtime={Routine.TORCH_LAYER_NORM, Routine.TORCH_GROUP_NORM, Routine.TORCH_BATCH_NORM, Routine.TORCH_RMS_NORM,
             Routine.KERAS_LAYER_NORMALIZATION, Routine.KERAS_GROUP_NORMALIZATION,
             Routine.KERAS_BATCH_NORMALIZATION, Routine.KERAS_RMS_NORMALIZATION, Routine.KERAS_NORMALIZATION_OPS,
             Routine.KERAS_NORMALIZATION, TAMPERED},
    names={"layer_norm", "native_layer_norm", "LayerNorm", "LayerNormalization", "layer_normalization",
           "group_norm", "GroupNorm", "GroupNormalization", "batch_norm", "BatchNorm1d", "BatchNorm2d",
           "BatchNormalization", "batch_normalization", "instance_norm", "InstanceNorm1d", "rms_norm", "RMSNorm",
           "RMSNormalization", "rms_normalization", "Normalization", "native_group_norm", "BatchNorm3d",
           "InstanceNorm2d", "InstanceNorm3d", "LazyBatchNorm1d", "LazyInstanceNorm1d", "SyncBatchNorm",
           "_fused_rms_norm"} | SWITCHES,
)
# A decoder block or a whole model: the multi-head attention layers (the block's attention sublayer is the student's
# own multi_head_attention_layer) and torch's transformer layers (TransformerEncoderLayer(norm_first=True) with a
# causal mask is a pre-norm decoder block). Scaled dot-product attention, softmax and layer norms are parts
# another exercise asks for and stay allowed here.
BLOCK = Rule(
    "block",
    runtime={Routine.TORCH_MULTI_HEAD_ATTENTION, Routine.KERAS_MULTI_HEAD_ATTENTION,
             Routine.KERAS_GROUP_QUERY_ATTENTION, TAMPERED},
    names={"MultiHeadAttention", "MultiheadAttention", "multi_head_attention_forward", "GroupQueryAttention",
           "GroupedQueryAttention", "_compute_attention", "_native_multi_head_attention", "Transformer",
           "TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder", "TransformerDecoder",
           "_transformer_encoder_layer_fwd"} | SWITCHES,
)
# modern (Qwen3): the two libraries' Qwen3 classes (transformers' modeling_qwen3, KerasHub's models/qwen3) are known at
# run time by their code (``watched.SOURCE_ROUTINES``) and by their names in the source; each exercise may not use
# the library class that computes what it asks for, nor a bigger one that contains it.
_QWEN3_MODEL = {Routine.TRANSFORMERS_QWEN3_DECODER, Routine.KERAS_HUB_QWEN3_DECODER}
_QWEN3_MODEL_NAMES = {"Qwen3DecoderLayer", "Qwen3Model", "Qwen3ForCausalLM", "Qwen3PreTrainedModel",
                      "Qwen3TransformerDecoder", "Qwen3Backbone", "Qwen3CausalLM"}
# An RMSNorm: every normalisation of ``NORM`` (torch's rms_norm and Keras's RMSNormalization and rms_normalization
# among them) and the two libraries' Qwen3 RMSNorms.
RMS_NORM = Rule(
    "rms_norm",
    runtime=NORM.runtime | {Routine.TRANSFORMERS_QWEN3_NORM, Routine.KERAS_HUB_QWEN3_NORM},
    names=NORM.names | {"Qwen3RMSNorm", "Qwen3LayerNorm", "LlamaRMSNorm", "T5LayerNorm"},
)
# SwiGLU: transformers' Qwen3MLP, and the decoder layers that hold one.
SWIGLU = Rule(
    "swiglu",
    runtime={Routine.TRANSFORMERS_QWEN3_MLP, *_QWEN3_MODEL, TAMPERED},
    names={"Qwen3MLP", "LlamaMLP"} | _QWEN3_MODEL_NAMES | SWITCHES,
)
# Qwen3's attention layer: the two libraries' Qwen3Attention (and transformers' helpers inside it: its eager
# attention, apply_rotary_pos_emb, repeat_kv), Keras's and torch's attention layers with projections (as ``BLOCK``),
# and the decoder layers. Scaled dot-product attention (the notebook's grouped_query_attention, torch's SDPA with
# enable_gqa), softmax, RoPE and RMSNorm are parts and stay allowed.
QWEN3_ATTENTION = Rule(
    "qwen3_attention",
    runtime=BLOCK.runtime | {Routine.TRANSFORMERS_QWEN3_ATTENTION, Routine.KERAS_HUB_QWEN3_ATTENTION, *_QWEN3_MODEL},
    names=BLOCK.names | {"Qwen3Attention", "eager_attention_forward", "apply_rotary_pos_emb", "repeat_kv"}
    | _QWEN3_MODEL_NAMES,
)
# A Qwen3 block or the whole model (qwen3_block, generate): the decoder layers and models, and the attention layers
# (the block's attention sublayer is the student's own qwen3_attention); RMSNorm and the MLP are parts.
QWEN3_BLOCK = Rule(
    "qwen3_block",
    runtime=QWEN3_ATTENTION.runtime,
    names=QWEN3_ATTENTION.names,
)
# Each exercise's record names its rule (one of the above, or None): ``exercises/<exercise>.py``.


def runtime_violations(rule: Rule | None, events) -> list[str]:
    """Watched routines among ``events`` (those that ran while a graded call was in flight) that ``rule`` (the
    called exercise's, ``registry.record(name).forbidden``) forbids."""
    if not rule:
        return []
    return sorted(set(events) & rule.labels)


def static_violations(function: str, rule: Rule | None, sources: list[str]) -> list[str]:
    """Names that ``rule`` forbids and that appear inside the submitted ``def function`` (or its imports)."""
    if not rule:
        return []
    names, found = rule.names, set()
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
