"""The units of a notebook that are compared: each exercise's ``def``/``class`` and the rest of the student's code
(``OTHER``), with the release's own code (``Template``) left out."""
from __future__ import annotations

import ast
from dataclasses import dataclass

from autograder.submission.notebook import MAX_CELL_SOURCE

OTHER = "(other code)"


def _normal(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def statements(source: str):
    """``[(node, source)]`` of a cell's top-level statements (``None``: the cell does not parse, or is longer than a
    cell that runs may be: its syntax tree would cost up to ~0.8 GB per MB)."""
    if len(source) > MAX_CELL_SOURCE:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    lines = source.splitlines(keepends=True)
    found = []
    for node in tree.body:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        found.append((node, "".join(lines[start - 1:node.end_lineno])))
    return found


@dataclass(frozen=True)
class Template:
    """The release's code: its cells and top-level statements (normalised text), which are nobody's own code."""
    cells: frozenset
    statements: frozenset

    @classmethod
    def of(cls, code_cells) -> Template:
        cells = frozenset(_normal(c) for c in code_cells)
        return cls(cells, frozenset(_normal(text) for c in code_cells for _, text in statements(c) or ()))


def units_of(code_cells, exercises, template: Template | None = None) -> dict[str, str]:
    """``{exercise or OTHER: source}`` of one notebook's code cells (the student's program, in cell order).

    A top-level ``def``/``class`` named after an exercise is that exercise's unit (a later one replaces an
    earlier one); every other top-level statement goes to ``OTHER``, except the release's own (a cell or a
    statement of ``template``, whitespace aside); a cell that does not parse goes to ``OTHER`` whole."""
    template = template or Template(frozenset(), frozenset())
    units: dict[str, str] = {}
    other = []
    for source in code_cells:
        if _normal(source) in template.cells:
            continue
        found = statements(source)
        if found is None:
            other.append(source)
            continue
        for node, text in found:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in exercises:
                units[node.name] = text
            elif _normal(text) not in template.statements:
                other.append(text)
    if any(s.strip() for s in other):
        units[OTHER] = "\n".join(other)
    return units
