"""The submitted cells' syntax trees, parsed once per cell for every static check of a grading: the forbidden-routine
rule's search (``forbidden``), the instructor's review list (``review``) and the dependency notes (``isolation``).
A grading used to parse each cell three times (about 9 ms of the attention answer key's 0.37 s of graders)."""
from __future__ import annotations

import ast
import functools

from autograder.submission.notebook import MAX_CELL_SOURCE


@functools.lru_cache(maxsize=512)
def tree(source: str) -> ast.Module | None:
    """The syntax tree of one cell's ``source``, or None when it does not parse or is longer than a cell that runs
    may be (such a cell defines nothing here).

    The tree is shared by every caller: read it, never change it.

    Example:
        >>> [node.name for node in tree("def softmax(x):\\n    return x\\n").body]
        ['softmax']
    """
    if len(source) > MAX_CELL_SOURCE:   # never run either (``submission.notebook.collect``): ~0.8 GB per MB parsed
        return None
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


@functools.lru_cache(maxsize=512)
def nodes(source: str) -> tuple:
    """Every node of one cell's syntax tree (``ast.walk`` order; () when the cell does not parse). Shared: read only."""
    parsed = tree(source)
    return tuple(ast.walk(parsed)) if parsed is not None else ()
