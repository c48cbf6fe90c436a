"""Build the students' notebooks from the release notebook they fetched (nothing here changes a file in place)."""
from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat

from autograder.graders import mistakes

IMPLEMENTATIONS = Path(__file__).resolve().parents[2] / "tests" / "implementations"
_MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$", re.M)

CHEAT = '''import sys, types
import numpy as np

np.allclose = lambda *a, **k: True                     # "the grader will believe anything"
sys.modules["autograder"] = types.ModuleType("autograder")
print("점수: 27 / 27")

class AlwaysEqual:
    def __eq__(self, other):
        return True

def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    return AlwaysEqual()
'''


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def solution_cells(nb) -> dict:
    """exercise -> its solution cell (code cells with grade_id ``solution_<exercise>``)."""
    return {_nbgrader(c)["grade_id"][len("solution_"):]: c for c in nb.cells
            if c.cell_type == "code" and _nbgrader(c).get("grade_id", "").startswith("solution_")}


def solution_sources(source_nb) -> dict:
    """exercise -> the instructor's solution code (markers removed)."""
    return {name: _MARKER.sub("", cell.source).strip("\n") + "\n" for name, cell in solution_cells(source_nb).items()}


def with_code(nb, sources: dict) -> nbformat.NotebookNode:
    """A copy of ``nb`` whose solution cells of the given exercises hold the given sources."""
    nb = copy.deepcopy(nb)
    cells = solution_cells(nb)
    for exercise, source in sources.items():
        cells[exercise].source = source.strip("\n") + "\n"
    return nb


def implementation(name: str) -> str:
    return (IMPLEMENTATIONS / f"{name}.py").read_text(encoding="utf-8")


def build(plan: str, release_nb, source_nb, answers: dict | None = None, written: str = "") -> object:
    """The notebook a student with ``plan`` hands in (``bytes`` for a broken file)."""
    solved = solution_sources(source_nb)
    kind, _, arg = plan.partition(":")
    if kind == "empty":
        return copy.deepcopy(release_nb)
    if kind == "broken":
        text = nbformat.writes(with_code(release_nb, solved))
        return text[: len(text) // 3].encode()            # a truncated upload
    if kind == "solution":
        return with_code(release_nb, solved)
    if kind == "impl":
        names = list(solution_cells(release_nb))
        return with_code(release_nb, {names[0]: implementation(arg), **{n: "" for n in names[1:]}})
    if kind == "partial":
        return with_code(release_nb, dict(list(solved.items())[: int(arg)]))
    if kind == "mistake":
        found = {m.id: m for m in mistakes.catalogue()}
        mistake = found[arg]
        return with_code(release_nb, {**solved, mistake.exercise: mistake.source})
    if kind == "cheat":
        target = next(n for n in ("scaled_dot_product_attention", "grouped_query_attention", *solved) if n in solved)
        return with_code(release_nb, {**solved, target: CHEAT.replace("scaled_dot_product_attention", target)})
    if kind == "answers":
        nb = with_code(release_nb, {q: _answer_line(q, value) for q, value in (answers or {}).items()})
        for cell in nb.cells:
            if cell.cell_type == "markdown" and _nbgrader(cell).get("solution") and written:
                cell.source = written
        return nb
    raise ValueError(f"unknown plan {plan!r}")


def notebook_for(student, assignment: str, release_nb, source_nb) -> object:
    """The notebook ``student`` (``roster.Student``) hands in for ``assignment`` (``bytes`` for a broken file)."""
    from autograder.demo import roster

    plan = student.plans[assignment]
    answers = None
    if plan.startswith("answers:"):
        from autograder.graders.quiz.answer_key import ANSWERS

        answers = quiz_answers(ANSWERS, roster.QUIZ_ANSWERS[plan.split(":", 1)[1]])
    written = roster.WRITTEN["short" if plan.endswith(("half", "none")) else "good"]
    return build(plan, release_nb, source_nb, answers, written)


def _answer_line(question: str, value) -> str:
    if value is None:
        return "# 여기에 코드를 작성하세요\nraise NotImplementedError()"
    return f"{question} = {value!r}"


def quiz_answers(key: dict, overrides: dict) -> dict:
    """Every question's answer: the key's, except where the answer set says otherwise."""
    answers = {q: entry["answer"] for q, entry in key.items()}
    answers.update(overrides)
    return answers
