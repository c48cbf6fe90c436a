"""generate(params, prompt, max_new_tokens, num_heads, num_kv_heads, use_cache=True, temperature=0.0, top_k=None,
top_p=None, rng=None): the decoder's generate for the Qwen3 model: greedy (argmax) or sampled (the notebook's given
``sample`` of ``next_token_probs``), with one given ``KVCache`` per layer or recomputing the whole sequence.

Its tokens are compared exactly with the float64 reference's on models redrawn until no greedy choice is a near-tie
(modern.model_and_prompt), and with the tokens of transformers' ``Qwen3ForCausalLM.generate(do_sample=False)`` on the
stored models (graders/modern/refs). While it is graded, rms_norm, swiglu_mlp, qwen3_attention, qwen3_block and
next_token_probs are answered by the references (isolation.py), except calls with a cache, which are the student's
own (the cache is state in the student's process): their questions are still this side's record.

The cache is graded from what this side saw, never from the student's process's account of it
(``cached_generate.cache_verdict``):
the fed lengths, how many positions each question about the hidden states ``(B, t, D)`` carried, in the order asked
(``Call.questions``: this side's own record; ``fed_lengths``); and what the given ``KVCache``s hold when generate
returns (``Exercise.observes``: their keys and values come back as arrays, ``Call.caches``), compared with the float64
reference's rotated keys and values of each layer for the generated tokens (``references.qwen3_layer_keys_values``:
KV heads Hkv, RoPE at each token's absolute position). With use_cache=True the prefill feeds the prompt's T0 tokens
and every later step one token, and each layer's cache holds that layer's keys and values of every position: a
generate that recomputes the sequence, keeps a cache of its own, feeds the whole sequence, hides its steps from the
grader, or fills the cache with anything but the layer's keys and values (zeros of the right shapes, repeated heads,
keys rotated at restarted positions) loses the cache's points, with a Korean message that says which.
"""
import numpy as np
import pytest

from autograder.graders import references
from autograder.graders.cached_generate import Words, cache_verdict, fed_lengths
from autograder.graders.compare import GradingFailure
from autograder.graders.diagnosis import by_id, of_output, with_causes
from autograder.graders.modern import MODEL, model_and_prompt, sampled_model_and_prompt, store

# Judged against (forbidden routines and known mistakes: exercises/modern_generate.py):
REFERENCE = references.qwen3_generate
REFERENCES = ("float64 references.qwen3_generate, the whole sequence recomputed at every step (no cache)",
              "transformers' Qwen3ForCausalLM.generate(do_sample=False) (stored tokens: graders/modern/refs)")
TOLERANCES = {
    "EXACT": "tokens",
    "TOKEN_MARGIN": "the lead of every greedy choice of the drawn models",
    "SAMPLE_MARGIN": "how far sampled draws and top-p boundaries are from changing",
    "STUDENT": "the keys and values the given KVCaches hold, against the float64 reference's",
}

HEADS, KV_HEADS = MODEL["num_heads"], MODEL["num_kv_heads"]
SCENARIOS = [  # batch, prompt length, new tokens, tied embedding (a step is ~40 ms of proxy questions: kept short)
    pytest.param(2, 1, 6, True, id="b2-prompt1-new6-tied"),
    pytest.param(3, 4, 5, False, id="b3-prompt4-new5-untied"),
    pytest.param(1, 3, 7, True, id="b1-prompt3-new7-tied"),
]


def tokens_of(value, batch, length) -> np.ndarray:
    """The student's tokens as an array (B, T0 + N), or a Korean failure."""
    if isinstance(value, (tuple, list)):
        try:
            value = np.asarray(value)
        except (TypeError, ValueError):
            raise GradingFailure(f"토큰 대신 {type(value).__name__}이(가) 반환되었습니다.") from None
    if not isinstance(value, np.ndarray):
        raise GradingFailure(f"토큰 배열 대신 {type(value).__name__}이(가) 반환되었습니다.")
    if value.shape != (batch, length):
        raise GradingFailure(f"반환값의 모양이 다릅니다: 기대 ({batch}, {length}) (배치, 프롬프트 + 새 토큰), "
                             f"실제 {value.shape}.")
    if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
        raise GradingFailure("토큰에 NaN/inf가 있습니다.")
    return value


def expect_tokens(got, expected, prompt, call, how: str, student=None, rng=None) -> None:
    """The student's tokens must be the expected ones exactly; a difference names the first step and row, and the
    known mistakes that give the same tokens (confirmed on a second model when several do)."""
    got = tokens_of(got, *expected.shape)
    t0 = prompt.shape[1]
    if not np.array_equal(got[:, :t0], prompt):
        raise GradingFailure(f"{how}: 반환값의 앞부분이 프롬프트가 아닙니다. 프롬프트 {t0}개 토큰 뒤에 새 토큰을 "
                             "이어 붙여 돌려주세요.")
    if np.array_equal(got, expected):
        return
    row, col = np.argwhere(got != expected)[0]
    found = of_output(np.asarray(got, np.float64), call, expected=np.asarray(expected, np.float64))
    if found and student is not None and rng is not None:
        found = narrowed(found, call, student, rng)
    message = (f"{how}: {col - t0 + 1}번째 새 토큰(위치 {col}, 배치의 {row + 1}번째 행)이 다릅니다: 기대 "
               f"{int(expected[row, col])}, 실제 {got[row, col].item()}. 프롬프트 {prompt[row].tolist()} 뒤의 기대 "
               f"토큰 {expected[row, t0:].tolist()}, 실제 {got[row, t0:].tolist()}.")
    raise GradingFailure(with_causes(message, found), found)


def narrowed(found: list, call, student, rng) -> list:
    """A known mistake is named only when a second model of the same kind confirms it (several mistakes can give one
    model's tokens; only wrong submissions pay for this call)."""
    params, prompt, n = call.args[:3]
    other, other_prompt, _ = model_and_prompt(rng, *np.shape(prompt), n, tied=params.get("lm_head") is None)
    try:
        theirs = np.asarray(student.generate(other, other_prompt, n, HEADS, KV_HEADS, **call.kwargs))
    except GradingFailure:
        return found
    still = []
    for mistake in found:
        try:
            if np.array_equal(mistake.function()(other, other_prompt, n, HEADS, KV_HEADS, **call.kwargs), theirs):
                still.append(mistake)
        except Exception:  # noqa: BLE001 - a mistake that fails here does not explain the student's tokens
            continue
    return still


@pytest.mark.points(1.2)
@pytest.mark.parametrize("batch, prompt_len, new, tied", SCENARIOS)
def test_cached_generation_matches_reference(student, rng, batch, prompt_len, new, tied):
    """KV 캐시를 써서(use_cache=True) 만든 토큰이 참조 모델의 탐욕적 디코딩 결과와 같음 (임베딩 공유와 lm_head)"""
    params, prompt, expected = model_and_prompt(rng, batch, prompt_len, new, tied=tied)
    got = student.generate(params, prompt, new, HEADS, KV_HEADS, use_cache=True)
    expect_tokens(got, expected, prompt, student.last, "use_cache=True", student, rng)


@pytest.mark.points(0.8)
@pytest.mark.parametrize("batch, prompt_len, new, tied", SCENARIOS[:2])
def test_uncached_generation_matches_reference(student, rng, batch, prompt_len, new, tied):
    """캐시 없이(use_cache=False) 만든 토큰도 같음"""
    params, prompt, expected = model_and_prompt(rng, batch, prompt_len, new, tied=tied)
    got = student.generate(params, prompt, new, HEADS, KV_HEADS, use_cache=False)
    expect_tokens(got, expected, prompt, student.last, "use_cache=False", student, rng)


@pytest.mark.points(1.0)
@pytest.mark.parametrize("name", store.names("generate"))
def test_greedy_tokens_equal_transformers_generate(student, name):
    """같은 가중치의 transformers Qwen3ForCausalLM.generate(do_sample=False)와 토큰 하나하나까지 같음"""
    case = store.load(name)
    i, a = case.inputs, case.args
    got = student.generate(i["model"], i["prompt"], a["max_new_tokens"], a["num_heads"], a["num_kv_heads"])
    expect_tokens(got, case.outputs["tokens"], i["prompt"], student.last,
                  f"transformers의 Qwen3ForCausalLM.generate(do_sample=False) ({name})")


# The modern assignment's part of the cache verdict's messages (cached_generate.py)
WORDS = Words(
    ignores_cache="q3_gen_ignores_cache", refeeds="q3_gen_refeeds_whole_sequence", cache_per_step=None,
    how_to_fill=("층마다 주어진 `KVCache`를 하나씩 두고 qwen3_block(..., cache)에 넘기세요(채점기는 주어진 `KVCache`에 "
                 "든 키와 값을 봅니다)."),
    seen_through=("채점기는 노트북의 함수(`qwen3_block`, `qwen3_attention`, `rms_norm`, `swiglu_mlp`)가 받는 은닉 상태 "
                  "`(B, t, D)`의 `t`로 봅니다: 캐시 쪽에서도 층마다 `qwen3_block`을 부르세요."),
    shape_needed="둘 다 (B, H_kv, T, head_dim)이어야 합니다.",
    what_keys_are=("캐시에는 층마다 그 층의 `input_layernorm`을 거친 입력으로 만든 K(QK-norm 뒤 토큰마다 제 위치로 "
                   "RoPE를 돌린 것)와 V를 덧붙입니다: 층마다 주어진 `KVCache`를 qwen3_block(..., cache)에 넘기면 "
                   "됩니다."),
    kv_heads=(HEADS, KV_HEADS),
)


@pytest.mark.points(1.0)
@pytest.mark.parametrize("batch, prompt_len, new", [pytest.param(2, 2, 5, id="b2-prompt2-new5"),
                                                    pytest.param(1, 4, 4, id="b1-prompt4-new4")])
def test_each_layer_cache_takes_the_prompt_then_one_token_a_step(student, rng, batch, prompt_len, new):
    """캐시를 쓰면 층마다 주어진 KVCache에 프롬프트를 한 번, 그다음부터는 단계마다 새 토큰 하나만, KV 헤드 그대로"""
    params, prompt, expected = model_and_prompt(rng, batch, prompt_len, new)
    got = student.generate(params, prompt, new, HEADS, KV_HEADS, use_cache=True)
    call = student.last
    expect_tokens(got, expected, prompt, call, "use_cache=True", student, rng)
    reference = references.qwen3_layer_keys_values(params, expected, HEADS, KV_HEADS)
    verdict = cache_verdict(fed_lengths(call.questions, MODEL["d_model"]), call.caches, reference, batch, prompt_len,
                            new, WORDS)
    if verdict is not None:
        message, mistake = verdict
        found = [by_id(mistake)] if mistake else []
        raise GradingFailure(with_causes(message, found), found)


@pytest.mark.points(0.5)
@pytest.mark.parametrize("temperature, top_k, top_p, use_cache", [
    pytest.param(0.8, 6, 0.9, True, id="T0.8-k6-p0.9-cached"),
    pytest.param(1.3, None, 0.8, False, id="T1.3-p0.8-uncached"),
])
def test_sampling_draws_with_the_given_sample(student, rng, temperature, top_k, top_p, use_cache):
    """temperature > 0이면 next_token_probs의 확률에서 주어진 sample로 뽑음: 시드를 정한 rng로 참조와 같은 토큰"""
    params, prompt, seed, expected = sampled_model_and_prompt(rng, 2, 3, 5, temperature, top_k, top_p)
    got = student.generate(params, prompt, 5, HEADS, KV_HEADS, use_cache=use_cache, temperature=temperature,
                           top_k=top_k, top_p=top_p, rng=np.random.default_rng(seed))
    how = (f"temperature={temperature}, top_k={top_k}, top_p={top_p}, use_cache={use_cache}, "
           f"rng=np.random.default_rng({seed})")
    try:
        expect_tokens(got, expected, prompt, None, how)
    except GradingFailure as failure:
        raise GradingFailure(failure.message + " 단계마다 next_token_probs(logits, temperature, top_k, top_p)의 "
                             "확률을 주어진 sample(probs, rng)에 넘겨 행마다 토큰 하나를 뽑으세요(rng는 받은 것을 "
                             "그대로, 다른 난수를 쓰지 않고).", failure.diagnosis) from None


@pytest.mark.points(0.5)
def test_returns_int_tokens_and_keeps_the_prompt(student, rng):
    """정수 토큰 (B, T0 + N)을 돌려주고 프롬프트는 그대로, max_new_tokens=0이면 프롬프트만"""
    params, prompt, expected = model_and_prompt(rng, 2, 4, 3)
    got = tokens_of(student.generate(params, prompt, 3, HEADS, KV_HEADS), 2, 7)
    if got.dtype.kind not in "iu":
        raise GradingFailure(f"토큰은 정수 배열이어야 합니다 (지금은 {got.dtype}). np.argmax는 정수를 돌려줍니다; "
                             "프롬프트와 이어 붙일 때 float로 바뀌지 않게 하세요.")
    expect_tokens(got, expected, prompt, student.last, "use_cache=True (기본값)", student, rng)
    same = tokens_of(student.generate(params, prompt, 0, HEADS, KV_HEADS), 2, 4)
    if not np.array_equal(same, prompt):
        raise GradingFailure("max_new_tokens=0이면 프롬프트를 그대로 돌려주어야 합니다.")
