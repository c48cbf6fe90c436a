"""The hidden graders of the `decoder` assignment, proven both ways.

* the instructor's solution and every alternative correct implementation (tests/implementations/decoder_*.py:
  float64 numpy with einsum, torch tensors in float32, explicit loops) get full marks on every exercise;
* every mistake of the catalogue (autograder/graders/exercises/{layer_norm,decoder_block,generate}.py) loses points
  on its exercise and the feedback names it; exercises that no mistake of the same notebook touches keep full marks
  (each exercise is graded with the references in place of the others it calls, so mistakes of all three share a
  notebook); a generate that ignores its cache loses only the cache test, and is named there;
* the untouched release notebook gets 0 with "아직 구현하지 않았습니다" on every exercise;
* forbidden library routines (torch's layer_norm in layer_norm, Keras's MultiHeadAttention in decoder_block,
  torch's TransformerEncoderLayer in generate) give 0 on their exercise; the other normalisation roads to a layer norm
  are seen at run time too;
* the notebook's visible checks agree with the graders: the solution passes all three, every mistake fails the
  check of its exercise;
* what the graders rely on: the Keras block equals the float64 reference block, the float32 logits of the graders'
  models are far inside TOKEN_MARGIN of the float64 ones, and the proxies' answers are the references.

Each grading runs the notebook's code in a student process (5-10 s). The seeds are fixed for reproducibility;
``DECODER_GRADER_SEED=<int>`` shifts them all to try other inputs.
"""
from __future__ import annotations

import contextlib
import io
import os
import re

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

from autograder.graders import isolation, references, registry, tolerances  # noqa: E402
from autograder.messages import Reason  # noqa: E402

from tests.helpers import notebooks  # noqa: E402
from tests.helpers.graded import GradingCache, failures, scores  # noqa: E402

pytestmark = pytest.mark.slow

ASSIGNMENT = "decoder"
BASE_SEED = int(os.environ.get("DECODER_GRADER_SEED", "20240614"))

# Points of every exercise, from its record (the notebook's grade cells and the graders carry the same numbers).
POINTS = {exercise.name: exercise.points for exercise in registry.of_assignment(ASSIGNMENT)}
NOT_IMPLEMENTED = Reason.NOT_IMPLEMENTED.korean()

MISTAKES = registry.mistakes_of(ASSIGNMENT)
# next_token_probs' mistakes and generate's ways of choosing when it samples are graded at 50 seeds in this process
# (tests/graders/test_decoder_sampling.py): there each must lose a third of its exercise and be named at every seed.
# The sandboxed gradings here prove the others (one mistake of each exercise a notebook, nine notebooks).
SAMPLING_MISTAKES = {"gen_sampling_ignores_filters", "gen_temperature_twice", "gen_argmax_when_sampling",
                     "gen_ignores_rng", "gen_always_samples", "gen_float_tokens"}
IN_PROCESS = {m.id for m in MISTAKES if m.exercise == "next_token_probs"} | SAMPLING_MISTAKES
SANDBOXED = [m for m in MISTAKES if m.id not in IN_PROCESS]
SOLUTION = notebooks.solution_notebook(ASSIGNMENT)


# ----------------------------------------------------------------------------------------------- grading cache
CACHE = GradingCache(ASSIGNMENT, BASE_SEED)
graded = CACHE.graded
_SUMMARY = CACHE.summary


# ----------------------------------------------------------------------------------------------- mistakes: groups
def mistake_dependencies(mistake) -> set:
    """Exercises the mistake's code uses that are not answered by the references while it is graded (none here:
    layer_norm and decoder_block are proxies inside the exercises that call them), so one notebook can hold a
    mistake of each exercise."""
    uses = notebooks.names_used(mistake.source) & set(POINTS)
    return uses - {mistake.exercise} - set(isolation.CALLEES.get(mistake.exercise, ()))


GROUPS = CACHE.mistake_groups(SANDBOXED, mistake_dependencies, SOLUTION)
GROUP_OF = CACHE.group_of
graded_group = CACHE.graded_group


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """The module's own float64 and float32 torch computations on one thread, as the graders run
    (``grade.run_graders``): tiny tensors gain nothing from a second thread, and with two test workers on two cores
    the threads spin against each other (the float32 margin test took 21 s on two threads, 0.7 s on one)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ----------------------------------------------------------------------------------------------- summary
@pytest.fixture(scope="module", autouse=True)
def summary(request):
    """Prints which mistakes were caught and named, and what each grading cost (visible without -s)."""
    yield
    CACHE.report(request, "decoder graders", ("mistakes", "visible"))


# ----------------------------------------------------------------------------------------------- no grading needed


def test_mistake_groups_are_independent():
    """One mistake per exercise in a notebook, and no mistake whose code reaches another member's exercise other
    than through a proxy."""
    assert sorted(m.id for group in GROUPS for m in group) == sorted(m.id for m in SANDBOXED)
    for group in GROUPS:
        assert len({m.exercise for m in group}) == len(group)
        for m in group:
            assert not mistake_dependencies(m) & {o.exercise for o in group}


def test_keras_block_is_the_reference_block():
    """The grader's Keras block (LayerNormalization, MultiHeadAttention with use_causal_mask, Dense with Keras's
    gelu) equals the float64 reference block, and the tanh GELU would not (Keras's default is the exact one)."""
    from autograder.graders.decoder import block_params, keras_block

    rng = np.random.default_rng(0)
    block = block_params(rng, 12, 3, 40)
    x = rng.standard_normal((2, 7, 12)).astype(np.float32)
    expected = references.decoder_block(x, block, 3)
    np.testing.assert_allclose(keras_block(block, 3, x), expected, atol=1e-4, rtol=1e-4)
    assert references.decoder_block(x, block, 3).shape == (2, 7, 12)
    import torch

    tanh = torch.nn.functional.gelu(torch.tensor([1.5], dtype=torch.float64), approximate="tanh").item()
    assert abs(tanh - references.gelu(np.array([1.5]))[0]) > 1e-5


def test_float32_logits_are_far_inside_the_token_margin():
    """The graders compare tokens exactly on models whose greedy choices lead by TOKEN_MARGIN (tolerances.py): a
    float32 computation of their logits stays 100 times closer to the float64 ones than that."""
    import torch

    from autograder.graders.decoder import MODEL, model_and_prompt

    worst = 0.0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        params, prompt, tokens = model_and_prompt(rng, 3, 5, 6)
        as32 = _tree(params, lambda a: torch.from_numpy(np.asarray(a, np.float32)))
        for t in range(prompt.shape[1], tokens.shape[1]):
            exact = references.next_token_logits(params, tokens[:, :t], MODEL["num_heads"])
            worst = max(worst, float(np.max(np.abs(_logits32(as32, tokens[:, :t], MODEL["num_heads"]) - exact))))
    assert worst < tolerances.TOKEN_MARGIN / 100, worst


def _tree(tree, leaf):
    if isinstance(tree, dict):
        return {k: _tree(v, leaf) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_tree(v, leaf) for v in tree]
    return leaf(tree)


def _logits32(p, tokens, heads):
    """The last position's logits, computed in float32 with torch (an independent float32 implementation)."""
    import torch
    import torch.nn.functional as F

    tokens = torch.as_tensor(tokens)
    b, t = tokens.shape
    h = p["wte"][tokens] + p["wpe"][:t]
    d = h.shape[-1]
    for blk in p["blocks"]:
        a = F.layer_norm(h, (d,), blk["ln_1"]["gamma"], blk["ln_1"]["beta"], 1e-5)
        q, k, v = ((a @ blk["attn"][f"w_{n}"] + blk["attn"][f"b_{n}"]).view(b, t, heads, -1).transpose(1, 2)
                   for n in "qkv")
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        h = h + y @ blk["attn"]["w_o"] + blk["attn"]["b_o"]
        z = F.layer_norm(h, (d,), blk["ln_2"]["gamma"], blk["ln_2"]["beta"], 1e-5)
        h = h + F.gelu(z @ blk["w_1"] + blk["b_1"]) @ blk["w_2"] + blk["b_2"]
    h = F.layer_norm(h[:, -1], (d,), p["ln_f"]["gamma"], p["ln_f"]["beta"], 1e-5)
    return (h @ p["wte"].T).double().numpy()


def test_the_proxies_answers_are_the_references():
    """The float64 numpy answers of isolation.py equal references.py (torch) for the decoder's contract functions."""
    from autograder.graders.decoder import block_params

    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 12))
    gamma, beta = rng.standard_normal(12), rng.standard_normal(12)
    np.testing.assert_allclose(isolation.REFERENCES["layer_norm"](x, gamma, beta, eps=1e-3),
                               references.layer_norm(x, gamma, beta, eps=1e-3), atol=1e-12)
    block = block_params(rng, 12, 3, 24)
    np.testing.assert_allclose(isolation.REFERENCES["decoder_block"](x, block, 3),
                               references.decoder_block(x, block, 3), atol=1e-12)
    mask = references.causal_mask(5)
    np.testing.assert_allclose(isolation.REFERENCES["multi_head_attention_layer"](x, x, block["attn"], 3, mask),
                               references.multi_head_attention_layer(x, x, block["attn"], 3, mask), atol=1e-12)


def test_next_token_probs_reference_is_hugging_faces_warpers():
    """The reference (answers.py, float64 numpy) equals Hugging Face's warpers (transformers' own classes, in
    tests/implementations/next_token_probs_hf.py) on random logits and on logits with ties at the k-th (kept); where
    tokens of one probability straddle the top-p boundary, both keep as many, the reference the lower numbers and
    HF the higher ones (the graders accept either: ``with_their_ties``); temperature 0 is one-hot at the first
    argmax; rows sum to 1 with exact zeros."""
    import torch

    from autograder.graders.decoder.test_next_token_probs import with_their_ties

    namespace: dict = {}
    exec(compile(notebooks.implementation("next_token_probs_hf"), "<hf>", "exec"), namespace)
    hugging_face = namespace["next_token_probs"]
    rng = np.random.default_rng(11)
    differ = 0
    for logits in (2.0 * rng.standard_normal((5, 17)), rng.integers(-3, 4, size=(5, 17)).astype(np.float64)):
        for temperature, top_k, top_p in [(1.0, None, None), (0.6, 4, None), (1.3, None, 0.75), (0.8, 6, 0.9),
                                          (2.0, 1, None), (1.0, 40, 0.5), (0.7, 3, 0.6)]:
            got = references.next_token_probs(logits, temperature, top_k, top_p)
            theirs = hugging_face(logits, temperature, top_k, top_p).numpy()
            if top_p is not None:
                differ += not np.array_equal(theirs > 0, got > 0)
                before = references.next_token_probs(logits, temperature, top_k, None)
                got = with_their_ties(theirs, got, before)
            np.testing.assert_allclose(got, theirs, atol=1e-12)
            np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-12)
    assert differ, "no case where the two break a tie at the top-p boundary differently"
    ties = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    np.testing.assert_array_equal(references.next_token_probs(ties, 0.0), [[0, 1, 0, 0], [1, 0, 0, 0]])
    np.testing.assert_array_equal(hugging_face(ties, 0.0), torch.tensor([[0, 1, 0, 0], [1, 0, 0, 0]]))
    np.testing.assert_allclose(references.next_token_probs(ties, 1.0, top_k=1), [[0, .5, .5, 0], [.25] * 4])


def test_the_catalogued_generate_mistakes_change_the_tokens():
    """Each generate mistake, run here on the graders' scenarios, gives other tokens than the reference on at least
    one of them (so it can lose points), except the one that ignores the cache (right tokens, caught by the cache
    test); the reference itself equals a cached replay of the instructor's generate (trusted cache)."""
    from autograder.graders.decoder import MODEL, model_and_prompt

    solution = next(m for m in MISTAKES if m.id == "gen_ignores_cache").function()
    rng = np.random.default_rng(5)
    np.random.seed(5)   # gen_samples draws with np.random
    scenarios = [model_and_prompt(rng, b, t0, n) for b, t0, n in ((2, 1, 8), (3, 5, 6), (1, 3, 9))]
    for params, prompt, expected in scenarios:
        np.testing.assert_array_equal(solution(params, prompt, expected.shape[1] - prompt.shape[1],
                                               MODEL["num_heads"]), expected)
    for m in SANDBOXED:
        if m.exercise != "generate" or not m.diagnosable:   # right tokens: caught by the cache test
            continue
        differs = [not np.array_equal(m.function()(params, prompt, expected.shape[1] - prompt.shape[1],
                                                   MODEL["num_heads"]), expected)
                   for params, prompt, expected in scenarios]
        assert any(differs), m.id


# ----------------------------------------------------------------------------------------------- full marks
def test_solution_gets_full_marks():
    result = graded("solution", lambda: SOLUTION)
    assert [e for e in result.notebook_errors if "샌드박스 없이" not in e] == []
    assert failures(result) == []
    assert {e.name: e.max_score for e in result.exercises} == {k: float(v) for k, v in POINTS.items()}
    assert result.score == result.max_score == sum(POINTS.values())


@pytest.mark.parametrize("implementation", notebooks.implementations(ASSIGNMENT))
def test_alternative_implementation_gets_full_marks(implementation):
    source = notebooks.implementation(implementation)
    result = graded(implementation, lambda: notebooks.with_all_code(SOLUTION, source))
    assert failures(result) == []
    assert scores(result) == {k: float(v) for k, v in POINTS.items()}


def test_there_are_three_alternative_implementations():
    assert len(notebooks.implementations(ASSIGNMENT)) >= 3


# ----------------------------------------------------------------------------------------------- mistakes
@pytest.mark.parametrize("mistake", SANDBOXED, ids=[m.id for m in SANDBOXED])
def test_mistake_loses_points(mistake):
    result = graded_group(GROUP_OF[mistake.id])
    exercise = result.exercise(mistake.exercise)
    assert exercise.score < exercise.max_score, f"{mistake.id} was not caught: {mistake.title}"


@pytest.mark.parametrize("index", range(len(GROUPS)))
def test_untouched_exercises_keep_full_marks(index):
    """In a notebook of mistakes, an exercise that no mistake touches keeps every point: a wrong layer_norm does
    not cost decoder_block or generate anything (they are graded with the reference layer_norm)."""
    result = graded_group(index)
    mutated = {m.exercise for m in GROUPS[index]}
    for exercise in result.exercises:
        if exercise.name not in mutated:
            assert exercise.score == exercise.max_score, failures(result, exercise.name)


def test_every_mistake_is_named_in_the_feedback():
    """The diagnosis names every mistake graded here (the others: test_decoder_sampling.py), and no other (the one
    that ignores the cache through the cache test; generate's tokens that several mistakes explain are narrowed on
    another model); the summary lists every mistake's fate."""
    caught, named, alone, lines = [], [], [], []
    for m in SANDBOXED:
        exercise = graded_group(GROUP_OF[m.id]).exercise(m.exercise)
        lost = exercise.score < exercise.max_score
        ids = [d.id for d in exercise.diagnosis]
        caught += [m.id] if lost else []
        named += [m.id] if m.id in ids else []
        alone += [m.id] if ids == [m.id] else []
        others = f", also {', '.join(i for i in ids if i != m.id)}" if len(ids) > 1 else ""
        lines.append(f"  {m.id:<30} {'caught' if lost else 'MISSED':<7} {'named' if m.id in ids else 'NOT NAMED'}"
                     f"{others}  ({exercise.score:g}/{exercise.max_score:g})")
    _SUMMARY["mistakes"] = [f"mistakes caught {len(caught)}/{len(SANDBOXED)}, named {len(named)}/{len(SANDBOXED)}, "
                            f"named alone {len(alone)}/{len(SANDBOXED)}"] + lines
    assert len(caught) == len(SANDBOXED)
    assert sorted(named) == sorted(m.id for m in SANDBOXED)
    assert sorted(alone) == sorted(m.id for m in SANDBOXED), "a feedback names other mistakes too"


CACHE_TEST = "each_layer_cache_takes_the_prompt_then_one_token_a_step"
CACHE_POINTS = 1.5

GENERATE_TORCH_WITHOUT_CACHE = '''
def generate(params, prompt, max_new_tokens, num_heads, use_cache=True, temperature=0.0, top_k=None, top_p=None,
             rng=None):
    g = lambda w: torch.as_tensor(w)
    wte, wpe = g(params["wte"]), g(params["wpe"])
    tokens = torch.as_tensor(prompt, dtype=torch.long)
    for _ in range(max_new_tokens):
        b, t = tokens.shape
        h = wte[tokens] + wpe[:t]                                                   # the whole sequence, every step
        d = h.shape[-1]
        for blk in params["blocks"]:
            a = F.layer_norm(h, (d,), g(blk["ln_1"]["gamma"]), g(blk["ln_1"]["beta"]), 1e-5)
            q, k, v = ((a @ g(blk["attn"][f"w_{n}"]) + g(blk["attn"][f"b_{n}"])).view(b, t, num_heads, -1)
                       .transpose(1, 2) for n in "qkv")
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
            h = h + y @ g(blk["attn"]["w_o"]) + g(blk["attn"]["b_o"])
            z = F.layer_norm(h, (d,), g(blk["ln_2"]["gamma"]), g(blk["ln_2"]["beta"]), 1e-5)
            h = h + F.gelu(z @ g(blk["w_1"]) + g(blk["b_1"])) @ g(blk["w_2"]) + g(blk["b_2"])
        h = F.layer_norm(h[:, -1], (d,), g(params["ln_f"]["gamma"]), g(params["ln_f"]["beta"]), 1e-5)
        logits = h @ wte.T
        if temperature == 0:
            chosen = torch.argmax(logits, dim=-1)
        else:
            chosen = torch.as_tensor(sample(next_token_probs(logits, temperature, top_k, top_p), rng))
        tokens = torch.cat([tokens, chosen[:, None]], dim=1)
    return tokens
'''


def test_ignoring_the_cache_loses_only_the_cache_points():
    """A numpy generate that recomputes everything when asked to use the cache gets the right tokens, so it loses
    only the tests that watch the given KVCache (the cache's points), named, with the Korean reason."""
    result = graded_group(GROUP_OF["gen_ignores_cache"])
    exercise = result.exercise("generate")
    lost = [t for t in exercise.tests if not t.passed]
    assert {t.name.split("[")[0] for t in lost} == {CACHE_TEST}, failures(result, "generate")
    assert all("주어진 `KVCache`에 아무것도 덧붙이지 않았습니다" in t.message for t in lost)
    assert exercise.score == exercise.max_score - CACHE_POINTS <= 3.5
    assert [d.id for d in exercise.diagnosis] == ["gen_ignores_cache"]


def test_a_torch_generate_without_the_cache_loses_the_cache_points():
    """The same in torch with F.layer_norm and F.scaled_dot_product_attention, recomputing the whole sequence and
    calling none of the notebook's functions: right tokens, and at most 3.5/5 (it got 5/5 when the cache was seen
    only through calls of the contract functions)."""
    result = graded("torch-without-cache",
                    lambda: notebooks.with_code(SOLUTION, {"generate": GENERATE_TORCH_WITHOUT_CACHE}))
    exercise = result.exercise("generate")
    assert exercise.score == exercise.max_score - CACHE_POINTS <= 3.5, failures(result, "generate")
    assert {t.name.split("[")[0] for t in exercise.tests if not t.passed} == {CACHE_TEST}
    assert [d.id for d in exercise.diagnosis] == ["gen_ignores_cache"]
    namespace = notebook_namespace(SOLUTION)
    exec(compile(GENERATE_TORCH_WITHOUT_CACHE, "<torch generate>", "exec"), namespace)
    assert "주어진 KVCache에 아무것도 덧붙이지 않았습니다" in visible_check(namespace, "generate")


@pytest.mark.parametrize("mistake_id", ["gen_refeeds_whole_sequence", "gen_cache_per_step"])
def test_feeding_a_cache_the_whole_sequence_loses_the_cache_points(mistake_id):
    """A cache given the whole sequence every step (one cache piling up duplicates, or a new cache each step) fails
    every cache test, each naming the mistake."""
    exercise = graded_group(GROUP_OF[mistake_id]).exercise("generate")
    cache_tests = [t for t in exercise.tests if t.name.startswith(CACHE_TEST)]
    assert cache_tests and not any(t.passed for t in cache_tests)
    assert exercise.score <= exercise.max_score - CACHE_POINTS
    assert mistake_id in [d.id for d in exercise.diagnosis]


GENERATE_RECOMPUTES_AND_FAKES_THE_CACHE = '''
def generate(params, prompt, max_new_tokens, num_heads, use_cache=True, temperature=0.0, top_k=None, top_p=None,
             rng=None):
    tokens = np.asarray(prompt)
    dh = params["wte"].shape[1] // num_heads
    caches = [KVCache() for _ in params["blocks"]]
    for step in range(max_new_tokens):
        h = params["wte"][tokens] + params["wpe"][:tokens.shape[1]]                   # the whole sequence, every step
        for block in params["blocks"]:
            h = decoder_block(h, block, num_heads)
        if use_cache:                                    # appends of the right shapes: the prompt, then one token
            t = tokens.shape[1] if step == 0 else 1
            for cache in caches:
                zeros = np.zeros((tokens.shape[0], num_heads, t, dh), np.float32)
                cache.append(zeros, zeros)
        h = layer_norm(h[:, -1], params["ln_f"]["gamma"], params["ln_f"]["beta"])
        logits = h @ params["wte"].T
        if temperature == 0:
            chosen = np.argmax(logits, axis=-1)
        else:
            chosen = sample(next_token_probs(logits, temperature, top_k, top_p), rng)
        tokens = np.concatenate([tokens, chosen[:, None]], axis=1)
    return tokens
'''


def test_appends_of_the_right_shapes_do_not_earn_the_cache_points():
    """A generate that recomputes the whole sequence every step through decoder_block and appends zero arrays of the
    right shapes (the prompt, then one token a step) to the given KVCaches: 5/5 when the grader believed the student
    process's record of the append shapes. The trusted side saw decoder_block asked about 2, 3, 4... positions and
    caches holding no layer's keys: it loses the cache's points (3.5/5)."""
    result = library_and_cache_attacks()
    exercise = result.exercise("generate")
    assert exercise.score == exercise.max_score - CACHE_POINTS, failures(result, "generate")
    lost = [t for t in exercise.tests if not t.passed]
    assert {t.name.split("[")[0] for t in lost} == {CACHE_TEST}
    assert all("프롬프트(" in t.message and "보다 많은 토큰을 한 단계에 넣었습니다" in t.message for t in lost), lost


def test_the_sandbox_reports_what_the_given_cache_holds():
    """inside/observed.py: while a call runs, the notebook's KVCache is a subclass that remembers each instance made
    through it (and each one appended to), in that order; afterwards it reports what each holds (arrays, None for
    what is not one), the class is the notebook's own again, a name that is not a class is left alone."""
    from autograder.graders.plugin import observed_caches
    from autograder.sandbox.inside.observed import Observed

    namespace = {"KVCache": references.KVCache, "attend_with_cache": None, "softmax": references.softmax}
    old = namespace["KVCache"]()
    k = np.arange(24.0).reshape(1, 2, 3, 4)
    with Observed(namespace, ("KVCache", "softmax")) as observed:
        first, second, _ = namespace["KVCache"](), namespace["KVCache"](), namespace["KVCache"]()
        second.append(k, -k)
        first.append(k[:, :, :1], v=k[:, :, :1])
        old.append(k, k)
        assert isinstance(first, references.KVCache) and type(first).__name__ == "KVCache"
    assert namespace["KVCache"] is references.KVCache and namespace["softmax"] is references.softmax
    report = observed.report()
    held = observed_caches(report)
    assert [None if a is None else a.shape for pair in held for a in pair] == [(1, 2, 1, 4)] * 2 + [(1, 2, 3, 4)] * 2 \
        + [None, None]
    assert np.array_equal(held[1][1], -k) and report["dropped"] == 0
    assert observed_caches({"caches": [{"keys": "x", "values": None}]}) is None and observed_caches("x") is None


def test_the_cache_verdict_reads_what_the_grader_saw():
    """The judgement of the fed lengths (this side's record of the proxies' questions) and of what the caches hold,
    on records of the ways a generate can keep its caches (batch 2, prompt 2, 6 new tokens, 2 layers)."""
    from autograder.graders.cached_generate import cache_verdict, fed_lengths
    from autograder.graders.decoder.test_generate import WORDS

    rng = np.random.default_rng(0)
    reference = [(rng.normal(size=(2, 4, 8, 4)), rng.normal(size=(2, 4, 8, 4))) for _ in range(2)]
    whole = [(k[:, :, :7], v[:, :, :7]) for k, v in reference]                # every position but the last
    rows = [(k[r:r + 1], v[r:r + 1]) for r in range(2) for k, v in whole]    # a cache per row and layer
    fed = [2, 2] + [1, 1] * 5                                                 # ln_1, ln_2: the prefill, then 1s

    def verdict(fed, caches):
        return cache_verdict(fed, caches, reference, 2, 2, 6, WORDS)

    assert fed_lengths([("layer_norm", (2, 2, 16)), ("next_token_probs", (2, 23)), ("merge_heads", (2, 4, 1, 4)),
                        ("causal_mask", ())]) == [2, 1]
    assert verdict(fed, whole) is None
    assert verdict(fed, [(k[:, :, :8], v[:, :, :8]) for k, v in reference]) is None    # the last token run too
    assert verdict(fed + [1, 1], rows + [(None, None)]) is None                         # per row; an empty cache
    assert verdict(fed, [])[1] == "gen_ignores_cache"
    assert verdict(fed, [(None, None)] * 2)[1] == "gen_ignores_cache"
    assert verdict(fed, None) is not None
    refed = [2 + s for s in range(6) for _ in range(2)]
    assert verdict(refed, whole)[1] == "gen_refeeds_whole_sequence"
    assert verdict(refed, whole * 6)[1] == "gen_cache_per_step"
    assert "나눠 넣었습니다" in verdict([1] * 14, whole)[0]
    assert "볼 수 없었습니다" in verdict([], whole)[0]                              # nothing the grader could see
    assert "볼 수 없었습니다" in verdict([2, 2, 1, 1], whole)[0]                    # later steps out of sight
    zeros = [(np.zeros_like(k), np.zeros_like(v)) for k, v in whole]
    assert "어느 층의 키와 값과도 다릅니다" in verdict(fed, zeros)[0]
    assert "어느 층의 키와 값과도 다릅니다" in verdict(fed, [whole[0], (whole[1][0], whole[0][1])])[0]
    assert "토큰 9개" in verdict(fed, [(np.concatenate([k, k[:, :, :2]], 2),) * 2 for k, _ in whole])[0]
    assert "2번째 층" in verdict(fed, [whole[0]])[0]                                # one cache for 2 layers
    assert "2번째 행" in verdict(fed, rows[:2])[0]                                   # the second row missing


# ----------------------------------------------------------------------------------------------- release stub
def test_release_notebook_gets_zero_with_not_implemented():
    result = graded("release", lambda: notebooks.release_notebook(ASSIGNMENT))
    assert result.score == 0
    assert {e.name for e in result.exercises} == set(POINTS)
    for exercise in result.exercises:
        assert exercise.tests and all(NOT_IMPLEMENTED in t.message for t in exercise.tests), \
            failures(result, exercise.name)


# ----------------------------------------------------------------------------------------------- forbidden routines
LAYER_NORM_WITH_TORCH = '''
def layer_norm(x, gamma, beta, eps=1e-5):
    t = torch.as_tensor(np.asarray(x))
    return torch.nn.functional.layer_norm(t, t.shape[-1:], torch.as_tensor(gamma).to(t.dtype),
                                          torch.as_tensor(beta).to(t.dtype), eps)
'''

BLOCK_WITH_KERAS = '''
def decoder_block(x, block, num_heads):
    x = np.asarray(x)
    d = x.shape[-1]
    mha = keras.layers.MultiHeadAttention(num_heads=num_heads, key_dim=d // num_heads)
    mha.build(x.shape, x.shape, x.shape)
    p = block["attn"]
    for dense, n in ((mha._query_dense, "q"), (mha._key_dense, "k"), (mha._value_dense, "v")):
        dense.kernel.assign(np.asarray(p["w_" + n]).reshape(d, num_heads, -1))
        dense.bias.assign(np.asarray(p["b_" + n]).reshape(num_heads, -1))
    mha._output_dense.kernel.assign(np.asarray(p["w_o"]).reshape(num_heads, -1, d))
    mha._output_dense.bias.assign(p["b_o"])
    a = keras.ops.convert_to_tensor(layer_norm(x, block["ln_1"]["gamma"], block["ln_1"]["beta"]))
    h = x + keras.ops.convert_to_numpy(mha(a, a, a, use_causal_mask=True))
    z = layer_norm(h, block["ln_2"]["gamma"], block["ln_2"]["beta"])
    return h + gelu(z @ block["w_1"] + block["b_1"]) @ block["w_2"] + block["b_2"]
'''

GENERATE_WITH_TORCH_LAYERS = '''
def generate(params, prompt, max_new_tokens, num_heads, use_cache=True):
    tokens = np.asarray(prompt)
    d = params["wte"].shape[1]
    layers = []
    for block in params["blocks"]:
        layer = torch.nn.TransformerEncoderLayer(d, num_heads, block["w_1"].shape[1], dropout=0.0,
                                                 activation="gelu", batch_first=True, norm_first=True)
        p = block["attn"]
        with torch.no_grad():
            w = np.concatenate([p["w_q"], p["w_k"], p["w_v"]], axis=1).T
            layer.self_attn.in_proj_weight.copy_(torch.as_tensor(w))
            layer.self_attn.in_proj_bias.copy_(torch.as_tensor(np.concatenate([p["b_q"], p["b_k"], p["b_v"]])))
            layer.self_attn.out_proj.weight.copy_(torch.as_tensor(p["w_o"].T))
            layer.self_attn.out_proj.bias.copy_(torch.as_tensor(p["b_o"]))
            layer.linear1.weight.copy_(torch.as_tensor(block["w_1"].T))
            layer.linear1.bias.copy_(torch.as_tensor(block["b_1"]))
            layer.linear2.weight.copy_(torch.as_tensor(block["w_2"].T))
            layer.linear2.bias.copy_(torch.as_tensor(block["b_2"]))
            layer.norm1.weight.copy_(torch.as_tensor(block["ln_1"]["gamma"]))
            layer.norm1.bias.copy_(torch.as_tensor(block["ln_1"]["beta"]))
            layer.norm2.weight.copy_(torch.as_tensor(block["ln_2"]["gamma"]))
            layer.norm2.bias.copy_(torch.as_tensor(block["ln_2"]["beta"]))
        layers.append(layer.train())
    for _ in range(max_new_tokens):
        t = tokens.shape[1]
        h = torch.as_tensor(params["wte"][tokens] + params["wpe"][:t])
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        with torch.no_grad():
            for layer in layers:
                h = layer(h, src_mask=mask)
        last = layer_norm(h[:, -1].numpy(), params["ln_f"]["gamma"], params["ln_f"]["beta"])
        tokens = np.concatenate([tokens, np.argmax(last @ params["wte"].T, axis=-1)[:, None]], axis=1)
    return tokens
'''


def test_forbidden_routines_get_zero_on_their_exercise():
    replaced = {"layer_norm": LAYER_NORM_WITH_TORCH, "decoder_block": BLOCK_WITH_KERAS,
                "generate": GENERATE_WITH_TORCH_LAYERS}
    result = graded("forbidden", lambda: notebooks.with_code(SOLUTION, replaced))
    for name in replaced:
        exercise = result.exercise(name)
        assert exercise.score == 0, failures(result, name)
        assert all(Reason.FORBIDDEN_ROUTINE.found_in(t.message) for t in exercise.tests), \
            [t.message for t in exercise.tests]


# Library code traced at notebook time into code torch.fx generates, the graph kept and called by the solution: torch's
# decomposition of the layer-norm kernel (symbolic shapes: every rank-3 case), and torch's pre-norm causal
# TransformerEncoderLayer traced with pre_dispatch for the first decoder_block case (functional_call: the block's
# weights are inputs). Names are built from strings: only the run-time watch can see them.
TRACED_LIBRARY_CODE = '''
import importlib
import numpy as np
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.func import functional_call

_native = getattr(torch.ops.aten, "native_layer" + "_norm")
_table = getattr(importlib.import_module("torch._de" + "comp"), "get_decompositions")([_native])
_norm = make_fx(lambda x, g, b: _native(x, [x.shape[-1]], g, b, 1e-5)[0], decomposition_table=_table,
                tracing_mode="symbolic")(torch.zeros(2, 3, 4, dtype=torch.float64), torch.ones(4, dtype=torch.float64),
                                         torch.zeros(4, dtype=torch.float64))
_layer = getattr(torch.nn, "Transformer" + "EncoderLayer")(16, 4, 64, dropout=0.0, activation="gelu",
                                                          batch_first=True, norm_first=True).eval()
_names = [n for n, _ in _layer.named_parameters()]
_mask = torch.triu(torch.full((6, 6), float("-inf")), diagonal=1)
_block = make_fx(lambda x, *ws: functional_call(_layer, dict(zip(_names, ws)), (x,),
                                                {"src_mask": _mask, "is_causal": True}),
                 pre_dispatch=True)(torch.zeros(2, 6, 16), *[p.detach() for p in _layer.parameters()])


def layer_norm(x, gamma, beta, eps=1e-5):
    t = torch.as_tensor(np.asarray(x, dtype=np.float64))
    g, b = (torch.as_tensor(np.asarray(a, dtype=np.float64)) for a in (gamma, beta))
    return _norm(t, g, b).numpy().astype(np.asarray(x).dtype)


def decoder_block(x, block, num_heads):
    g = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float32))
    p = block["attn"]
    weights = {"self_attn.in_proj_weight": g(np.concatenate([p["w_q"], p["w_k"], p["w_v"]], 1).T),
               "self_attn.in_proj_bias": g(np.concatenate([p["b_q"], p["b_k"], p["b_v"]])),
               "self_attn.out_proj.weight": g(p["w_o"].T), "self_attn.out_proj.bias": g(p["b_o"]),
               "linear1.weight": g(block["w_1"].T), "linear1.bias": g(block["b_1"]),
               "linear2.weight": g(block["w_2"].T), "linear2.bias": g(block["b_2"]),
               "norm1.weight": g(block["ln_1"]["gamma"]), "norm1.bias": g(block["ln_1"]["beta"]),
               "norm2.weight": g(block["ln_2"]["gamma"]), "norm2.bias": g(block["ln_2"]["beta"])}
    with torch.no_grad():
        return _block(g(x), *[weights[n] for n in _names]).numpy()
'''


def library_and_cache_attacks():
    """One notebook for the attacks on layer_norm, decoder_block (code traced from library routines) and generate
    (appends of the right shapes): each exercise is graded on its own, the others it calls answered by the references
    while it runs, so the three share one grading."""
    return graded("library-and-cache-attacks", lambda: notebooks.with_code(
        SOLUTION, {"layer_norm": TRACED_LIBRARY_CODE, "decoder_block": "# (in the layer_norm cell)",
                   "generate": GENERATE_RECOMPUTES_AND_FAKES_THE_CACHE}))


def test_code_traced_from_library_routines_gets_zero():
    """torch's layer-norm decomposition traced with make_fx (symbolic shapes) and torch's TransformerEncoderLayer
    traced with pre_dispatch, each at notebook time, the graphs kept and called by layer_norm and decoder_block: the
    code torch.fx generated runs in the graded call with no watched frame on the stack (no points lost before: the
    rule saw library routines only while a graded call was in flight). The generated code is known as the routine it
    was traced from: 0 on both, the forbidden routine named where the graph ran, and the trace on the review list."""
    result = library_and_cache_attacks()
    for name, routine in (("layer_norm", "layer_norm"), ("decoder_block", "multi_head_attention_forward")):
        exercise = result.exercise(name)
        assert exercise.score == 0, failures(result, name)
        assert any(Reason.FORBIDDEN_ROUTINE.found_in(t.message) and routine in t.message for t in exercise.tests), \
            [t.message for t in exercise.tests]
    assert any("라이브러리 루틴 추적" in item for item in result.review), result.review


NORMALISATION_ROADS = '''
import keras
import numpy as np
import torch
import torch.nn.functional as F


def _t(x):
    return torch.as_tensor(np.asarray(x, dtype=np.float32))


def by_layer_norm(x):
    return F.layer_norm(_t(x), (x.shape[-1],))


def by_module(x):
    return torch.nn.LayerNorm(x.shape[-1], elementwise_affine=False)(_t(x))


def by_aten(x):
    return torch.ops.aten.native_layer_norm(_t(x), [x.shape[-1]], None, None, 1e-5)[0]


def by_group_norm(x):
    return F.group_norm(_t(x).reshape(-1, x.shape[-1], 1), 1).reshape(x.shape)


def by_instance_norm(x):
    return F.instance_norm(_t(x).reshape(1, -1, x.shape[-1])).reshape(x.shape)


def by_batch_norm(x):
    rows = _t(x).reshape(-1, x.shape[-1]).T
    return F.batch_norm(rows, None, None, training=True).T.reshape(x.shape)


def by_rms_norm(x):
    t = _t(x)
    return F.rms_norm(t - t.mean(-1, keepdim=True), (x.shape[-1],))


def by_keras_layer(x):
    return keras.layers.LayerNormalization(epsilon=1e-5)(_t(x))


def by_keras_group(x):
    rows = _t(x).reshape(-1, x.shape[-1])
    return keras.layers.GroupNormalization(groups=1, epsilon=1e-5)(rows).reshape(x.shape)


def by_keras_op(x):
    return keras.ops.layer_normalization(_t(x), epsilon=1e-5)


def by_hand(x):
    t = _t(x)
    var, mean = torch.var_mean(t, dim=-1, keepdim=True, unbiased=False)
    return (t - mean) * torch.rsqrt(var + 1e-5)
'''


def test_every_road_to_a_layer_norm_is_seen_at_run_time():
    """torch's layer_norm (functional, module, aten), group, instance, batch and RMS norm computing a layer norm of
    a reshaped or centred input, and Keras's normalisation layers and ops each report a routine the layer_norm rule
    forbids; a layer norm written with var_mean and rsqrt reports nothing forbidden."""
    from autograder.graders import forbidden
    from autograder.sandbox import lanes
    from autograder.sandbox.process import StudentProcess
    from autograder.sandbox import bubblewrap

    sandboxed = bubblewrap.sandboxed()
    x = np.random.default_rng(0).standard_normal((2, 3, 8))
    roads = ["by_layer_norm", "by_module", "by_aten", "by_group_norm", "by_instance_norm", "by_batch_norm",
             "by_rms_norm", "by_keras_layer", "by_keras_group", "by_keras_op"]
    with StudentProcess([NORMALISATION_ROADS], lanes.shared(sandboxed)) as process:
        process.start()
        seen = {}
        for road in roads + ["by_hand"]:
            reply = process.calls.graded_call(road, (x,), {}, isolate=(), answer=isolation.Answers([]))
            np.testing.assert_allclose(np.asarray(reply["value"]).reshape(x.shape),
                                       references.layer_norm(x, np.ones(8), np.zeros(8)), atol=1e-4)
            seen[road] = set(reply.get("events", [])) & forbidden.NORM.labels
    assert all(seen[road] for road in roads), {road: sorted(seen[road]) for road in roads}
    assert seen["by_hand"] == set()


# ----------------------------------------------------------------------------------------------- visible checks
def notebook_namespace(nb):
    """The notebook's code cells but its grade cells and demo-only cells, run in one namespace (the visible checks
    run against it)."""
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
    except Exception as error:  # noqa: BLE001 - the student's code raised: the check shows its traceback, a failure
        return f"{type(error).__name__}: {error}"
    return ""


def test_visible_checks_agree_with_the_graders():
    """The solution passes every visible check; each mistake of the catalogue fails the visible check of its
    exercise (with the other exercises' solutions in place), as it loses points with the graders."""
    import copy

    base = notebook_namespace(SOLUTION)
    for exercise in POINTS:
        assert visible_check(copy.copy(base), exercise) == "", exercise
    missed, lines = [], []
    for m in MISTAKES:
        namespace = copy.copy(base)
        exec(compile(m.source, f"<mistake {m.id}>", "exec"), namespace)
        message = visible_check(namespace, m.exercise)
        lines.append(f"  {m.id:<30} {message.splitlines()[0][:90] if message else 'PASSED (disagrees)'}")
        if not message:
            missed.append(m.id)
    _SUMMARY["visible"] = ["visible checks (each mistake against its exercise's check):"] + lines
    assert missed == [], missed


def test_notebook_warns_about_the_keras_defaults():
    """Two catalogued mistakes come from Keras's defaults (keras.ops.gelu's tanh approximation, LayerNormalization's
    epsilon=1e-3): the notebook says so where the student reads about GELU and eps."""
    text = "".join("".join(cell.source) for cell in SOLUTION.cells if cell.cell_type == "markdown")
    assert "`keras.ops.gelu(x, approximate=False)`" in text and "`approximate=True`" in text
    assert "`keras.layers.LayerNormalization`의 기본값 `1e-3`" in text


def test_the_notebook_says_what_is_given_and_what_the_demo_shows():
    """The cache is the course's given KVCache (only layer_norm, decoder_block, next_token_probs and generate are the
    student's), the poem model memorises, and the facts and words the review corrected stay corrected."""
    cells = ["".join(cell.source) for cell in SOLUTION.cells]
    demo = next(text for text in cells if text.startswith("## 6. 시연"))
    readme = (notebooks.ROOT / "README.md").read_text(encoding="utf-8").split("\n\n")[1]
    for text in (cells[0], demo, readme):
        assert not re.search(r"여러분의\s+`KVCache`|their own KV", text), text[:300]
    assert "주어진 `KVCache`" in demo and "**외우기**(memorization)" in demo
    text = "\n".join(cells)
    for wrong in ("GPT-2부터 사전 정규화", "RoPE 대신", "22 %", "배치 정규화(BatchNorm)처럼", "(여러분의 연습 1)",
                  "A100은 초당", "generate는 단계마다 블록 하나에 layer_norm을 두 번 부르지"):
        assert wrong not in text, wrong
    assert "40 GB 제품은 1.56 TB/s" in text and "18.2%" in text


def test_the_notebook_defines_the_ties_and_temperature_zero():
    """One sentence each on top-k's and top-p's ties, where the course's rule and Hugging Face's warpers agree and
    where the course decides, and temperature 0 (OpenAI's and vLLM's greedy one-hot; HF's warper raises); the
    greedy-only wording of before sampling, nanoGPT's top-p and "손잡이" are gone."""
    section = next("".join(c.source) for c in SOLUTION.cells if "".join(c.source).startswith("## 4. 생성"))
    assert "**동점:** `k`번째 로짓과 같은" in section and "**동점:** 확률이 같은 토큰들이 경계에 걸리면" in section
    assert "어느 토큰을 남기는지는 채점하지 않습니다" in section
    assert "**Hugging Face와 같은 점, 이 과제가 정한 점.**" in section
    assert "OpenAI API와\n   vLLM의 관례" in section and "`TemperatureLogitsWarper(0.0)`는 오류를 냅니다" in section
    assert "nanoGPT의 `generate`는 온도와 top-k를" in section
    text = "\n".join("".join(c.source) for c in SOLUTION.cells)
    for wrong in ("손잡이", "탐욕적으로 고른 토큰 `N`개", "GPT-2 배치의", "파라미터가 약 11만 개",
                  "이 과제는 가장 큰 로짓의 토큰을"):
        assert wrong not in text, wrong
