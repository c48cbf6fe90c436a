"""A submitted notebook: find its assignment, and pull out the code the student's process runs.

A submission is data here: nothing of it is executed in this process. The code cells that run in the sandbox are
every code cell except the grade cells (the visible checks; hidden graders replace their verdict) and the cells
tagged ``demo-only`` (slow demonstrations that no grader needs, e.g. training a small model), with IPython magics
and shell escapes turned into ``pass``.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import settings
from autograder.messages import Reason
from autograder.submission.files import NotGradable, read_submitted

RELEASE = Path(__file__).resolve().parent.parent.parent / "release"

# What a submitted notebook may hold, checked before the work that each bound protects (docs/security/bounds.md).
# The course's own notebooks hold at most 400 JSON objects and arrays, 2,600 values, nesting 8 deep, 62 cells, 500
# bytes of metadata a cell, 5 KB of code a cell and 50 KB of code in all; the bounds leave a wide margin and keep
# the worst notebook's parse (json, nbformat) and syntax trees (``ast.parse``: up to ~0.8 GB per MB of code) small.
MAX_CONTAINERS = 50_000       # JSON objects and arrays of the whole file (``[[],[],...]``: ~60 bytes each parsed)
# JSON values of the whole file: a line of a cell's source is one (a list of strings), ~60 bytes each once parsed;
# nbformat's reading and validation of a million takes ~5 s and ~230 MiB on a loaded 2-core machine
MAX_VALUES = 1_000_000
MAX_DEPTH = 64                # nesting of JSON objects and arrays
MAX_CELLS = 2_000             # cells of the notebook
MAX_METADATA_BYTES = 1 << 20  # the notebook's metadata and every cell's together, as JSON
MAX_CELL_SOURCE = 64 << 10    # characters of one code cell that runs (a bigger one is not run: ``collect``)
MAX_CODE = 256 << 10          # characters of all code cells that run together (those past it are not run)
_BRACKETS = frozenset(b"[]{}")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _BRACKETS)
_STRING = re.compile(rb'"[^"]*"')


@dataclass
class Submission:
    assignment: str
    path: str
    code_cells: list[str]
    grade_ids: list[str]
    code_indices: list[int] = field(default_factory=list)   # where each code cell sits in the notebook
    problems: list[str] = field(default_factory=list)


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
    """The submitted notebook at ``path``, read as data only (``read_submitted``) and parsed (``parse_notebook``)."""
    return parse_notebook(read_submitted(path), path)


def parse_notebook(data: bytes, path) -> nbformat.NotebookNode:
    """A submitted notebook from its bytes (read by ``read_submitted``); ``NotGradable`` names ``path`` when they are
    not UTF-8 or not a notebook."""
    path = Path(path)
    check_json(data, path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason != "unexpected end of data":
            raise NotGradable(Reason.NOT_UTF8(path=path)) from None
        text = data[:exc.start].decode("utf-8")   # cut inside a character (a cut file): what is left is not JSON
    try:
        check_structure(json.loads(text), path)
        return nbformat.reads(text, as_version=4)
    except NotGradable:
        raise
    except (json.JSONDecodeError, nbformat.reader.NotJSONError, Exception) as exc:  # noqa: BLE001
        raise NotGradable(Reason.NOT_A_NOTEBOOK(path=path, error=type(exc).__name__)) from None


def _too_complex(path, what: str, what_en: str, count: int, limit: int) -> NotGradable:
    return NotGradable(Reason.NOTEBOOK_TOO_COMPLEX(path=path, what=what, what_en=what_en, count=count, limit=limit))


def check_json(data: bytes, path="") -> None:
    """Refuse (``NotGradable``) the bytes of a notebook whose JSON would hold more objects and arrays, values or
    levels of nesting than the bounds above, before anything of it is parsed.

    A cheap pass over the bytes: escaped backslashes and quotes are dropped, the strings cut out (what is left is
    the JSON's structure: brackets, commas, numbers and words), and its brackets and commas counted; the nesting is
    then followed over the brackets alone (at most ``2 * MAX_CONTAINERS`` of them). For valid JSON these are exactly
    what a parser would build; for anything else the parser fails anyway, on no more than the counts allowed."""
    structure = _STRING.sub(b"", data.replace(b"\\\\", b"").replace(b'\\"', b""))
    containers = structure.count(b"[") + structure.count(b"{")
    if containers > MAX_CONTAINERS:
        raise _too_complex(path, "JSON 객체와 배열", "JSON objects and arrays", containers, MAX_CONTAINERS)
    values = containers + structure.count(b",") + 1
    if values > MAX_VALUES:
        raise _too_complex(path, "JSON 값", "JSON values", values, MAX_VALUES)
    brackets = structure.translate(None, _NOT_BRACKETS)
    del structure
    if len(brackets) > 2 * MAX_CONTAINERS:   # closing brackets without their openers: not JSON
        raise _too_complex(path, "JSON 괄호", "JSON brackets", len(brackets), 2 * MAX_CONTAINERS)
    depth = deepest = 0
    for byte in brackets:
        depth += 1 if byte in b"[{" else -1
        deepest = max(deepest, depth)
    if deepest > MAX_DEPTH:
        raise _too_complex(path, "JSON 중첩 깊이", "JSON nesting depth", deepest, MAX_DEPTH)


def check_structure(raw, path="") -> None:
    """Refuse (``NotGradable``) a parsed notebook (plain JSON values, before nbformat reads and validates it) with more
    cells or more metadata than the bounds above."""
    if not isinstance(raw, dict):
        return   # not a notebook: nbformat says so
    cells = raw.get("cells")
    cells = cells if isinstance(cells, list) else []
    if len(cells) > MAX_CELLS:
        raise _too_complex(path, "셀", "cells", len(cells), MAX_CELLS)
    metadata = [raw.get("metadata")] + [c.get("metadata") for c in cells if isinstance(c, dict)]
    size = sum(len(json.dumps(m, ensure_ascii=False)) for m in metadata if m is not None)
    if size > MAX_METADATA_BYTES:
        raise _too_complex(path, "메타데이터 바이트", "bytes of metadata", size, MAX_METADATA_BYTES)


@functools.lru_cache(maxsize=None)
def release_ids(assignment: str) -> frozenset[str]:
    """The nbgrader grade ids of an assignment's release notebooks (none before it is built)."""
    ids = set()
    for path in sorted((RELEASE / assignment).glob("*.ipynb")):
        ids |= {_nbgrader(c).get("grade_id", "") for c in nbformat.read(str(path), as_version=4).cells}
    ids.discard("")
    ids.discard("helpers")   # every assignment has one
    return frozenset(ids)


@functools.lru_cache(maxsize=None)
def release_code(assignment: str) -> frozenset[str]:
    """The code cells of an assignment's release notebooks as the sandbox runs them (``strip_magics``): the course's
    given code (none before it is built)."""
    code = set()
    for path in sorted((RELEASE / assignment).glob("*.ipynb")):
        code |= {strip_magics(_source(c)) for c in nbformat.read(str(path), as_version=4).cells
                 if c.get("cell_type") == "code"}
    return frozenset(code)


def course_assignments() -> list[str]:
    """The assignments a notebook may belong to: ``COURSE["assignments"]`` of course_config.py, sorted."""
    return sorted(settings.load().assignments)


def cells_assignment(nb, prefer: str = "") -> str | None:
    """The assignment whose release cells (nbgrader grade ids) this notebook carries most (``prefer`` where two match
    equally well); ``None`` when it carries no assignment's."""
    ids = {_nbgrader(c).get("grade_id", "") for c in nb.get("cells", []) if isinstance(c, dict)}
    best, best_hits = None, 0
    for assignment in course_assignments():
        hits = len(ids & release_ids(assignment))
        if hits > best_hits or (hits == best_hits and hits and prefer == assignment):
            best, best_hits = assignment, hits
    return best


def detect_assignment(nb, path: str = "") -> str:
    """The assignment whose release cells (nbgrader grade ids) this notebook carries; the file name plays no part
    unless two assignments match equally well (then it breaks the tie) or none matches at all."""
    stem = Path(path).stem
    best = cells_assignment(nb, stem)
    if best is None:
        if stem in course_assignments():
            return stem
        raise NotGradable(Reason.NO_ASSIGNMENT())
    return best


def collect(nb, path: str = "", assignment: str | None = None) -> Submission:
    """A submission from a notebook node: its assignment and the code cells for the sandbox."""
    assignment = assignment or detect_assignment(nb, path)
    cells = [c if isinstance(c, dict) else {} for c in nb.get("cells", [])]
    indices = [i for i, c in enumerate(cells)
               if c.get("cell_type") == "code" and not is_grade_cell(c) and not is_demo_only(c)]
    code, total = [], 0
    for i in indices:
        source = _source(cells[i])
        if len(source) > MAX_CELL_SOURCE:
            source = _not_run(Reason.CELL_TOO_BIG.korean(size=len(source), limit=MAX_CELL_SOURCE))
        elif total + len(source) > MAX_CODE:
            source, total = _not_run(Reason.CODE_TOO_BIG.korean(limit=MAX_CODE)), MAX_CODE + 1
        else:
            total += len(source)
        code.append(strip_magics(source))
    grade_ids = [_nbgrader(c).get("grade_id", "") for c in cells if _nbgrader(c)]
    return Submission(assignment=assignment, path=str(path), code_cells=code, grade_ids=grade_ids,
                      code_indices=indices)


def collect_file(path, assignment: str | None = None) -> Submission:
    """The submission in the notebook file at ``path``, graded as ``assignment`` (default: its cells' assignment).

    Refused (``NotGradable``) when its cells are another assignment's than ``assignment`` or the file's name (a course
    assignment's, e.g. ``kv_cache.ipynb``) says, or when the two say different ones: a finished notebook of one
    assignment handed in under another's name is not graded against the wrong graders and maximum."""
    nb = read_notebook(path)
    stem = Path(path).stem
    said = [a for a in dict.fromkeys([assignment, stem if stem in course_assignments() else None]) if a]
    if len(said) > 1:
        raise NotGradable(Reason.NOT_THIS_ASSIGNMENT(found=said[1], expected=said[0]))
    for expected in said:
        found = cells_assignment(nb, expected)
        if found is not None and found != expected:
            raise NotGradable(Reason.NOT_THIS_ASSIGNMENT(found=found, expected=expected))
    return collect(nb, str(path), assignment)


def _not_run(message: str) -> str:
    """The code run in place of a cell that is not run: it fails with ``message`` (the student's feedback shows it
    as that cell's error), defines nothing, and is what every static check of the grader parses instead."""
    return f"raise RuntimeError({message!r})\n"


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)
