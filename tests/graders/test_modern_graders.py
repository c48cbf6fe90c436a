"""The hidden graders of the `modern` assignment (a Qwen3 block), proven both ways.

Through the sandbox (what a class gets): the solution, the release and the forbidden routines. In this process
(tests/helpers/inprocess.py: the same graders, values as the wire brings them, 1-2 s a grading instead of 10-20 s):
the alternative implementations and the notebooks of mistakes.

* the instructor's solution and every alternative correct implementation (tests/implementations/modern_*.py: float64
  numpy with einsum and complex RoPE, float32 torch with SDPA, explicit loops) get full marks;
* every mistake of the catalogue (autograder/graders/exercises/{rms_norm,swiglu_mlp,qwen3_attention,qwen3_block,
  modern_generate,qwen3_kv_cache_bytes}.py) loses points on its exercise and the feedback names it; an exercise that
  no mistake of the same notebook touches keeps full marks. qwen3_block's and generate's calls with a cache run the
  student's own qwen3_attention and qwen3_block (the cache is state in the student's process), so a mistake of those
  shares a notebook only with mistakes of exercises that do not run it;
* the untouched release notebook gets 0 with "아직 구현하지 않았습니다" on every exercise;
* the two libraries' Qwen3 classes (and torch's rms_norm) give 0 on the exercise that uses them, reached without
  their names in the source (seen at run time by their code);
* the notebook's visible checks agree with the graders: the solution passes all six, every mistake fails the check
  of its exercise.

What the stored references are (transformers and KerasHub run live against them) is tests/graders/
test_modern_references.py. The seeds are fixed; ``MODERN_GRADER_SEED=<int>`` shifts them.
"""
from __future__ import annotations

import contextlib
import copy
import io
import os

import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

from autograder.graders import registry  # noqa: E402
from autograder.messages import Reason  # noqa: E402

from tests.helpers import notebooks  # noqa: E402
from tests.helpers.graded import GradingCache, failures, scores  # noqa: E402

pytestmark = pytest.mark.slow

ASSIGNMENT = "modern"
BASE_SEED = int(os.environ.get("MODERN_GRADER_SEED", "20261217"))
POINTS = {exercise.name: exercise.points for exercise in registry.of_assignment(ASSIGNMENT)}
NOT_IMPLEMENTED = Reason.NOT_IMPLEMENTED.korean()
MISTAKES = registry.mistakes_of(ASSIGNMENT)
SOLUTION = notebooks.solution_notebook(ASSIGNMENT)
# The named families, each at least once.
# exercise -> the exercises whose calls of it carry a cache (not a proxy then: their cached tests run the student's own)
CACHED_CALLERS = {"qwen3_attention": {"qwen3_block", "generate"}, "qwen3_block": {"generate"}}

CACHE = GradingCache(ASSIGNMENT, BASE_SEED)
graded = CACHE.graded
_SUMMARY = CACHE.summary


def mistake_dependencies(mistake) -> set:
    """The exercises whose grading runs this mistake's code: a mistake of qwen3_attention reaches the cached tests of
    qwen3_block and generate, one of qwen3_block those of generate (a call with a cache is the student's own); every
    other call is a proxy."""
    return set(CACHED_CALLERS.get(mistake.exercise, ()))


GROUPS = notebooks.independent_groups(MISTAKES, mistake_dependencies)
GROUP_OF = {m.id: i for i, group in enumerate(GROUPS) for m in group}
_DEFINITIONS: list = []
_IN_PROCESS: dict = {}


def in_process(name: str, *sources: str) -> dict:
    """``{exercise: [TestResult]}`` of the graders run in this process on the solution's definitions with
    ``sources`` run after them (once per test session and name)."""
    from autograder.submission.notebook import collect
    from tests.helpers import inprocess

    if name not in _IN_PROCESS:
        if not _DEFINITIONS:   # the code a grading runs: every cell but the grade and demo-only cells
            _DEFINITIONS.extend(collect(SOLUTION, f"{ASSIGNMENT}.ipynb", ASSIGNMENT).code_cells)
        with contextlib.redirect_stdout(io.StringIO()):
            namespace = inprocess.namespace(*_DEFINITIONS, *sources)
        session = inprocess.run(ASSIGNMENT, namespace, seed=BASE_SEED + len(_IN_PROCESS))
        assert not session.internal_errors, session.internal_errors
        out: dict = {}
        for result in session.results.values():
            out.setdefault(result.exercise, []).append(result)
        _IN_PROCESS[name] = out
    return _IN_PROCESS[name]


def score(tests) -> float:
    return round(sum(t.points for t in tests if t.passed), 4)


def graded_group(index: int) -> dict:
    return in_process(f"mistakes-{index}", *(m.source for m in GROUPS[index]))


@pytest.fixture(scope="module", autouse=True)
def summary(request):
    """Prints which mistakes were caught and named, and what each grading cost (visible without -s)."""
    yield
    CACHE.report(request, "modern graders", ("mistakes", "visible"))


# ----------------------------------------------------------------------------------------------- no grading needed


def test_mistake_groups_are_independent():
    assert sorted(m.id for group in GROUPS for m in group) == sorted(m.id for m in MISTAKES)
    for group in GROUPS:
        assert len({m.exercise for m in group}) == len(group)
        for m in group:
            assert not mistake_dependencies(m) & {o.exercise for o in group}


# ----------------------------------------------------------------------------------------------- full marks
def test_solution_gets_full_marks():
    result = graded("solution", lambda: SOLUTION)
    assert [e for e in result.notebook_errors if "샌드박스 없이" not in e] == []
    assert failures(result) == []
    assert {e.name: e.max_score for e in result.exercises} == {k: float(v) for k, v in POINTS.items()}
    assert result.score == result.max_score == 18


@pytest.mark.parametrize("implementation", notebooks.implementations(ASSIGNMENT))
def test_alternative_implementation_gets_full_marks(implementation):
    results = in_process(implementation, notebooks.implementation(implementation))
    assert {name: score(tests) for name, tests in results.items()} == {k: float(v) for k, v in POINTS.items()}, \
        [f"{t.exercise}::{t.name}: {t.message}" for tests in results.values() for t in tests if not t.passed]


def test_there_are_three_alternative_implementations():
    assert len(notebooks.implementations(ASSIGNMENT)) >= 3


def test_release_notebook_gets_zero_with_not_implemented():
    result = graded("release", lambda: notebooks.release_notebook(ASSIGNMENT))
    assert result.score == 0
    assert {e.name for e in result.exercises} == set(POINTS)
    for exercise in result.exercises:
        assert exercise.tests and all(NOT_IMPLEMENTED in t.message for t in exercise.tests), \
            failures(result, exercise.name)


# ----------------------------------------------------------------------------------------------- mistakes
@pytest.mark.parametrize("mistake", MISTAKES, ids=[m.id for m in MISTAKES])
def test_mistake_loses_points(mistake):
    tests = graded_group(GROUP_OF[mistake.id])[mistake.exercise]
    assert score(tests) < POINTS[mistake.exercise], f"{mistake.id} was not caught: {mistake.title}"


@pytest.mark.parametrize("index", range(len(GROUPS)))
def test_untouched_exercises_keep_full_marks(index):
    """In a notebook of mistakes, an exercise whose grading runs none of them keeps every point: a wrong rms_norm
    costs qwen3_attention, qwen3_block and generate nothing (they are graded with the reference rms_norm)."""
    results = graded_group(index)
    touched = {m.exercise for m in GROUPS[index]} | {d for m in GROUPS[index] for d in mistake_dependencies(m)}
    for name, tests in results.items():
        if name not in touched:
            assert score(tests) == POINTS[name], [f"{t.name}: {t.message}" for t in tests if not t.passed]


def test_every_mistake_is_named_in_the_feedback():
    """The diagnosis names every mistake but the one whose reshape fails on the graders' model (numpy's error is the
    feedback there), and no other; the summary lists every mistake's fate."""
    unnamed = {"q3_attn_head_dim_from_d_model"}
    caught, named, lines = [], [], []
    for m in MISTAKES:
        tests = graded_group(GROUP_OF[m.id])[m.exercise]
        lost = score(tests) < POINTS[m.exercise]
        ids = list(dict.fromkeys(d.id for t in tests for d in t.diagnosis))
        caught += [m.id] if lost else []
        named += [m.id] if m.id in ids else []
        others = f", also {', '.join(i for i in ids if i != m.id)}" if len(ids) > 1 else ""
        lines.append(f"  {m.id:<34} {'caught' if lost else 'MISSED':<7} {'named' if m.id in ids else 'NOT NAMED'}"
                     f"{others}  ({score(tests):g}/{POINTS[m.exercise]:g})")
        assert set(ids) <= {m.id}, (m.id, ids)
    _SUMMARY["mistakes"] = [f"mistakes caught {len(caught)}/{len(MISTAKES)}, "
                            f"named {len(named)}/{len(MISTAKES)}"] + lines
    assert len(caught) == len(MISTAKES)
    assert sorted(named) == sorted(m.id for m in MISTAKES if m.id not in unnamed)
    for exercise in POINTS:
        assert sum(1 for m in MISTAKES if m.exercise == exercise and m.id in named) >= 4, exercise


def test_a_cache_of_repeated_kv_heads_loses_the_cache_points_only():
    """Right outputs from a cache that holds H heads instead of Hkv: only the cached tests fail, with the reason."""
    lost = [t for t in graded_group(GROUP_OF["q3_attn_caches_repeated_heads"])["qwen3_attention"] if not t.passed]
    assert lost and all(t.name.startswith("prefill_and_decode_with_the_given_cache") for t in lost)
    assert all("KV 헤드" in t.message for t in lost)


# ----------------------------------------------------------------------------------------------- forbidden routines
# Each reaches a library's Qwen3 class without writing its name (so only the run-time watch can see it).
FORBIDDEN = {
    "rms_norm": '''
def rms_norm(x, weight, eps=1e-6):
    norm = getattr(torch.nn.functional, "rms" + "_norm")
    t = torch.as_tensor(np.asarray(x, np.float64))
    return norm(t, t.shape[-1:], torch.as_tensor(np.asarray(weight, np.float64)), eps)
''',
    "swiglu_mlp": '''
def swiglu_mlp(x, w_gate, w_up, w_down):
    import importlib
    module = importlib.import_module("keras_hub.src.models." + "qwen3.qwen3_" + "decoder")
    x = np.asarray(x, np.float32)
    layer = getattr(module, "Qwen3" + "TransformerDecoder")(intermediate_dim=w_gate.shape[1], num_query_heads=1,
                                                            num_key_value_heads=1, head_dim=2,
                                                            activation=keras.ops.silu)
    layer.build((1, 1, x.shape[-1]))
    layer._feedforward_gate_dense.kernel.assign(np.asarray(w_gate, np.float32))
    layer._feedforward_intermediate_dense.kernel.assign(np.asarray(w_up, np.float32))
    layer._feedforward_output_dense.kernel.assign(np.asarray(w_down, np.float32))
    return keras.ops.convert_to_numpy(layer(x.reshape(1, -1, x.shape[-1]))).reshape(x.shape)
''',
    "qwen3_attention": '''
def qwen3_attention(x, params, positions, num_heads, num_kv_heads, cache=None):
    import importlib
    module = importlib.import_module("keras_hub.src.models." + "qwen3.qwen3_" + "attention")
    x = np.asarray(x, np.float32)
    d, dh = x.shape[-1], np.shape(params["q_norm"])[0]
    layer = getattr(module, "Qwen3" + "Attention")(num_query_heads=num_heads, num_key_value_heads=num_kv_heads,
                                                   head_dim=dh, rope_max_wavelength=ROPE_THETA, layer_norm_epsilon=1e-6)
    layer.build(x.shape)
    layer._query_dense.kernel.assign(np.asarray(params["q_proj"], np.float32).reshape(d, num_heads, dh))
    layer._key_dense.kernel.assign(np.asarray(params["k_proj"], np.float32).reshape(d, num_kv_heads, dh))
    layer._value_dense.kernel.assign(np.asarray(params["v_proj"], np.float32).reshape(d, num_kv_heads, dh))
    layer._output_dense.kernel.assign(np.asarray(params["o_proj"], np.float32).reshape(num_heads, dh, d))
    layer._query_dense_layer_norm.scale.assign(np.asarray(params["q_norm"], np.float32))
    layer._key_dense_layer_norm.scale.assign(np.asarray(params["k_norm"], np.float32))
    t = x.shape[1]
    return keras.ops.convert_to_numpy(layer(x, attention_mask=np.tril(np.ones((x.shape[0], t, t), bool))))
''',
}


def test_the_libraries_qwen3_classes_get_zero_on_their_exercise():
    """torch's rms_norm, KerasHub's Qwen3TransformerDecoder (its MLP) and Qwen3Attention, reached through getattr with
    their names split (the source shows none), give 0 on the exercise that uses them, with the Korean reason: the
    watch knows the libraries' classes by the code compiled from their installed source, though the student imports
    them only while graded. (transformers cannot be imported in the sandbox at all: its import writes to a temporary
    folder the sandbox does not give; test_modern_references.py shows its classes are known the same way.)"""
    result = graded("forbidden", lambda: notebooks.with_code(SOLUTION, FORBIDDEN))
    for name in FORBIDDEN:
        exercise = result.exercise(name)
        assert exercise.score == 0, failures(result, name)
        assert all(Reason.FORBIDDEN_ROUTINE.found_in(t.message) for t in exercise.tests), \
            [t.message for t in exercise.tests]
    assert scores(result)["qwen3_kv_cache_bytes"] == POINTS["qwen3_kv_cache_bytes"]


# ----------------------------------------------------------------------------------------------- visible checks
def notebook_namespace(nb) -> dict:
    """The notebook's code cells but its grade cells and demo-only cells, run in one namespace."""
    import matplotlib

    matplotlib.use("Agg")
    namespace: dict = {"__name__": "__main__"}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("grade") or "demo-only" in cell.metadata.get("tags", []):
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(cell.source, "<cell>", "exec"), namespace)
    return namespace


def visible_check(namespace, exercise) -> str:
    """Run the grade cell of ``exercise`` in ``namespace``: "" when it passes, else its Korean message."""
    cell = next(c for c in SOLUTION.cells if c.metadata.get("nbgrader", {}).get("grade_id") == f"test_{exercise}")
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(cell.source, f"<test_{exercise}>", "exec"), namespace)
    except AssertionError as failure:
        return str(failure) or "failed"
    except Exception as error:  # noqa: BLE001 - a mistake that raises fails the check too
        return f"{type(error).__name__}: {error}"
    return ""


def test_visible_checks_agree_with_the_graders():
    """The solution passes every visible check (KerasHub's layers among them); each mistake of the catalogue fails
    the visible check of its exercise (with the other exercises' solutions in place)."""
    base = notebook_namespace(SOLUTION)
    for exercise in POINTS:
        assert visible_check(copy.copy(base), exercise) == "", exercise
    missed, lines = [], []
    for m in MISTAKES:
        namespace = copy.copy(base)
        exec(compile(m.source, f"<mistake {m.id}>", "exec"), namespace)
        message = visible_check(namespace, m.exercise)
        lines.append(f"  {m.id:<34} {message.splitlines()[0][:90] if message else 'PASSED (disagrees)'}")
        if not message:
            missed.append(m.id)
    _SUMMARY["visible"] = ["visible checks (each mistake against its exercise's check):"] + lines
    assert missed == [], missed
