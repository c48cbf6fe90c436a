"""Collect: read a submitted notebook, find its assignment, and pull out the code the student's process runs.

A submission is data here: nothing of it is executed in this process. The code cells that run in the sandbox are
every code cell except the grade cells (the visible checks; hidden graders replace their verdict) and the cells
tagged ``demo-only`` (slow demonstrations that no grader needs, e.g. training a small model), with IPython magics
and shell escapes turned into ``pass``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

GRADERS = Path(__file__).parent / "graders"
MAX_NOTEBOOK_BYTES = 50 << 20


class NotGradable(Exception):
    """The file cannot be graded at all (not a notebook, unreadable, unknown assignment)."""


@dataclass
class Submission:
    assignment: str
    path: str
    code_cells: list[str]
    grade_ids: list[str]
    code_indices: list[int] = field(default_factory=list)   # where each code cell sits in the notebook
    problems: list[str] = field(default_factory=list)


def exercises_of(assignment: str) -> list[str]:
    """Names of the graded exercises of an assignment, from its grader modules (``test_<exercise>.py``)."""
    folder = GRADERS / assignment
    return sorted(p.stem[len("test_"):] for p in folder.glob("test_*.py"))


def known_assignments() -> list[str]:
    return sorted(p.parent.name for p in GRADERS.glob("*/test_*.py"))


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def is_grade_cell(cell) -> bool:
    meta = _nbgrader(cell)
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


DEMO_ONLY = "demo-only"


def is_demo_only(cell) -> bool:
    """A demonstration the student runs in Jupyter and grading skips (a student removing the tag only slows it)."""
    tags = cell.get("metadata", {}).get("tags", [])
    return isinstance(tags, list) and DEMO_ONLY in tags and not _nbgrader(cell)


_MAGIC = re.compile(r"^(\s*)([%!].*)$")


def strip_magics(source: str) -> str:
    """Replace IPython magics and shell escapes by ``pass`` (a cell magic blanks its whole cell)."""
    if source.lstrip().startswith("%%"):
        return ""
    return "\n".join(_MAGIC.sub(r"\1pass", line) for line in source.splitlines())


def read_notebook(path) -> nbformat.NotebookNode:
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise NotGradable(f"cannot read {path}: {exc.strerror}") from None
    if size > MAX_NOTEBOOK_BYTES:
        raise NotGradable(f"{path} is {size >> 20} MB, over the limit of {MAX_NOTEBOOK_BYTES >> 20} MB")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise NotGradable(f"{path} is not UTF-8 text") from None
    try:
        return nbformat.reads(text, as_version=4)
    except (json.JSONDecodeError, nbformat.reader.NotJSONError, Exception) as exc:  # noqa: BLE001
        raise NotGradable(f"{path} is not a Jupyter notebook ({type(exc).__name__})") from None


def detect_assignment(nb, path: str = "") -> str:
    """The assignment whose grade cells this notebook carries (ties broken by the file name)."""
    ids = {_nbgrader(c).get("grade_id", "") for c in nb.get("cells", [])}
    best, best_hits = None, 0
    for assignment in known_assignments():
        hits = sum(f"test_{e}" in ids or f"solution_{e}" in ids for e in exercises_of(assignment))
        if hits > best_hits or (hits == best_hits and hits and Path(path).stem == assignment):
            best, best_hits = assignment, hits
    if best is None:
        stem = Path(path).stem
        if stem in known_assignments():
            return stem
        raise NotGradable("no known assignment's cells were found in this notebook")
    return best


def collect(nb, path: str = "", assignment: str | None = None) -> Submission:
    """A submission from a notebook node: its assignment and the code cells for the sandbox."""
    assignment = assignment or detect_assignment(nb, path)
    cells = [c if isinstance(c, dict) else {} for c in nb.get("cells", [])]
    indices = [i for i, c in enumerate(cells)
               if c.get("cell_type") == "code" and not is_grade_cell(c) and not is_demo_only(c)]
    code = [strip_magics(_source(cells[i])) for i in indices]
    grade_ids = [_nbgrader(c).get("grade_id", "") for c in cells if _nbgrader(c)]
    return Submission(assignment=assignment, path=str(path), code_cells=code, grade_ids=grade_ids,
                      code_indices=indices)


def collect_file(path, assignment: str | None = None) -> Submission:
    return collect(read_notebook(path), str(path), assignment)


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)
