"""`multi_head_attention` (attention): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/attention/test_multi_head_attention.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import answers, forbidden
from autograder.graders.exercises import HEAD_STEPS, Exercise, Mistake, rewritten

# The correct multi_head_attention; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def multi_head_attention(query, key, value, num_heads, mask=None):
    q, k, v = (split_heads(a, num_heads) for a in (query, key, value))  # @SPLIT
    y = scaled_dot_product_attention(q, k, v, mask)                     # @ATTEND
    return merge_heads(y)                                               # @MERGE
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="mha_scale_by_model_dim",
        exercise="multi_head_attention",
        title="헤드 차원 √(C/H) 대신 전체 차원 √C로 나눔",
        hint="헤드마다 점수는 길이 dh = C // H인 벡터의 내적이므로 √dh로 나눕니다.",
        source=_with(ATTEND="scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(query.shape[-1])\n"
                            "if mask is not None:\n"
                            "    scores = np.where(mask, scores, -np.inf)",
                     MERGE="return merge_heads(softmax(scores, axis=-1) @ v)"),
    ),
    Mistake(
        id="mha_no_head_split",
        exercise="multi_head_attention",
        title="헤드로 나누지 않고 전체 채널로 어텐션 한 번",
        hint="split_heads로 (B, H, T, dh)를 만든 뒤 헤드마다 따로 어텐션하고 merge_heads로 합치세요.",
        source=_with(SPLIT="", ATTEND="", MERGE="return scaled_dot_product_attention(query, key, value, mask)"),
    ),
    Mistake(
        id="mha_split_without_transpose",
        exercise="multi_head_attention",
        title="헤드를 나눌 때 transpose 없이 reshape",
        hint="(B, T, C) -> (B, T, H, dh) -> transpose(0, 2, 1, 3) 순서로 나누세요.",
        source=_with(SPLIT="def split(a):\n"
                           "    B, T, C = a.shape\n"
                           "    return a.reshape(B, num_heads, T, C // num_heads)",
                     ATTEND="y = scaled_dot_product_attention(split(query), split(key), split(value), mask)",
                     MERGE="B, H, T, dh = y.shape\n"
                           "return y.transpose(0, 2, 1, 3).reshape(B, T, H * dh)"),
    ),
    Mistake(
        id="mha_merge_without_transpose",
        exercise="multi_head_attention",
        title="헤드를 합칠 때 transpose 없이 reshape",
        hint="(B, H, T, dh) -> transpose(0, 2, 1, 3) -> (B, T, H * dh) 순서로 합치세요.",
        source=_with(MERGE="B, H, T, dh = y.shape\nreturn y.reshape(B, T, H * dh)"),
    ),
    Mistake(
        id="mha_interleaved_heads",
        exercise="multi_head_attention",
        title="헤드를 (C/H, H) 순서로 나눠 헤드가 띄엄띄엄 채널을 가짐",
        hint=("헤드 h는 이어진 채널 h·C/H … (h+1)·C/H - 1입니다: (B, T, H, C/H)로 나눈 뒤 축을 "
              "바꾸세요(split_heads)."),
        source=_with(SPLIT="def heads(a):\n"
                           "    b, t, c = a.shape\n"
                           "    return a.reshape(b, t, c // num_heads, num_heads).transpose(0, 3, 1, 2)",
                     ATTEND="y = scaled_dot_product_attention(heads(query), heads(key), heads(value), mask)",
                     MERGE="b, h, t, d = y.shape\n"
                           "return y.transpose(0, 2, 3, 1).reshape(b, t, h * d)"),
    ),
    Mistake(
        id="mha_no_scale",
        exercise="multi_head_attention",
        title="헤드마다 점수를 √(C/H)로 나누지 않음",
        hint="헤드로 나눈 뒤 scaled_dot_product_attention을 부르면 헤드 차원 C/H로 저절로 나눕니다.",
        source=_with(ATTEND="scores = q @ np.swapaxes(k, -1, -2)\n"
                            "if mask is not None:\n"
                            "    scores = np.where(mask, scores, -np.inf)",
                     MERGE="return merge_heads(softmax(scores, axis=-1) @ v)"),
    ),
]

EXERCISE = Exercise(
    "multi_head_attention",
    assignment="attention",
    points=3,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.ATTENTION,
    mistakes=MISTAKES,
    # answered with their answers while it is graded, so that it is judged on its own logic (isolation.py)
    callees=HEAD_STEPS,
    # a call of it while another exercise is graded is answered with this (answers.py)
    answer=answers.MULTI_HEAD_ATTENTION,
)
