"""`multi_head_attention_layer` (attention): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/attention/test_multi_head_attention_layer.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import answers, forbidden
from autograder.graders.exercises import HEAD_STEPS, Exercise, Mistake, rewritten

# The correct multi_head_attention_layer; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    q = split_heads(x_q @ params["w_q"] + params["b_q"], num_heads)     # @QUERY
    k = split_heads(x_kv @ params["w_k"] + params["b_k"], num_heads)    # @KEY
    v = split_heads(x_kv @ params["w_v"] + params["b_v"], num_heads)    # @VALUE
    y = scaled_dot_product_attention(q, k, v, mask)                     # @ATTEND
    return merge_heads(y) @ params["w_o"] + params["b_o"]               # @OUTPUT
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


# The attention of the mistakes that split heads with a ``heads`` of their own (instead of split_heads).
_ATTEND_OWN_HEADS = ('y = scaled_dot_product_attention(heads(x_q @ p["w_q"] + p["b_q"]), '
                     'heads(x_kv @ p["w_k"] + p["b_k"]),\n'
                     '                                 heads(x_kv @ p["w_v"] + p["b_v"]), mask)')

MISTAKES = [
    Mistake(
        id="layer_missing_output_projection",
        exercise="multi_head_attention_layer",
        title="출력 투영 w_o, b_o를 빠뜨림",
        hint="헤드를 합친 (B, Tq, H*dv)에 마지막으로 @ w_o + b_o를 적용해 (B, Tq, D)로 돌아와야 합니다.",
        source=_with(ATTEND="", OUTPUT="return merge_heads(scaled_dot_product_attention(q, k, v, mask))"),
    ),
    Mistake(
        id="layer_biases_ignored",
        exercise="multi_head_attention_layer",
        title="편향 b_q, b_k, b_v, b_o를 더하지 않음",
        hint="각 투영은 x @ w + b입니다. params의 편향 네 개를 모두 더하세요.",
        source=_with(QUERY='q = split_heads(x_q @ params["w_q"], num_heads)',
                     KEY='k = split_heads(x_kv @ params["w_k"], num_heads)',
                     VALUE='v = split_heads(x_kv @ params["w_v"], num_heads)',
                     ATTEND="",
                     OUTPUT='return merge_heads(scaled_dot_product_attention(q, k, v, mask)) @ params["w_o"]'),
    ),
    Mistake(
        id="layer_cross_uses_x_q_for_keys",
        exercise="multi_head_attention_layer",
        title="교차 어텐션에서 키·값도 x_q로 만듦",
        hint=("키와 값은 x_kv에서 만듭니다: k = x_kv @ w_k + b_k, v = x_kv @ w_v + b_v. "
              "셀프 어텐션에서만 x_kv가 x_q와 같습니다."),
        source=_with(KEY='k = split_heads(x_q @ params["w_k"] + params["b_k"], num_heads)',
                     VALUE='v = split_heads(x_q @ params["w_v"] + params["b_v"], num_heads)'),
    ),
    Mistake(
        id="layer_scale_by_model_dim",
        exercise="multi_head_attention_layer",
        title="헤드 차원 √dk 대신 투영 전체 차원 √(H·dk)로 나눔",
        hint="헤드로 나눈 뒤의 질의 차원 dk = w_q.shape[1] // num_heads로 스케일을 정하세요.",
        source=_with(QUERY='q = x_q @ params["w_q"] + params["b_q"]',
                     KEY='k = x_kv @ params["w_k"] + params["b_k"]',
                     VALUE='v = x_kv @ params["w_v"] + params["b_v"]\n'
                           "d = q.shape[-1]\n"
                           "q, k, v = (split_heads(a, num_heads) for a in (q, k, v))",
                     ATTEND="scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)\n"
                            "if mask is not None:\n"
                            "    scores = np.where(mask, scores, -np.inf)\n"
                            "y = softmax(scores, axis=-1) @ v"),
    ),
    Mistake(
        id="layer_interleaved_heads",
        exercise="multi_head_attention_layer",
        title="투영한 Q, K, V를 (dk, H) 순서로 나눠 헤드가 띄엄띄엄 열을 가짐",
        hint=("헤드 h의 몫은 투영한 열 h·dk … (h+1)·dk - 1입니다 (Keras 커널 w_q.reshape(D, H, dk)와 같은 순서): "
              "split_heads를 쓰세요."),
        source=_with(QUERY="def heads(a):\n"
                           "    b, t, c = a.shape\n"
                           "    return a.reshape(b, t, c // num_heads, num_heads).transpose(0, 3, 1, 2)\n"
                           "p = params",
                     KEY="",
                     VALUE="",
                     ATTEND=_ATTEND_OWN_HEADS,
                     OUTPUT="b, h, t, d = y.shape\n"
                            'return y.transpose(0, 2, 3, 1).reshape(b, t, h * d) @ p["w_o"] + p["b_o"]'),
    ),
    Mistake(
        id="layer_split_without_transpose",
        exercise="multi_head_attention_layer",
        title="헤드를 나눌 때 transpose 없이 (B, H, T, dk)로 바로 reshape",
        hint=("(B, T, H·dk)를 곧장 (B, H, T, dk)로 바꾸면 토큰과 헤드가 섞입니다. (B, T, H, dk)로 나눈 뒤 축 1, 2를 "
              "바꾸세요 (split_heads)."),
        source=_with(QUERY="def heads(a):\n"
                           "    b, t, c = a.shape\n"
                           "    return a.reshape(b, num_heads, t, c // num_heads)\n"
                           "p = params",
                     KEY="",
                     VALUE="",
                     ATTEND=_ATTEND_OWN_HEADS,
                     OUTPUT='return merge_heads(y) @ p["w_o"] + p["b_o"]'),
    ),
    Mistake(
        id="layer_no_scale",
        exercise="multi_head_attention_layer",
        title="헤드마다 점수를 √dk로 나누지 않음",
        hint="헤드로 나눈 Q, K를 scaled_dot_product_attention에 넘기면 헤드 차원 dk로 저절로 나눕니다.",
        source=_with(QUERY='p = params\n'
                           'q = split_heads(x_q @ p["w_q"] + p["b_q"], num_heads)',
                     KEY='k = split_heads(x_kv @ p["w_k"] + p["b_k"], num_heads)',
                     VALUE='v = split_heads(x_kv @ p["w_v"] + p["b_v"], num_heads)',
                     ATTEND="scores = q @ np.swapaxes(k, -1, -2)\n"
                            "if mask is not None:\n"
                            "    scores = np.where(mask, scores, -np.inf)",
                     OUTPUT='return merge_heads(softmax(scores, axis=-1) @ v) @ p["w_o"] + p["b_o"]'),
    ),
]

EXERCISE = Exercise(
    "multi_head_attention_layer",
    assignment="attention",
    points=4,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.ATTENTION,
    mistakes=MISTAKES,
    # answered with their answers while it is graded, so that it is judged on its own logic (isolation.py)
    callees=HEAD_STEPS + ("multi_head_attention",),
    # a call of it while another exercise is graded is answered with this (answers.py)
    answer=answers.MULTI_HEAD_ATTENTION_LAYER,
)
