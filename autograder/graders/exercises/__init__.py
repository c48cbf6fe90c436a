"""The exercise record: everything the package knows about one coded exercise, declared once.

Each module ``exercises/<exercise>.py`` ends with ``EXERCISE = Exercise(...)``; its grader is
``graders/<assignment>/test_<exercise>.py``, which declares at its top the references, tolerances and stored GPU
cases it compares with (``REFERENCES``, ``TOLERANCES``, ``GPU_CASES``). ``registry.py`` reads every record and
builds every list from them (the exercises and points of an assignment, the forbidden-routine rules, the catalogue
of mistakes, the proxies' table), and stops at import for a grader without a record, a record without a grader or
a grader without its declarations. (The quiz's answers are not code: quiz/answer_key.py,
one ``Question`` record per question, ``questions.py``.)

Example (the toy exercise of docs/authors/adding-an-exercise.md)::

    EXERCISE = Exercise(
        "l2_normalize",
        assignment="toy",
        points=1,
        forbidden=None,
        mistakes=[Mistake(id="l2_normalize_no_sqrt", exercise="l2_normalize", title=..., hint=..., source=...)],
    )
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autograder.graders.answers import Answer
    from autograder.graders.forbidden import Rule

__all__ = ["ATTENTION_STEPS", "HEAD_STEPS", "LAYER_STEPS", "Exercise", "Mistake", "rewritten"]

# The ladder's rungs (``callees``): the contract functions an exercise may build on, answered with their answers
# while it is graded. No exercise may ask for one that may ask for it (``registry.py`` checks).
ATTENTION_STEPS = ("softmax", "causal_mask", "scaled_dot_product_attention", "dot_product_attention")
HEAD_STEPS = ATTENTION_STEPS + ("split_heads", "merge_heads")
LAYER_STEPS = HEAD_STEPS + ("multi_head_attention", "multi_head_attention_layer")


@dataclass(frozen=True)
class Mistake:
    """A realistic mistake (a mutant): the source of a student-style function with one known error (see
    ``registry.catalogue``)."""

    id: str          # e.g. "softmax_wrong_axis"
    exercise: str    # the contract's function name
    title: str       # Korean, short: what is wrong
    hint: str        # Korean: how to find and fix it
    source: str      # a complete student-style definition of `exercise` with the mistake
    diagnosable: bool = True   # False when its output equals the reference on ordinary inputs
    raises: str | None = None  # the exception it raises on the graders' inputs, when that is how it fails

    def function(self):
        return _compile(self)


def rewritten(template: str, **lines: str) -> str:
    """A mistake's source: ``template`` (a correct definition whose lines may end in a marker ``# @NAME``) with the
    line marked ``# @NAME`` replaced by ``lines[NAME]`` (one or more lines, indented like the line they replace; an
    empty string removes it); the markers removed."""
    out = []
    for text in template.splitlines():
        code, _, marker = text.partition("  # @")
        indent = text[: len(text) - len(text.lstrip())]
        if marker and marker.strip() in lines:
            out += [indent + line for line in lines[marker.strip()].splitlines()]
        else:
            out.append(code.rstrip() if marker else text)
    return "\n".join(out) + "\n"


@cache
def _compile(mistake: Mistake):
    from autograder.graders import references

    namespace = references.namespace()
    exec(compile(mistake.source, f"<mistake {mistake.id}>", "exec"), namespace)
    return namespace[mistake.exercise]


@dataclass(frozen=True)
class Exercise:
    """One coded exercise.

    Args:
        name: the contract's function (or class) name; the module's name ``exercises/<name>.py`` and the grader's
            ``test_<name>.py``.
        assignment: the assignment whose notebook holds it (one of ``COURSE["assignments"]``) and whose grader
            folder holds its grader.
        points: its grade cell's points, which equal the total of its grader's ``@pytest.mark.points`` (the
            graders' collection checks it).
        forbidden: the library routines it may not call (a ``Rule`` of ``forbidden.py``), or ``None``.
        mistakes: realistic wrong versions (``Mistake``): the package's tests prove each loses points, the
            diagnosis names them in the feedback.
        callees: the other contract functions it may call that are answered with their ``answer`` while it is
            graded (``isolation.py``), so that it is judged on its own logic.
        implied: contract functions it depends on without naming them in its code (the cache it is given), for
            the dependency note.
        answer: how a call of this function is answered while another exercise is graded (``answers.py``);
            ``None`` for an exercise no other exercise calls.
        observes: the notebook's given classes whose instances made while it is called report what they hold
            when it returns (``sandbox/inside/observed.py``; ``Call.caches``): the KV caches the decoder's generate
            must keep, compared with the reference's keys and values.
    """

    name: str
    assignment: str
    points: float
    forbidden: Rule | None
    mistakes: tuple[Mistake, ...] = ()
    callees: tuple[str, ...] = ()
    implied: tuple[str, ...] = ()
    answer: Answer | None = None
    observes: tuple[str, ...] = ()

    def __post_init__(self):
        for field in ("mistakes", "callees", "implied", "observes"):
            object.__setattr__(self, field, tuple(getattr(self, field)))
