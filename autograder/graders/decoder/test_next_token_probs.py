"""next_token_probs(logits, temperature=1.0, top_k=None, top_p=None): the next token's probabilities (B, V) after
Hugging Face's warpers in their order: logits / temperature, top-k (every logit equal to the k-th kept), softmax,
top-p (the smallest set, from the most probable, whose probability reaches top_p: the crossing token kept, at least
one), renormalised; temperature 0 is greedy (one-hot at the first argmax).

Besides the values, each test checks what the rules promise exactly: rows that sum to 1 and probabilities that are
exactly 0 outside the kept tokens (and not 0 inside). The logits are float64 and drawn so that no top-k cut and no
top-p boundary is a near-tie (``clear_logits``), except where ties are the point (``tied_logits``).
"""
import numpy as np
import pytest

from autograder.graders import references, tolerances
from autograder.graders.compare import GradingFailure, expect_close, expect_shape
from autograder.graders.diagnosis import by_id, of_output, with_causes

# Judged against (known mistakes: exercises/next_token_probs.py):
REFERENCE = references.next_token_probs
REFERENCES = (
    "float64 numpy (answers.py): TemperatureLogitsWarper, TopKLogitsWarper, softmax, TopPLogitsWarper, renormalised",
)
TOLERANCES = {"STUDENT": "a float32 softmax of logits of size ~10 is off by ~1e-6; zeros compared exactly"}

VOCAB = 12


def clear_logits(rng, batch, temperature=1.0, top_k=None, top_p=None, tries=64) -> np.ndarray:
    """Logits (B, V) whose top-k cut leads by TOKEN_MARGIN and whose top-p boundaries are SAMPLE_MARGIN away."""
    for _ in range(tries):
        logits = 2.0 * rng.standard_normal((batch, VOCAB))
        probs = REFERENCE(logits, temperature, top_k, top_p)
        margins = references.sampling_margins(logits, probs, np.full(batch, -1.0), temperature, top_k, top_p)
        if all(distance >= (tolerances.TOKEN_MARGIN if kind == "top_k" else tolerances.SAMPLE_MARGIN)
               for kind, distance in margins):
            return logits
    raise RuntimeError("no clear logits")


def tied_logits(rng, batch) -> np.ndarray:
    """Logits (B, V) of small integers: every row has several tokens of the same logit (ties at the k-th too)."""
    return rng.integers(-3, 4, size=(batch, VOCAB)).astype(np.float64)


def by_rule(got, expected, top_k=None) -> list:
    """Mistakes recognised by what they do to any distribution, whatever else the code does (so a torch.topk that
    breaks ties its own way is named too, not only the catalogue's argsort): rows that are the reference's up to a
    factor below 1 (not renormalised); rows with exactly ``top_k`` tokens, all among the reference's more (a tie at
    the k-th broken)."""
    if not np.all(np.isfinite(got)):
        return []
    found = []
    sums = got.sum(axis=-1, keepdims=True)
    if (np.any(np.abs(sums - 1) > 1e-3) and np.all(sums > 0)
            and np.allclose(got / sums, expected, atol=tolerances.STUDENT.atol, rtol=tolerances.STUDENT.rtol)):
        found.append(by_id("ntp_no_renormalise"))
    if top_k is not None:
        tied = (expected > 0).sum(axis=-1) > top_k
        kept = got > 0
        if (np.any(tied) and np.all((kept.sum(axis=-1) == top_k)[tied])
                and not np.any(kept[tied] & (expected[tied] == 0))):
            found.append(by_id("ntp_top_k_breaks_ties"))
    return found


def expect_probs(got, expected, what: str, call, top_k=None) -> None:
    """Values within STUDENT, then the rules' exact promises: zeros where the reference has zeros, none elsewhere,
    rows that sum to 1. A failure names the catalogued mistakes whose output it is, or else those ``by_rule``
    recognises."""
    try:
        expect_close(got, expected, what=what, tol=tolerances.STUDENT, against="Hugging Face 순서의 float64 참조",
                     call=call)
    except GradingFailure as failure:
        ruled = [] if failure.diagnosis else by_rule(np.asarray(got, np.float64), expected, top_k)
        if not ruled or np.shape(got) != expected.shape:
            raise
        raise GradingFailure(with_causes(failure.message, ruled), ruled) from None
    got = expect_shape(got, expected.shape, what)
    dropped, kept = expected == 0, expected > 0
    if np.any(got[dropped] != 0):
        found = of_output(got, call, expected=expected)
        largest = np.max(np.abs(got[dropped]))
        raise GradingFailure(with_causes(f"{what}: 버려야 할 토큰의 확률이 정확히 0이 아닙니다(최댓값 {largest:.2e}). "
                                         "버린 토큰은 0으로 두세요.", found), found)
    if np.any(got[kept] <= 0):
        raise GradingFailure(f"{what}: 남겨야 할 토큰의 확률이 0입니다.")
    sums = got.sum(axis=-1)
    if not np.allclose(sums, 1.0, atol=tolerances.STUDENT.atol, rtol=0):
        found = of_output(got, call, expected=expected)
        raise GradingFailure(with_causes(f"{what}: 행의 합이 1이 아닙니다: {np.round(sums, 4).tolist()}.", found),
                             found)


@pytest.mark.points(0.4)
@pytest.mark.parametrize("temperature", [pytest.param(0.5, id="T0.5"), pytest.param(2.0, id="T2")])
def test_temperature_divides_the_logits(student, rng, temperature):
    """온도는 softmax 앞에서 로짓을 나눔: softmax(logits / temperature), 거르기 없음"""
    logits = clear_logits(rng, 3, temperature)
    got = student.next_token_probs(logits, temperature)
    expect_probs(got, REFERENCE(logits, temperature), f"temperature={temperature}의 확률", student.last)


@pytest.mark.points(0.4)
@pytest.mark.parametrize("top_k", [pytest.param(3, id="k3"), pytest.param(5, id="k5")])
def test_top_k_keeps_every_logit_equal_to_the_kth(student, rng, top_k):
    """top-k는 k번째로 큰 로짓보다 작은 로짓만 버림: k번째와 같은 로짓(동점)은 모두 남김 (TopKLogitsWarper)"""
    logits = tied_logits(rng, 4)
    got = student.next_token_probs(logits, 1.0, top_k=top_k)
    expect_probs(got, REFERENCE(logits, 1.0, top_k), f"top_k={top_k}, 동점이 있는 로짓의 확률", student.last, top_k)


@pytest.mark.points(0.5)
@pytest.mark.parametrize("top_p", [pytest.param(0.6, id="p0.6"), pytest.param(0.9, id="p0.9")])
def test_top_p_keeps_the_token_that_crosses_p(student, rng, top_p):
    """top-p는 확률이 큰 토큰부터 누적 확률이 top_p에 이를 때까지 남김: top_p를 넘게 만드는 토큰도 남기고 다시 정규화"""
    logits = clear_logits(rng, 3, 1.0, None, top_p)
    got = student.next_token_probs(logits, 1.0, top_p=top_p)
    expect_probs(got, REFERENCE(logits, 1.0, None, top_p), f"top_p={top_p}의 확률", student.last)


@pytest.mark.points(0.3)
def test_all_three_in_hugging_faces_order(student, rng):
    """온도, top-k, top-p를 함께: 로짓을 온도로 나누고, top-k, softmax, top-p, 다시 정규화 순서"""
    temperature, top_k, top_p = 0.7, 6, 0.8
    logits = clear_logits(rng, 4, temperature, top_k, top_p)
    got = student.next_token_probs(logits, temperature, top_k, top_p)
    expect_probs(got, REFERENCE(logits, temperature, top_k, top_p),
                 f"temperature={temperature}, top_k={top_k}, top_p={top_p}의 확률", student.last)


@pytest.mark.points(0.2)
def test_temperature_zero_is_greedy(student, rng):
    """temperature=0은 탐욕적 선택: 가장 큰 로짓(같으면 번호가 작은 토큰)에 확률 1, 나머지는 정확히 0"""
    logits = tied_logits(rng, 4)
    got = student.next_token_probs(logits, 0.0)
    expect_probs(got, REFERENCE(logits, 0.0), "temperature=0의 확률 (같은 로짓이 있는 행)", student.last)


@pytest.mark.points(0.2)
def test_no_filter_is_softmax_and_top_k_1_is_greedy(student, rng):
    """top_k=None, top_p=1이면 온도를 적용한 softmax 그대로, top_k=1이면 탐욕적 선택과 같음"""
    logits = clear_logits(rng, 3, 1.5)
    got = student.next_token_probs(logits, 1.5, None, 1.0)
    expect_probs(got, references.softmax(logits / 1.5), "top_p=1.0의 확률 (거르기 없음)", student.last)
    logits = clear_logits(rng, 3, 1.0, 1)
    got = student.next_token_probs(logits, 1.0, 1)
    expect_probs(got, REFERENCE(logits, 0.0), "top_k=1의 확률 (탐욕적 선택과 같아야 함)", student.last)
