"""Realistic mistakes of the `kv_cache` assignment, one student-style definition each.

Every source defines the exercise's function (or class) as a student might write it in the solution cell of
source/kv_cache/kv_cache.ipynb, using what that notebook gives (``np``, ``softmax``, ``causal_mask``,
``scaled_dot_product_attention``, ``apply_rope``, the student's ``kv_cache_bytes`` and ``KVCache``). The package's
tests put each one into the instructor notebook in place of the solution and check that the exercise loses points and, for the
diagnosable ones, that the feedback names it.

How the graders name them (``autograder/graders/kv_cache/__init__.py``): integer results are matched exactly on
the failing call; ``KVCache`` and ``attend_with_cache`` keep state in the student's process, so their mistakes
are replayed over the whole scenario on a fresh (trusted) cache (``attend_with_rope_cache`` too: the replay
also compares the cached keys, which is how a cache of raw keys re-rotated at every step is named); the others
through ``compare._diagnose``.

Not expressible as a function of the contract's arguments: computing the cache with the number of *query* heads
where a model has fewer KV heads (Qwen3-8B with 32 instead of 8) is a mistake at the call site
(``kv_cache_bytes(36, 32, 128, ...)``), which no grader of ``kv_cache_bytes`` can see; the notebook's section 2
shows it on purpose, and the quiz (q8, q9) and written answer 2 grade it. ``kv_bytes_query_heads`` below is its
signature-compatible form: a student who turns the KV heads back into query heads with Llama's group size.
"""
from autograder.graders.mistakes import Mistake

MISTAKES = [
    # ------------------------------------------------------------------------------------------- kv_cache_bytes
    Mistake(
        id="kv_bytes_missing_factor_2",
        exercise="kv_cache_bytes",
        title="K와 V 두 가지인데 2를 곱하지 않음",
        hint="층마다 K 캐시와 V 캐시가 따로 있습니다: 2 × 층 × KV 헤드 × 헤드 차원 × 토큰 × 배치 × 바이트.",
        source='''
def kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2):
    return num_layers * num_kv_heads * head_dim * seq_len * batch_size * bytes_per_element
''',
    ),
    Mistake(
        id="kv_bytes_bits_not_bytes",
        exercise="kv_cache_bytes",
        title="바이트가 아니라 비트를 셈 (8 배)",
        hint="bytes_per_element는 이미 바이트입니다 (FP16 = 2). 8을 곱하면 비트 수가 됩니다.",
        source='''
def kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2):
    bits = bytes_per_element * 8
    return 2 * num_layers * num_kv_heads * head_dim * seq_len * batch_size * bits
''',
    ),
    Mistake(
        id="kv_bytes_ignores_batch",
        exercise="kv_cache_bytes",
        title="배치 크기를 곱하지 않음",
        hint="요청(시퀀스)마다 자기 캐시가 있습니다: batch_size도 곱하세요.",
        source='''
def kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2):
    return 2 * num_layers * num_kv_heads * head_dim * seq_len * bytes_per_element
''',
    ),
    Mistake(
        id="kv_bytes_query_heads",
        exercise="kv_cache_bytes",
        title="KV 헤드가 아니라 질의 헤드 수로 셈 (그룹 크기 4를 곱함)",
        hint="캐시에는 K, V를 가진 헤드(num_kv_heads)만 저장됩니다. GQA에서 질의 헤드 여러 개가 K, V 한 벌을 "
             "나눠 쓰므로 질의 헤드 수로 바꾸면 안 됩니다.",
        source='''
def kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2):
    num_heads = num_kv_heads * 4        # Llama-3-8B: 질의 헤드 32 = KV 헤드 8 x 4
    return 2 * num_layers * num_heads * head_dim * seq_len * batch_size * bytes_per_element
''',
    ),
    Mistake(
        id="kv_bytes_float_result",
        exercise="kv_cache_bytes",
        title="결과가 int가 아니라 float (나눗셈 `/` 나 실수를 곱함)",
        hint="`/`는 값이 정수여도 float를 돌려줍니다. 바이트 수는 곱셈만으로 구하거나 `//`를 쓰세요.",
        source='''
def kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2):
    bits = 8 * bytes_per_element
    return 2 * num_layers * num_kv_heads * head_dim * seq_len * batch_size * bits / 8
''',
    ),
    # ------------------------------------------------------------------------------------------- max_cached_tokens
    Mistake(
        id="max_tokens_excludes_exact_fit",
        exercise="max_cached_tokens",
        title="메모리를 꼭 채우는 경우를 빼서 하나 적음 (<= 가 아니라 < 로 셈)",
        hint="캐시가 메모리와 정확히 같아도 들어갑니다: kv_cache_bytes(..., t, ...) <= memory_bytes인 가장 큰 t, "
             "즉 memory_bytes // (토큰 하나의 바이트)입니다.",
        source='''
def max_cached_tokens(memory_bytes, num_layers, num_kv_heads, head_dim, batch_size=1, bytes_per_element=2):
    per_token = kv_cache_bytes(num_layers, num_kv_heads, head_dim, 1, batch_size, bytes_per_element)
    t = memory_bytes // per_token
    if t * per_token >= memory_bytes:      # 꽉 차면 넘친다고 봄
        t -= 1
    return t
''',
    ),
    Mistake(
        id="max_tokens_ceil",
        exercise="max_cached_tokens",
        title="올림(ceil)을 써서 한 토큰 더 셈",
        hint="넘치지 않는 가장 큰 토큰 수이므로 내림입니다: memory_bytes // (토큰 하나의 바이트).",
        source='''
import math


def max_cached_tokens(memory_bytes, num_layers, num_kv_heads, head_dim, batch_size=1, bytes_per_element=2):
    per_token = kv_cache_bytes(num_layers, num_kv_heads, head_dim, 1, batch_size, bytes_per_element)
    return math.ceil(memory_bytes / per_token)
''',
    ),
    Mistake(
        id="max_tokens_float_division",
        exercise="max_cached_tokens",
        title="`/`로 나눠 소수 토큰 수(float)를 돌려줌",
        hint="토큰 수는 정수입니다. 정수 나눗셈 memory_bytes // (토큰 하나의 바이트)를 쓰세요.",
        source='''
def max_cached_tokens(memory_bytes, num_layers, num_kv_heads, head_dim, batch_size=1, bytes_per_element=2):
    per_token = kv_cache_bytes(num_layers, num_kv_heads, head_dim, 1, batch_size, bytes_per_element)
    return memory_bytes / per_token
''',
    ),
    Mistake(
        id="max_tokens_int_of_float_division",
        exercise="max_cached_tokens",
        title="int(memory / per_token): 아주 큰 값에서 부동소수 반올림으로 한 토큰 더 나옴",
        hint="float는 유효 숫자가 약 16자리라 큰 정수의 나눗셈이 반올림됩니다. 정수끼리 // 로 나누세요.",
        source='''
def max_cached_tokens(memory_bytes, num_layers, num_kv_heads, head_dim, batch_size=1, bytes_per_element=2):
    per_token = kv_cache_bytes(num_layers, num_kv_heads, head_dim, 1, batch_size, bytes_per_element)
    return int(memory_bytes / per_token)
''',
    ),
    # ------------------------------------------------------------------------------------------- GQA
    Mistake(
        id="gqa_tiled_heads",
        exercise="grouped_query_attention",
        title="KV 헤드를 np.tile로 반복해 질의 헤드 h가 KV 헤드 h % Hkv를 봄",
        hint="질의 헤드 h는 KV 헤드 h // (Hq // Hkv)를 봅니다 (연속한 g 개가 한 그룹). np.tile은 0,1,0,1,...로 "
             "섞고, np.repeat(k, g, axis=1)은 0,0,1,1,...로 그룹을 만듭니다.",
        source='''
def grouped_query_attention(query, key, value, mask=None):
    hq, hkv = query.shape[1], key.shape[1]
    if hq % hkv != 0:
        raise ValueError("Hq must be a multiple of Hkv")
    g = hq // hkv
    k = np.tile(key, (1, g, 1, 1))
    v = np.tile(value, (1, g, 1, 1))
    return scaled_dot_product_attention(query, k, v, mask)
''',
    ),
    Mistake(
        id="gqa_assert_instead_of_value_error",
        exercise="grouped_query_attention",
        title="헤드 수가 맞지 않을 때 ValueError가 아니라 assert (AssertionError)",
        hint="계약은 ValueError입니다: if hq % hkv != 0: raise ValueError(...). assert는 python -O에서 사라지고 "
             "예외 종류도 다릅니다.",
        source='''
def grouped_query_attention(query, key, value, mask=None):
    hq, hkv = query.shape[1], key.shape[1]
    assert hq % hkv == 0, "Hq must be a multiple of Hkv"
    g = hq // hkv
    k = np.repeat(key, g, axis=1)
    v = np.repeat(value, g, axis=1)
    return scaled_dot_product_attention(query, k, v, mask)
''',
    ),
    # ------------------------------------------------------------------------------------------- KVCache
    Mistake(
        id="kvcache_wrong_axis",
        exercise="KVCache",
        title="시간 축(axis 2)이 아니라 헤드 축(axis 1)으로 이어 붙임",
        hint="K, V는 (B, H, t, d)입니다. 토큰이 늘어나는 축은 axis=2 (또는 axis=-2)입니다.",
        source='''
class KVCache:
    def __init__(self):
        self._keys = None
        self._values = None

    def append(self, k, v):
        k, v = np.array(k), np.array(v)
        if self._keys is None:
            self._keys, self._values = k, v
        else:
            self._keys = np.concatenate([self._keys, k], axis=1)
            self._values = np.concatenate([self._values, v], axis=1)
        return self._keys, self._values

    @property
    def keys(self):
        return self._keys

    @property
    def values(self):
        return self._values

    def __len__(self):
        return 0 if self._keys is None else self._keys.shape[2]

    @property
    def nbytes(self):
        return 0 if self._keys is None else self._keys.nbytes + self._values.nbytes
''',
    ),
    Mistake(
        id="kvcache_nbytes_keys_only",
        exercise="KVCache",
        title="nbytes에 키만 세고 값(V)을 빠뜨림",
        hint="캐시는 K와 V를 모두 들고 있습니다: self.keys.nbytes + self.values.nbytes.",
        source='''
class KVCache:
    def __init__(self):
        self._keys = None
        self._values = None

    def append(self, k, v):
        k, v = np.array(k), np.array(v)
        if self._keys is None:
            self._keys, self._values = k, v
        else:
            self._keys = np.concatenate([self._keys, k], axis=2)
            self._values = np.concatenate([self._values, v], axis=2)
        return self._keys, self._values

    @property
    def keys(self):
        return self._keys

    @property
    def values(self):
        return self._values

    def __len__(self):
        return 0 if self._keys is None else self._keys.shape[2]

    @property
    def nbytes(self):
        return 0 if self._keys is None else self._keys.nbytes
''',
    ),
    Mistake(
        id="kvcache_class_level_storage",
        exercise="KVCache",
        title="저장소 리스트를 클래스 속성으로 만들어 모든 캐시가 토큰을 나눠 가짐",
        hint="class 본문의 `chunks = []`는 모든 인스턴스가 공유합니다. __init__에서 self.chunks = []로 만드세요.",
        source='''
class KVCache:
    key_chunks = []
    value_chunks = []

    def append(self, k, v):
        self.key_chunks.append(np.array(k))
        self.value_chunks.append(np.array(v))
        return self.keys, self.values

    @property
    def keys(self):
        return np.concatenate(self.key_chunks, axis=2) if self.key_chunks else None

    @property
    def values(self):
        return np.concatenate(self.value_chunks, axis=2) if self.value_chunks else None

    def __len__(self):
        return sum(c.shape[2] for c in self.key_chunks)

    @property
    def nbytes(self):
        return sum(c.nbytes for c in self.key_chunks + self.value_chunks)
''',
        diagnosable=False,   # its outputs depend on every cache made before (state shared across instances)
    ),
    # ------------------------------------------------------------------------------------------- attend_with_cache
    Mistake(
        id="attend_top_left_mask",
        exercise="attend_with_cache",
        title="인과 마스크를 왼쪽 위에 맞춤 (np.tril에 오프셋 없음): 새 토큰이 캐시된 과거를 못 봄",
        hint="새 토큰 t 개가 캐시 T 개를 볼 때 질의 i는 j <= i + (T - t)인 키를 봅니다: causal_mask(t, len(cache)).",
        source='''
def attend_with_cache(query, key, value, cache):
    keys, values = cache.append(key, value)
    t, total = query.shape[-2], len(cache)
    mask = np.tril(np.ones((t, total), dtype=bool))
    return scaled_dot_product_attention(query, keys, values, mask)
''',
    ),
    Mistake(
        id="attend_ignores_cached_keys",
        exercise="attend_with_cache",
        title="캐시에 덧붙이기만 하고 어텐션은 새 토큰의 K, V로만 함",
        hint="append가 돌려준 (keys, values), 즉 캐시 전체로 어텐션해야 새 토큰이 과거를 봅니다.",
        source='''
def attend_with_cache(query, key, value, cache):
    cache.append(key, value)
    return scaled_dot_product_attention(query, key, value, causal_mask(query.shape[-2]))
''',
    ),
    Mistake(
        id="attend_square_mask",
        exercise="attend_with_cache",
        title="마스크를 causal_mask(t) (t x t)로 만들어 캐시가 있을 때 여러 토큰 덩어리에서 모양이 맞지 않음",
        hint="점수 행렬은 (t, len(cache))입니다: causal_mask(t, len(cache)). t = 1일 때만 우연히 맞습니다.",
        source='''
def attend_with_cache(query, key, value, cache):
    keys, values = cache.append(key, value)
    return scaled_dot_product_attention(query, keys, values, causal_mask(query.shape[-2]))
''',
        diagnosable=False,   # a multi-token chunk after a prefill raises a broadcasting error (no output)
    ),
    # ------------------------------------------------------------------------------------------- flash_attention
    Mistake(
        id="flash_sum_not_rescaled",
        exercise="flash_attention",
        title="최댓값이 바뀔 때 지수 합 l을 exp(m - m')로 고치지 않음",
        hint="새 블록에서 최댓값이 커지면 옛 합과 옛 가중합 모두 새 기준으로 바꿔야 합니다: l = α·l + Σ exp(S - m'), "
             "acc = α·acc + exp(S - m') V, α = exp(m - m').",
        source='''
def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = np.asarray(query), np.asarray(key), np.asarray(value)
    tq, tk = q.shape[-2], k.shape[-2]
    m = np.full(q.shape[:-1] + (1,), -np.inf)
    l = np.zeros(q.shape[:-1] + (1,))
    acc = np.zeros(q.shape[:-1] + v.shape[-1:])
    last = np.arange(tq)[:, None] + (tk - tq)
    for s0 in range(0, tk, block_size):
        kb, vb = k[..., s0:s0 + block_size, :], v[..., s0:s0 + block_size, :]
        s = q @ np.swapaxes(kb, -1, -2) / np.sqrt(q.shape[-1])
        if causal:
            s = np.where(np.arange(s0, s0 + kb.shape[-2]) <= last, s, -np.inf)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        p = np.exp(s - m_new)
        alpha = np.exp(m - m_new)
        l = l + p.sum(axis=-1, keepdims=True)
        acc = alpha * acc + p @ vb
        m = m_new
    return acc / l
''',
    ),
    Mistake(
        id="flash_materializes_scores",
        exercise="flash_attention",
        title="블록으로 나누지 않고 Tq x Tk 점수 행렬 전체를 만듦",
        hint="결과는 맞지만 메모리가 O(n²)입니다. 키를 block_size 개씩 나눠 행마다 최댓값 m, 합 l, 가중합 acc만 "
             "들고 다니세요.",
        source='''
def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = np.asarray(query), np.asarray(key), np.asarray(value)
    mask = causal_mask(q.shape[-2], k.shape[-2]) if causal else None
    return scaled_dot_product_attention(q, k, v, mask)
''',
        diagnosable=False,   # right values; only the memory test fails
    ),
    Mistake(
        id="flash_full_causal_mask",
        exercise="flash_attention",
        title="점수는 블록으로 나눴지만 인과 마스크는 causal_mask(Tq, Tk) 전체를 만들어 잘라 씀",
        hint="결과는 맞지만 Tq x Tk 크기의 마스크가 메모리를 O(n²)로 만듭니다. 블록 [s, s + b)의 조각만 "
             "np.arange(s, s + b) <= np.arange(Tq)[:, None] + (Tk - Tq)로 만드세요.",
        source='''
def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = np.asarray(query), np.asarray(key), np.asarray(value)
    tq, tk = q.shape[-2], k.shape[-2]
    mask = causal_mask(tq, tk) if causal else None
    m = np.full(q.shape[:-1] + (1,), -np.inf)
    l = np.zeros(q.shape[:-1] + (1,))
    acc = np.zeros(q.shape[:-1] + v.shape[-1:])
    for s0 in range(0, tk, block_size):
        kb, vb = k[..., s0:s0 + block_size, :], v[..., s0:s0 + block_size, :]
        s = q @ np.swapaxes(kb, -1, -2) / np.sqrt(q.shape[-1])
        if causal:
            s = np.where(mask[:, s0:s0 + block_size], s, -np.inf)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        m_ref = np.where(np.isfinite(m_new), m_new, 0.0)
        p = np.exp(s - m_ref)
        alpha = np.exp(m - m_ref)
        l = alpha * l + p.sum(axis=-1, keepdims=True)
        acc = alpha * acc + p @ vb
        m = m_new
    return acc / l
''',
        diagnosable=False,   # right values; only the memory test with the long cached prefix fails
    ),
    Mistake(
        id="flash_causal_top_left",
        exercise="flash_attention",
        title="인과 마스크에 Tk - Tq 오프셋이 없음 (왼쪽 위 정렬)",
        hint="블록의 키 j는 질의 i에게 j <= i + (Tk - Tq)일 때 보입니다. Tq < Tk (캐시가 있는 경우)에서 차이가 납니다.",
        source='''
def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = np.asarray(query), np.asarray(key), np.asarray(value)
    tq, tk = q.shape[-2], k.shape[-2]
    m = np.full(q.shape[:-1] + (1,), -np.inf)
    l = np.zeros(q.shape[:-1] + (1,))
    acc = np.zeros(q.shape[:-1] + v.shape[-1:])
    rows = np.arange(tq)[:, None]
    for s0 in range(0, tk, block_size):
        kb, vb = k[..., s0:s0 + block_size, :], v[..., s0:s0 + block_size, :]
        s = q @ np.swapaxes(kb, -1, -2) / np.sqrt(q.shape[-1])
        if causal:
            s = np.where(np.arange(s0, s0 + kb.shape[-2]) <= rows, s, -np.inf)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        m_ref = np.where(np.isfinite(m_new), m_new, 0.0)
        p = np.exp(s - m_ref)
        alpha = np.exp(m - m_ref)
        l = alpha * l + p.sum(axis=-1, keepdims=True)
        acc = alpha * acc + p @ vb
        m = m_new
    return acc / l
''',
    ),
    Mistake(
        id="flash_drops_partial_block",
        exercise="flash_attention",
        title="block_size로 나누어떨어지지 않는 마지막 짧은 블록을 빠뜨림",
        hint="블록 수는 tk // block_size가 아니라 올림입니다: for s0 in range(0, tk, block_size)처럼 끝까지 도세요.",
        source='''
def flash_attention(query, key, value, block_size=64, causal=False):
    q, k, v = np.asarray(query), np.asarray(key), np.asarray(value)
    tq, tk = q.shape[-2], k.shape[-2]
    m = np.full(q.shape[:-1] + (1,), -np.inf)
    l = np.zeros(q.shape[:-1] + (1,))
    acc = np.zeros(q.shape[:-1] + v.shape[-1:])
    last = np.arange(tq)[:, None] + (tk - tq)
    for b in range(tk // block_size):
        s0 = b * block_size
        kb, vb = k[..., s0:s0 + block_size, :], v[..., s0:s0 + block_size, :]
        s = q @ np.swapaxes(kb, -1, -2) / np.sqrt(q.shape[-1])
        if causal:
            s = np.where(np.arange(s0, s0 + kb.shape[-2]) <= last, s, -np.inf)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        m_ref = np.where(np.isfinite(m_new), m_new, 0.0)
        p = np.exp(s - m_ref)
        alpha = np.exp(m - m_ref)
        l = alpha * l + p.sum(axis=-1, keepdims=True)
        acc = alpha * acc + p @ vb
        m = m_new
    return acc / l
''',
    ),

    # ------------------------------------------------------------------------------------------- sliding_window_mask
    Mistake(
        id="sw_window_off_by_one",
        exercise="sliding_window_mask",
        title="윈도를 하나 넓게 잡음 (`< window`가 아니라 `<= window`): 자기 자신과 앞 토큰 window개, 모두 window + 1개를 봄",
        hint="토큰은 자기 자신과 앞의 window - 1개, 모두 window개를 봅니다: (i + t_k - t_q) - j < window.",
        source='''
def sliding_window_mask(t_q, t_k=None, window=4096):
    t_k = t_q if t_k is None else t_k
    i = np.arange(t_q)[:, None] + (t_k - t_q)
    j = np.arange(t_k)[None, :]
    return (j <= i) & (i - j <= window)
''',
    ),
    Mistake(
        id="sw_top_left",
        exercise="sliding_window_mask",
        title="윈도와 인과 마스크를 왼쪽 위에 맞춤 (t_k - t_q 오프셋 없음): 캐시 뒤에 이어지는 질의가 틀림",
        hint="질의 i의 절대 위치는 i + (t_k - t_q)입니다. causal_mask처럼 오른쪽 아래에 맞춰야 t_q < t_k(캐시가 "
             "있을 때)에서 맞습니다.",
        source='''
def sliding_window_mask(t_q, t_k=None, window=4096):
    t_k = t_q if t_k is None else t_k
    i = np.arange(t_q)[:, None]
    j = np.arange(t_k)[None, :]
    return (j <= i) & (i - j < window)
''',
    ),
    Mistake(
        id="sw_symmetric_band",
        exercise="sliding_window_mask",
        title="양쪽으로 열린 띠 |i - j| < window: 미래 토큰도 봄 (인과 조건이 빠짐)",
        hint="슬라이딩 윈도는 인과 마스크에 더하는 조건입니다: j <= i이고 i - j < window (i는 절대 위치).",
        source='''
def sliding_window_mask(t_q, t_k=None, window=4096):
    t_k = t_q if t_k is None else t_k
    i = np.arange(t_q)[:, None] + (t_k - t_q)
    j = np.arange(t_k)[None, :]
    return np.abs(i - j) < window
''',
    ),
    # ------------------------------------------------------------------------------------------- attend_with_rope_cache
    Mistake(
        id="rope_positions_restart",
        exercise="attend_with_rope_cache",
        title="단계마다 위치를 0부터 다시 셈 (np.arange(t)): 디코딩한 토큰이 모두 위치 0에 놓임",
        hint="새 토큰들의 절대 위치는 len(cache) .. len(cache) + t - 1입니다 (덧붙이기 전의 len(cache)부터).",
        source='''
def attend_with_rope_cache(query, key, value, cache, base=10000.0):
    t = np.shape(query)[-2]
    positions = np.arange(t)
    q = apply_rope(query, positions, base)
    keys, values = cache.append(apply_rope(key, positions, base), value)
    return scaled_dot_product_attention(q, keys, values, causal_mask(t, len(cache)))
''',
    ),
    Mistake(
        id="rope_rerotates_cached_keys",
        exercise="attend_with_rope_cache",
        title="이미 회전해 캐시에 넣은 키를 단계마다 다시 회전함 (캐시된 키가 두 번 이상 돌아감)",
        hint="캐시의 키는 넣을 때 한 번, 자기 절대 위치로 회전되어 있습니다. append가 돌려준 keys를 그대로 쓰세요.",
        source='''
def attend_with_rope_cache(query, key, value, cache, base=10000.0):
    t, start = np.shape(query)[-2], len(cache)
    positions = np.arange(start, start + t)
    q = apply_rope(query, positions, base)
    keys, values = cache.append(apply_rope(key, positions, base), value)
    keys = apply_rope(keys, np.arange(len(cache)), base)
    return scaled_dot_product_attention(q, keys, values, causal_mask(t, len(cache)))
''',
    ),
    Mistake(
        id="rope_caches_unrotated_keys",
        exercise="attend_with_rope_cache",
        title="회전하지 않은 키를 캐시에 넣고 그대로 어텐션함 (질의만 회전됨)",
        hint="cache.append에는 apply_rope(key, 위치)로 회전한 키를 넘기세요. 캐시의 키와 새 질의가 모두 회전되어 "
             "있어야 점수가 위치의 차이에만 의존합니다.",
        source='''
def attend_with_rope_cache(query, key, value, cache, base=10000.0):
    t, start = np.shape(query)[-2], len(cache)
    positions = np.arange(start, start + t)
    q = apply_rope(query, positions, base)
    k = apply_rope(key, positions, base)
    keys, values = cache.append(key, value)
    return scaled_dot_product_attention(q, keys, values, causal_mask(t, len(cache)))
''',
    ),
    Mistake(
        id="rope_rotates_whole_cache_each_step",
        exercise="attend_with_rope_cache",
        title="회전하지 않은 키를 캐시에 두고 단계마다 캐시 전체를 회전함: 출력은 맞지만 캐시 내용이 계약과 다름",
        hint="계약은 키를 절대 위치로 회전한 뒤 캐시에 넣는 것입니다. 그러면 단계마다 캐시 전체(T개)를 다시 돌리는 "
             "O(T) 계산이 사라지고, cache.keys는 회전된 키입니다.",
        source='''
def attend_with_rope_cache(query, key, value, cache, base=10000.0):
    t, start = np.shape(query)[-2], len(cache)
    positions = np.arange(start, start + t)
    q = apply_rope(query, positions, base)
    keys, values = cache.append(key, value)
    keys = apply_rope(keys, np.arange(len(cache)), base)
    return scaled_dot_product_attention(q, keys, values, causal_mask(t, len(cache)))
''',
    ),
    Mistake(
        id="rope_freq_i_over_d",
        exercise="attend_with_rope_cache",
        title="회전 주파수를 base ** (-2i/d)가 아니라 base ** (-i/d)로 계산함 (직접 쓴 회전에서)",
        hint="쌍 i (i < d/2)의 각속도는 base ** (-2i / d)입니다. 지수에 2가 빠지면 뒤쪽 쌍이 너무 빨리 돕니다. "
             "주어진 apply_rope를 쓰면 이 실수가 생기지 않습니다.",
        source='''
def attend_with_rope_cache(query, key, value, cache, base=10000.0):
    t, start = np.shape(query)[-2], len(cache)
    d = np.shape(query)[-1]
    angle = np.arange(start, start + t)[:, None] * base ** (-np.arange(d // 2) / d)
    cos, sin = np.cos(angle), np.sin(angle)

    def rotate(x):
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)

    keys, values = cache.append(rotate(np.asarray(key)), value)
    return scaled_dot_product_attention(rotate(np.asarray(query)), keys, values, causal_mask(t, len(cache)))
''',
    ),
    Mistake(
        id="rope_interleaved_pairs",
        exercise="attend_with_rope_cache",
        title="이웃한 성분 (x[2i], x[2i+1])을 쌍으로 회전함 (rotate-half가 아니라 interleaved 배치)",
        hint="이 과정의 RoPE는 Llama와 Keras Hub의 rotate-half 배치입니다: 쌍은 (x[..., i], x[..., i + d/2])입니다. "
             "주어진 apply_rope를 쓰면 이 실수가 생기지 않습니다.",
        source='''
def attend_with_rope_cache(query, key, value, cache, base=10000.0):
    t, start = np.shape(query)[-2], len(cache)
    d = np.shape(query)[-1]
    angle = np.arange(start, start + t)[:, None] * base ** (-2 * np.arange(d // 2) / d)
    cos, sin = np.cos(angle), np.sin(angle)

    def rotate(x):
        even, odd = x[..., 0::2], x[..., 1::2]
        out = np.empty(np.shape(x))
        out[..., 0::2] = even * cos - odd * sin
        out[..., 1::2] = even * sin + odd * cos
        return out

    keys, values = cache.append(rotate(np.asarray(key)), value)
    return scaled_dot_product_attention(rotate(np.asarray(query)), keys, values, causal_mask(t, len(cache)))
''',
    ),
]
