"""generate(params, prompt, max_new_tokens, num_heads, use_cache=True, temperature=0.0, top_k=None, top_p=None,
rng=None): greedy tokens of a tiny GPT-2-layout model, with and without the notebook's given KVCache (one per layer),
equal to the float64 reference's; the cache's use, judged from what this side observed; and tokens drawn by the given
``sample`` from ``next_token_probs`` with a seeded generator, on models of flat logits redrawn until the argmax, the
draws without the filters, with the temperature applied twice and with another seed all give other tokens (every
sampled case filters, so a generate that chooses in any of these ways fails every sampled case: 1.8 of the 5 points).

The grader's model and prompt are redrawn until no greedy choice is a near-tie (decoder.model_and_prompt), so the
tokens are compared exactly. While generate is graded, the contract functions it builds on (layer_norm,
decoder_block, multi_head_attention_layer, split_heads, merge_heads, the attention helpers) are answered by the
references (isolation.py); the KVCache and attend_with_cache it uses are the notebook's own (a cache is not plain
data). The cache is graded from what this side saw, never from the student's process's account of it
(``cache_verdict``): the fed lengths, how many positions each question the proxies asked during the call carried, in
the order asked (``Call.questions``: this side's own record; ``fed_lengths``); and what the given ``KVCache``s hold
when generate returns (``Exercise.observes``, sandbox/inside/observed.py: their keys and values come back as arrays,
``Call.caches``), compared with the float64 reference's keys and values of each layer for the generated tokens
(``references.layer_keys_values``). With use_cache=True the prefill feeds the prompt's T0 tokens and every later
step one token, and each layer's cache holds that layer's keys and values of every position: a generate that
recomputes the sequence, keeps a cache of its own, feeds the whole sequence, hides its steps from the grader (no
question of a later step), or fills the cache with anything but the layer's keys and values loses the cache's
points, with a Korean message that says which.
"""
import numpy as np
import pytest

from autograder.graders import references
from autograder.graders.cached_generate import Words, cache_verdict, fed_lengths
from autograder.graders.compare import GradingFailure
from autograder.graders.decoder import MODEL, model_and_prompt, sampled_model_and_prompt
from autograder.graders.diagnosis import by_id, of_output, with_causes

# Judged against (forbidden routines and known mistakes: exercises/generate.py):
REFERENCE = references.generate
REFERENCES = ("float64 references.generate, the whole sequence recomputed at every step (no cache)",)
TOLERANCES = {
    "EXACT": "tokens",
    "TOKEN_MARGIN": "the lead of every greedy choice of the drawn models",
    "SAMPLE_MARGIN": "how far sampled draws and top-p boundaries are from changing",
    "STUDENT": "the keys and values the given KVCaches hold, against the float64 reference's",
}

HEADS = MODEL["num_heads"]
SCENARIOS = [  # batch, prompt length, new tokens
    pytest.param(2, 1, 8, id="b2-prompt1-new8"),
    pytest.param(3, 5, 6, id="b3-prompt5-new6"),
    pytest.param(1, 3, 9, id="b1-prompt3-new9"),
]


def tokens_of(value, batch, length) -> np.ndarray:
    """The student's tokens as an int array (B, T0 + N), or a Korean failure."""
    if isinstance(value, (tuple, list)) and not isinstance(value, np.ndarray):
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
    """The student's tokens must be the reference's, exactly; a difference names the first step and row, and the
    known mistakes that give the same tokens (``narrowed`` when several do)."""
    got = tokens_of(got, *expected.shape)
    t0 = prompt.shape[1]
    if not np.array_equal(got[:, :t0], prompt):
        raise GradingFailure(f"{how}: 반환값의 앞부분이 프롬프트가 아닙니다. 프롬프트 {t0}개 토큰 뒤에 새 토큰을 "
                             "이어 붙여 돌려주세요.")
    if np.array_equal(got, expected):
        return
    row, col = np.argwhere(got != expected)[0]
    found = of_output(np.asarray(got, np.float64), call, expected=np.asarray(expected, np.float64))
    if student is not None and rng is not None:
        found = narrowed(found, call, student, rng) if found else draws(got, call, student)
    message = (f"{how}: {col - t0 + 1}번째 새 토큰(위치 {col}, 배치의 {row + 1}번째 행)이 다릅니다: 기대 "
               f"{int(expected[row, col])}, 실제 {got[row, col].item()}. 프롬프트 {prompt[row].tolist()} 뒤의 기대 "
               f"토큰 {expected[row, t0:].tolist()}, 실제 {got[row, t0:].tolist()}.")
    raise GradingFailure(with_causes(message, found), found)


def draws(got, call, student, tries: int = 2) -> list:
    """No known mistake gives the student's tokens: if the same call gives other tokens another time (of one or two
    more), the student's generate draws them at random (sampling instead of argmax), which no replay can match;
    named by that. (A sampled step often picks the argmax too: one repeat alone gives the same tokens ~1 time in 4.)"""
    for _ in range(tries):
        try:
            again = np.asarray(student.generate(*call.args, **call.kwargs))
        except GradingFailure:
            return []
        if again.shape != got.shape or not np.array_equal(again, got):
            return [by_id("gen_samples")]
    return []


def narrowed(found: list, call, student, rng, tries: int = 2) -> list:
    """A known mistake is named only when a second model confirms it: the known mistakes that give the student's
    wrong tokens on one model (several can: their sequences can coincide, a row repeating one token, say) are run
    with the student's generate on one or two more models of the same size, and those that still give the student's
    tokens are kept (none, when none does). Only wrong submissions pay for these calls."""
    params, prompt, n, heads = call.args[:4]
    batch, prompt_len = np.shape(prompt)
    for _ in range(tries):
        other_params, other_prompt, _ = model_and_prompt(rng, batch, prompt_len, n)
        try:
            theirs = np.asarray(student.generate(other_params, other_prompt, n, heads, **call.kwargs))
        except GradingFailure:
            break
        still = []
        for mistake in found:
            try:
                if np.array_equal(mistake.function()(other_params, other_prompt, n, heads, **call.kwargs), theirs):
                    still.append(mistake)
            except Exception:  # noqa: BLE001 - a mistake that fails here does not explain the student's tokens
                continue
        found = still
        if len(found) <= 1:
            break
    return found


@pytest.mark.points(0.9)
@pytest.mark.parametrize("batch, prompt_len, new", SCENARIOS)
def test_cached_generation_matches_reference(student, rng, batch, prompt_len, new):
    """KV 캐시를 써서(use_cache=True) 만든 토큰이 참조 모델의 탐욕적 디코딩 결과와 같음"""
    params, prompt, expected = model_and_prompt(rng, batch, prompt_len, new)
    got = student.generate(params, prompt, new, HEADS, use_cache=True)
    expect_tokens(got, expected, prompt, student.last, "use_cache=True", student, rng)


@pytest.mark.points(0.6)
@pytest.mark.parametrize("batch, prompt_len, new", SCENARIOS[:2])
def test_uncached_generation_matches_reference(student, rng, batch, prompt_len, new):
    """캐시 없이(use_cache=False) 만든 토큰도 같음: 두 방법이 같은 토큰을 냄"""
    params, prompt, expected = model_and_prompt(rng, batch, prompt_len, new)
    got = student.generate(params, prompt, new, HEADS, use_cache=False)
    expect_tokens(got, expected, prompt, student.last, "use_cache=False", student, rng)


# The decoder's part of the cache verdict's messages (cached_generate.py)
WORDS = Words(
    ignores_cache="gen_ignores_cache", refeeds="gen_refeeds_whole_sequence", cache_per_step="gen_cache_per_step",
    how_to_fill=("캐시를 쓰는 경로는 층마다 주어진 `KVCache`를 하나씩 두고 `attend_with_cache`로 새 토큰의 K, V를 "
                 "덧붙여야 합니다(채점기는 주어진 `KVCache`에 든 키와 값을 봅니다)."),
    seen_through=("채점기는 블록 안에서 부르는 노트북의 함수(`layer_norm`, `split_heads` 등)가 받는 `(B, t, D)`의 "
                  "`t`로 봅니다: 캐시 쪽 블록에서도 이 함수들을 쓰세요."),
    shape_needed="둘 다 (B, H, T, d)여야 합니다.",
    what_keys_are=("캐시에는 층마다 그 층의 `ln_1`을 거친 입력으로 만든 K, V(`x @ w_k + b_k`, `x @ w_v + b_v`를 "
                   "`split_heads`한 것)를 `attend_with_cache`로 덧붙입니다."),
)


@pytest.mark.points(1.5)
@pytest.mark.parametrize("batch, prompt_len, new", [pytest.param(2, 2, 6, id="b2-prompt2-new6"),
                                                    pytest.param(1, 4, 5, id="b1-prompt4-new5")])
def test_each_layer_cache_takes_the_prompt_then_one_token_a_step(student, rng, batch, prompt_len, new):
    """캐시를 쓰면 층마다 주어진 KVCache에 프롬프트를 한 번, 그다음부터는 단계마다 새 토큰 하나만 덧붙임"""
    params, prompt, expected = model_and_prompt(rng, batch, prompt_len, new)
    got = student.generate(params, prompt, new, HEADS, use_cache=True)
    call = student.last
    expect_tokens(got, expected, prompt, call, "use_cache=True", student, rng)
    reference = references.layer_keys_values(params, expected, HEADS)
    verdict = cache_verdict(fed_lengths(call.questions), call.caches, reference, batch, prompt_len, new, WORDS)
    if verdict is not None:
        message, mistake = verdict
        found = [by_id(mistake)] if mistake else []
        raise GradingFailure(with_causes(message, found), found)


SAMPLED = [  # temperature, top_k, top_p, use_cache: every case filters (a generate that ignores the filters fails it)
    pytest.param(0.8, 6, 0.9, True, id="T0.8-k6-p0.9-cached"),
    pytest.param(1.3, None, 0.8, False, id="T1.3-p0.8-uncached"),
    pytest.param(1.2, 4, None, True, id="T1.2-k4-cached"),
]

# The other ways of choosing that every sampled case tells apart from the right one (decoder.sampled_model_and_prompt
# redraws until each gives other tokens), as the known mistakes that choose so.
CHOOSERS = {"greedy": "gen_argmax_when_sampling", "no_filters": "gen_sampling_ignores_filters",
            "temperature_twice": "gen_temperature_twice"}


def sampled_causes(got, expected, alternatives, call, student, again) -> list:
    """Why a generate drew other tokens than the reference: the known mistakes whose way of choosing gives exactly
    the student's tokens (``alternatives``, computed with the case); else ``gen_ignores_rng`` when the same call with
    a generator of the same seed (``again()``) gives other tokens (the given rng is not what it draws with); else the
    known mistakes of the model's computation, re-run on the call (``of_output``)."""
    found = [by_id(mistake) for name, mistake in CHOOSERS.items() if np.array_equal(got, alternatives[name])]
    if found:
        return found
    try:
        repeated = np.asarray(again())
    except GradingFailure:
        repeated = got
    if repeated.shape != got.shape or not np.array_equal(repeated, got):
        return [by_id("gen_ignores_rng")]
    return of_output(np.asarray(got, np.float64), call, expected=np.asarray(expected, np.float64))


@pytest.mark.points(1.8)
@pytest.mark.parametrize("temperature, top_k, top_p, use_cache", SAMPLED)
def test_sampling_draws_with_the_given_sample(student, rng, temperature, top_k, top_p, use_cache):
    """temperature > 0이면 next_token_probs(logits, temperature, top_k, top_p)의 확률에서 받은 rng로 주어진 sample이
    뽑음: 시드를 정한 rng로 참조와 같은 정수 토큰"""
    batch, prompt_len, new = 2, 3, 6
    params, prompt, seed, expected, alternatives = sampled_model_and_prompt(rng, batch, prompt_len, new, temperature,
                                                                            top_k, top_p)
    options = {"use_cache": use_cache, "temperature": temperature, "top_k": top_k, "top_p": top_p}
    got = tokens_of(student.generate(params, prompt, new, HEADS, **options, rng=np.random.default_rng(seed)),
                    batch, prompt_len + new)
    call = student.last
    how = (f"temperature={temperature}, top_k={top_k}, top_p={top_p}, use_cache={use_cache}, "
           f"rng=np.random.default_rng({seed})")
    if got.dtype.kind not in "iu":
        found = [by_id("gen_float_tokens")] if np.array_equal(got, expected) else []
        raise GradingFailure(with_causes(f"{how}: 토큰은 정수 배열이어야 합니다 (지금은 {got.dtype}). 프롬프트와 "
                                         "새 토큰을 이어 붙일 때 float가 되지 않게 하세요.", found), found)
    try:
        expect_tokens(got, expected, prompt, None, how)
    except GradingFailure as failure:
        found = sampled_causes(got, expected, alternatives, call, student,
                               lambda: student.generate(params, prompt, new, HEADS, **options,
                                                        rng=np.random.default_rng(seed)))
        raise GradingFailure(with_causes(failure.message + " 단계마다 next_token_probs(logits, temperature, top_k, "
                                         "top_p)의 확률을 주어진 sample(probs, rng)에 넘겨 행마다 토큰 하나를 뽑으세요"
                                         "(rng는 받은 것을 그대로, 다른 난수를 쓰지 않고).", found), found) from None


@pytest.mark.points(0.2)
def test_returns_int_tokens_and_keeps_the_prompt(student, rng):
    """정수 토큰 (B, T0 + N)을 돌려주고 프롬프트는 그대로, max_new_tokens=0이면 프롬프트만"""
    params, prompt, expected = model_and_prompt(rng, 2, 4, 3)
    got = tokens_of(student.generate(params, prompt, 3, HEADS), 2, 7)
    if got.dtype.kind not in "iu":
        found = [by_id("gen_float_tokens")] if np.array_equal(got, expected) else []
        message = (f"토큰은 정수 배열이어야 합니다 (지금은 {got.dtype}). np.argmax는 정수를 돌려줍니다; 프롬프트와 "
                   "이어 붙일 때 float로 바뀌지 않게 하세요.")
        raise GradingFailure(with_causes(message, found), found)
    expect_tokens(got, expected, prompt, student.last, "use_cache=True (기본값)", student, rng)
    same = tokens_of(student.generate(params, prompt, 0, HEADS), 2, 4)
    if not np.array_equal(same, prompt):
        raise GradingFailure("max_new_tokens=0이면 프롬프트를 그대로 돌려주어야 합니다.")
