"""`additive_attention` (attention): the library routines it may not call and its known mistakes.

Its grader, ``graders/attention/test_additive_attention.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import forbidden
from autograder.graders.mistakes import Mistake

ASSIGNMENT = "attention"

# The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
FORBIDDEN = forbidden.ATTENTION

MISTAKES = [
    Mistake(
        id="additive_product_instead_of_sum",
        exercise="additive_attention",
        title="tanh(q + k) 대신 tanh(q * k)로 점수를 계산",
        hint="가산 어텐션의 점수는 질의와 키를 더한 뒤 tanh를 취해 d 축으로 더한 값입니다: tanh(q + k).sum(-1).",
        source='''
def additive_attention(query, key, value, mask=None):
    scores = np.tanh(query[..., :, None, :] * key[..., None, :, :]).sum(axis=-1)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores, axis=-1) @ value
''',
    ),
    Mistake(
        id="additive_mask_with_zero",
        exercise="additive_attention",
        title="가린 점수를 -inf가 아니라 0으로 둠",
        hint="가산 점수는 음수일 수도 있어서 0은 오히려 큰 점수가 됩니다. 가린 점수는 -inf로 두세요.",
        source='''
def additive_attention(query, key, value, mask=None):
    scores = np.tanh(query[..., :, None, :] + key[..., None, :, :]).sum(axis=-1)
    if mask is not None:
        scores = np.where(mask, scores, 0.0)
    return softmax(scores, axis=-1) @ value
''',
    ),
]
