"""The notebooks' hints lead to the answer without being it: no hint's code is a line of the solution.

Each exercise's collapsed hints (``<details><summary>💡 힌트 N</summary>`` in the markdown between the previous
solution cell and its own) are compared with its solution (the code between ``### BEGIN SOLUTION`` and ``### END
SOLUTION``), in every notebook of ``source/`` (the quiz too: one hint a question). Code in a hint (inline ``code``
and fenced blocks) that parses as Python is reduced to its shape: the names of the student's variables become
placeholders (``key``/``k``, ``g``/``group`` are the same), the library's
functions and attributes (``np.repeat``, ``axis=1``) stay. A hint fails when that shape is the right-hand side of a
solution statement (or a ``return``), or a large part of one (at least ``LARGE`` syntax nodes): then the hint is the
solution's line with other names. Small building blocks (``keepdims=True``, ``np.swapaxes(key, -1, -2)`` where the
solution line does more) and the formulas of the text stay allowed. The notebooks' intros say so ("힌트에는 해답의
코드 줄이 들어 있지 않습니다"), and this test keeps them honest.
"""
from __future__ import annotations

import ast
import copy
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "source").glob("*/*.ipynb"))   # every notebook: attention, decoder, kv_cache, quiz
LARGE = 12          # a hint's expression this big that appears inside a solution line counts as that line
TRIVIAL = 7         # solution right-hand sides smaller than this (``weights @ v``, ``self._keys``) are not compared

HINT = re.compile(r"<summary>💡 힌트[^<]*</summary>(.*?)</details>", re.S)
CODE = re.compile(r"```(?:python)?\n(.*?)```|`([^`\n]+)`", re.S)
MODULES = {"np", "numpy", "torch", "keras", "ops", "F", "math"}


class _Shape(ast.NodeTransformer):
    """Variables become ``_``; modules, attributes, keywords and constants stay."""

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(id=node.id if node.id in MODULES else "_", ctx=ast.Load()), node)


def shape(node) -> str:
    return ast.dump(_Shape().visit(copy.deepcopy(node)))


def size(node) -> int:
    """Syntax nodes of an expression (load/store markers not counted)."""
    return sum(1 for n in ast.walk(node) if not isinstance(n, ast.expr_context))


def expressions(code: str) -> list:
    """The expressions of a piece of code: the right-hand sides of its statements, or the code as one expression."""
    try:
        return [ast.parse(code.strip(), mode="eval").body]
    except SyntaxError:
        pass
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)) and node.value is not None:
            found.append(node.value)
        elif isinstance(node, ast.Expr):
            found.append(node.value)
    return found


def solution_lines(source: str) -> list:
    """The right-hand sides of the solution's statements (those big enough to be a giveaway)."""
    body = source.split("### BEGIN SOLUTION")[1:]
    lines = []
    for part in body:
        code = part.split("### END SOLUTION")[0]
        code = "\n".join(line for line in code.splitlines())
        try:
            tree = ast.parse(_dedent(code))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            value = getattr(node, "value", None) if isinstance(node, (ast.Assign, ast.AugAssign, ast.Return)) else None
            if value is not None and size(value) >= TRIVIAL:
                lines.append(value)
    return lines


def _dedent(code: str) -> str:
    lines = [line for line in code.splitlines() if line.strip()]
    indent = min((len(line) - len(line.lstrip()) for line in lines), default=0)
    return "\n".join(line[indent:] for line in code.splitlines())


def exercises(path: Path) -> list:
    """(exercise, hint texts, solution source) in notebook order."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    found, markdown = [], []
    for cell in cells:
        text = "".join(cell["source"])
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        if cell["cell_type"] == "markdown":
            markdown.append(text)
        elif grade_id.startswith("solution_"):
            hints = [h for m in markdown for h in HINT.findall(m)]
            found.append((grade_id[len("solution_"):], hints, text))
            markdown = []
    return found


def giveaways(hints, solution) -> list:
    lines = solution_lines(solution)
    shapes = {shape(line): ast.unparse(line) for line in lines}
    parts = {}
    for line in lines:
        for node in ast.walk(line):
            if isinstance(node, ast.expr) and size(node) >= LARGE:
                parts.setdefault(shape(node), ast.unparse(line))
    found = []
    for hint in hints:
        for block, inline in CODE.findall(hint):
            for expr in expressions(block or inline):
                s = shape(expr)
                if s in shapes:
                    found.append(f"{ast.unparse(expr)!r} is the solution's {shapes[s]!r}")
                elif size(expr) >= LARGE and s in parts:
                    found.append(f"{ast.unparse(expr)!r} is most of the solution's {parts[s]!r}")
    return found


CASES = [pytest.param(path, name, hints, solution, id=f"{path.parent.name}-{name}")
         for path in NOTEBOOKS for name, hints, solution in exercises(path)]


def test_every_exercise_has_its_hints():
    """Two for every coded exercise, one for every quiz question; and every notebook has exercises."""
    assert {path.parent.name for path in NOTEBOOKS} >= {"attention", "kv_cache", "decoder", "quiz"}
    for path in NOTEBOOKS:
        assert any(c.values[0] == path for c in CASES), path.name
    for path, name, hints, _ in (c.values for c in CASES):
        assert len(hints) == (1 if path.parent.name == "quiz" else 2), (path.name, name, len(hints))


@pytest.mark.parametrize("path, name, hints, solution", CASES)
def test_hints_are_not_the_solution(path, name, hints, solution):
    assert giveaways(hints, solution) == []


def test_the_rule_finds_a_solution_line_with_other_names():
    """A hint that renames the solution's variables is still the solution's line; a building block is not."""
    solution = ("### BEGIN SOLUTION\nk = np.repeat(k, group, axis=1)\n"
                "return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)\n### END SOLUTION")
    assert giveaways(["`np.repeat(key, g, axis=1)`"], solution)
    assert giveaways(["```python\nout = np.concatenate([a * c - b * s, b * c + a * s], axis=-1)\n```"], solution)
    assert giveaways(["`np.concatenate([a * c - b * s, b * c + a * s], axis=-1)`의 꼴"], solution)
    assert not giveaways(["`np.repeat`는 축을 따라 반복합니다", "`keepdims=True`", "`axis=1`"], solution)
