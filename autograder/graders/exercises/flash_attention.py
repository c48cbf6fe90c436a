"""`flash_attention` (kv_cache): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/kv_cache/test_flash_attention.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import forbidden
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct flash_attention; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = np.asarray(query), np.asarray(key), np.asarray(value)
    tq, tk = q.shape[-2], k.shape[-2]                                           # @SIZES
    m = np.full(q.shape[:-1] + (1,), -np.inf)                                   # @MAX_INIT
    l = np.zeros(q.shape[:-1] + (1,))                                           # @SUM_INIT
    acc = np.zeros(q.shape[:-1] + v.shape[-1:])                                 # @ACC_INIT
    last = np.arange(tq)[:, None] + (tk - tq)                                   # @LAST
    for s0 in range(0, tk, block_size):                                         # @LOOP
        kb, vb = k[..., s0:s0 + block_size, :], v[..., s0:s0 + block_size, :]   # @BLOCK
        s = q @ np.swapaxes(kb, -1, -2) / np.sqrt(q.shape[-1])                  # @SCORES
        if causal:                                                              # @IF_CAUSAL
            s = np.where(np.arange(s0, s0 + kb.shape[-2]) <= last, s, -np.inf)  # @MASK
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))                    # @MAX
        m_ref = np.where(np.isfinite(m_new), m_new, 0.0)                        # @REF
        p = np.exp(s - m_ref)                                                   # @WEIGHTS
        alpha = np.exp(m - m_ref)                                               # @ALPHA
        l = alpha * l + p.sum(axis=-1, keepdims=True)                           # @SUM
        acc = alpha * acc + p @ vb                                              # @ACC
        m = m_new                                                               # @CARRY
    return acc / l                                                              # @RETURN
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="flash_sum_not_rescaled",
        exercise="flash_attention",
        title="최댓값이 바뀔 때 지수 합 l을 exp(m - m')로 고치지 않음",
        hint="새 블록에서 최댓값이 커지면 옛 합과 옛 가중합 모두 새 기준으로 바꿔야 합니다: l = α·l + Σ exp(S - m'), "
             "acc = α·acc + exp(S - m') V, α = exp(m - m').",
        source=_with(REF="", WEIGHTS="p = np.exp(s - m_new)", ALPHA="alpha = np.exp(m - m_new)",
                     SUM="l = l + p.sum(axis=-1, keepdims=True)"),
    ),
    Mistake(
        id="flash_materializes_scores",
        exercise="flash_attention",
        title="블록으로 나누지 않고 Tq x Tk 점수 행렬 전체를 만듦",
        hint="결과는 맞지만 메모리가 O(n²)입니다. 키를 block_size 개씩 나눠 행마다 최댓값 m, 합 l, 가중합 acc만 "
             "들고 다니세요.",
        source=_with(SIZES="mask = causal_mask(q.shape[-2], k.shape[-2]) if causal else None\n"
                           "return scaled_dot_product_attention(q, k, v, mask)",
                     MAX_INIT="", SUM_INIT="", ACC_INIT="", LAST="", LOOP="", BLOCK="", SCORES="", IF_CAUSAL="",
                     MASK="", MAX="", REF="", WEIGHTS="", ALPHA="", SUM="", ACC="", CARRY="", RETURN=""),
        diagnosable=False,   # right values; only the memory test fails
    ),
    Mistake(
        id="flash_full_causal_mask",
        exercise="flash_attention",
        title="점수는 블록으로 나눴지만 인과 마스크는 causal_mask(Tq, Tk) 전체를 만들어 잘라 씀",
        hint="결과는 맞지만 Tq x Tk 크기의 마스크가 메모리를 O(n²)로 만듭니다. 블록 [s, s + b)의 조각만 "
             "np.arange(s, s + b) <= np.arange(Tq)[:, None] + (Tk - Tq)로 만드세요.",
        source=_with(SIZES="tq, tk = q.shape[-2], k.shape[-2]\n"
                           "mask = causal_mask(tq, tk) if causal else None",
                     LAST="", MASK="s = np.where(mask[:, s0:s0 + block_size], s, -np.inf)"),
        diagnosable=False,   # right values; only the memory test with the long cached prefix fails
    ),
    Mistake(
        id="flash_causal_top_left",
        exercise="flash_attention",
        title="인과 마스크에 Tk - Tq 오프셋이 없음 (왼쪽 위 정렬)",
        hint="블록의 키 j는 질의 i에게 j <= i + (Tk - Tq)일 때 보입니다. Tq < Tk (캐시가 있는 경우)에서 차이가 납니다.",
        source=_with(LAST="rows = np.arange(tq)[:, None]",
                     MASK="s = np.where(np.arange(s0, s0 + kb.shape[-2]) <= rows, s, -np.inf)"),
    ),
    Mistake(
        id="flash_drops_partial_block",
        exercise="flash_attention",
        title="block_size로 나누어떨어지지 않는 마지막 짧은 블록을 빠뜨림",
        hint="블록 수는 tk // block_size가 아니라 올림입니다: for s0 in range(0, tk, block_size)처럼 끝까지 도세요.",
        source=_with(LOOP="for b in range(tk // block_size):\n"
                          "    s0 = b * block_size"),
    ),
    Mistake(
        id="flash_acc_not_rescaled",
        exercise="flash_attention",
        title="최댓값이 바뀔 때 가중합 acc를 exp(m - m')로 고치지 않음 (합 l만 고침)",
        hint=("옛 가중합도 옛 최댓값 기준의 지수로 만든 것이라 새 기준으로 바꿔야 합니다: acc = α·acc + exp(S - m') "
              "V, α = exp(m - m')."),
        source=_with(ALPHA="", SUM="l = np.exp(m - m_ref) * l + p.sum(axis=-1, keepdims=True)",
                     ACC="acc = acc + p @ vb"),
    ),
    Mistake(
        id="flash_missing_scale",
        exercise="flash_attention",
        title="블록의 점수를 √d로 나누지 않음",
        hint="플래시 어텐션은 스케일드 닷-프로덕트 어텐션과 같은 값을 냅니다: 블록마다 점수 q @ kᵀ를 √d로 나누세요.",
        source=_with(SCORES="s = q @ np.swapaxes(kb, -1, -2)"),
    ),
    Mistake(
        id="flash_blocks_normalized_separately",
        exercise="flash_attention",
        title="블록마다 softmax를 따로 취해 평균을 냄 (블록 사이의 정규화가 없음)",
        hint=("softmax의 분모는 행 전체의 합입니다. 블록마다 따로 정규화하지 말고, 최댓값 m과 합 l, 가중합 acc를 "
              "블록에서 블록으로 넘겨 마지막에 한 번 acc / l로 나누세요."),
        source=_with(MAX_INIT="", SUM_INIT="", ACC_INIT="",
                     LOOP="out, blocks = 0.0, 0\n"
                          "for s0 in range(0, tk, block_size):",
                     MAX="top = s.max(axis=-1, keepdims=True)\n"
                         "e = np.exp(s - np.where(np.isfinite(top), top, 0.0))\n"
                         "out = out + e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-300) @ vb\n"
                         "blocks += 1",
                     REF="", WEIGHTS="", ALPHA="", SUM="", ACC="", CARRY="", RETURN="return out / blocks"),
    ),
]

EXERCISE = Exercise(
    "flash_attention",
    assignment="kv_cache",
    points=4,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.ATTENTION,
    mistakes=MISTAKES,
    # answered with their answers while it is graded, so that it is judged on its own logic (isolation.py)
    # (softmax, causal_mask and scaled_dot_product_attention are given in the kv_cache notebook)
    callees=("causal_mask",),
)
