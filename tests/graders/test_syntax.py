"""The static checks of a grading on one parse per cell (autograder/graders/syntax.py).

The forbidden-routine rule's search (``forbidden.static_violations``), the instructor's review list
(``review.review_items``) and the dependency notes (``isolation.calls_in_source``) read the same cached trees: a
grading parses each submitted cell once (it parsed each three times). The search itself follows the notebook's
global bindings in cell order, as before.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from autograder.graders import forbidden, isolation, review, syntax
from autograder.graders.registry import exercises_of, record

ROOT = Path(__file__).resolve().parents[2]


def _clear():
    for cached in (syntax.tree, syntax.nodes, forbidden._definitions, forbidden._bindings, isolation._top_level_defs):
        cached.cache_clear()


@pytest.mark.parametrize("assignment", ["attention", "kv_cache", "decoder", "modern"])
def test_a_grading_parses_each_cell_once(assignment, monkeypatch):
    nb = json.loads((ROOT / "solutions" / assignment / f"{assignment}.ipynb").read_text(encoding="utf-8"))
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    parsed = []
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda source, *a, **k: parsed.append(source) or real(source, *a, **k))
    _clear()
    names = exercises_of(assignment)
    for name in names:
        forbidden.static_violations(name, record(name, assignment).forbidden, cells)
        isolation.calls_in_source(name, cells, set(names), assignment)
    review.review_items(cells)
    assert sorted(parsed) == sorted(set(cells)), f"{len(parsed)} parses of {len(set(cells))} cells"


IMPORT = "from torch.nn.functional import scaled_dot_product_attention as sdpa"
USES = "def self_attention(x):\n    return sdpa(x, x, x)"


@pytest.mark.parametrize("cells, expected", [
    ([IMPORT, USES], ["scaled_dot_product_attention"]),
    ([IMPORT, "def sdpa(q, k, v):\n    return q", USES], []),                       # a later def rebinds the name
    ([IMPORT, "sdpa = lambda q, k, v: q", USES], []),                              # so does an assignment
    ([IMPORT, "import numpy as sdpa", USES], []),                                  # and another import
    ([IMPORT, "def helper():\n    sdpa = 1\n    return sdpa", USES], ["scaled_dot_product_attention"]),  # local only
    (["if True:\n    " + IMPORT, USES], ["scaled_dot_product_attention"]),          # inside an if: still global
    (["import torch.nn.functional as F",
      "def outer():\n    def self_attention(x):\n        return F.scaled_dot_product_attention(x, x, x)\n"
      "    return self_attention"], ["scaled_dot_product_attention"]),              # a nested def is searched
    (["class self_attention:\n    def __call__(self, x):\n        return getattr(F, 'dot_product_attention')(x)"],
     ["dot_product_attention"]),                                                  # a class, a name as a string
    (["def self_attention(x):\n    '''not scaled_dot_product_attention'''\n    return x", "def broken(:"], []),
], ids=["alias", "def-rebinds", "assignment-rebinds", "import-rebinds", "local-binding", "inside-if", "nested-def",
        "class-and-string", "docstring-and-syntax-error"])
def test_the_search_follows_the_notebooks_bindings(cells, expected):
    _clear()
    assert forbidden.static_violations("self_attention", forbidden.ATTENTION, cells) == expected
