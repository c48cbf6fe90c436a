"""The diagnosis names a mistake only where the mistake explains the result.

* **Never for a correct implementation.** The instructor's solution and every alternative implementation
  (tests/implementations/*) are graded here in this process (tests/helpers/inprocess.py: the same graders, no sandbox),
  every call the graders make is recorded, and the diagnosis is run on each correct result as if the check had failed
  (``diagnosis.of_output`` / ``of_number`` with the solution's result as the expected one): no mistake of the catalogue
  may be named for any of them. (The sandboxed tests/graders/test_<assignment>_graders.py prove the other way: every
  diagnosable mistake is named for itself. The cache exercises are named by replaying a scenario, ``of_replay``, which
  those tests cover.)
* **By its name, whatever the style.** The decoder's family mutants (benchmarks/family_mutants.py: Keras's eps,
  the tanh GELU by hand and as ``keras.ops.gelu``'s default, positions off by one, sampling) are graded here on two
  seeds, and each is named by its catalogue id, only that one.
* **Not for a coincidence.** Two mistakes can give the same number on one call; the one named must also explain
  the function's other results (``diagnosis.consistent``).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

from tests.helpers import inprocess  # noqa: E402
from tests.helpers import notebooks  # noqa: E402

from benchmarks import family_mutants  # noqa: E402

from autograder.graders import diagnosis, registry  # noqa: E402
from autograder.graders.calls import HISTORY_ELEMENTS, Call, _elements  # noqa: E402

pytestmark = pytest.mark.slow

CORRECT = [pytest.param(a, impl, id=f"{a}-{impl or 'solution'}") for a in ("attention", "kv_cache")
           for impl in [None] + notebooks.implementations(a)]


def _plain(value) -> bool:
    """Data the diagnosis re-runs mistakes on (no objects of the student's side, such as a cache)."""
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(_plain(v) for v in value.values())
    return value is None or isinstance(value, (bool, int, float, str, np.ndarray, np.generic))


@pytest.mark.parametrize("assignment, implementation", CORRECT)
def test_correct_results_are_never_diagnosed(assignment, implementation):
    solution = inprocess.notebook_code(notebooks.solution_notebook(assignment), assignment)
    extra = notebooks.implementation(implementation) if implementation else ""
    calls: list = []
    # the memory tests (8,192 queries) and the stored 4,096-token cases are left out: their results are too big for
    # the diagnosis anyway (calls.HISTORY_ELEMENTS), and they cost most of a grading's time
    session = inprocess.run(assignment, inprocess.namespace(solution, extra), record=calls,
                            select="not memory_stays_below and not flash_long")
    assert [r.name for r in session.results.values() if r.message] == []
    reference = inprocess.namespace(solution)
    checked, named = 0, []
    for name, args, kwargs, value in calls:
        if not registry.diagnosable_mistakes(name) or not (_plain(args) and _plain(kwargs)) \
                or _elements(value) > HISTORY_ELEMENTS or isinstance(reference[name], type):
            continue
        expected = reference[name](*args, **kwargs)
        call = Call(name, args, kwargs)
        if isinstance(value, (tuple, list)):
            found = [m for i in range(len(value)) for m in diagnosis.of_output(
                np.asarray(value[i], np.float64), call, pick=lambda r, i=i: r[i], expected=expected[i])]
        elif np.ndim(value) == 0 or np.size(value) == 1 and np.asarray(value).dtype.kind in "iu":
            found = diagnosis.of_number(np.asarray(value).reshape(-1)[0].item(), expected, call)
        else:
            found = diagnosis.of_output(np.asarray(value, np.float64), call, expected=expected)
        checked += 1
        named += [f"{name}: {m.id}" for m in found]
    assert checked > 50, checked
    assert named == []


def test_a_coincidence_on_one_call_is_not_named():
    """With two layers, "K and V counted once" and "one layer only" give the same number; the student's function
    that counts one layer also gave one-layer results with twelve layers, so only that mistake is named."""
    one_layer = next(m for m in registry.catalogue() if m.id == "kv_bytes_one_layer").function()
    history: list = []
    earlier = Call("kv_cache_bytes", (12, 12, 64, 1), {}, history=history)
    earlier.returned(one_layer(12, 12, 64, 1))
    failing = Call("kv_cache_bytes", (2, 4, 64, 10), {}, history=history)
    failing.returned(one_layer(2, 4, 64, 10))
    found = {m.id for m in diagnosis.of_number(one_layer(2, 4, 64, 10), 2 * 2 * 4 * 64 * 10 * 2, failing)}
    assert found == {"kv_bytes_one_layer"}
    alone = Call("kv_cache_bytes", (2, 4, 64, 10), {})             # without the history both would be named
    assert {m.id for m in diagnosis.of_number(one_layer(2, 4, 64, 10), 2 * 2 * 4 * 64 * 10 * 2, alone)} == \
        {"kv_bytes_one_layer", "kv_bytes_missing_factor_2"}



@pytest.mark.parametrize("assignment", ["decoder", "modern"])
def test_an_exception_in_a_shared_name_is_diagnosed_among_its_assignments_mistakes(assignment):
    """``generate`` is an exercise of two assignments: a student's exception in it (the blank release's
    NotImplementedError) is looked up among the mistakes of the assignment graded (a lookup without it raised
    RegistryError inside the plugin's report hook, and the whole grading of the submission stopped)."""
    assert diagnosis.of_exception(Call("generate", (), {}, assignment=assignment), "NotImplementedError") == []


DECODER_FAMILIES = [pytest.param(exercise, ids, source, id=f"{exercise}-{family}")
                    for exercise, family, ids, source in family_mutants.MUTANTS
                    if exercise in ("layer_norm", "decoder_block", "generate")]


@pytest.mark.parametrize("exercise, ids, source", DECODER_FAMILIES)
def test_decoder_family_mutants_are_named(exercise, ids, source):
    base = inprocess.notebook_code(notebooks.solution_notebook("decoder"), "decoder")
    for seed in (20240611, 7):
        score, top, found = inprocess.grade("decoder", inprocess.namespace(base, source), seed=seed)[exercise]
        assert score < top and set(found) <= ids and found, (seed, score, found)
