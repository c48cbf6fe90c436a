"""`merge_heads` (attention): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/attention/test_merge_heads.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import answers
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct merge_heads; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def merge_heads(x):
    B, H, T, dh = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, H * dh)           # @MERGE
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="merge_heads_reshape_without_transpose",
        exercise="merge_heads",
        title="transpose 없이 (B, T, H*dh)로 바로 reshape",
        hint="먼저 transpose(0, 2, 1, 3)로 (B, T, H, dh)를 만든 뒤 reshape하세요.",
        source=_with(MERGE="return x.reshape(B, T, H * dh)"),
    ),
    Mistake(
        id="merge_heads_wrong_axis_order",
        exercise="merge_heads",
        title="(B, T, dh, H) 순서로 합쳐 채널이 헤드끼리 엇갈림",
        hint="헤드를 차례로 이어 붙이려면 transpose(0, 2, 1, 3)로 (B, T, H, dh)를 만든 뒤 reshape하세요.",
        source=_with(MERGE="return x.transpose(0, 2, 3, 1).reshape(B, T, H * dh)"),
    ),
]

EXERCISE = Exercise(
    "merge_heads",
    assignment="attention",
    points=1,
    # No library routine computes it, so nothing is forbidden (``forbidden.py``).
    forbidden=None,
    mistakes=MISTAKES,
    # a call of it while another exercise is graded is answered with this (answers.py)
    answer=answers.MERGE_HEADS,
)
