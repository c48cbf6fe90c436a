"""`dot_product_attention` (attention): the library routines it may not call and its known mistakes.

Its grader, ``graders/attention/test_dot_product_attention.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import forbidden
from autograder.graders.mistakes import Mistake

ASSIGNMENT = "attention"

# The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
FORBIDDEN = forbidden.ATTENTION

MISTAKES = [
    Mistake(
        id="dot_scaled_by_sqrt_d",
        exercise="dot_product_attention",
        title="스케일하지 않아야 할 내적 점수를 √d로 나눔",
        hint="dot_product_attention의 점수는 q · k 그대로입니다. √d로 나누는 것은 scaled_dot_product_attention입니다.",
        source='''
def dot_product_attention(query, key, value, mask=None):
    scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores, axis=-1) @ value
''',
    ),
    Mistake(
        id="dot_key_T_on_batches",
        exercise="dot_product_attention",
        title="key.T로 전치해 배치 입력에서 모든 축이 뒤집힘",
        hint="3차원 이상에서 .T는 모든 축을 뒤집습니다. 마지막 두 축만 바꾸려면 np.swapaxes(key, -1, -2)를 쓰세요.",
        source='''
def dot_product_attention(query, key, value, mask=None):
    scores = query @ key.T
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores, axis=-1) @ value
''',
        diagnosable=False,   # batched inputs raise an error (shown to the student); 2-D inputs are right
    ),
]
