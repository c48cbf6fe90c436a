"""`sliding_window_mask` (kv_cache): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/kv_cache/test_sliding_window_mask.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct sliding_window_mask; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def sliding_window_mask(t_q, t_k=None, window=4096):
    t_k = t_q if t_k is None else t_k
    i = np.arange(t_q)[:, None] + (t_k - t_q)  # @POSITIONS
    j = np.arange(t_k)[None, :]
    return (j <= i) & (i - j < window)         # @MASK
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="sw_window_off_by_one",
        exercise="sliding_window_mask",
        title=("Mistral 논문의 규칙(위치 i - window .. i, window + 1개)을 씀: 이 과제는 Hugging Face의 규칙"
               "(자기 자신 포함 window개)"),
        hint="Mistral 7B 논문은 위치 i가 i - W부터 i까지(W + 1개)를 본다고 적었지만, 이 과제는 "
             "Hugging Face transformers의 구현처럼 자기 자신과 앞의 window - 1개, 모두 window개를 "
             "봅니다: (i + t_k - t_q) - j < window (`<=`가 아니라 `<`).",
        source=_with(MASK="return (j <= i) & (i - j <= window)"),
    ),
    Mistake(
        id="sw_top_left",
        exercise="sliding_window_mask",
        title="윈도와 인과 마스크를 왼쪽 위에 맞춤 (t_k - t_q 오프셋 없음): 캐시 뒤에 이어지는 질의가 틀림",
        hint="질의 i의 절대 위치는 i + (t_k - t_q)입니다. causal_mask처럼 오른쪽 아래에 맞춰야 t_q < t_k(캐시가 "
             "있을 때)에서 맞습니다.",
        source=_with(POSITIONS="i = np.arange(t_q)[:, None]"),
    ),
    Mistake(
        id="sw_symmetric_band",
        exercise="sliding_window_mask",
        title="양쪽으로 열린 띠 |i - j| < window: 미래 토큰도 봄 (인과 조건이 빠짐)",
        hint="슬라이딩 윈도는 인과 마스크에 더하는 조건입니다: j <= i이고 i - j < window (i는 절대 위치).",
        source=_with(MASK="return np.abs(i - j) < window"),
    ),
    Mistake(
        id="sw_missing_causal",
        exercise="sliding_window_mask",
        title="윈도 조건 p - j < window만 쓰고 인과 조건 j <= p를 빠뜨림: 미래 토큰을 모두 봄",
        hint="슬라이딩 윈도는 인과 마스크에 더하는 조건입니다: j <= p이고 p - j < window (p = i + t_k - t_q).",
        source=_with(POSITIONS="p = np.arange(t_q)[:, None] + (t_k - t_q)", MASK="return p - j < window"),
    ),
    Mistake(
        id="sw_window_too_small",
        exercise="sliding_window_mask",
        title="윈도를 하나 좁게 잡음 (p - j < window - 1): 자기 자신을 넣어 window - 1개만 봄",
        hint="토큰은 자기 자신과 앞의 window - 1개, 모두 window개를 봅니다: p - j < window.",
        source=_with(POSITIONS="p = np.arange(t_q)[:, None] + (t_k - t_q)",
                     MASK="return (j <= p) & (p - j < window - 1)"),
    ),
]

EXERCISE = Exercise(
    "sliding_window_mask",
    assignment="kv_cache",
    points=2,
    # No library routine computes it, so nothing is forbidden (``forbidden.py``).
    forbidden=None,
    mistakes=MISTAKES,
)
