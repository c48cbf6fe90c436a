"""Realistic mistakes of the `attention` assignment, one student-style definition each.

Every source defines the exercise's function exactly as a student might write it in the solution cell (numpy,
calling the other contract functions where a student would). The package's tests put each one into the
instructor notebook in place of the solution and check that the exercise loses points and, for the diagnosable
ones, that the feedback names the mistake.
"""
from autograder.graders.mistakes import Mistake

MISTAKES = [
    # ------------------------------------------------------------------------------------------- softmax
    Mistake(
        id="softmax_ignores_axis",
        exercise="softmax",
        title="axis 인자를 무시하고 항상 마지막 축으로 정규화",
        hint="np.max와 np.sum에 axis=-1 대신 인자로 받은 axis를 넘기세요 (keepdims=True와 함께).",
        source='''
def softmax(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)
''',
    ),
    Mistake(
        id="softmax_sum_over_all",
        exercise="softmax",
        title="축을 정하지 않고 배열 전체의 합으로 나눔",
        hint="np.sum(e)는 모든 원소의 합입니다. np.sum(e, axis=axis, keepdims=True)로 그 축을 따라서만 더하세요.",
        source='''
def softmax(x, axis=-1):
    x = np.asarray(x)
    e = np.exp(x - np.max(x))
    return e / np.sum(e)
''',
    ),
    Mistake(
        id="softmax_no_max_subtraction",
        exercise="softmax",
        title="최댓값을 빼지 않아 큰 로짓에서 exp가 넘침 (inf/NaN)",
        hint="exp를 취하기 전에 x - np.max(x, axis=axis, keepdims=True)로 옮기세요. 결과는 같고 exp는 1을 넘지 않습니다.",
        source='''
def softmax(x, axis=-1):
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)
''',
    ),
    # ------------------------------------------------------------------------------ scaled dot-product attention
    Mistake(
        id="sdpa_missing_scale",
        exercise="scaled_dot_product_attention",
        title="점수를 √d로 나누지 않음",
        hint="점수는 Q Kᵀ / √d입니다 (d = query.shape[-1]). 나누지 않으면 softmax가 너무 뾰족해집니다.",
        source='''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    scores = query @ np.swapaxes(key, -1, -2)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    out = weights @ value
    return (out, weights) if return_weights else out
''',
    ),
    Mistake(
        id="sdpa_scale_by_d",
        exercise="scaled_dot_product_attention",
        title="√d가 아니라 d로 나눔",
        hint="스케일은 1/√d입니다: np.sqrt(d) 또는 d ** 0.5로 나누세요.",
        source='''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    d = query.shape[-1]
    scores = query @ np.swapaxes(key, -1, -2) / d
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    out = weights @ value
    return (out, weights) if return_weights else out
''',
    ),
    Mistake(
        id="sdpa_mask_after_softmax",
        exercise="scaled_dot_product_attention",
        title="softmax 뒤에 가중치를 0으로 만들어 행 합이 1이 아님",
        hint="마스크는 softmax 전에 점수에 -inf로 넣으세요. 뒤에서 0으로 만들면 남은 가중치의 합이 1보다 작아집니다.",
        source='''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    d = query.shape[-1]
    scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(d)
    weights = softmax(scores, axis=-1)
    if mask is not None:
        weights = weights * mask
    out = weights @ value
    return (out, weights) if return_weights else out
''',
    ),
    Mistake(
        id="sdpa_inverted_mask",
        exercise="scaled_dot_product_attention",
        title="마스크를 반대로 씀 (True를 가림)",
        hint="이 과제의 규칙은 True = 볼 수 있음 입니다. np.where(mask, scores, -np.inf)처럼 False인 곳을 가리세요.",
        source='''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    d = query.shape[-1]
    scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(d)
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    weights = softmax(scores, axis=-1)
    out = weights @ value
    return (out, weights) if return_weights else out
''',
    ),
    Mistake(
        id="sdpa_mask_with_zero",
        exercise="scaled_dot_product_attention",
        title="가린 점수를 -inf가 아니라 0으로 둠",
        hint="점수 0은 exp(0) = 1이라 가린 키도 가중치를 받습니다. 가린 점수는 -inf (또는 아주 큰 음수)로 두세요.",
        source='''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    d = query.shape[-1]
    scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(d)
    if mask is not None:
        scores = scores * mask
    weights = softmax(scores, axis=-1)
    out = weights @ value
    return (out, weights) if return_weights else out
''',
    ),
    Mistake(
        id="sdpa_softmax_over_queries",
        exercise="scaled_dot_product_attention",
        title="softmax를 질의 축(axis=-2)으로 취함",
        hint="점수 행렬 (..., Tq, Tk)에서 정규화는 키 축, 즉 마지막 축(axis=-1)입니다: 질의마다 키들에 대한 분포.",
        source='''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    d = query.shape[-1]
    scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(d)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores, axis=-2)
    out = weights @ value
    return (out, weights) if return_weights else out
''',
    ),
    # ------------------------------------------------------------------------------------------- additive
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
    # ------------------------------------------------------------------------------------------- Bahdanau
    Mistake(
        id="bahdanau_sum_instead_of_v",
        exercise="bahdanau_attention",
        title="v와의 내적 대신 tanh(...)를 그냥 합함",
        hint="점수는 v · tanh(q W_q + k W_k)입니다: .sum(-1) 대신 @ v로 h 축을 v와 내적하세요.",
        source='''
def bahdanau_attention(query, key, value, w_q, w_k, v, mask=None):
    q = query @ w_q
    k = key @ w_k
    scores = np.tanh(q[..., :, None, :] + k[..., None, :, :]).sum(axis=-1)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores, axis=-1) @ value
''',
    ),
    Mistake(
        id="bahdanau_swapped_projections",
        exercise="bahdanau_attention",
        title="질의에 w_k, 키에 w_q를 곱함 (투영이 뒤바뀜)",
        hint="질의는 query @ w_q, 키는 key @ w_k입니다. 모양이 같아 오류 없이 틀린 값이 나옵니다.",
        source='''
def bahdanau_attention(query, key, value, w_q, w_k, v, mask=None):
    q = query @ w_k
    k = key @ w_q
    scores = np.tanh(q[..., :, None, :] + k[..., None, :, :]) @ v
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores, axis=-1) @ value
''',
    ),
    Mistake(
        id="bahdanau_missing_tanh",
        exercise="bahdanau_attention",
        title="tanh를 빠뜨림 (점수가 선형이 되어 질의가 가중치에 영향을 주지 못함)",
        hint="점수는 v · tanh(q W_q + k W_k)입니다. tanh가 없으면 v·(q W_q)는 모든 키에 같아 softmax에서 사라집니다.",
        source='''
def bahdanau_attention(query, key, value, w_q, w_k, v, mask=None):
    q = query @ w_q
    k = key @ w_k
    scores = (q[..., :, None, :] + k[..., None, :, :]) @ v
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores, axis=-1) @ value
''',
    ),
    # ------------------------------------------------------------------------------------------- dot product
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
    # ------------------------------------------------------------------------------------------- causal mask
    Mistake(
        id="causal_triu",
        exercise="causal_mask",
        title="tril 대신 triu: 과거가 아니라 미래를 봄",
        hint="질의 i는 j <= i + (t_k - t_q)인 키를 봅니다: 아래 삼각(np.tril)입니다.",
        source='''
def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    return np.triu(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q)
''',
    ),
    Mistake(
        id="causal_top_left",
        exercise="causal_mask",
        title="왼쪽 위에 맞춤: np.tril에 t_k - t_q 오프셋이 없음",
        hint="Tq != Tk이면 마스크를 오른쪽 아래에 맞춰야 합니다: np.tril(..., k=t_k - t_q). 새 질의가 캐시된 과거 전체를 봐야 합니다.",
        source='''
def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    return np.tril(np.ones((t_q, t_k), dtype=bool))
''',
    ),
    Mistake(
        id="causal_inverted",
        exercise="causal_mask",
        title="True가 '가림'인 마스크를 돌려줌 (반대 규칙)",
        hint="이 과제의 규칙은 True = 볼 수 있음 입니다. 미래를 True로 표시하는 np.triu(..., k=1)는 반대입니다.",
        source='''
def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    return np.triu(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q + 1)
''',
    ),
    Mistake(
        id="causal_excludes_diagonal",
        exercise="causal_mask",
        title="자기 자신(대각선)까지 가림",
        hint="질의 i는 자기 위치 j = i + (t_k - t_q)도 볼 수 있습니다: 부등호는 < 가 아니라 <= 입니다.",
        source='''
def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    i = np.arange(t_q)[:, None]
    j = np.arange(t_k)[None, :]
    return j < i + (t_k - t_q)
''',
    ),
    Mistake(
        id="causal_float_dtype",
        exercise="causal_mask",
        title="bool이 아니라 0/1 실수 배열을 돌려줌",
        hint="마스크는 bool이어야 합니다: np.ones(..., dtype=bool) 또는 비교 연산의 결과를 쓰세요.",
        source='''
def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    return np.tril(np.ones((t_q, t_k)), k=t_k - t_q)
''',
        diagnosable=False,   # the values are right; only the dtype test fails
    ),
    # ------------------------------------------------------------------------------------------- self-attention
    Mistake(
        id="self_attention_no_value_projection",
        exercise="self_attention",
        title="값에 w_v를 곱하지 않고 x를 그대로 씀",
        hint="V = x @ w_v입니다. 질의·키·값 모두 각자의 가중치 행렬로 투영하세요.",
        source='''
def self_attention(x, w_q, w_k, w_v, causal=False):
    q = x @ w_q
    k = x @ w_k
    mask = causal_mask(x.shape[-2]) if causal else None
    return scaled_dot_product_attention(q, k, x, mask)
''',
    ),
    Mistake(
        id="self_attention_scale_by_model_dim",
        exercise="self_attention",
        title="√dk 대신 입력 차원 √D로 나눔",
        hint="스케일은 질의·키의 차원 dk = w_q.shape[1]로 정합니다. 입력 x의 차원 D가 아닙니다.",
        source='''
def self_attention(x, w_q, w_k, w_v, causal=False):
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(x.shape[-1])
    if causal:
        scores = np.where(causal_mask(x.shape[-2]), scores, -np.inf)
    return softmax(scores, axis=-1) @ v
''',
    ),
    Mistake(
        id="self_attention_ignores_causal",
        exercise="self_attention",
        title="causal=True일 때도 마스크를 쓰지 않음",
        hint="causal이면 causal_mask(T)를 scaled_dot_product_attention의 mask로 넘기세요.",
        source='''
def self_attention(x, w_q, w_k, w_v, causal=False):
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    return scaled_dot_product_attention(q, k, v)
''',
    ),
    # ------------------------------------------------------------------------------------------- apply_rope
    Mistake(
        id="rope_interleaved_pairs",
        exercise="apply_rope",
        title="회전 반쪽(i, i + d/2) 대신 이웃한 성분(2i, 2i + 1)을 짝지음",
        hint="이 과제의 배치는 Llama·Keras Hub와 같은 '회전 반쪽'입니다: x1 = x[..., :d//2], x2 = x[..., d//2:]를 "
             "짝지어 돌리세요. x[..., 0::2], x[..., 1::2]로 짝짓는 것은 RoFormer 논문의 원래 배치입니다.",
        source='''
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    inv_freq = base ** (-np.arange(0, d, 2) / d)
    angles = np.asarray(positions)[:, None] * inv_freq
    cos, sin = np.cos(angles), np.sin(angles)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x1 * cos - x2 * sin
    out[..., 1::2] = x2 * cos + x1 * sin
    return out
''',
    ),
    Mistake(
        id="rope_frequencies_without_two",
        exercise="apply_rope",
        title="주파수를 base ** (-2i/d)가 아니라 base ** (-i/d)로 계산",
        hint="i = 0, 1, ..., d/2 - 1에 대해 주파수는 base ** (-2 * i / d)입니다. np.arange(d // 2) / d를 쓰면 "
             "지수가 절반이 되어 모든 짝이 너무 빨리 돕니다.",
        source='''
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    inv_freq = base ** (-np.arange(d // 2) / d)
    angles = np.asarray(positions)[:, None] * inv_freq
    cos, sin = np.cos(angles), np.sin(angles)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
''',
    ),
    Mistake(
        id="rope_rotation_sign",
        exercise="apply_rope",
        title="회전 방향(sin의 부호)이 반대",
        hint="각도 θ만큼 돌리는 식은 (x1 cos θ - x2 sin θ, x2 cos θ + x1 sin θ)입니다. 부호가 바뀌면 -θ만큼 돕니다.",
        source='''
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    inv_freq = base ** (-2 * np.arange(d // 2) / d)
    angles = np.asarray(positions)[:, None] * inv_freq
    cos, sin = np.cos(angles), np.sin(angles)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return np.concatenate([x1 * cos + x2 * sin, x2 * cos - x1 * sin], axis=-1)
''',
    ),
    Mistake(
        id="rope_ignores_positions",
        exercise="apply_rope",
        title="positions 인자를 무시하고 위치를 0, 1, ..., T-1로 가정",
        hint="위치는 언제나 positions에서 가져오세요. 캐시 뒤에 이어지는 토큰의 위치는 0이 아니라 캐시 길이부터 시작합니다.",
        source='''
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    T, d = x.shape[-2], x.shape[-1]
    inv_freq = base ** (-2 * np.arange(d // 2) / d)
    angles = np.arange(T)[:, None] * inv_freq
    cos, sin = np.cos(angles), np.sin(angles)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
''',
    ),
    Mistake(
        id="rope_positions_from_first",
        exercise="apply_rope",
        title="위치를 첫 위치 기준으로 다시 셈 (positions - positions[0])",
        hint="positions는 전체 시퀀스에서의 절대 위치입니다. 빼거나 번호를 다시 매기지 말고 그대로 각도에 곱하세요.",
        source='''
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    positions = np.asarray(positions) - np.asarray(positions)[0]
    inv_freq = base ** (-2 * np.arange(d // 2) / d)
    angles = positions[:, None] * inv_freq
    cos, sin = np.cos(angles), np.sin(angles)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
''',
    ),
    Mistake(
        id="rope_base_ignored",
        exercise="apply_rope",
        title="base 인자를 무시하고 늘 10000을 씀",
        hint="주파수의 밑은 인자로 받은 base입니다: base ** (-2 * i / d). 10000.0은 기본값일 뿐입니다.",
        source='''
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    inv_freq = 10000.0 ** (-2 * np.arange(d // 2) / d)
    angles = np.asarray(positions)[:, None] * inv_freq
    cos, sin = np.cos(angles), np.sin(angles)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
''',
    ),
    # ------------------------------------------------------------------------------------------- heads
    Mistake(
        id="split_heads_reshape_without_transpose",
        exercise="split_heads",
        title="transpose 없이 (B, H, T, dh)로 바로 reshape",
        hint="먼저 (B, T, H, dh)로 reshape 한 뒤 transpose(0, 2, 1, 3)로 헤드 축을 앞으로 옮기세요. 바로 reshape 하면 토큰과 채널이 섞입니다.",
        source='''
def split_heads(x, num_heads):
    B, T, C = x.shape
    return x.reshape(B, num_heads, T, C // num_heads)
''',
    ),
    Mistake(
        id="split_heads_interleaved_channels",
        exercise="split_heads",
        title="채널을 (dh, H) 순서로 나눠 헤드가 띄엄띄엄 채널을 가짐",
        hint="헤드 h는 연속된 채널 h*dh .. (h+1)*dh - 1입니다: reshape(B, T, H, dh) 후 transpose(0, 2, 1, 3).",
        source='''
def split_heads(x, num_heads):
    B, T, C = x.shape
    return x.reshape(B, T, C // num_heads, num_heads).transpose(0, 3, 1, 2)
''',
    ),
    Mistake(
        id="merge_heads_reshape_without_transpose",
        exercise="merge_heads",
        title="transpose 없이 (B, T, H*dh)로 바로 reshape",
        hint="먼저 transpose(0, 2, 1, 3)로 (B, T, H, dh)를 만든 뒤 reshape 하세요.",
        source='''
def merge_heads(x):
    B, H, T, dh = x.shape
    return x.reshape(B, T, H * dh)
''',
    ),
    Mistake(
        id="merge_heads_wrong_axis_order",
        exercise="merge_heads",
        title="(B, T, dh, H) 순서로 합쳐 채널이 헤드끼리 엇갈림",
        hint="헤드를 차례로 이어 붙이려면 transpose(0, 2, 1, 3)로 (B, T, H, dh)를 만든 뒤 reshape 하세요.",
        source='''
def merge_heads(x):
    B, H, T, dh = x.shape
    return x.transpose(0, 2, 3, 1).reshape(B, T, H * dh)
''',
    ),
    # ------------------------------------------------------------------------------------------- multi-head
    Mistake(
        id="mha_scale_by_model_dim",
        exercise="multi_head_attention",
        title="헤드 차원 √(C/H) 대신 전체 차원 √C로 나눔",
        hint="헤드마다 점수는 길이 dh = C // H인 벡터의 내적이므로 √dh로 나눕니다.",
        source='''
def multi_head_attention(query, key, value, num_heads, mask=None):
    q, k, v = (split_heads(a, num_heads) for a in (query, key, value))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(query.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return merge_heads(softmax(scores, axis=-1) @ v)
''',
    ),
    Mistake(
        id="mha_no_head_split",
        exercise="multi_head_attention",
        title="헤드로 나누지 않고 전체 채널로 어텐션 한 번",
        hint="split_heads로 (B, H, T, dh)를 만든 뒤 헤드마다 따로 어텐션하고 merge_heads로 합치세요.",
        source='''
def multi_head_attention(query, key, value, num_heads, mask=None):
    return scaled_dot_product_attention(query, key, value, mask)
''',
    ),
    Mistake(
        id="mha_split_without_transpose",
        exercise="multi_head_attention",
        title="헤드를 나눌 때 transpose 없이 reshape",
        hint="(B, T, C) -> (B, T, H, dh) -> transpose(0, 2, 1, 3) 순서로 나누세요.",
        source='''
def multi_head_attention(query, key, value, num_heads, mask=None):
    def split(a):
        B, T, C = a.shape
        return a.reshape(B, num_heads, T, C // num_heads)
    y = scaled_dot_product_attention(split(query), split(key), split(value), mask)
    B, H, T, dh = y.shape
    return y.transpose(0, 2, 1, 3).reshape(B, T, H * dh)
''',
    ),
    Mistake(
        id="mha_merge_without_transpose",
        exercise="multi_head_attention",
        title="헤드를 합칠 때 transpose 없이 reshape",
        hint="(B, H, T, dh) -> transpose(0, 2, 1, 3) -> (B, T, H * dh) 순서로 합치세요.",
        source='''
def multi_head_attention(query, key, value, num_heads, mask=None):
    q, k, v = (split_heads(a, num_heads) for a in (query, key, value))
    y = scaled_dot_product_attention(q, k, v, mask)
    B, H, T, dh = y.shape
    return y.reshape(B, T, H * dh)
''',
    ),
    # ------------------------------------------------------------------------------------------- the layer
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
        hint="키와 값은 x_kv에서 만듭니다: k = x_kv @ w_k + b_k, v = x_kv @ w_v + b_v. 셀프 어텐션에서만 x_kv가 x_q와 같습니다.",
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
