"""One module per coded exercise: the library routines it may not call (``FORBIDDEN``) and its known mistakes
(``MISTAKES``). Its grader is ``graders/<ASSIGNMENT>/test_<exercise>.py``, which declares at its top the references,
tolerances and stored GPU cases it compares with: those two files hold everything about an exercise.
"""
from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

# The coded exercises of each assignment, in the order of its notebook. (The quiz's answers: quiz/answer_key.py.)
ASSIGNMENTS = {
    "attention": ("softmax", "scaled_dot_product_attention", "additive_attention", "bahdanau_attention",
                  "dot_product_attention", "causal_mask", "self_attention", "apply_rope", "split_heads",
                  "merge_heads", "multi_head_attention", "multi_head_attention_layer"),
    "kv_cache": ("kv_cache_bytes", "max_cached_tokens", "grouped_query_attention", "KVCache", "attend_with_cache",
                 "flash_attention", "sliding_window_mask", "attend_with_rope_cache"),
    "decoder": ("layer_norm", "decoder_block", "generate"),
}


@cache
def module(exercise: str) -> ModuleType | None:
    """The exercise's module, or None for a name that is no coded exercise."""
    if not any(exercise in names for names in ASSIGNMENTS.values()):
        return None
    return importlib.import_module(f"{__name__}.{exercise}")


def of_assignment(assignment: str) -> list[ModuleType]:
    return [module(name) for name in ASSIGNMENTS[assignment]]
