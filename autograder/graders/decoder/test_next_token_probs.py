"""next_token_probs(logits, temperature=1.0, top_k=None, top_p=None): the next token's probabilities (B, V) after
Hugging Face's warpers in their order: logits / temperature, top-k (every logit equal to the k-th kept), softmax,
top-p (the smallest set, from the most probable, whose probability reaches top_p: the crossing token kept, at least
one), renormalised; temperature 0 is greedy (one-hot at the first argmax).

Ties. Top-k keeps every logit equal to the k-th (``TopKLogitsWarper``). Top-p keeps as many tokens as the smallest
set needs; which of the tokens tied at its boundary are kept is not graded (the reference keeps the lower numbers,
``TopPLogitsWarper`` the higher ones: ``with_their_ties``).

Besides the values, each test checks what the rules promise exactly: rows that sum to 1 and probabilities that are
exactly 0 outside the kept tokens (and not 0 inside). The logits are float64 and drawn so that no top-k cut and no
top-p boundary is a near-tie (``margins_clear``), except ties themselves: small integer logits tie exactly in any
float arithmetic (``tied_logits``). Each test's inputs are redrawn until every rule they grade decides something
(``drawn``): a top-k cut inside a tie and a clear one, a top-p set that is neither one token nor every token, ties
that straddle the top-p boundary, and filters that overlap (top-p cutting inside top-k's tokens in one row, keeping
them all in another), so that a mistake in any of these rules changes the answer of every case.
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


# ----------------------------------------------------------------------------------------------- inputs
def margins_clear(logits, temperature, top_k, top_p, tied=False) -> bool:
    """No top-k cut is within TOKEN_MARGIN (logits / temperature) and no top-p boundary within SAMPLE_MARGIN of
    changing. ``tied``: small integer logits, whose k-th and (k+1)-th are equal or at least 1 / temperature apart, so
    only top-p's boundaries are checked."""
    if temperature == 0:
        return True
    probs = REFERENCE(logits, temperature, top_k, top_p)
    margins = references.sampling_margins(logits, probs, np.full(len(logits), -1.0), temperature, top_k, top_p)
    floors = {"top_k": 0.0 if tied else tolerances.TOKEN_MARGIN, "top_p": tolerances.SAMPLE_MARGIN, "draw": 0.0}
    return all(distance >= floors[kind] for kind, distance in margins)


def flat_logits(rng, batch, scale=1.0) -> np.ndarray:
    """Logits (B, V) of N(0, scale²): scale 1 spreads the probability over several tokens."""
    return scale * rng.standard_normal((batch, VOCAB))


def tied_logits(rng, batch) -> np.ndarray:
    """Logits (B, V) of small integers: every row has several tokens of the same logit (ties at the k-th too)."""
    return rng.integers(-3, 4, size=(batch, VOCAB)).astype(np.float64)


def clear_logits(rng, batch, temperature=1.0, top_k=None, top_p=None, tries=64) -> np.ndarray:
    """Logits (B, V) of N(0, 4) whose top-k cut and top-p boundaries are clear (``margins_clear``)."""
    return drawn(lambda: flat_logits(rng, batch, 2.0), temperature, top_k, top_p, tries=tries)


def drawn(draw, temperature, top_k, top_p, *wants, tied=False, tries=200) -> np.ndarray:
    """``draw()`` again until its margins are clear and each of ``wants`` (a row property: logits -> bool per row)
    holds in at least one row."""
    for _ in range(tries):
        logits = draw()
        if margins_clear(logits, temperature, top_k, top_p, tied) and all(np.any(w(logits)) for w in wants):
            return logits
    raise RuntimeError("no logits with the wanted rows")


def kept(logits, temperature, top_k, top_p) -> np.ndarray:
    return REFERENCE(logits, temperature, top_k, top_p) > 0                         # (B, V)


def top_k_tie(temperature, top_k):
    """Rows where logits equal to the k-th make top-k keep more than k tokens."""
    return lambda logits: kept(logits, temperature, top_k, None).sum(-1) > top_k


def top_k_clear(temperature, top_k):
    """Rows where top-k keeps exactly k tokens (the k-th is above the (k+1)-th)."""
    return lambda logits: kept(logits, temperature, top_k, None).sum(-1) == top_k


def top_p_cuts(temperature, top_k, top_p):
    """Rows where top-p keeps at least two tokens and drops at least one of those top-k kept: the crossing token and
    the order of the ranking matter."""
    def want(logits):
        n, before = kept(logits, temperature, top_k, top_p).sum(-1), kept(logits, temperature, top_k, None).sum(-1)
        return (n >= 2) & (n < before)
    return want


def top_p_tie(temperature, top_k, top_p):
    """Rows where tokens of one probability straddle the top-p boundary (some kept, some dropped)."""
    def want(logits):
        before = REFERENCE(logits, temperature, top_k, None)                         # (B, V)
        keep = kept(logits, temperature, top_k, top_p)
        rows = []
        for b, k in zip(before, keep, strict=True):
            tied = [b == v for v in np.unique(b[b > 0])]
            rows.append(any(np.any(t & k) and np.any(t & ~k) for t in tied))
        return np.array(rows)
    return want


def overlap_cuts(temperature, top_k, top_p):
    """Rows where the filters overlap so that their order matters: top-p cuts inside top-k's tokens (keeping at least
    two), top-p alone would keep all of them, and they hold less than top_p of the whole distribution."""
    def want(logits):
        before = REFERENCE(logits, temperature, top_k, None)
        whole = REFERENCE(logits, temperature, None, None)
        n, k_kept = kept(logits, temperature, top_k, top_p).sum(-1), (before > 0).sum(-1)
        p_alone = kept(logits, temperature, None, top_p).sum(-1)
        mass = np.where(before > 0, whole, 0.0).sum(-1)
        return (n >= 2) & (n < k_kept) & (p_alone >= k_kept) & (mass < top_p)
    return want


def overlap_keeps(temperature, top_k, top_p):
    """Rows where top-p keeps every token top-k kept (top-k's cut is the one that binds)."""
    return lambda logits: (kept(logits, temperature, top_k, top_p).sum(-1)
                           == kept(logits, temperature, top_k, None).sum(-1))


def tied_max(logits) -> np.ndarray:
    """Rows whose largest logit appears more than once."""
    return (logits == logits.max(-1, keepdims=True)).sum(-1) > 1


# ----------------------------------------------------------------------------------------------- judging
def with_their_ties(got, expected, before) -> np.ndarray:
    """``expected`` with the student's pick among tokens tied at the top-p boundary: in a row where the student keeps
    as many tokens as the reference, and the tokens' probabilities before top-p (``before``) are the reference's up to
    the order of equal ones, the reference renormalised over the student's tokens. Every other row as it was."""
    out = expected.copy()
    keep = np.asarray(got) > 0
    for r in range(len(out)):
        mine, theirs = before[r][keep[r]], before[r][expected[r] > 0]
        if not np.array_equal(keep[r], expected[r] > 0) and np.array_equal(np.sort(mine), np.sort(theirs)):
            out[r] = np.where(keep[r], before[r], 0.0) / theirs.sum()
    return out


def by_rule(got, expected, top_k=None, temperature=None) -> list:
    """Mistakes recognised by what they do to any distribution, whatever else the code does (so a torch.topk that
    breaks ties its own way is named too, not only the catalogue's argsort): rows that are the reference's up to a
    factor below 1 (not renormalised); rows with exactly ``top_k`` tokens, all among the reference's more (a tie at
    the k-th broken); at temperature 0, values that are not finite (divided by 0)."""
    if not np.all(np.isfinite(got)):
        return [by_id("ntp_no_greedy_branch")] if temperature == 0 else []
    found = []
    sums = got.sum(axis=-1, keepdims=True)
    if (np.any(np.abs(sums - 1) > 1e-3) and np.all(sums > 0)
            and np.allclose(got / sums, expected, atol=tolerances.STUDENT.atol, rtol=tolerances.STUDENT.rtol)):
        found.append(by_id("ntp_no_renormalise"))
    if top_k is not None:
        tied = (expected > 0).sum(axis=-1) > top_k
        kept_ = got > 0
        if (np.any(tied) and np.all((kept_.sum(axis=-1) == top_k)[tied])
                and not np.any(kept_[tied] & (expected[tied] == 0))):
            found.append(by_id("ntp_top_k_breaks_ties"))
    return found


def expect_probs(got, expected, what: str, call, top_k=None, before=None, temperature=None) -> None:
    """Values within STUDENT, then the rules' exact promises: zeros where the reference has zeros, none elsewhere,
    rows that sum to 1. ``before``, the probabilities before top-p: the student may keep other tokens tied at the
    top-p boundary (``with_their_ties``). A failure names the catalogued mistakes whose output it is, or else those
    ``by_rule`` recognises."""
    if before is not None and np.shape(got) == expected.shape and np.all(np.isfinite(np.asarray(got, float))):
        expected = with_their_ties(np.asarray(got, np.float64), expected, before)
    try:
        expect_close(got, expected, what=what, tol=tolerances.STUDENT, against="Hugging Face 순서의 float64 참조",
                     call=call)
    except GradingFailure as failure:
        ruled = [] if failure.diagnosis else by_rule(np.asarray(got, np.float64), expected, top_k, temperature)
        if not ruled or np.shape(got) != expected.shape:
            raise
        raise GradingFailure(with_causes(failure.message, ruled), ruled) from None
    got = expect_shape(got, expected.shape, what)
    dropped, kept_ = expected == 0, expected > 0
    if np.any(got[dropped] != 0):
        found = of_output(got, call, expected=expected)
        largest = np.max(np.abs(got[dropped]))
        raise GradingFailure(with_causes(f"{what}: 버려야 할 토큰의 확률이 정확히 0이 아닙니다(최댓값 {largest:.2e}). "
                                         "버린 토큰은 0으로 두세요.", found), found)
    if np.any(got[kept_] <= 0):
        raise GradingFailure(f"{what}: 남겨야 할 토큰의 확률이 0입니다.")
    sums = got.sum(axis=-1)
    if not np.allclose(sums, 1.0, atol=tolerances.STUDENT.atol, rtol=0):
        found = of_output(got, call, expected=expected)
        raise GradingFailure(with_causes(f"{what}: 행의 합이 1이 아닙니다: {np.round(sums, 4).tolist()}.", found),
                             found)


def call(logits, temperature, top_k, top_p, what: str) -> dict:
    """One call of a test: its arguments, what it is called in a message, the reference's probabilities and those
    before top-p (``None`` without top-p)."""
    before = REFERENCE(logits, temperature, top_k, None) if top_p is not None and temperature != 0 else None
    return {"args": (logits, temperature, top_k, top_p), "what": what, "before": before,
            "expected": REFERENCE(logits, temperature, top_k, top_p)}


def check(student, case: dict) -> None:
    """The student's probabilities for one call (``call``) against the reference's (ties at the top-p boundary as
    the student breaks them). A temperature-0 call that divides by zero in Python (ZeroDivisionError) is named as
    such."""
    logits, temperature, top_k, top_p = case["args"]
    try:
        got = student.next_token_probs(logits, temperature, top_k, top_p)
    except GradingFailure as failure:
        if temperature == 0 and failure.raised in ("ZeroDivisionError", "FloatingPointError"):
            found = [by_id("ntp_no_greedy_branch")]
            raise GradingFailure(with_causes(failure.message, found), found, failure.raised) from None
        raise
    expect_probs(got, case["expected"], case["what"], student.last, top_k, case["before"], temperature)


def about(temperature, top_k, top_p, kind: str) -> str:
    return f"temperature={temperature}, top_k={top_k}, top_p={top_p}, {kind}의 확률"


# ----------------------------------------------------------------------------------------------- each test's calls
# Each test's calls as data (``call``): drawn from the test's rng, with the reference's answers, before the student is
# called.
def temperature_calls(rng, temperature) -> list:
    return [call(clear_logits(rng, 3, temperature), temperature, None, None, f"temperature={temperature}의 확률")]


def top_k_calls(rng, top_k) -> list:
    logits = drawn(lambda: tied_logits(rng, 5), 1.0, top_k, None, top_k_tie(1.0, top_k), top_k_clear(1.0, top_k),
                   tied=True)
    return [call(logits, 1.0, top_k, None, f"top_k={top_k}, 동점이 있는 로짓의 확률")]


def top_p_calls(rng, top_p) -> list:
    flat = drawn(lambda: flat_logits(rng, 4), 1.0, None, top_p, top_p_cuts(1.0, None, top_p))
    tied = drawn(lambda: tied_logits(rng, 4), 1.0, None, top_p, top_p_tie(1.0, None, top_p), tied=True)
    return [call(flat, 1.0, None, top_p, f"top_p={top_p}의 확률"),
            call(tied, 1.0, None, top_p, f"top_p={top_p}, 경계에 동점이 있는 로짓의 확률")]


def all_three_calls(rng, temperature, top_k, top_p) -> list:
    flat = drawn(lambda: flat_logits(rng, 5), temperature, top_k, top_p,
                 overlap_cuts(temperature, top_k, top_p), overlap_keeps(temperature, top_k, top_p))
    tied = drawn(lambda: tied_logits(rng, 5), temperature, top_k, top_p, top_k_tie(temperature, top_k),
                 top_p_tie(temperature, top_k, top_p), tied=True)
    greedy = drawn(lambda: tied_logits(rng, 4), 0.0, top_k, top_p, tied_max, tied=True)
    return [call(flat, temperature, top_k, top_p, about(temperature, top_k, top_p, "겹치는 거르기")),
            call(tied, temperature, top_k, top_p, about(temperature, top_k, top_p, "동점이 있는 로짓")),
            call(greedy, 0.0, top_k, top_p, about(0.0, top_k, top_p, "가장 큰 로짓이 여럿인 행"))]


def limit_calls(rng) -> list:
    greedy = drawn(lambda: tied_logits(rng, 4), 0.0, None, None, tied_max, tied=True)
    plain = clear_logits(rng, 3, 1.5)
    unique = clear_logits(rng, 3, 1.0, 1)
    return [call(greedy, 0.0, None, None, "temperature=0의 확률 (가장 큰 로짓이 여럿인 행)"),
            call(plain, 1.5, None, 1.0, "top_p=1.0의 확률 (거르기 없음)"),
            call(plain, 1.5, VOCAB + 3, None, f"top_k={VOCAB + 3} (어휘 {VOCAB}개보다 큼)의 확률 (거르기 없음)"),
            call(unique, 1.0, 1, None, "top_k=1의 확률 (가장 큰 로짓이 하나뿐: 탐욕적 선택과 같아야 함)")]


# ----------------------------------------------------------------------------------------------- tests
@pytest.mark.points(0.2)
@pytest.mark.parametrize("temperature", [pytest.param(0.5, id="T0.5"), pytest.param(2.0, id="T2")])
def test_temperature_divides_the_logits(student, rng, temperature):
    """온도는 softmax 앞에서 로짓을 나눔: softmax(logits / temperature), 거르기 없음"""
    for case in temperature_calls(rng, temperature):
        check(student, case)


@pytest.mark.points(0.3)
@pytest.mark.parametrize("top_k", [pytest.param(3, id="k3"), pytest.param(5, id="k5")])
def test_top_k_keeps_every_logit_equal_to_the_kth(student, rng, top_k):
    """top-k는 k번째로 큰 로짓보다 작은 로짓만 버림: k번째와 같은 로짓(동점)은 모두 남김 (TopKLogitsWarper)"""
    for case in top_k_calls(rng, top_k):
        check(student, case)


@pytest.mark.points(0.3)
@pytest.mark.parametrize("top_p", [pytest.param(0.6, id="p0.6"), pytest.param(0.9, id="p0.9")])
def test_top_p_keeps_the_token_that_crosses_p(student, rng, top_p):
    """top-p는 확률이 큰 토큰부터 누적 확률이 top_p에 이를 때까지 남김: top_p를 넘게 만드는 토큰도 남기고 다시 정규화,
    경계에서 확률이 같은 토큰은 top_p에 이를 만큼만"""
    for case in top_p_calls(rng, top_p):
        check(student, case)


@pytest.mark.points(0.9)
@pytest.mark.parametrize("temperature, top_k, top_p", [
    pytest.param(0.7, 3, 0.9, id="T0.7-k3-p0.9"),
    pytest.param(0.8, 3, 0.8, id="T0.8-k3-p0.8"),
    pytest.param(1.3, 4, 0.8, id="T1.3-k4-p0.8"),
])
def test_all_three_in_hugging_faces_order(student, rng, temperature, top_k, top_p):
    """온도, top-k, top-p를 함께: 로짓을 온도로 나누고, top-k, softmax, 다시 정규화한 분포에서 top-p, 다시 정규화
    (두 거르기가 겹치는 로짓, 동점이 있는 로짓), temperature=0이면 거르기와 상관없이 탐욕적 선택"""
    for case in all_three_calls(rng, temperature, top_k, top_p):
        check(student, case)


@pytest.mark.points(0.3)
def test_limits_greedy_and_no_filter(student, rng):
    """temperature=0은 탐욕적 선택: 가장 큰 로짓(같으면 번호가 작은 토큰)에 확률 1, 나머지는 정확히 0.
    top_p=1이나 top_k >= V는 거르지 않음, 가장 큰 로짓이 하나뿐이면 top_k=1은 탐욕적 선택과 같음"""
    for case in limit_calls(rng):
        check(student, case)
