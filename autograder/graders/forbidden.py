"""The forbidden-routine rule of the contract: an exercise may not call the library routine it asks to write.

Two independent checks, both judged here on the trusted side:

* at run time the student's process reports which watched routines a call used (``sandbox/worker.Monitor``:
  torch functions through a ``TorchFunctionMode``, so aliases are seen too; Keras layers and ops, scipy);
* statically, the exercise's ``def`` in the submitted source is searched for the routine's name as an
  attribute, an imported name or a string (``getattr(F, "scaled_dot_product_attention")``).
"""
from __future__ import annotations

import ast
import functools

# Switching the run-time check off inside an exercise's own code counts as using what it hides.
SWITCHES = {"DisableTorchFunction", "DisableTorchFunctionSubclass", "_set_torch_function_mode",
            "_pop_torch_function_stack", "_push_on_torch_function_stack"}

SOFTMAX = {
    "runtime": {"torch:softmax", "torch:log_softmax", "torch:_softmax", "torch:_log_softmax", "torch:softmin",
                "keras:ops.softmax", "keras:ops.log_softmax", "keras:activations.softmax",
                "scipy:special.softmax", "scipy:special.log_softmax"},
    "names": {"softmax", "log_softmax", "softmin", "_softmax"} | SWITCHES,
}
ATTENTION = {
    "runtime": {"torch:scaled_dot_product_attention", "torch:multi_head_attention_forward",
                "torch:_scaled_dot_product_attention_math", "keras:layers.Attention",
                "keras:layers.AdditiveAttention", "keras:layers.MultiHeadAttention",
                "keras:layers.GroupQueryAttention", "keras:layers.GroupedQueryAttention",
                "keras:ops.dot_product_attention"},
    "names": {"scaled_dot_product_attention", "dot_product_attention", "multi_head_attention_forward",
              "Attention", "AdditiveAttention", "MultiHeadAttention", "MultiheadAttention",
              "GroupQueryAttention", "GroupedQueryAttention", "_scaled_dot_product_attention_math"} | SWITCHES,
}
CAUSAL = {"runtime": set(), "names": {"causal_lower_right", "causal_upper_left"}}
# Library RoPE (keras_hub.layers.RotaryEmbedding, torchtune's RotaryPositionalEmbeddings, transformers'
# apply_rotary_pos_emb); none is installed in the sandbox, so the source is what can show them.
ROPE = {"runtime": set(), "names": {"RotaryEmbedding", "RotaryPositionalEmbeddings", "apply_rotary_pos_emb"}}

RULES = {
    "softmax": SOFTMAX,
    "additive_attention": ATTENTION,
    "bahdanau_attention": ATTENTION,
    "dot_product_attention": ATTENTION,
    "scaled_dot_product_attention": ATTENTION,
    "self_attention": ATTENTION,
    "causal_mask": CAUSAL,
    "apply_rope": ROPE,
    "multi_head_attention": ATTENTION,
    "multi_head_attention_layer": ATTENTION,
    "grouped_query_attention": ATTENTION,
    "attend_with_cache": ATTENTION,
    "flash_attention": ATTENTION,
}


def runtime_violations(function: str, used) -> list[str]:
    """Watched routines in ``used`` (``routine@caller``) that count against ``function``.

    A routine called from another exercise's own function that may not call it either (``self_attention`` calling
    the student's ``scaled_dot_product_attention`` that calls torch's SDPA) counts against that other exercise
    only; a routine called from ``function`` itself or from any helper counts against ``function``.
    """
    rule = RULES.get(function)
    if not rule:
        return []
    found = set()
    for entry in used:
        routine, _, caller = entry.partition("@")
        if routine not in rule["runtime"]:
            continue
        other = RULES.get(caller) if caller != function else None
        if other is None or routine not in other["runtime"]:
            found.add(routine)
    return sorted(found)


def static_violations(function: str, sources: list[str]) -> list[str]:
    """Forbidden names that appear inside the submitted ``def function`` (or its imports)."""
    rule = RULES.get(function)
    if not rule:
        return []
    names, found = rule["names"], set()
    for source in sources:
        nodes = _nodes(source)
        aliases = {}
        for node in nodes:
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name in names:
                        aliases[alias.asname or alias.name] = alias.name
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == function:
                found |= _names_in(node, names, aliases)
    return sorted(found)


@functools.lru_cache(maxsize=512)
def _nodes(source: str) -> tuple:
    """Every node of a cell's syntax tree (parsed once per cell, not once per exercise; () when it does not parse)."""
    try:
        return tuple(ast.walk(ast.parse(source)))
    except (SyntaxError, ValueError):
        return ()


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
