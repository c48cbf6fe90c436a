"""`qwen3_attention` (modern): its exercise record (at the end) and its known mistakes.

Every mistake is a whole ``qwen3_attention`` as a student writes it with the notebook's given ``apply_rope``,
``grouped_query_attention``, ``causal_mask`` and ``KVCache`` (in the grading process: ``references.py``'s).
"""
from autograder.graders import answers, forbidden
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct qwen3_attention; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def qwen3_attention(x, params, positions, num_heads, num_kv_heads, cache=None):
    x = np.asarray(x)
    b, t, _ = x.shape
    dh = params["q_proj"].shape[1] // num_heads                                 # @HEAD_DIM
    q = (x @ params["q_proj"]).reshape(b, t, num_heads, dh)
    k = (x @ params["k_proj"]).reshape(b, t, num_kv_heads, dh)
    v = (x @ params["v_proj"]).reshape(b, t, num_kv_heads, dh).transpose(0, 2, 1, 3)
    q = rms_norm(q, params["q_norm"]).transpose(0, 2, 1, 3)                     # @Q_NORM
    k = rms_norm(k, params["k_norm"]).transpose(0, 2, 1, 3)                     # @K_NORM
    q = apply_rope(q, positions, base=ROPE_THETA)                               # @ROPE_Q
    k = apply_rope(k, positions, base=ROPE_THETA)                               # @ROPE_K
    if cache is not None:
        k, v = cache.append(k, v)                                               # @CACHE
    y = grouped_query_attention(q, k, v, causal_mask(t, k.shape[2]))            # @ATTEND
    return y.transpose(0, 2, 1, 3).reshape(b, t, num_heads * dh) @ params["o_proj"]
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


# Rotating adjacent pairs (Meta's Llama and RoFormer) instead of the halves: the same up to a permutation of W_q's and
# W_k's output channels, so with Qwen3's own weights it gives other scores.
_INTERLEAVED = '''def rope_pairs(z):
    z = np.asarray(z, np.float64)
    inv = ROPE_THETA ** (-np.arange(0, z.shape[-1], 2) / z.shape[-1])
    ang = np.asarray(positions, np.float64)[:, None] * inv
    cos, sin = np.cos(ang), np.sin(ang)
    out = np.empty_like(z)
    out[..., 0::2] = z[..., 0::2] * cos - z[..., 1::2] * sin
    out[..., 1::2] = z[..., 1::2] * cos + z[..., 0::2] * sin
    return out
q, k = rope_pairs(q), rope_pairs(k)'''

MISTAKES = [
    Mistake(
        id="q3_attn_rope_interleaved",
        exercise="qwen3_attention",
        title="RoPE를 이웃 짝 방식 (x[2i], x[2i+1])으로 돌림 (RoFormer·Meta Llama식; Qwen3는 회전 반쪽 방식)",
        hint=("Qwen3의 가중치 행렬은 Hugging Face·KerasHub와 같은 회전 반쪽 방식(rotate-half)에 맞춰져 있습니다: "
              "성분 i와 i + d/2가 한 짝. 이웃한 성분끼리 돌리는 이웃 짝 방식(interleaved)은 W_q, W_k의 출력 채널 "
              "순서를 바꾼(permute) 가중치 행렬에서만 같은 값을 냅니다. 주어진 "
              "apply_rope(q, positions, base=ROPE_THETA)를 쓰세요."),
        source=_with(ROPE_Q=_INTERLEAVED, ROPE_K=""),
    ),
    Mistake(
        id="q3_attn_no_qk_norm",
        exercise="qwen3_attention",
        title="QK-norm을 빠뜨림: q_norm, k_norm으로 헤드마다 RMSNorm하지 않음",
        hint=("Qwen3는 투영한 질의와 키를 RoPE 전에 헤드마다 RMSNorm합니다(q_norm, k_norm: head_dim 크기의 가중치). "
              "빠뜨리면 점수의 크기가 달라집니다: rms_norm(q, params[\"q_norm\"])."),
        source=_with(Q_NORM="q = q.transpose(0, 2, 1, 3)", K_NORM="k = k.transpose(0, 2, 1, 3)"),
    ),
    Mistake(
        id="q3_attn_qk_norm_whole_projection",
        exercise="qwen3_attention",
        title="QK-norm을 헤드마다가 아니라 투영 전체(H·dh)에 대해 함 (OLMo-2식)",
        hint=("Qwen3의 q_norm, k_norm은 헤드마다 head_dim 축 하나로 정규화합니다(가중치 모양이 (head_dim,)). "
              "(B, T, H·dh) 전체의 제곱 평균으로 나누면 헤드들이 서로의 크기에 영향을 줍니다. (B, T, H, dh)로 "
              "나눈 뒤 마지막 축으로 정규화하세요."),
        source=_with(
            Q_NORM=("q = rms_norm(q.reshape(b, t, -1), np.tile(params[\"q_norm\"], num_heads))"
                    ".reshape(b, t, num_heads, dh).transpose(0, 2, 1, 3)"),
            K_NORM=("k = rms_norm(k.reshape(b, t, -1), np.tile(params[\"k_norm\"], num_kv_heads))"
                    ".reshape(b, t, num_kv_heads, dh).transpose(0, 2, 1, 3)")),
    ),
    Mistake(
        id="q3_attn_rope_before_qk_norm",
        exercise="qwen3_attention",
        title="RoPE를 먼저 하고 QK-norm을 나중에 함 (순서가 바뀜)",
        hint=("Qwen3는 투영 → QK-norm(q_norm, k_norm) → RoPE의 순서입니다. RMSNorm의 가중치가 채널마다 다르므로 "
              "회전한 뒤에 곱하면 결과가 달라집니다."),
        source=_with(Q_NORM="q = q.transpose(0, 2, 1, 3)", K_NORM="k = k.transpose(0, 2, 1, 3)",
                     ROPE_Q="q = rms_norm(apply_rope(q, positions, base=ROPE_THETA), params[\"q_norm\"])",
                     ROPE_K="k = rms_norm(apply_rope(k, positions, base=ROPE_THETA), params[\"k_norm\"])"),
    ),
    Mistake(
        id="q3_attn_kv_heads_tiled",
        exercise="qwen3_attention",
        title="KV 헤드를 잘못 반복함: 질의 헤드 h가 KV 헤드 h // (H/Hkv)가 아니라 h % Hkv를 씀 (np.tile)",
        hint=("GQA에서 KV 헤드 하나는 **이웃한** 질의 헤드 H/Hkv개를 맡습니다: 질의 헤드 h는 KV 헤드 h // (H/Hkv). "
              "np.tile(k, (1, g, 1, 1))은 [0, 1, 0, 1]처럼 돌려 가며 이어 붙여 h % Hkv가 됩니다. "
              "np.repeat(k, g, axis=1)([0, 0, 1, 1])을 쓰거나 주어진 grouped_query_attention에 넘기세요."),
        source=_with(ATTEND=("g = num_heads // num_kv_heads\n"
                             "y = scaled_dot_product_attention(q, np.tile(k, (1, g, 1, 1)), np.tile(v, (1, g, 1, 1)),\n"
                             "                                 causal_mask(t, k.shape[2]))")),
    ),
    Mistake(
        id="q3_attn_rope_default_base",
        exercise="qwen3_attention",
        title="RoPE의 밑을 Qwen3의 rope_theta(1,000,000)가 아니라 apply_rope의 기본값 10,000으로 둠",
        hint=("Qwen3의 config.json은 rope_theta = 1,000,000입니다(긴 문맥을 위해 각도가 천천히 돕니다). "
              "apply_rope(q, positions, base=ROPE_THETA)처럼 밑을 넘기세요."),
        source=_with(ROPE_Q="q = apply_rope(q, positions)", ROPE_K="k = apply_rope(k, positions)"),
    ),
    Mistake(
        id="q3_attn_head_dim_from_d_model",
        exercise="qwen3_attention",
        title="head_dim을 D // num_heads로 셈 (Qwen3는 H·head_dim이 D와 다를 수 있음)",
        hint=("Qwen3의 head_dim은 따로 정해집니다(Qwen3-0.6B: D = 1,024인데 16 헤드 × 128 = 2,048). "
              "q_proj의 열 수를 헤드 수로 나누거나(params[\"q_proj\"].shape[1] // num_heads) q_norm의 길이를 쓰세요."),
        source=_with(HEAD_DIM="dh = x.shape[-1] // num_heads"),
        # on the graders' model (H * dh = 32, D = 24) the reshape itself fails: the student reads numpy's error
        diagnosable=False,
    ),
    Mistake(
        id="q3_attn_caches_repeated_heads",
        exercise="qwen3_attention",
        title="KV 헤드를 반복한 뒤에 캐시에 넣음: 캐시가 KV 헤드 대신 질의 헤드 H개를 담아 H/Hkv배 큼",
        hint=("GQA가 메모리를 아끼는 이유는 캐시에 KV 헤드 Hkv개만 두기 때문입니다. 캐시에는 반복하기 전의 k, v "
              "(B, Hkv, t, dh)를 넣고, 반복은 어텐션할 때만 하세요(주어진 grouped_query_attention이 그렇게 합니다)."),
        source=_with(CACHE=("g = num_heads // num_kv_heads\n"
                            "k, v = cache.append(np.repeat(k, g, axis=1), np.repeat(v, g, axis=1))")),
        diagnosable=False,   # right outputs: named by the grader that reads the cache's shape (test_qwen3_attention.py)
    ),
]

EXERCISE = Exercise(
    "qwen3_attention",
    assignment="modern",
    points=4,
    forbidden=forbidden.QWEN3_ATTENTION,
    mistakes=MISTAKES,
    # answered with their answers while it is graded (isolation.py): QK-norm is the student's rms_norm
    callees=("rms_norm",),
    answer=answers.QWEN3_ATTENTION,
)
