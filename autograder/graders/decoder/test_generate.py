"""generate(params, prompt, max_new_tokens, num_heads, use_cache=True): greedy tokens of a tiny GPT-2-layout model,
with and without the student's own KVCache (one per block), equal to the float64 reference's.

The grader's model and prompt are redrawn until no greedy choice is a near-tie (decoder.model_and_prompt), so the
tokens are compared exactly. While generate is graded, the contract functions it builds on (layer_norm,
decoder_block, multi_head_attention_layer, split_heads, merge_heads, the attention helpers) are answered by the
references (isolation.py); the KVCache and attend_with_cache it uses are the notebook's own (a cache is not plain
data). The proxies' questions also show how many tokens each step ran through the model: with the cache, after the
prompt, one.
"""
import numpy as np
import pytest

from autograder.graders import references
from autograder.graders.compare import GradingFailure
from autograder.graders.decoder import MODEL, model_and_prompt
from autograder.graders.diagnosis import by_id, of_output, with_causes

# Judged against (forbidden routines and known mistakes: exercises/generate.py):
REFERENCE = references.generate   # float64, the whole sequence recomputed at every step (no cache)
# tolerance (tolerances.py): EXACT tokens, on models whose greedy choices lead by TOKEN_MARGIN

HEADS = MODEL["num_heads"]
# Contract functions whose first argument is the hidden states of the tokens a step runs through the model.
RUN_ON_HIDDEN_STATES = ("layer_norm", "decoder_block", "multi_head_attention_layer")
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


@pytest.mark.points(2.5)
@pytest.mark.parametrize("batch, prompt_len, new", SCENARIOS)
def test_cached_generation_matches_reference(student, rng, batch, prompt_len, new):
    """KV 캐시를 써서(use_cache=True) 만든 토큰이 참조 모델의 탐욕적 디코딩 결과와 같음"""
    params, prompt, expected = model_and_prompt(rng, batch, prompt_len, new)
    got = student.generate(params, prompt, new, HEADS, use_cache=True)
    expect_tokens(got, expected, prompt, student.last, "use_cache=True", student, rng)


@pytest.mark.points(1.5)
@pytest.mark.parametrize("batch, prompt_len, new", SCENARIOS[:2])
def test_uncached_generation_matches_reference(student, rng, batch, prompt_len, new):
    """캐시 없이(use_cache=False) 만든 토큰도 같음: 두 방법이 같은 토큰을 냄"""
    params, prompt, expected = model_and_prompt(rng, batch, prompt_len, new)
    got = student.generate(params, prompt, new, HEADS, use_cache=False)
    expect_tokens(got, expected, prompt, student.last, "use_cache=False", student, rng)


@pytest.mark.points(0.5)
def test_cached_steps_run_the_new_token_only(student, rng):
    """캐시를 쓰면 프롬프트 다음부터는 단계마다 새 토큰 하나만 모델에 넣음"""
    batch, prompt_len, new = 2, 2, 6
    params, prompt, expected = model_and_prompt(rng, batch, prompt_len, new)
    got = student.generate(params, prompt, new, HEADS, use_cache=True)
    call = student.last
    expect_tokens(got, expected, prompt, call, "use_cache=True", student, rng)
    # What each step fed through the blocks: the hidden states (B, t, D) its calls of the contract functions that
    # run on them carried (never on cached keys and values): t is the token axis.
    lengths = [shape[-2] for name, shape in call.questions if name in RUN_ON_HIDDEN_STATES and len(shape) == 3]
    longest = max(lengths, default=0)
    if longest > prompt_len:
        found = [by_id("gen_ignores_cache")]
        message = (f"use_cache=True인데 {longest}개 토큰을 한 번에 블록에 넣었습니다 (프롬프트는 {prompt_len}개). "
                   "토큰은 맞지만 캐시를 쓰는 생성은 프롬프트 다음부터 단계마다 새 토큰 하나만 넣고, 과거 토큰의 "
                   "K, V는 층마다 캐시에서 다시 씁니다.")
        raise GradingFailure(with_causes(message, found), found)


@pytest.mark.points(0.5)
def test_returns_int_tokens_and_keeps_the_prompt(student, rng):
    """정수 토큰 (B, T0 + N)을 돌려주고 프롬프트는 그대로, max_new_tokens=0이면 프롬프트만"""
    params, prompt, expected = model_and_prompt(rng, 2, 4, 3)
    got = tokens_of(student.generate(params, prompt, 3, HEADS), 2, 7)
    if got.dtype.kind not in "iu":
        raise GradingFailure(f"토큰은 정수 배열이어야 합니다 (지금은 {got.dtype}). np.argmax는 정수를 돌려줍니다; "
                             "프롬프트와 이어 붙일 때 float로 바뀌지 않게 하세요.")
    expect_tokens(got, expected, prompt, student.last, "use_cache=True (기본값)", student, rng)
    same = tokens_of(student.generate(params, prompt, 0, HEADS), 2, 4)
    if not np.array_equal(same, prompt):
        raise GradingFailure("max_new_tokens=0이면 프롬프트를 그대로 돌려주어야 합니다.")
