"""sliding_window_mask(t_q, t_k=None, window=4096): bool (t_q, t_k); causal_mask's bottom-right rule, and query i
sees key j only if (i + t_k - t_q) - j < window (Hugging Face transformers' sliding-window rule: itself and the
window - 1 tokens before; the Mistral paper's positions i - W .. i are W + 1 tokens, a mistake of the catalogue).

Masks are exact: compared with tolerances.EXACT against a numpy reference written from the contract, and against
``causal_mask`` when the window covers every key. A wrong mask is named by running the catalogue's mistakes on the
same call (``diagnosis.of_output``).
"""
import numpy as np
import pytest

from autograder.graders import references, tolerances
from autograder.graders.compare import as_array, expect_close, expect_true

# Judged against (forbidden routines and known mistakes: exercises/sliding_window_mask.py):
REFERENCES = ("a numpy mask written from the contract (numpy_reference below)", "references.causal_mask")
TOLERANCES = {"EXACT": "masks"}


def numpy_reference(t_q, t_k, window):
    """Position p = i + t_k - t_q of query i sees key j iff p - window < j <= p: a band of numpy.tril's."""
    ones = np.ones((t_q, t_k), dtype=bool)
    return np.tril(ones, k=t_k - t_q) & ~np.tril(ones, k=t_k - t_q - window)        # (t_q, t_k)


def expect_mask(got, expected, against, call):
    expect_close(got, expected, what="마스크", tol=tolerances.EXACT, against=against, call=call)


@pytest.mark.points(0.8)
@pytest.mark.parametrize("t_q, t_k, window", [
    pytest.param(8, 8, 3, id="square-8-window3"),
    pytest.param(3, 10, 4, id="tq3-tk10-window4-after-cache"),
    pytest.param(1, 20, 5, id="one-new-token-tk20-window5"),
    pytest.param(6, 9, 1, id="window1-only-itself"),
])
def test_matches_numpy_reference(student, t_q, t_k, window):
    """numpy 기준과 같은 마스크: 오른쪽 아래 정렬, 자기 자신과 앞의 window - 1개 토큰만 봄"""
    got = student.sliding_window_mask(t_q, t_k, window)
    expect_mask(got, numpy_reference(t_q, t_k, window), "numpy.tril 두 개의 차 (윈도 띠)", student.last)


@pytest.mark.points(0.4)
@pytest.mark.parametrize("t_q, t_k, window", [
    pytest.param(5, 5, 5, id="window-equals-tk"),
    pytest.param(4, 7, 100, id="window-longer-than-tk"),
    pytest.param(6, 6, None, id="default-window-4096"),
])
def test_window_covering_every_key_is_the_causal_mask(student, t_q, t_k, window):
    """window >= t_k이면 (기본값 4096 포함) causal_mask(t_q, t_k)와 같음"""
    got = student.sliding_window_mask(t_q, t_k) if window is None else student.sliding_window_mask(t_q, t_k, window)
    expect_mask(got, references.causal_mask(t_q, t_k), "causal_mask(t_q, t_k)", student.last)


@pytest.mark.points(0.2)
def test_default_t_k_is_t_q(student, rng):
    """t_k를 생략하면 t_k = t_q"""
    t, window = int(rng.integers(5, 10)), int(rng.integers(2, 4))
    got = student.sliding_window_mask(t, window=window)
    expect_mask(got, numpy_reference(t, t, window), f"t_q = t_k = {t}, window = {window}", student.last)


@pytest.mark.points(0.2)
def test_dtype_is_bool(student, rng):
    """결과의 자료형은 bool (True = 볼 수 있음)"""
    t_q = int(rng.integers(2, 6))
    t_k = t_q + int(rng.integers(0, 4))
    got = student.sliding_window_mask(t_q, t_k, 2)
    expect_true(isinstance(got, np.ndarray) and got.dtype == np.bool_,
                f"sliding_window_mask의 결과는 bool 배열이어야 합니다 (실제 자료형: "
                f"{getattr(got, 'dtype', type(got).__name__)}). 예: 두 비교의 `&`.")


@pytest.mark.points(0.4)
def test_long_sequence_rows_see_at_most_window_keys(student, rng):
    """긴 시퀀스: 행마다 보이는 키는 min(window, 절대 위치 + 1)개이고 모두 연속한 과거 토큰"""
    t_q = int(rng.integers(20, 60))
    t_k = t_q + int(rng.integers(1, 80))
    window = int(rng.integers(3, 17))
    got = student.sliding_window_mask(t_q, t_k, window)
    mask = as_array(got, "마스크")
    expect_mask(mask, numpy_reference(t_q, t_k, window), f"t_q={t_q}, t_k={t_k}, window={window}", student.last)
    counts = mask.sum(axis=-1)
    expect_true(np.all(counts == np.minimum(window, np.arange(t_q) + t_k - t_q + 1)),
                f"행마다 보이는 키의 수가 min(window, 위치 + 1)이어야 합니다 (window={window}).")
