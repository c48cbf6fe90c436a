"""`split_heads` (attention): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/attention/test_split_heads.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import answers
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct split_heads; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def split_heads(x, num_heads):
    B, T, C = x.shape
    return x.reshape(B, T, num_heads, C // num_heads).transpose(0, 2, 1, 3)  # @SPLIT
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="split_heads_reshape_without_transpose",
        exercise="split_heads",
        title="transpose 없이 (B, H, T, dh)로 바로 reshape",
        hint=("먼저 (B, T, H, dh)로 reshape한 뒤 transpose(0, 2, 1, 3)로 헤드 축을 앞으로 옮기세요. "
              "바로 reshape하면 토큰과 채널이 섞입니다."),
        source=_with(SPLIT="return x.reshape(B, num_heads, T, C // num_heads)"),
    ),
    Mistake(
        id="split_heads_interleaved_channels",
        exercise="split_heads",
        title="채널을 (dh, H) 순서로 나눠 헤드가 띄엄띄엄 채널을 가짐",
        hint="헤드 h는 연속된 채널 h*dh .. (h+1)*dh - 1입니다: reshape(B, T, H, dh) 후 transpose(0, 2, 1, 3).",
        source=_with(SPLIT="return x.reshape(B, T, C // num_heads, num_heads).transpose(0, 3, 1, 2)"),
    ),
]

EXERCISE = Exercise(
    "split_heads",
    assignment="attention",
    points=1,
    # No library routine computes it, so nothing is forbidden (``forbidden.py``).
    forbidden=None,
    mistakes=MISTAKES,
    # a call of it while another exercise is graded is answered with this (answers.py)
    answer=answers.SPLIT_HEADS,
)
