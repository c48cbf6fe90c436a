"""`causal_mask` (attention): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/attention/test_causal_mask.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import answers, forbidden
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct causal_mask; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    return np.tril(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q)   # @MASK
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="causal_triu",
        exercise="causal_mask",
        title="tril 대신 triu: 과거가 아니라 미래를 봄",
        hint="질의 i는 j <= i + (t_k - t_q)인 키를 봅니다: 아래 삼각(np.tril)입니다.",
        source=_with(MASK="return np.triu(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q)"),
    ),
    Mistake(
        id="causal_top_left",
        exercise="causal_mask",
        title="왼쪽 위에 맞춤: np.tril에 t_k - t_q 오프셋이 없음",
        hint=("Tq != Tk이면 마스크를 오른쪽 아래에 맞춰야 합니다: np.tril(..., k=t_k - t_q). "
              "새 질의가 캐시된 과거 전체를 봐야 합니다."),
        source=_with(MASK="return np.tril(np.ones((t_q, t_k), dtype=bool))"),
    ),
    Mistake(
        id="causal_inverted",
        exercise="causal_mask",
        title="True가 '가림'인 마스크를 돌려줌 (반대 규칙)",
        hint="이 과제의 규칙은 True = 볼 수 있음입니다. 미래를 True로 표시하는 np.triu(..., k=1)는 반대입니다.",
        source=_with(MASK="return np.triu(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q + 1)"),
    ),
    Mistake(
        id="causal_excludes_diagonal",
        exercise="causal_mask",
        title="자기 자신(대각선)까지 가림",
        hint="질의 i는 자기 위치 j = i + (t_k - t_q)도 볼 수 있습니다: 부등호는 `<`가 아니라 `<=`입니다.",
        source=_with(MASK="i = np.arange(t_q)[:, None]\n"
                          "j = np.arange(t_k)[None, :]\n"
                          "return j < i + (t_k - t_q)"),
    ),
    Mistake(
        id="causal_float_dtype",
        exercise="causal_mask",
        title="bool이 아니라 0/1 실수 배열을 돌려줌",
        hint="마스크는 bool이어야 합니다: np.ones(..., dtype=bool) 또는 비교 연산의 결과를 쓰세요.",
        source=_with(MASK="return np.tril(np.ones((t_q, t_k)), k=t_k - t_q)"),
        diagnosable=False,   # the values are right; only the dtype test fails
    ),
    Mistake(
        id="causal_offset_sign",
        exercise="causal_mask",
        title="오프셋의 부호가 반대: j <= i - (t_k - t_q)",
        hint=("질의 i의 절대 위치는 i + (t_k - t_q)입니다. 캐시가 있으면(t_q < t_k) 오프셋만큼 더 많은 키를 봅니다: "
              "np.tril(…, k=t_k - t_q)."),
        source=_with(MASK="return np.tril(np.ones((t_q, t_k), dtype=bool), k=t_q - t_k)"),
    ),
]

EXERCISE = Exercise(
    "causal_mask",
    assignment="attention",
    points=2,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.CAUSAL,
    mistakes=MISTAKES,
    # a call of it while another exercise is graded is answered with this (answers.py)
    answer=answers.CAUSAL_MASK,
)
