"""`multi_head_attention_layer` (attention): the library routines it may not call and its known mistakes.

Its grader, ``graders/attention/test_multi_head_attention_layer.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import forbidden
from autograder.graders.mistakes import Mistake

ASSIGNMENT = "attention"

# The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
FORBIDDEN = forbidden.ATTENTION

MISTAKES = [
    Mistake(
        id="layer_missing_output_projection",
        exercise="multi_head_attention_layer",
        title="출력 투영 w_o, b_o를 빠뜨림",
        hint="헤드를 합친 (B, Tq, H*dv)에 마지막으로 @ w_o + b_o를 적용해 (B, Tq, D)로 돌아와야 합니다.",
        source='''
def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    q = split_heads(x_q @ params["w_q"] + params["b_q"], num_heads)
    k = split_heads(x_kv @ params["w_k"] + params["b_k"], num_heads)
    v = split_heads(x_kv @ params["w_v"] + params["b_v"], num_heads)
    return merge_heads(scaled_dot_product_attention(q, k, v, mask))
''',
    ),
    Mistake(
        id="layer_biases_ignored",
        exercise="multi_head_attention_layer",
        title="편향 b_q, b_k, b_v, b_o를 더하지 않음",
        hint="각 투영은 x @ w + b입니다. params의 편향 네 개를 모두 더하세요.",
        source='''
def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    q = split_heads(x_q @ params["w_q"], num_heads)
    k = split_heads(x_kv @ params["w_k"], num_heads)
    v = split_heads(x_kv @ params["w_v"], num_heads)
    return merge_heads(scaled_dot_product_attention(q, k, v, mask)) @ params["w_o"]
''',
    ),
    Mistake(
        id="layer_cross_uses_x_q_for_keys",
        exercise="multi_head_attention_layer",
        title="교차 어텐션에서 키·값도 x_q로 만듦",
        hint=("키와 값은 x_kv에서 만듭니다: k = x_kv @ w_k + b_k, v = x_kv @ w_v + b_v. "
              "셀프 어텐션에서만 x_kv가 x_q와 같습니다."),
        source='''
def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    q = split_heads(x_q @ params["w_q"] + params["b_q"], num_heads)
    k = split_heads(x_q @ params["w_k"] + params["b_k"], num_heads)
    v = split_heads(x_q @ params["w_v"] + params["b_v"], num_heads)
    y = scaled_dot_product_attention(q, k, v, mask)
    return merge_heads(y) @ params["w_o"] + params["b_o"]
''',
    ),
    Mistake(
        id="layer_scale_by_model_dim",
        exercise="multi_head_attention_layer",
        title="헤드 차원 √dk 대신 투영 전체 차원 √(H·dk)로 나눔",
        hint="헤드로 나눈 뒤의 질의 차원 dk = w_q.shape[1] // num_heads로 스케일을 정하세요.",
        source='''
def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    q = x_q @ params["w_q"] + params["b_q"]
    k = x_kv @ params["w_k"] + params["b_k"]
    v = x_kv @ params["w_v"] + params["b_v"]
    d = q.shape[-1]
    q, k, v = (split_heads(a, num_heads) for a in (q, k, v))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    y = softmax(scores, axis=-1) @ v
    return merge_heads(y) @ params["w_o"] + params["b_o"]
''',
    ),
]
