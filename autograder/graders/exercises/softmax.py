"""`softmax` (attention): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/attention/test_softmax.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import answers, forbidden
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct softmax; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def softmax(x, axis=-1):
    x = np.asarray(x)                                              # @ASARRAY
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))            # @MAX
    return e / np.sum(e, axis=axis, keepdims=True)                 # @SUM
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="softmax_ignores_axis",
        exercise="softmax",
        title="axis 인자를 무시하고 항상 마지막 축으로 정규화",
        hint="np.max와 np.sum에 axis=-1 대신 인자로 받은 axis를 넘기세요 (keepdims=True와 함께).",
        source=_with(MAX="e = np.exp(x - np.max(x, axis=-1, keepdims=True))",
                     SUM="return e / np.sum(e, axis=-1, keepdims=True)"),
    ),
    Mistake(
        id="softmax_sum_over_all",
        exercise="softmax",
        title="축을 정하지 않고 배열 전체의 합으로 나눔",
        hint="np.sum(e)는 모든 원소의 합입니다. np.sum(e, axis=axis, keepdims=True)로 그 축을 따라서만 더하세요.",
        source=_with(MAX="e = np.exp(x - np.max(x))", SUM="return e / np.sum(e)"),
    ),
    Mistake(
        id="softmax_no_max_subtraction",
        exercise="softmax",
        title="최댓값을 빼지 않아 큰 로짓에서 exp가 넘침 (inf/NaN)",
        hint=("exp를 취하기 전에 x - np.max(x, axis=axis, keepdims=True)로 옮기세요. "
              "결과는 같고 exp는 1을 넘지 않습니다."),
        source=_with(ASARRAY="", MAX="e = np.exp(x)"),
    ),
    Mistake(
        id="softmax_sum_over_all_rowmax",
        exercise="softmax",
        title="최댓값은 축을 따라 뺐지만 합은 배열 전체로 나눔",
        hint=("np.sum(e)는 모든 원소의 합입니다. 빼는 최댓값과 나누는 합 모두 axis=axis, keepdims=True로 같은 축을 "
              "따라 구하세요."),
        source=_with(ASARRAY="x = np.asarray(x, dtype=np.float64)", SUM="return e / np.sum(e)"),
    ),
]

EXERCISE = Exercise(
    "softmax",
    assignment="attention",
    points=2,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.SOFTMAX,
    mistakes=MISTAKES,
    # a call of it while another exercise is graded is answered with this (answers.py)
    answer=answers.SOFTMAX,
)
