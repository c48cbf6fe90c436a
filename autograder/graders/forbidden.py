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
    "attend_with_rope_cache": ATTENTION,
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
    aliases = _global_imports(sources, names)
    for source in sources:
        for node in _nodes(source):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == function:
                found |= _names_in(node, names, aliases)
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
        for node in _module_statements(source):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    bound = alias.asname or alias.name
                    if alias.name in names:
                        aliases[bound] = alias.name
                    else:
                        aliases.pop(bound, None)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    aliases.pop(alias.asname or alias.name.split(".")[0], None)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                aliases.pop(node.name, None)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            aliases.pop(name.id, None)
    return aliases


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


@functools.lru_cache(maxsize=512)
def _body(source: str) -> tuple:
    """A cell's top-level statements (() when it does not parse)."""
    try:
        return tuple(ast.parse(source).body)
    except (SyntaxError, ValueError):
        return ()


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
