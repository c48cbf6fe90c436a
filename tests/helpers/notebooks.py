"""Build submissions from the instructor notebooks, for the package's own tests of the hidden graders.

* ``solution_notebook(assignment)``: ``source/<a>/<a>.ipynb`` (the instructor's solution). Where it does not exist
  yet, a minimal notebook built the same way (docs/authors/adding-an-exercise.md) from ``implementations/<a>_numpy.py``.
* ``release_notebook(assignment)``: ``release/<a>/<a>.ipynb`` once ``nbgrader generate_assignment`` wrote it,
  otherwise the solution notebook with its solution regions cleared by nbgrader's own ``ClearSolutions`` and the
  course's code stub.
* ``with_code(nb, {exercise: source})``: replace the solution cells of some exercises.
* ``with_all_code(nb, source)``: a whole implementation in the first solution cell, the other solution cells blank.
* ``dependencies(nb)``: which exercises each exercise's solution calls (directly or through others).

Nothing here changes a notebook in place: every function returns a new notebook node.
"""
from __future__ import annotations

import ast
import copy
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[2]
IMPLEMENTATIONS = Path(__file__).resolve().parents[1] / "implementations"

# The course's stub (course_config.py: c.ClearSolutions.code_stub), repeated here because course_config only
# sets it when nbgrader loads the file.
CODE_STUB = "# 여기에 코드를 작성하세요\nraise NotImplementedError()"


# ----------------------------------------------------------------------------------------------- reading
def source_path(assignment: str) -> Path:
    return ROOT / "source" / assignment / f"{assignment}.ipynb"


def release_path(assignment: str) -> Path:
    return ROOT / "release" / assignment / f"{assignment}.ipynb"


def read(path) -> nbformat.NotebookNode:
    return nbformat.read(str(path), as_version=4)


def solution_notebook(assignment: str) -> nbformat.NotebookNode:
    """The instructor notebook (or, until it exists, a minimal one built from the numpy implementation)."""
    path = source_path(assignment)
    if path.exists():
        return read(path)
    return minimal_notebook(assignment)


def release_notebook(assignment: str) -> nbformat.NotebookNode:
    """What students get: the generated release notebook, or the solution notebook with solutions cleared."""
    path = release_path(assignment)
    if path.exists():
        return read(path)
    return clear_solutions(solution_notebook(assignment))


def clear_solutions(nb) -> nbformat.NotebookNode:
    """Replace every ``### BEGIN SOLUTION`` region by the course's stub, as ``nbgrader generate_assignment`` does."""
    from nbgrader.preprocessors import ClearSolutions

    nb = copy.deepcopy(nb)
    nb, _ = ClearSolutions(code_stub={"python": CODE_STUB}).preprocess(nb, {})
    return nb


# ----------------------------------------------------------------------------------------------- cells
def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def solution_cells(nb) -> dict:
    """``{exercise: cell}`` of the code solution cells (grade_id ``solution_<exercise>``), in notebook order."""
    found = {}
    for cell in nb.cells:
        grade_id = _meta(cell).get("grade_id", "")
        if cell.cell_type == "code" and _meta(cell).get("solution") and grade_id.startswith("solution_"):
            found[grade_id[len("solution_"):]] = cell
    return found


def exercises(nb) -> list[str]:
    return list(solution_cells(nb))


def grade_points(nb) -> dict:
    """``{exercise: points}`` of the grade cells (grade_id ``test_<exercise>``)."""
    points = {}
    for cell in nb.cells:
        meta = _meta(cell)
        if meta.get("grade") and meta.get("grade_id", "").startswith("test_"):
            points[meta["grade_id"][len("test_"):]] = float(meta.get("points", 0))
    return points


def without_demonstrations(nb) -> nbformat.NotebookNode:
    """A copy of ``nb`` without its demonstration cells: the code cells after the first that nbgrader does not know
    (neither solution, grade nor locked: the worked examples, the figures, a small model's training). What is left
    is the imports, the locked helpers, every solution and grade cell, and the text."""
    nb = copy.deepcopy(nb)
    first = next(i for i, cell in enumerate(nb.cells) if cell.cell_type == "code")
    nb.cells = [cell for i, cell in enumerate(nb.cells)
                if cell.cell_type != "code" or i == first
                or any(_meta(cell).get(flag) for flag in ("solution", "grade", "locked"))]
    return nb


def with_code(nb, sources: dict) -> nbformat.NotebookNode:
    """A copy of ``nb`` whose solution cells of the given exercises hold the given sources."""
    nb = copy.deepcopy(nb)
    cells = solution_cells(nb)
    unknown = set(sources) - set(cells)
    if unknown:
        raise KeyError(f"no solution cell for {sorted(unknown)}")
    for exercise, source in sources.items():
        cells[exercise].source = source.strip("\n") + "\n"
    return nb


def with_all_code(nb, source: str) -> nbformat.NotebookNode:
    """A copy of ``nb`` with ``source`` in the first solution cell and every other solution cell blank."""
    nb = copy.deepcopy(nb)
    cells = list(solution_cells(nb).values())
    cells[0].source = source
    for cell in cells[1:]:
        cell.source = ""
    return nb


# ----------------------------------------------------------------------------------------------- code
def implementation(name: str) -> str:
    """The text of ``implementations/<name>.py``."""
    return (IMPLEMENTATIONS / f"{name}.py").read_text(encoding="utf-8")


def implementations(assignment: str) -> list[str]:
    """Names of the alternative correct implementations of an assignment (``implementations/<a>_*.py``)."""
    return sorted(p.stem for p in IMPLEMENTATIONS.glob(f"{assignment}_*.py"))


def names_used(source: str) -> set[str]:
    """Every plain name a piece of code reads (calls included)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def dependencies(nb) -> dict:
    """``{exercise: exercises its solution calls}``, transitively, read from the solution cells' code."""
    cells = solution_cells(nb)
    direct = {ex: (names_used(_text(cell)) & set(cells)) - {ex} for ex, cell in cells.items()}
    return {ex: closure(calls, direct) for ex, calls in direct.items()}


def closure(names, direct: dict) -> set:
    """``names`` and everything they call, through ``direct``."""
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(direct.get(name, ()))
    return seen


def independent_groups(mistakes, dependencies_of) -> list[list]:
    """Pack mistakes into as few notebooks as possible: one mistake per exercise in a notebook, and no member
    depends (``dependencies_of(mistake)``: the exercises it uses) on another member's exercise."""
    by_exercise: dict[str, list] = {}
    for m in mistakes:
        by_exercise.setdefault(m.exercise, []).append(m)
    order = sorted(mistakes, key=lambda m: (-len(by_exercise[m.exercise]), m.exercise))
    groups: list[list] = []
    for m in order:
        deps = dependencies_of(m)
        for group in groups:
            if all(o.exercise != m.exercise and o.exercise not in deps and m.exercise not in dependencies_of(o)
                   for o in group):
                group.append(m)
                break
        else:
            groups.append([m])
    return groups


def _text(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


# ----------------------------------------------------------------------------------------------- fallback
def grader_points(assignment: str) -> dict:
    """``{exercise: points}`` declared by the hidden graders (collected by pytest, nothing is run)."""
    import contextlib
    import io

    import pytest

    from autograder.graders.registry import GRADERS
    from autograder.graders.plugin import GradingSession

    session = GradingSession(None, 0)
    args = [str(GRADERS / assignment), "-c", str(GRADERS / "pytest.ini"), "--rootdir", str(GRADERS),
            "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:warnings", "--import-mode=importlib"]
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(args, plugins=[session])
    points: dict = {}
    for result in session.results.values():
        points[result.exercise] = round(points.get(result.exercise, 0.0) + result.points, 4)
    return points


def minimal_notebook(assignment: str, points: dict | None = None) -> nbformat.NotebookNode:
    """A notebook built like the instructor's (docs/authors/adding-an-exercise.md) from
    ``implementations/<a>_numpy.py``.

    The module's top-level statements other than the exercises' ``def`` go into a first code cell; each
    exercise gets a solution cell (its ``def``, with the ``### BEGIN/END SOLUTION`` markers the file carries)
    and a grade cell right after it. ``points`` defaults to the hidden graders' totals (``grader_points``).
    """
    from autograder.graders.registry import exercises_of

    source = implementation(f"{assignment}_numpy")
    names = set(exercises_of(assignment))
    tree = ast.parse(source)
    lines = source.splitlines()
    preamble, defs = [], []
    starts = [(n.decorator_list[0].lineno if getattr(n, "decorator_list", None) else n.lineno) - 1
              for n in tree.body] + [len(lines)]
    for node, start, end in zip(tree.body, starts, starts[1:], strict=False):
        # up to the next top-level statement, so that trailing comments (### END SOLUTION) stay with their def
        text = "\n".join(lines[start:end]).rstrip()
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names:
            defs.append((node.name, text))
        else:
            preamble.append(text)
    points = points or grader_points(assignment)
    cells = [new_markdown_cell(f"# {assignment} (최소 노트북: 테스트용)"),
             new_code_cell('import os\nos.environ.setdefault("KERAS_BACKEND", "torch")\n\n' + "\n".join(preamble))]
    for name, text in defs:
        solution = new_code_cell(text)
        solution.metadata["nbgrader"] = {"solution": True, "grade": False, "locked": False,
                                         "grade_id": f"solution_{name}", "schema_version": 3}
        check = new_code_cell(f'print("{name}: 보이는 확인은 이 최소 노트북에 없습니다")')
        check.metadata["nbgrader"] = {"solution": False, "grade": True, "locked": True,
                                      "grade_id": f"test_{name}", "points": points.get(name, 1),
                                      "schema_version": 3}
        cells += [solution, check]
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb
