"""Build the students' notebooks from the release notebook they fetched (nothing here changes a file in place)."""
from __future__ import annotations

import ast
import copy
import io
import re
import tokenize
from pathlib import Path

import nbformat

from autograder.graders import registry
from autograder.sandbox.inside.routines import Routine

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
    grader = sys._getframe(1)                          # "the expected answer must be up there somewhere"
    return AlwaysEqual()
'''


# A student who pasted the scoring and weighting methods of Keras's ``Attention`` layer
# (keras/src/layers/attention/attention.py: ``_calculate_scores``, ``_apply_scores``) into the notebook, made them
# functions (``self.`` turned into arguments, dropout and the 2-D padding-mask reshape dropped), renamed them, and
# built the additive (Keras's "concat" score) and dot-product exercises on them. No Keras layer runs, so neither
# the forbidden-routine check nor the grades see it; the similarity report does.
PASTED = {
    "keras_attention": {
        "additive_attention": '''from keras import ops


def attention_scores(query, key, score_mode="dot", scale=None, concat_score_weight=1.0):
    if score_mode == "dot":
        scores = ops.matmul(query, ops.swapaxes(key, -2, -1))
        if scale is not None:
            scores = ops.multiply(scores, scale)
    elif score_mode == "concat":
        # Reshape tensors to enable broadcasting.
        # Reshape into [batch_size, Tq, 1, dim].
        q_reshaped = ops.expand_dims(query, axis=-2)
        # Reshape into [batch_size, 1, Tv, dim].
        k_reshaped = ops.expand_dims(key, axis=-3)
        if scale is not None:
            scores = concat_score_weight * ops.sum(
                ops.tanh(scale * (q_reshaped + k_reshaped)), axis=-1
            )
        else:
            scores = concat_score_weight * ops.sum(
                ops.tanh(q_reshaped + k_reshaped), axis=-1
            )
    else:
        raise ValueError("scores not computed")

    return scores


def apply_attention_scores(scores, value, scores_mask=None):
    if scores_mask is not None:
        padding_mask = ops.logical_not(scores_mask)
        # Bias so padding positions do not contribute to attention
        # distribution.  Note 65504. is the max float16 value.
        max_value = 65504.0 if scores.dtype == "float16" else 1.0e9
        scores = ops.where(padding_mask, scores - max_value, scores)

    weights = ops.softmax(scores, axis=-1)
    return ops.matmul(weights, value), weights


def additive_attention(query, key, value, mask=None):
    scores = attention_scores(query, key, score_mode="concat")
    out, _ = apply_attention_scores(scores, value, mask)
    return out
''',
        "dot_product_attention": '''def dot_product_attention(query, key, value, mask=None):
    scores = attention_scores(query, key)
    out, _ = apply_attention_scores(scores, value, mask)
    return out
''',
    },
}

# The library routines (their labels in the forbidden rules) that each paste above comes from.
PASTED_FROM = {"keras_attention": str(Routine.KERAS_ATTENTION)}

# What a student who copies a classmate's notebook renames (local variables only: parameters, functions and
# attributes stay, so the copy still runs and is graded like the original).
RENAMED = {"scores": "logits", "weights": "probs", "hidden": "hidden_states", "q": "queries", "k": "keys",
           "v": "values", "p": "weights_of", "t": "tensor", "e": "exps", "out": "result", "heads": "per_head",
           "i": "rows", "j": "cols", "angles": "theta", "exponent": "power", "b": "batch", "h": "n_heads",
           "n": "length", "c": "channels", "dh": "head_dim", "x1": "first", "x2": "second"}


def renamed(source: str, names: dict = RENAMED) -> str:
    """``source`` with the local variables of its functions renamed by ``names`` (a name bound in the function
    and not one of its parameters) and its whole-line comments removed; the layout kept. A cell that does not
    parse is returned as it is."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    edits = set()
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        params = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
        bound = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        local = (bound - params) & set(names)
        edits |= {(n.lineno, n.col_offset, n.id) for n in ast.walk(function)
                  if isinstance(n, ast.Name) and n.id in local}
    lines = source.splitlines(keepends=True)
    for lineno, offset, name in sorted(edits, reverse=True):   # right to left: earlier offsets stay valid
        raw = lines[lineno - 1].encode()
        lines[lineno - 1] = (raw[:offset] + names[name].encode() + raw[offset + len(name.encode()):]).decode()
    text = "".join(lines)
    comments = {t.start[0] for t in tokenize.generate_tokens(io.StringIO(text).readline)
                if t.type == tokenize.COMMENT and not t.line[:t.start[1]].strip()}
    return "".join(line for number, line in enumerate(text.splitlines(keepends=True), 1) if number not in comments)


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
        found = {m.id: m for m in registry.catalogue()}
        mistake = found[arg]
        return with_code(release_nb, {**solved, mistake.exercise: mistake.source})
    if kind == "cheat":
        target = next(n for n in ("scaled_dot_product_attention", "grouped_query_attention", *solved) if n in solved)
        return with_code(release_nb, {**solved, target: CHEAT.replace("scaled_dot_product_attention", target)})
    if kind == "paste":
        return with_code(release_nb, {**solved, **PASTED[arg]})
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
    if plan.startswith("copy:"):
        original = next(s for s in roster.ROSTER if s.id == plan.split(":", 1)[1])
        nb = copy.deepcopy(notebook_for(original, assignment, release_nb, source_nb))
        for cell in solution_cells(nb).values():
            cell.source = renamed(cell.source)
        return nb
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
    answers = {q: entry.answer for q, entry in key.items()}
    answers.update(overrides)
    return answers


def class_code(assignment: str, students=None) -> dict[str, list[str]]:
    """``{student id: code cells}`` of what the demo class hands in for ``assignment``, built from the repository's
    release and source notebooks without grading anything (the student's program as ``autograder.submission`` reads
    it; a truncated file has none: it is graded as the blank release)."""
    from autograder.demo import roster
    from autograder.submission.notebook import collect

    root = Path(__file__).resolve().parents[2]
    release_nb = nbformat.read(str(root / "release" / assignment / f"{assignment}.ipynb"), as_version=4)
    source_nb = nbformat.read(str(root / "source" / assignment / f"{assignment}.ipynb"), as_version=4)
    code = {}
    for student in students or roster.ROSTER:
        built = notebook_for(student, assignment, release_nb, source_nb)
        if not isinstance(built, bytes):
            code[student.id] = collect(built, assignment=assignment).code_cells
    return code
