"""The decoder's sampling, graded at 50 seeds: next_token_probs and the sampled cases of generate.

The graders draw new inputs at every seed, so one seed proves little about inputs chosen to expose a mistake. Here
every catalogued mistake of next_token_probs, and every catalogued mistake of how generate chooses its tokens when it
samples, is graded at each of 50 seeds and must lose at least a third of its exercise and be named in the feedback
at every one; every correct implementation must get full marks at every one: the solution's, one built on Hugging
Face transformers' own warpers (TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper, the pinned release),
a torch one and a keras.ops one for next_token_probs; the solution's and a torch one for generate.

Cheap on purpose (no sandbox, no pytest session per grading): the graders run in this process
(``tests.helpers.inprocess.Graders``: collected once, each test function called as the plugin calls it, failures
read by the plugin's own code), only the tests of the exercise in question (generate's sampled cases and integer
check; its whole grader for the mistake that crashes at temperature 0), with each seed's inputs computed once for
all the implementations (``Graders.inputs_shared``). ``test_the_runner_grades_as_a_session`` checks that this
runner gives what a real session gives. The sandboxed gradings of tests/graders/test_decoder_graders.py prove the
same mistakes' other exercises unharmed and the whole path (wire, proxies) at one seed.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

from autograder.graders import registry  # noqa: E402

from tests.helpers import inprocess, notebooks  # noqa: E402

pytestmark = pytest.mark.slow

SEEDS = range(int(os.environ.get("DECODER_SAMPLING_SEEDS", "50")))
NTP, GEN = "next_token_probs", "generate"
POINTS = {exercise.name: exercise.points for exercise in registry.of_assignment("decoder")}

# Correct implementations (tests/implementations/<name>.py; None: the solution notebook's own).
CORRECT = {
    NTP: {"solution": None, "hf_warpers": "next_token_probs_hf", "torch": "decoder_torch",
          "keras_ops": "next_token_probs_kerasops"},
    GEN: {"solution": None, "torch": "decoder_torch"},
}
# generate's mistakes in how it chooses when it samples (the sampled cases and the integer check grade them), and
# the one that samples at temperature 0 too (it crashes in the greedy cases: graded with all of generate's tests).
SAMPLING = ("gen_sampling_ignores_filters", "gen_temperature_twice", "gen_argmax_when_sampling", "gen_ignores_rng",
            "gen_float_tokens")
WHOLE = ("gen_always_samples",)
MISTAKES = {m.id: m for m in registry.mistakes_of("decoder")}
# gen_ignores_rng draws with a fresh ``np.random.default_rng()``: OS entropy, so now and then a sampled case's draw
# equals the reference's by chance (a lucky student keeps that case's points; the grader cannot tell luck) and the
# "at every seed" checks below would flake. Here its fresh generators are seeded from numpy's global generator (the
# catalogue's other form of the mistake, "전역 np.random"; seeded in ``graded``): the same mistake, repeatable.
SOURCES = {m.id: m.source for m in MISTAKES.values()}
SOURCES["gen_ignores_rng"] = SOURCES["gen_ignores_rng"].replace("np.random.default_rng()",
                                                                "np.random.default_rng(np.random.randint(2**31))")
assert SOURCES["gen_ignores_rng"] != MISTAKES["gen_ignores_rng"].source
NTP_MISTAKES = [m.id for m in MISTAKES.values() if m.exercise == NTP]

SELECT = {NTP: "next_token_probs", GEN: "sampling or returns_int", "whole": "test_generate"}
BUILDERS = ("temperature_calls", "top_k_calls", "top_p_calls", "all_three_calls", "limit_calls",
            "sampled_model_and_prompt", "model_and_prompt")


@pytest.fixture(scope="module")
def base():
    return inprocess.notebook_code(notebooks.solution_notebook("decoder"), "decoder")


def source_of(name) -> str:
    return "" if name is None else notebooks.implementation(name)


@pytest.fixture(scope="module")
def graders():
    """The selected graders, collected once for the module."""
    return {key: inprocess.Graders("decoder", select) for key, select in SELECT.items()}


@pytest.fixture(scope="module")
def graded(base, graders):
    """``{(exercise, name, seed): (score, max score, diagnosis ids)}`` of every grading of this module, run once."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    np.random.seed(0)   # the family of global-random mistakes draws from numpy's global generator
    jobs = [(NTP, name, source_of(src), NTP) for name, src in CORRECT[NTP].items()]
    jobs += [(NTP, m, SOURCES[m], NTP) for m in NTP_MISTAKES]
    jobs += [(GEN, name, source_of(src), GEN) for name, src in CORRECT[GEN].items()]
    jobs += [(GEN, m, SOURCES[m], GEN) for m in SAMPLING]
    jobs += [("whole", m, SOURCES[m], GEN) for m in WHOLE]
    out = {}
    try:
        with graders[NTP].inputs_shared(*BUILDERS), graders[GEN].inputs_shared(*BUILDERS), \
                graders["whole"].inputs_shared(*BUILDERS):
            for seed in SEEDS:
                for key, name, source, exercise in jobs:
                    out[(exercise, name, seed)] = graders[key].grade(inprocess.namespace(base, source), seed)[exercise]
    finally:
        torch.set_num_threads(threads)
    return out


@pytest.mark.parametrize("exercise", [NTP, GEN])
def test_every_correct_implementation_is_full_at_every_seed(graded, exercise):
    """The solution's, HF's warpers', a torch and a keras.ops next_token_probs; the solution's and a torch generate:
    full marks on every selected test at every seed."""
    short = {(name, seed): result for (ex, name, seed), result in graded.items()
             if ex == exercise and name in CORRECT[exercise] and result[0] < result[1]}
    assert short == {}, short


@pytest.mark.parametrize("exercise, mistakes", [(NTP, NTP_MISTAKES), (GEN, SAMPLING + WHOLE)])
def test_every_mistake_loses_a_third_and_is_named_at_every_seed(graded, exercise, mistakes):
    """Each catalogued mistake loses at least a third of its exercise's points and the feedback names it, at each
    of the 50 seeds (generate's sampling mistakes on its sampled cases and integer check alone: 2 of its 5 points, so
    a third of 5 there is a lower bound of what the whole grader takes)."""
    bad = {}
    for m in mistakes:
        for seed in SEEDS:
            score, top, named = graded[(exercise, m, seed)]
            if POINTS[exercise] - (top - score) > POINTS[exercise] * 2 / 3 + 1e-9 or m not in named:
                bad[(m, seed)] = (score, top, named)
    assert bad == {}, bad


def test_the_runner_grades_as_a_session(base, graders, graded):
    """The in-process runner gives, test by test, what a real grading session gives (outcome, message, diagnosis):
    for the solution and for a mistake of each exercise (after the gradings above: the grader modules are loaded)."""
    for key, source in ((NTP, ""), (NTP, MISTAKES["ntp_top_p_ascending"].source),
                        (GEN, MISTAKES["gen_temperature_twice"].source)):
        with graders[key].inputs_shared(*BUILDERS):
            assert graders[key].same_as_session(inprocess.namespace(base, source), 7), key


def test_the_warpers_are_hugging_faces():
    """The HF implementation runs transformers' own warper classes, of the pinned release."""
    import transformers
    from transformers.generation import logits_process

    pinned = next(line.split("==")[1].strip() for line in (notebooks.ROOT / "requirements.txt").read_text()
                  .splitlines() if line.startswith("transformers=="))
    assert transformers.__version__ == pinned
    source = notebooks.implementation("next_token_probs_hf")
    for name in ("TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper"):
        assert f"{name}(" in source and hasattr(logits_process, name)


GENERATE_WITH_NUMPY_CHOICE = '''
def generate(params, prompt, max_new_tokens, num_heads, use_cache=True, temperature=0.0, top_k=None, top_p=None,
             rng=None):
    tokens = np.asarray(prompt)
    for _ in range(max_new_tokens):
        h = params["wte"][tokens] + params["wpe"][:tokens.shape[1]]
        for block in params["blocks"]:
            h = decoder_block(h, block, num_heads)
        logits = layer_norm(h[:, -1], params["ln_f"]["gamma"], params["ln_f"]["beta"]) @ params["wte"].T
        if temperature == 0:
            chosen = np.argmax(logits, axis=-1)
        else:
            probs = to_numpy(next_token_probs(logits, temperature, top_k, top_p))      # float64, as the notebook's
            chosen = np.array([rng.choice(len(row), p=row) for row in probs])
        tokens = np.concatenate([tokens, chosen[:, None]], axis=1)
    return tokens
'''


def test_probabilities_from_the_reference_sum_to_one_in_float64(base, graders, monkeypatch):
    """A generate that draws with ``rng.choice(V, p=row)`` from next_token_probs' answer converted to float64 (the
    notebook's ``to_numpy``) draws as the given ``sample`` does (one ``rng.random()`` a row, the inverse CDF in token
    order), so it gets every sampled case: the reference answers in float64 (``proxies.FULL_PRECISION``). Answered in
    the logits' float32, as before, the same code failed with numpy's "probabilities do not sum to 1"."""
    def failures():
        with graders[GEN].inputs_shared(*BUILDERS):
            results = graders[GEN].run(inprocess.namespace(base, GENERATE_WITH_NUMPY_CHOICE), 3)
        return [message for passed, message, _ in results.values() if not passed]

    assert failures() == []
    monkeypatch.setattr(inprocess, "FULL_PRECISION", frozenset())
    assert any("sum to 1" in message for message in failures())
