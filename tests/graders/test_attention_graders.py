"""The hidden graders of the `attention` assignment, proven both ways.

* the instructor's solution and every alternative correct implementation (tests/implementations/attention_*.py:
  torch, explicit loops, keras.ops, numpy) get full marks on every exercise;
* every mistake of the catalogue (autograder/graders/exercises/*.py) loses points on its exercise, and the
  feedback names every diagnosable one (and nothing for the correct implementations: tests/graders/test_diagnosis.py
  runs the diagnosis on their results for every grader input);
* the untouched release notebook gets 0 with "아직 구현하지 않았습니다" on every exercise;
* forbidden library routines give 0 on their exercise with the Korean message while the others keep their points.

Each grading runs the notebook's code in a student process (a few seconds, most of it importing keras), so
independent mistakes share a notebook: two mistakes go together only when neither exercise calls the other
(read from the solution cells and the mistake's own code), so a failure cannot leak from one to the other.
The seeds are fixed for reproducibility; ``ATTENTION_GRADER_SEED=<int>`` shifts them all to try other inputs.
"""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

from autograder.graders import registry  # noqa: E402
from autograder.messages import Reason  # noqa: E402


from tests.helpers import notebooks  # noqa: E402
from tests.helpers.graded import GradingCache, failures, scores  # noqa: E402

pytestmark = pytest.mark.slow

ASSIGNMENT = "attention"
BASE_SEED = int(os.environ.get("ATTENTION_GRADER_SEED", "20240611"))

# Points of every exercise, from its record (the notebook's grade cells and the graders carry the same numbers).
POINTS = {exercise.name: exercise.points for exercise in registry.of_assignment(ASSIGNMENT)}
NOT_IMPLEMENTED = Reason.NOT_IMPLEMENTED.korean()

MISTAKES = registry.mistakes_of("attention")
SOLUTION = notebooks.solution_notebook(ASSIGNMENT)
DEPENDS = notebooks.dependencies(SOLUTION)        # exercise -> exercises its solution calls (transitively)


# ----------------------------------------------------------------------------------------------- grading cache
CACHE = GradingCache(ASSIGNMENT, BASE_SEED)
graded = CACHE.graded
_SUMMARY = CACHE.summary


# ----------------------------------------------------------------------------------------------- mistakes: groups
def mistake_dependencies(mistake) -> set:
    """Exercises the mistake's function calls, directly or through the solution's functions."""
    calls = (notebooks.names_used(mistake.source) & set(DEPENDS)) - {mistake.exercise}
    return notebooks.closure(calls, DEPENDS)


GROUPS = CACHE.mistake_groups(MISTAKES, mistake_dependencies, SOLUTION)
GROUP_OF = CACHE.group_of
graded_group = CACHE.graded_group


# ----------------------------------------------------------------------------------------------- summary
@pytest.fixture(scope="module", autouse=True)
def summary(request):
    """Prints which mistakes were caught and named, and what each grading cost (visible without -s)."""
    yield
    CACHE.report(request, "attention graders")


# ----------------------------------------------------------------------------------------------- the catalogue


# ----------------------------------------------------------------------------------------------- full marks
def test_solution_gets_full_marks():
    result = graded("solution", lambda: SOLUTION)
    assert result.notebook_errors == []
    assert failures(result) == []
    assert {e.name: e.max_score for e in result.exercises} == {k: float(v) for k, v in POINTS.items()}
    assert result.score == result.max_score == sum(POINTS.values())
    assert [e.name for e in result.exercises if e.diagnosis] == []


@pytest.mark.parametrize("implementation", notebooks.implementations(ASSIGNMENT))
def test_alternative_implementation_gets_full_marks(implementation):
    source = notebooks.implementation(implementation)
    result = graded(implementation, lambda: notebooks.with_all_code(SOLUTION, source))
    assert failures(result) == []
    assert scores(result) == {k: float(v) for k, v in POINTS.items()}
    assert [e.name for e in result.exercises if e.diagnosis] == []


# ----------------------------------------------------------------------------------------------- mistakes
def test_mistake_groups_are_independent():
    """No notebook of mistakes holds two mistakes of one exercise or a mistake whose code calls another's."""
    assert sorted(m.id for group in GROUPS for m in group) == sorted(m.id for m in MISTAKES)
    for group in GROUPS:
        assert len({m.exercise for m in group}) == len(group)
        for m in group:
            assert not mistake_dependencies(m) & {o.exercise for o in group}


@pytest.mark.parametrize("mistake", MISTAKES, ids=[m.id for m in MISTAKES])
def test_mistake_loses_points(mistake):
    result = graded_group(GROUP_OF[mistake.id])
    exercise = result.exercise(mistake.exercise)
    assert exercise.score < exercise.max_score, f"{mistake.id} was not caught: {mistake.title}"


def test_diagnosable_mistakes_are_named_in_the_feedback():
    """The diagnosis names every diagnosable mistake; the summary lists every mistake's fate."""
    caught, named, unnamed, lines = [], [], [], []
    for m in MISTAKES:
        exercise = graded_group(GROUP_OF[m.id]).exercise(m.exercise)
        lost = exercise.score < exercise.max_score
        found = m.id in {d.id for d in exercise.diagnosis}
        caught += [m.id] if lost else []
        if m.diagnosable:
            (named if found else unnamed).append(m.id)
        lines.append(f"  {m.id:<40} {'caught' if lost else 'MISSED':<7} "
                     f"{'named' if found else ('not named' if m.diagnosable else 'not diagnosable')}"
                     f"  ({exercise.score:g}/{exercise.max_score:g})")
    diagnosable = [m for m in MISTAKES if m.diagnosable]
    _SUMMARY["mistakes"] = [f"mistakes caught {len(caught)}/{len(MISTAKES)}, "
                            f"named {len(named)}/{len(diagnosable)} diagnosable "
                            f"(not named: {', '.join(unnamed) or 'none'})"] + lines
    assert len(caught) == len(MISTAKES)
    assert unnamed == [], f"not named: {unnamed}"


# ----------------------------------------------------------------------------------------------- release stub
def test_release_notebook_gets_zero_with_not_implemented():
    result = graded("release", lambda: notebooks.release_notebook(ASSIGNMENT))
    assert result.score == 0
    assert {e.name for e in result.exercises} == set(POINTS)
    for exercise in result.exercises:
        assert exercise.tests and all(NOT_IMPLEMENTED in t.message for t in exercise.tests), \
            failures(result, exercise.name)


# ----------------------------------------------------------------------------------------------- forbidden routines
SOFTMAX_WITH_KERAS = '''
import keras

def softmax(x, axis=-1):
    return keras.ops.softmax(x, axis=axis)
'''

SDPA_WITH_TORCH = '''
import torch
import torch.nn.functional as F

def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    q, k, v = (torch.as_tensor(np.asarray(a, dtype=np.float64)) for a in (query, key, value))
    m = None if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    if not return_weights:
        return out
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    if m is not None:
        scores = scores.masked_fill(~m, float("-inf"))
    return out, torch.softmax(scores, dim=-1)
'''

SDPA_WITH_ALIAS = '''
import torch

attend = getattr(torch.nn.functional, "scaled_" + "dot_product_attention")

def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    q, k, v = (torch.as_tensor(np.asarray(a, dtype=np.float64)) for a in (query, key, value))
    m = None if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool))
    out = attend(q, k, v, attn_mask=m)
    if not return_weights:
        return out
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    if m is not None:
        scores = scores.masked_fill(~m, float("-inf"))
    return out, torch.softmax(scores, dim=-1)
'''

DOT_WITH_ALIAS = '''
import torch

f = getattr(torch.nn.functional, "scaled_" + "dot_product_attention")

def dot_product_attention(query, key, value, mask=None):
    q, k, v = (torch.as_tensor(np.asarray(a, dtype=np.float64)) for a in (query, key, value))
    m = None if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool))
    return f(q, k, v, attn_mask=m, scale=1.0)
'''

LAYER_WITH_KERAS = '''
import keras

def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    B, Tq, D = x_q.shape
    Tk = x_kv.shape[1]
    dk = params["w_q"].shape[1] // num_heads
    dv = params["w_v"].shape[1] // num_heads
    layer = keras.layers.MultiHeadAttention(num_heads=num_heads, key_dim=dk, value_dim=dv)
    layer(x_q, x_kv)
    layer.set_weights([params["w_q"].reshape(D, num_heads, dk), params["b_q"].reshape(num_heads, dk),
                       params["w_k"].reshape(D, num_heads, dk), params["b_k"].reshape(num_heads, dk),
                       params["w_v"].reshape(D, num_heads, dv), params["b_v"].reshape(num_heads, dv),
                       params["w_o"].reshape(num_heads, dv, D), params["b_o"]])
    m = None if mask is None else np.broadcast_to(mask, (B, 1, Tq, Tk))[:, 0]
    return layer(x_q, x_kv, attention_mask=m)
'''

SELF_ATTENTION_VIA_HELPER = '''
import torch

def _attend(q, k, v, causal):
    return torch.nn.functional.scaled_dot_product_attention(torch.as_tensor(q), torch.as_tensor(k),
                                                            torch.as_tensor(v), is_causal=causal)

def self_attention(x, w_q, w_k, w_v, causal=False):
    x = np.asarray(x, dtype=np.float64)
    return _attend(x @ w_q, x @ w_k, x @ w_v, causal)
'''

# (id, replaced solutions). The rule counts a forbidden routine against every graded call during which it ran,
# whoever called it (issue 13: no function name the student chose is trusted): the replaced exercise's own calls,
# and those of an exercise whose solution calls the replaced one (self_attention calling the student's
# scaled_dot_product_attention built on torch SDPA) as long as the other contract functions are the student's own
# while an exercise is graded. Calling keras.ops.softmax outside softmax is allowed. So every exercise that calls
# no replaced one keeps full marks, and one that does loses points to the rule alone.
FORBIDDEN_CASES = [
    pytest.param({"self_attention": SELF_ATTENTION_VIA_HELPER}, id="torch-sdpa-in-a-helper-of-self-attention"),
    pytest.param({"softmax": SOFTMAX_WITH_KERAS, "scaled_dot_product_attention": SDPA_WITH_TORCH,
                  "multi_head_attention_layer": LAYER_WITH_KERAS}, id="keras-softmax-torch-sdpa-keras-mha"),
    pytest.param({"scaled_dot_product_attention": SDPA_WITH_ALIAS, "dot_product_attention": DOT_WITH_ALIAS},
                 id="getattr-aliases-of-torch-sdpa"),
]


@pytest.mark.parametrize("replaced", FORBIDDEN_CASES)
def test_forbidden_routines_get_zero_on_their_exercise(request, replaced):
    result = graded(request.node.callspec.id, lambda: notebooks.with_code(SOLUTION, replaced))
    for name in replaced:
        exercise = result.exercise(name)
        assert exercise.score == 0, failures(result, name)
        assert all(Reason.FORBIDDEN_ROUTINE.found_in(t.message) for t in exercise.tests), \
            [t.message for t in exercise.tests]
    for exercise in result.exercises:   # those that call a replaced one are graded with its reference (isolation)
        if exercise.name not in replaced:
            assert exercise.score == exercise.max_score, failures(result, exercise.name)
