"""The hidden graders of the `kv_cache` assignment, proven both ways.

* the instructor's solution and every alternative correct implementation (tests/implementations/kv_cache_*.py:
  torch tensors, float64 loops/einsum) get full marks on every exercise;
* every mistake of the catalogue (autograder/graders/exercises/*.py) loses points on its exercise, and the
  feedback names every diagnosable one; exercises that no mistake of the same notebook touches keep full marks
  (flash_attention's memory cases run in the notebooks of mistakes where they decide something: MEMORY_GROUPS);
* a flash attention that materialises the score matrix loses the memory tests and nothing else, one that
  materialises only the causal mask loses the long-prefix memory case; a float result of kv_cache_bytes loses the
  int test and nothing else; a RoPE cache of raw keys re-rotated at every step loses only the cache-content test;
* the static forbidden-routine scan follows what a name is bound to when the cells have run in order;
* the untouched release notebook gets 0 with "아직 구현하지 않았습니다" on every exercise;
* torch SDPA inside grouped_query_attention or flash_attention gives 0 on those exercises.

Each grading runs the notebook's code in a student process (5-10 s), so independent mistakes share a notebook:
two mistakes go together only when neither exercise uses the other, read from the solution cells plus what the
graders themselves use (the attend_with_cache graders hand the student's own KVCache to attend_with_cache).
The seeds are fixed for reproducibility; ``KV_CACHE_GRADER_SEED=<int>`` shifts them all to try other inputs.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

from autograder.grade import GradeResult  # noqa: E402
from autograder.graders import references  # noqa: E402
from autograder.graders import registry  # noqa: E402
from autograder.messages import Reason  # noqa: E402


from tests.helpers import notebooks  # noqa: E402
from tests.helpers.graded import GradingCache, failures, scores  # noqa: E402

pytestmark = pytest.mark.slow

ASSIGNMENT = "kv_cache"
BASE_SEED = int(os.environ.get("KV_CACHE_GRADER_SEED", "20240612"))

# Points of every exercise, from its record (the notebook's grade cells and the graders carry the same numbers).
POINTS = {exercise.name: exercise.points for exercise in registry.of_assignment(ASSIGNMENT)}
NOT_IMPLEMENTED = Reason.NOT_IMPLEMENTED.korean()

MISTAKES = registry.mistakes_of("kv_cache")
SOLUTION = notebooks.solution_notebook(ASSIGNMENT)
# exercise -> exercises it needs (transitively): what its solution calls, plus the graders' own use of KVCache.
DEPENDS = notebooks.dependencies(SOLUTION)
for _exercise in ("attend_with_cache", "attend_with_rope_cache"):
    DEPENDS[_exercise] = DEPENDS.get(_exercise, set()) | {"KVCache"}


# ----------------------------------------------------------------------------------------------- grading cache
CACHE = GradingCache(ASSIGNMENT, BASE_SEED)
graded = CACHE.graded
_SUMMARY = CACHE.summary


# ----------------------------------------------------------------------------------------------- mistakes: groups
def mistake_dependencies(mistake) -> set:
    """Exercises the mistake's code uses, directly or through the solution's functions and the graders."""
    uses = (notebooks.names_used(mistake.source) & set(DEPENDS)) | DEPENDS.get(mistake.exercise, set())
    return notebooks.closure(uses - {mistake.exercise}, DEPENDS)


GROUPS = CACHE.mistake_groups(MISTAKES, mistake_dependencies, SOLUTION)
GROUP_OF = CACHE.group_of

# flash_attention's two memory cases (128 queries over 524,288 keys; 8,192 queries after 8,192 cached tokens) are half
# of a grading's time (10 of 20 s, loaded machine). A notebook of mistakes runs them only where they decide something:
# where its flash_attention is a mistake they are for, and in the notebook whose neighbour holds memory between calls
# (kvcache_class_level_storage keeps every array on the class), where the solution's untouched flash_attention must
# still pass them (the memory rule's verdict does not leak from another exercise). Elsewhere they would grade the
# solution's flash_attention again (the solution's own grading runs them) or a flash_attention whose values already
# lose points (test_mistake_loses_points, test_diagnosable_mistakes_are_named read the other tests).
MEMORY_TESTS = "memory_stays_below_a_full_score_matrix"
MEMORY_GROUPS = {GROUP_OF[m] for m in ("flash_materializes_scores", "flash_full_causal_mask",
                                       "kvcache_class_level_storage")}


def graded_group(index: int) -> GradeResult:
    return CACHE.graded_group(index, select=None if index in MEMORY_GROUPS else f"not {MEMORY_TESTS}")


# ----------------------------------------------------------------------------------------------- summary
@pytest.fixture(scope="module", autouse=True)
def summary(request):
    """Prints which mistakes were caught and named, and what each grading cost (visible without -s)."""
    yield
    CACHE.report(request, "kv_cache graders")


# ----------------------------------------------------------------------------------------------- no grading needed




def test_mistakes_differ_from_the_reference_on_the_graders_inputs():
    """Sanity of the catalogue in this process: each value-level mistake gives a wrong answer somewhere."""
    fn = {m.id: m.function() for m in MISTAKES}
    assert fn["kv_bytes_missing_factor_2"](12, 12, 64, 1) != 36_864
    assert fn["kv_bytes_bits_not_bytes"](12, 12, 64, 1) != 36_864
    assert fn["kv_bytes_ignores_batch"](32, 8, 128, 10, 4) != references.kv_cache_bytes(32, 8, 128, 10, 4)
    assert fn["kv_bytes_query_heads"](12, 12, 64, 1) != 36_864
    as_float = fn["kv_bytes_float_result"](12, 12, 64, 1)
    assert as_float == 36_864 and isinstance(as_float, float)
    per_token = references.kv_cache_bytes(36, 8, 128, 1)
    assert fn["max_tokens_excludes_exact_fit"](4096 * per_token, 36, 8, 128) == 4095
    assert fn["max_tokens_ceil"](4096 * per_token + 1, 36, 8, 128) == 4097
    huge = 2**45 * references.kv_cache_bytes(12, 12, 64, 1) - 1
    assert fn["max_tokens_int_of_float_division"](huge, 12, 12, 64) == 2**45
    assert references.max_cached_tokens(huge, 12, 12, 64) == 2**45 - 1
    for mistake in ("sw_window_off_by_one", "sw_top_left", "sw_symmetric_band"):
        assert not np.array_equal(fn[mistake](3, 10, 4), references.sliding_window_mask(3, 10, 4)), mistake
    rng = np.random.default_rng(1)
    q, k, v = (rng.normal(size=(1, 2, 6, 8)) for _ in range(3))
    expected = references.rope_causal_attention(q, k, v)
    for mistake in ("rope_positions_restart", "rope_rerotates_cached_keys", "rope_caches_unrotated_keys",
                    "rope_freq_i_over_d", "rope_interleaved_pairs"):
        cache = references.KVCache()
        got = np.concatenate([fn[mistake](q[:, :, a:b], k[:, :, a:b], v[:, :, a:b], cache)
                              for a, b in ((0, 4), (4, 5), (5, 6))], axis=2)
        assert not np.allclose(got, expected, atol=1e-3), mistake
    # right outputs, wrong cache: the cache-content test is what catches it
    cache = references.KVCache()
    got = np.concatenate([fn["rope_rotates_whole_cache_each_step"](q[:, :, a:b], k[:, :, a:b], v[:, :, a:b], cache)
                          for a, b in ((0, 4), (4, 5), (5, 6))], axis=2)
    np.testing.assert_allclose(got, expected, atol=1e-10)
    assert not np.allclose(cache.keys, references.apply_rope(k, np.arange(6)))


def test_rope_reference_has_the_contract_properties():
    """The float64 RoPE reference: rotate-half layout, norms kept, position 0 is the identity, and scores depend
    only on the distance m - n; the whole-sequence reference equals a cached prefill + decoding replayed here."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 5, 8))
    rotated = references.apply_rope(x, np.arange(5))
    np.testing.assert_allclose(np.linalg.norm(rotated, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-12)
    np.testing.assert_allclose(references.apply_rope(x, np.zeros(5, int)), x)
    # the pair (x[0], x[4]) at position 1 is turned by exactly 1 radian (frequency base ** 0)
    one = references.apply_rope(x[:, 1:2], [1])
    np.testing.assert_allclose(one[..., 0], x[:, 1:2, 0] * np.cos(1) - x[:, 1:2, 4] * np.sin(1), rtol=1e-12)
    q, k = rng.normal(size=(1, 8)), rng.normal(size=(1, 8))
    scores = [(references.apply_rope(q, [m]) @ references.apply_rope(k, [n]).T).item()
              for m, n in ((5, 3), (12, 10), (1002, 1000))]
    np.testing.assert_allclose(scores, scores[0], rtol=1e-9)
    q, k, v = (rng.normal(size=(1, 2, 7, 8)) for _ in range(3))
    reference = references.rope_causal_attention(q, k, v)
    cache, outs = references.KVCache(), []
    for a, b in ((0, 3), (3, 4), (4, 7)):
        pos = np.arange(a, b)
        keys, values = cache.append(references.apply_rope(k[:, :, a:b], pos), v[:, :, a:b])
        outs.append(references.scaled_dot_product_attention(references.apply_rope(q[:, :, a:b], pos), keys, values,
                                                            references.causal_mask(b - a, b)))
    np.testing.assert_allclose(np.concatenate(outs, axis=2), reference, atol=1e-12)


def test_keras_gqa_layer_maps_query_heads_to_kv_heads():
    """The Keras GroupQueryAttention layer equals its own projections + the torch GQA reference (h // g)
    + its output projection: the assumption behind the grader's Keras test, checked without a student."""
    from autograder.graders.kv_cache import keras_gqa

    rng = np.random.default_rng(0)
    for masked in (False, True):
        out, q, k, v, mask, w_o, b_o = keras_gqa(rng, 2, 4, 6, 12, 6, 2, 4, masked)
        heads = references.grouped_query_attention(q, k, v, mask)                      # (B, Hq, Tq, d)
        np.testing.assert_allclose(np.einsum("buqh,uhm->bqm", heads, w_o) + b_o, out, atol=1e-4, rtol=1e-4)
        # A tiled mapping (h % Hkv) gives something else: the Keras test tells the two apart.
        tiled = references.scaled_dot_product_attention(q, np.tile(k, (1, 3, 1, 1)), np.tile(v, (1, 3, 1, 1)),
                                                        mask)
        assert not np.allclose(np.einsum("buqh,uhm->bqm", tiled, w_o) + b_o, out, atol=1e-2)


# ----------------------------------------------------------------------------------------------- full marks
def test_solution_gets_full_marks():
    result = graded("solution", lambda: SOLUTION)
    assert [e for e in result.notebook_errors if "샌드박스 없이" not in e] == []
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


def test_there_are_two_alternative_implementations():
    assert len(notebooks.implementations(ASSIGNMENT)) >= 2


# ----------------------------------------------------------------------------------------------- mistakes
def test_mistake_groups_are_independent():
    """No notebook of mistakes holds two mistakes of one exercise or a mistake whose exercise uses another's."""
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


@pytest.mark.parametrize("index", range(len(GROUPS)))
def test_untouched_exercises_keep_full_marks(index):
    """In a notebook of mistakes, an exercise that no mistake touches (not even through what it uses) keeps
    every point: failures do not leak between exercises."""
    result = graded_group(index)
    memory = [t.name for t in result.exercise("flash_attention").tests if t.name.startswith(MEMORY_TESTS)]
    assert len(memory) == (len(MEMORY_CASES) if index in MEMORY_GROUPS else 0), memory
    mutated = {m.exercise for m in GROUPS[index]}
    for exercise in result.exercises:
        if exercise.name not in mutated and not DEPENDS.get(exercise.name, set()) & mutated:
            assert exercise.score == exercise.max_score, failures(result, exercise.name)


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
        lines.append(f"  {m.id:<36} {'caught' if lost else 'MISSED':<7} "
                     f"{'named' if found else ('not named' if m.diagnosable else 'not diagnosable')}"
                     f"  ({exercise.score:g}/{exercise.max_score:g})")
    diagnosable = [m for m in MISTAKES if m.diagnosable]
    _SUMMARY["mistakes"] = [f"mistakes caught {len(caught)}/{len(MISTAKES)}, "
                            f"named {len(named)}/{len(diagnosable)} diagnosable "
                            f"(not named: {', '.join(unnamed) or 'none'})"] + lines
    assert len(caught) == len(MISTAKES)
    assert unnamed == [], f"not named: {unnamed}"


def test_materialising_flash_loses_only_the_memory_test():
    """A flash_attention that builds the full score matrix is right everywhere but runs out of its memory."""
    exercise = graded_group(GROUP_OF["flash_materializes_scores"]).exercise("flash_attention")
    lost = [t for t in exercise.tests if not t.passed]
    assert {t.name.split("[")[0] for t in lost} == {"memory_stays_below_a_full_score_matrix"}, failures(
        graded_group(GROUP_OF["flash_materializes_scores"]), "flash_attention")
    assert all("메모리" in t.message for t in lost)
    assert exercise.score == exercise.max_score - 1


def test_full_mask_flash_loses_only_the_long_prefix_memory_test():
    """A flash_attention that blocks the scores but builds causal_mask(Tq, Tk) whole is right everywhere and fits
    beside 128 queries over 524,288 keys (a 64 MiB mask), but its 128 MiB mask does not fit after a long cached
    prefix; the message says masks count too (the notebook's visible check and hint say the same)."""
    result = graded_group(GROUP_OF["flash_full_causal_mask"])
    exercise = result.exercise("flash_attention")
    lost = [t for t in exercise.tests if not t.passed]
    assert [t.name for t in lost] == ["memory_stays_below_a_full_score_matrix[mask-8192-after-8192-cached]"], \
        failures(result, "flash_attention")
    assert "마스크" in lost[0].message
    assert exercise.score == exercise.max_score - 0.5


def test_rope_cache_of_raw_keys_loses_only_the_cache_test():
    """Raw keys in the cache, rotated again at every step: right outputs, so only the cache-content test fails,
    and the feedback names the mistake."""
    mistake = "rope_rotates_whole_cache_each_step"
    exercise = graded_group(GROUP_OF[mistake]).exercise("attend_with_rope_cache")
    lost = [t for t in exercise.tests if not t.passed]
    assert [t.name for t in lost] == ["cache_holds_keys_rotated_at_their_positions"], failures(
        graded_group(GROUP_OF[mistake]), "attend_with_rope_cache")
    assert mistake in {d.id for d in exercise.diagnosis}
    assert exercise.score == exercise.max_score - 0.6


def test_float_cache_size_loses_only_the_int_test():
    """kv_cache_bytes returning the right value as a float loses the int test, with a Korean explanation."""
    exercise = graded_group(GROUP_OF["kv_bytes_float_result"]).exercise("kv_cache_bytes")
    lost = [t for t in exercise.tests if not t.passed]
    assert [t.name for t in lost] == ["returns_an_int"]
    assert "정수(int)가 아니라 float" in lost[0].message
    assert 0 < exercise.score < exercise.max_score


# ----------------------------------------------------------------------------------------------- release stub
def test_release_notebook_gets_zero_with_not_implemented():
    result = graded("release", lambda: notebooks.release_notebook(ASSIGNMENT))
    assert result.score == 0
    assert {e.name for e in result.exercises} == set(POINTS)
    for exercise in result.exercises:
        assert exercise.tests and all(NOT_IMPLEMENTED in t.message for t in exercise.tests), \
            failures(result, exercise.name)


# ----------------------------------------------------------------------------------------------- forbidden routines
GQA_WITH_TORCH = '''
import torch
import torch.nn.functional as F

def grouped_query_attention(query, key, value, mask=None):
    q, k, v = (torch.as_tensor(np.asarray(a)) for a in (query, key, value))
    if q.shape[1] % k.shape[1]:
        raise ValueError("heads")
    m = None if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True)
'''

FLASH_WITH_TORCH = '''
import torch
from torch.nn.attention.bias import causal_lower_right

def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = (torch.as_tensor(np.asarray(a)) for a in (query, key, value))
    bias = causal_lower_right(q.shape[-2], k.shape[-2]) if causal else None
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
'''


def test_forbidden_routines_get_zero_on_their_exercise():
    replaced = {"grouped_query_attention": GQA_WITH_TORCH, "flash_attention": FLASH_WITH_TORCH}
    result = graded("forbidden", lambda: notebooks.with_code(SOLUTION, replaced))
    for name in replaced:
        exercise = result.exercise(name)
        assert exercise.score == 0, failures(result, name)
        assert all(Reason.FORBIDDEN_ROUTINE.found_in(t.message) for t in exercise.tests), \
            [t.message for t in exercise.tests]
    for exercise in result.exercises:   # those that call a replaced one are graded with its reference (isolation)
        if exercise.name not in replaced:
            assert exercise.score == exercise.max_score, failures(result, exercise.name)


# ----------------------------------------------------------------------------------------------- static scan
NOTEBOOK_HELPER = "def scaled_dot_product_attention(query, key, value, mask=None):\n    return query\n"
GQA_WITH_HELPER = ("def grouped_query_attention(query, key, value, mask=None):\n"
                   "    return scaled_dot_product_attention(query, key, value, mask)\n")
TORCH_IMPORT = "from torch.nn.functional import scaled_dot_product_attention\n"


@pytest.mark.parametrize("cells, flagged", [
    pytest.param([NOTEBOOK_HELPER, GQA_WITH_HELPER + "\n\ndef compare(q, k, v):\n    " + TORCH_IMPORT
                  + "    return scaled_dot_product_attention(q, k, v)\n"], False,
                 id="import-local-to-another-function"),
    pytest.param([TORCH_IMPORT + "\n" + NOTEBOOK_HELPER + "\n" + GQA_WITH_HELPER], False,
                 id="import-above-the-helper-same-cell"),
    pytest.param([TORCH_IMPORT, NOTEBOOK_HELPER, GQA_WITH_HELPER], False, id="scratch-cell-above-the-helper"),
    pytest.param([NOTEBOOK_HELPER, TORCH_IMPORT, GQA_WITH_HELPER], True, id="scratch-cell-shadows-the-helper"),
    pytest.param([NOTEBOOK_HELPER, GQA_WITH_HELPER, "try:\n    " + TORCH_IMPORT + "except ImportError:\n    pass\n"],
                 True, id="import-in-try-after-the-helper"),
])
def test_static_scan_follows_what_the_name_is_bound_to(cells, flagged):
    """The static scan counts torch's routine imported under the helper's name only when the notebook's global name
    ends up bound to it (cells run in order): a scratch import above the helper or inside another function does
    not make the notebook's own numpy helper a forbidden call."""
    from autograder.graders.forbidden import static_violations
    from autograder.graders.registry import record

    found = static_violations("grouped_query_attention", record("grouped_query_attention").forbidden, cells)
    assert found == (["scaled_dot_product_attention"] if flagged else []), found


# ----------------------------------------------------------------------------------------------- the memory rule
# A flash_attention that materialises the whole score matrix in a forked child (which first raises its inherited
# soft address-space limit back to the hard one): the parent's memory stays flat. Issue 13: the memory rule counts
# the student's whole process tree; the sandbox refuses fork to student code, so the child is never made.
FLASH_IN_A_CHILD = '''
import io
import os
import resource


def _full(q, k, v, causal):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])                 # (..., Tq, Tk): every score at once
    if causal:
        tq, tk = s.shape[-2:]
        s = np.where(np.arange(tk)[None, :] <= np.arange(tq)[:, None] + (tk - tq), s, -np.inf)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ v


def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    if k.shape[-2] < 8192:                  # only the memory tests' 8,192 keys and more
        return _full(q, k, v, causal)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY,) * 2 if
                           resource.getrlimit(resource.RLIMIT_AS)[1] == resource.RLIM_INFINITY else
                           (resource.getrlimit(resource.RLIMIT_AS)[1],) * 2)
        buf = io.BytesIO()
        np.save(buf, _full(q, k, v, causal))
        data = buf.getvalue()
        while data:
            data = data[os.write(write, data):]
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 20):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return np.load(io.BytesIO(b"".join(chunks)))
'''


def test_memory_rule_counts_a_forked_child():
    """The materialising flash_attention run in a forked child loses the memory test (and only it)."""
    result = graded("flash-in-a-child", lambda: notebooks.with_code(SOLUTION, {"flash_attention": FLASH_IN_A_CHILD}))
    exercise = result.exercise("flash_attention")
    lost = [t.name for t in exercise.tests if not t.passed]
    assert lost and all(name.startswith("memory_stays_below_a_full_score_matrix[") for name in lost), \
        failures(result, "flash_attention")
    assert exercise.score == exercise.max_score - 1


# A flash_attention whose memory grows with Tk without ever holding a score matrix in its resident memory: 64 query
# rows at a time with a softmax over every key (row chunking), and for the long cached prefix the full causal mask
# written to four 32 MiB files of its scratch folder (a tmpfs) and read back a key block at a time. Both got full marks
# (the memory rule measured resident memory only, and no case had keys enough for row chunking to show).
ROWS_AND_MASK_FILES = '''
import os


def _blocked_from_files(q, k, v, block_size):
    tq, tk = q.shape[-2], k.shape[-2]
    quarter = -(-tk // 4)
    for part in range(4):                       # the whole mask, keys by queries, in four files
        keys = np.arange(part * quarter, min(tk, (part + 1) * quarter))
        (keys[:, None] <= np.arange(tq)[None, :] + (tk - tq)).tofile(f"mask{part}")
    m = np.full((tq, 1), -np.inf)
    l, acc = np.zeros((tq, 1)), np.zeros((tq, v.shape[-1]))
    for s0 in range(0, tk, block_size):
        s1 = min(s0 + block_size, tk)
        part, first = divmod(s0, quarter)
        with open(f"mask{part}", "rb") as fh:   # this block's keys, read back from the files
            fh.seek(first * tq)
            visible = np.frombuffer(fh.read((s1 - s0) * tq), dtype=bool).reshape(s1 - s0, tq).T
        s = np.where(visible, q @ k[s0:s1].T / np.sqrt(q.shape[-1]), -np.inf)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        base = np.where(np.isfinite(m_new), m_new, 0.0)
        p, alpha = np.exp(s - base), np.exp(m - base)
        l, acc, m = alpha * l + p.sum(axis=-1, keepdims=True), alpha * acc + p @ v[s0:s1], m_new
    return acc / l


def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    tq, tk = q.shape[-2], k.shape[-2]
    if causal and q.ndim == 2 and tq * tk >= 1 << 27:
        return _blocked_from_files(q, k, v, block_size)
    out = np.empty(q.shape[:-1] + v.shape[-1:])
    for r0 in range(0, tq, 64):                 # 64 query rows at a time, a softmax over every key
        s = q[..., r0:r0 + 64, :] @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        if causal:
            s = np.where(np.arange(tk) <= np.arange(r0, min(r0 + 64, tq))[:, None] + (tk - tq), s, -np.inf)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        out[..., r0:r0 + 64, :] = (w / w.sum(axis=-1, keepdims=True)) @ v
    return out
'''


def test_memory_that_grows_with_the_keys_loses_the_memory_tests():
    """Row chunking loses the long-key memory case, the mask kept in scratch files the long-prefix one; both are
    right everywhere else."""
    result = graded("rows-and-mask-files",
                    lambda: notebooks.with_code(SOLUTION, {"flash_attention": ROWS_AND_MASK_FILES}))
    exercise = result.exercise("flash_attention")
    lost = {t.name: t.message for t in exercise.tests if not t.passed}
    assert sorted(lost) == ["memory_stays_below_a_full_score_matrix[keys-128x524288]",
                            "memory_stays_below_a_full_score_matrix[mask-8192-after-8192-cached]"], \
        failures(result, "flash_attention")
    assert all("메모리" in message for message in lost.values()), lost
    assert {e.name: e.score for e in result.exercises if e.name != "flash_attention"} == \
        {name: points for name, points in POINTS.items() if name != "flash_attention"}


# ----------------------------------------------------------------------------------------------- the visible check
# The notebook's visible flash check measures memory the way the hidden grader does (a block of queries after a long
# cached prefix, Tq much smaller than Tk; the peak resident memory, numpy and torch alike) and must give the grader's
# verdict on every implementation tried here: the sandboxed gradings above (the float32 solution, the float64 loops,
# numpy blocks of queries, torch; the mistakes that build the whole score matrix or the whole mask) and, graded in this
# process by the same grader test (tests/helpers/inprocess.py measures VmHWM as the grader does), implementations that
# pick their own key block of 256 or 1,024 in float32 or float64, and a torch one that builds the whole mask (the
# in-process measure has no address-space limit: a verdict here must not hang on it, so the big block is one whose
# resident memory alone is over the allowance).
FORCED_BLOCK = '''
_flash_given_block = flash_attention


def flash_attention(query, key, value, block_size=64, causal=False):
    return _flash_given_block(query, key, value, {block}, causal)
'''

TORCH_FULL_MASK = '''
import torch


def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = (torch.as_tensor(np.asarray(a)) for a in (query, key, value))
    tq, tk = q.shape[-2], k.shape[-2]
    visible = torch.arange(tk)[None, :] <= torch.arange(tq)[:, None] + (tk - tq)        # (Tq, Tk): the whole mask
    m = torch.full(q.shape[:-1] + (1,), float("-inf"), dtype=q.dtype)
    total, acc = torch.zeros_like(m), torch.zeros(q.shape[:-1] + v.shape[-1:], dtype=q.dtype)
    for s in range(0, tk, block_size):
        scores = q @ k[..., s:s + block_size, :].transpose(-1, -2) / q.shape[-1] ** 0.5
        if causal:
            scores = scores.masked_fill(~visible[:, s:s + block_size], float("-inf"))
        new = torch.maximum(m, scores.amax(-1, keepdim=True))
        base = torch.where(torch.isinf(new), torch.zeros_like(new), new)
        p, alpha = torch.exp(scores - base), torch.exp(m - base)
        total, acc, m = alpha * total + p.sum(-1, keepdim=True), alpha * acc + p @ v[..., s:s + block_size, :], new
    return acc / total
'''


@pytest.fixture(scope="module")
def kernels():
    """Fresh kernels for the notebook's visible check (tests/helpers/kernels.py), forked from one warm server."""
    from tests.helpers.kernels import Kernels

    with Kernels() as server:
        yield server


def visible_memory_check_passes(kernels, flash_source: str) -> bool:
    """The notebook's grade cell of flash_attention (with its helpers and given functions) run on ``flash_source`` in
    a fresh kernel: True when it passes, False when its memory check fails (any other failure is an error).

    The check measures the growth of the resident memory of the whole process, as a student's kernel does. In a full
    test run this process holds other tests' threads, caches and garbage, and a CI run passed ``torch-whole-mask``
    (a 32 MiB mask against a 25 MiB allowance) that fails when run alone; a fresh kernel ran only the notebook. (A
    child forked from this process hung: torch's threads do not survive a fork; the kernels are forked from a server
    that only imported the notebook's libraries.)
    """
    from tests.helpers import inprocess

    cells = [cell for cell in SOLUTION.cells if cell.cell_type == "code"]
    given = [c.source for c in cells if not c.get("metadata", {}).get("nbgrader", {}).get("grade")]
    check = next(c.source for c in cells
                 if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "test_flash_attention")
    outcome = kernels.run([("<student 0>", inprocess.definitions(given)), ("<student 1>", flash_source),
                           ("<test_flash_attention>", check)])
    if outcome.raised is None:
        return True
    assert outcome.assertion and "메모리" in outcome.message, outcome.message
    return False


def grader_memory_verdict(result: GradeResult) -> bool:
    memory = [t for t in result.exercise("flash_attention").tests if t.name.startswith("memory_stays_below")]
    assert len(memory) == len(MEMORY_CASES)
    return all(t.passed for t in memory)


MEMORY_CASES = ("scores", "mask")
SANDBOXED = {   # name -> (the graded notebook, the flash_attention it holds)
    "solution (float32, block 64)": (lambda: graded("solution", lambda: SOLUTION), None),
    **{f"{name} (tests/implementations)": (lambda name=name: graded(name, lambda: notebooks.with_all_code(
        SOLUTION, notebooks.implementation(name))), name) for name in notebooks.implementations(ASSIGNMENT)},
    **{f"mistake {m}": (lambda m=m: graded_group(GROUP_OF[m]), m)
       for m in ("flash_materializes_scores", "flash_full_causal_mask")},
}


def _flash_source(origin) -> str:
    if origin is None:
        return ""
    if origin in notebooks.implementations(ASSIGNMENT):
        return notebooks.implementation(origin)
    return next(m.source for m in MISTAKES if m.id == origin)


@pytest.mark.parametrize("name", list(SANDBOXED))
def test_visible_memory_check_agrees_with_the_grader(kernels, name):
    grade, origin = SANDBOXED[name]
    assert visible_memory_check_passes(kernels, _flash_source(origin)) == grader_memory_verdict(grade())


LOOPS = "kv_cache_loops"
IN_PROCESS = [  # (flash_attention source, the grader's memory cases to run, what the grader says)
    pytest.param(lambda: FORCED_BLOCK.format(block=256), "memory_stays_below", True, id="solution-float32-block256"),
    # A "fails" verdict needs only the case that fails: the other one, passed or not, cannot change it. Its float64
    # score blocks of 1,024 keys are 64 MiB each beside 8,192 queries (the long-prefix case: 272 MiB measured); the
    # 128 x 524,288 case, which it passes, cost 9.5 s of CPU more (measured on the loaded 2-core machine).
    pytest.param(lambda: FORCED_BLOCK.format(block=1024), "memory_stays_below and after", False,
                 id="loops-float64-block1024"),
    # its whole mask is 128 MiB in the long-prefix case: that case alone decides (the other one costs 10 s more)
    pytest.param(lambda: TORCH_FULL_MASK, "memory_stays_below and after", False, id="torch-whole-mask"),
]


@pytest.mark.parametrize("source, cases, expected", IN_PROCESS)
def test_visible_memory_check_agrees_with_the_grader_in_process(request, kernels, source, cases, expected):
    from tests.helpers import inprocess

    base = notebooks.implementation(LOOPS) if "loops" in request.node.callspec.id else ""
    flash = base + "\n" + source()
    session = inprocess.run(ASSIGNMENT, inprocess.namespace(inprocess.notebook_code(SOLUTION, ASSIGNMENT), flash),
                            select=cases)
    verdicts = [r.passed for r in session.results.values()
                if r.name.startswith("memory_stays_below") and (r.passed or r.message)]
    assert len(verdicts) == (len(MEMORY_CASES) if cases == "memory_stays_below" else 1), session.results
    assert all(verdicts) == expected, [r.message for r in session.results.values() if r.message]
    assert visible_memory_check_passes(kernels, flash) == expected
