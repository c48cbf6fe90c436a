"""generate(params, prompt, max_new_tokens, num_heads, use_cache=True, temperature=0.0, top_k=None, top_p=None,
rng=None): greedy tokens of a tiny GPT-2-layout model, with and without the notebook's given KVCache (one per layer),
equal to the float64 reference's; and the caches themselves, watched; and tokens drawn by the given ``sample`` from
``next_token_probs`` with a seeded generator, on models of flat logits redrawn until the argmax, the draws without
the filters, with the temperature applied twice and with another seed all give other tokens (every sampled case
filters, so a generate that chooses in any of these ways fails every sampled case: 1.8 of the 5 points).

The grader's model and prompt are redrawn until no greedy choice is a near-tie (decoder.model_and_prompt), so the
tokens are compared exactly. While generate is graded, the contract functions it builds on (layer_norm,
decoder_block, multi_head_attention_layer, split_heads, merge_heads, the attention helpers) are answered by the
references (isolation.py); the KVCache and attend_with_cache it uses are the notebook's own (a cache is not plain
data). The cache is graded, not trusted: while generate runs, the notebook's ``KVCache`` is watched in the student's
process (``Exercise.observes``, sandbox/inside/observed.py) and every cache's appends come back as numbers
(``Call.appends``). With use_cache=True each layer's cache must take the prompt's T0 tokens once and then one token
a step, whatever else the code calls (numpy, torch or Keras): a generate that recomputes the sequence, keeps a cache
of its own, or feeds a cache the whole sequence loses the cache's points, with a Korean message that says which.
"""
import numpy as np
import pytest

from autograder.graders import references
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


def cache_verdict(appends, layers: int, batch: int, prompt_len: int, new: int):
    """``None`` when the watched caches' appends (``Call.appends``: one list of key shapes ``(B, H, t, d)`` per
    cache) are what a cached generate of ``new`` tokens makes: a cache per layer (or per layer and row, for a
    generate that runs the rows of the batch one by one: the caches' batches add up to ``layers * batch``), each
    given the prompt's ``prompt_len`` tokens in one append and then one token a step. A generate may also run its
    last token through the model (nothing is recomputed), so one more single-token append is allowed. Otherwise
    ``(Korean message, mistake id or None)``."""
    if appends is None:
        return "캐시가 덧붙인 기록을 읽을 수 없습니다 (숫자가 아닌 기록).", None
    if not appends:
        return ("use_cache=True인데 주어진 `KVCache`에 아무것도 덧붙이지 않았습니다. 캐시를 쓰지 않고 단계마다 시퀀스 "
                "전체를 다시 계산했거나, 주어진 `KVCache`가 아닌 자기만의 캐시를 썼습니다. 캐시를 쓰는 경로는 층마다 "
                "주어진 `KVCache`를 하나씩 두고 `attend_with_cache`로 새 토큰의 K, V를 덧붙여야 합니다(채점기는 "
                "주어진 `KVCache`의 append를 셉니다).", "gen_ignores_cache")
    counts = [[shape[-2] if len(shape) >= 2 else -1 for shape in shapes] for shapes in appends]
    if len(counts) > layers and all(len(c) == 1 for c in counts):
        return (f"use_cache=True인데 캐시를 {len(counts)}개 만들어 한 번씩만 덧붙였습니다(층은 {layers}개). 단계마다 "
                "새 캐시를 만들면 과거 토큰의 K, V를 매번 다시 계산합니다. 캐시는 generate를 시작할 때 층마다 하나 "
                "만들어 끝까지 씁니다.", "gen_cache_per_step")
    for layer, tokens in enumerate(counts, start=1):
        later = [(step, t) for step, t in enumerate(tokens[1:], start=2) if t != 1]
        if tokens[0] > prompt_len or later:
            step, t = later[0] if later else (1, tokens[0])
            return (f"use_cache=True인데 {layer}번째 캐시에 {step}번째로 토큰 {t}개를 덧붙였습니다(덧붙인 토큰 수 "
                    f"{tokens}, 프롬프트 {prompt_len}개). 캐시에 이미 든 토큰은 다시 넣지 않습니다: 첫 단계(프리필)에 "
                    "프롬프트를 한 번, 그다음부터는 단계마다 새 토큰 하나만 덧붙이세요.", "gen_refeeds_whole_sequence")
        if tokens[0] != prompt_len:
            return (f"use_cache=True인데 {layer}번째 캐시에 프롬프트 {prompt_len}개를 한 번에 넣지 않고 나눠 넣었습니다"
                    f"(덧붙인 토큰 수 {tokens}). 첫 단계(프리필)에는 프롬프트 전체를 한 번에 넣습니다.", None)
        if len(tokens) - 1 not in (new - 1, new):
            return (f"use_cache=True로 새 토큰 {new}개를 만드는데 {layer}번째 캐시에 새 토큰을 {len(tokens) - 1}번 "
                    f"덧붙였습니다(덧붙인 토큰 수 {tokens}). 프롬프트 다음부터는 단계마다 한 번, 새 토큰 하나를 "
                    "덧붙입니다.", None)
    rows = sum(shapes[0][0] if shapes[0] else 0 for shapes in appends)
    if len(counts) % layers or rows != layers * batch:
        return (f"use_cache=True인데 캐시 {len(counts)}개에 배치 {rows}행을 덧붙였습니다"
                f"(층 {layers}개, 배치 {batch}행). 층마다 주어진 `KVCache`를 하나씩 두세요.", None)
    return None


@pytest.mark.points(1.5)
@pytest.mark.parametrize("batch, prompt_len, new", [pytest.param(2, 2, 6, id="b2-prompt2-new6"),
                                                    pytest.param(1, 4, 5, id="b1-prompt4-new5")])
def test_each_layer_cache_takes_the_prompt_then_one_token_a_step(student, rng, batch, prompt_len, new):
    """캐시를 쓰면 층마다 주어진 KVCache에 프롬프트를 한 번, 그다음부터는 단계마다 새 토큰 하나만 덧붙임"""
    params, prompt, expected = model_and_prompt(rng, batch, prompt_len, new)
    got = student.generate(params, prompt, new, HEADS, use_cache=True)
    call = student.last
    expect_tokens(got, expected, prompt, call, "use_cache=True", student, rng)
    verdict = cache_verdict(call.appends, len(params["blocks"]), batch, prompt_len, new)
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
