"""`kv_cache_bytes` (kv_cache): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/kv_cache/test_kv_cache_bytes.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.

Not expressible as a function of the contract's arguments: computing the cache with the number of *query* heads
where a model has fewer KV heads (Qwen3-8B with 32 instead of 8) is a mistake at the call site
(``kv_cache_bytes(36, 32, 128, ...)``), which no grader of ``kv_cache_bytes`` can see; the notebook's section 2
shows it on purpose, and the quiz (q8, q9) and written answer 2 grade it. ``kv_bytes_query_heads`` below is its
signature-compatible form: a student who turns the KV heads back into query heads with Llama's group size.
"""
from autograder.graders import answers
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct kv_cache_bytes; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2):
    return 2 * num_layers * num_kv_heads * head_dim * seq_len * batch_size * bytes_per_element  # @BYTES
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="kv_bytes_missing_factor_2",
        exercise="kv_cache_bytes",
        title="K와 V 두 가지인데 2를 곱하지 않음",
        hint="층마다 K 캐시와 V 캐시가 따로 있습니다: 2 × 층 × KV 헤드 × 헤드 차원 × 토큰 × 배치 × 바이트.",
        source=_with(BYTES="return num_layers * num_kv_heads * head_dim * seq_len * batch_size * bytes_per_element"),
    ),
    Mistake(
        id="kv_bytes_bits_not_bytes",
        exercise="kv_cache_bytes",
        title="바이트가 아니라 비트를 셈 (8 배)",
        hint="bytes_per_element는 이미 바이트입니다 (FP16 = 2). 8을 곱하면 비트 수가 됩니다.",
        source=_with(BYTES="bits = bytes_per_element * 8\n"
                           "return 2 * num_layers * num_kv_heads * head_dim * seq_len * batch_size * bits"),
    ),
    Mistake(
        id="kv_bytes_ignores_batch",
        exercise="kv_cache_bytes",
        title="배치 크기를 곱하지 않음",
        hint="요청(시퀀스)마다 자기 캐시가 있습니다: batch_size도 곱하세요.",
        source=_with(BYTES="return 2 * num_layers * num_kv_heads * head_dim * seq_len * bytes_per_element"),
    ),
    Mistake(
        id="kv_bytes_query_heads",
        exercise="kv_cache_bytes",
        title="KV 헤드가 아니라 질의 헤드 수로 셈 (그룹 크기 4를 곱함)",
        hint="캐시에는 K, V를 가진 헤드(num_kv_heads)만 저장됩니다. GQA에서 질의 헤드 여러 개가 K, V 한 벌을 "
             "나눠 쓰므로 질의 헤드 수로 바꾸면 안 됩니다.",
        source=_with(BYTES="num_heads = num_kv_heads * 4        # Llama-3-8B: 질의 헤드 32 = KV 헤드 8 x 4\n"
                           "return 2 * num_layers * num_heads * head_dim * seq_len * batch_size * bytes_per_element"),
    ),
    Mistake(
        id="kv_bytes_float_result",
        exercise="kv_cache_bytes",
        title="결과가 int가 아니라 float (나눗셈 `/` 나 실수를 곱함)",
        hint="`/`는 값이 정수여도 float를 돌려줍니다. 바이트 수는 곱셈만으로 구하거나 `//`를 쓰세요.",
        source=_with(BYTES="bits = 8 * bytes_per_element\n"
                           "return 2 * num_layers * num_kv_heads * head_dim * seq_len * batch_size * bits / 8"),
    ),
    Mistake(
        id="kv_bytes_one_layer",
        exercise="kv_cache_bytes",
        title="층 수를 곱하지 않음 (층 하나의 캐시만 셈)",
        hint="층마다 자기 K, V 캐시가 있습니다: num_layers도 곱하세요.",
        source=_with(BYTES="return 2 * num_kv_heads * head_dim * seq_len * batch_size * bytes_per_element"),
    ),
    Mistake(
        id="kv_bytes_ignores_dtype",
        exercise="kv_cache_bytes",
        title="bytes_per_element를 무시하고 늘 2바이트(FP16)로 셈",
        hint=("원소 하나의 바이트는 인자로 받습니다: FP32 4, FP16·BF16 2, FP8 1. 2 대신 bytes_per_element를 "
              "곱하세요."),
        source=_with(BYTES="return 2 * num_layers * num_kv_heads * head_dim * seq_len * batch_size * 2"),
    ),
]

EXERCISE = Exercise(
    "kv_cache_bytes",
    assignment="kv_cache",
    points=2,
    # No library routine computes it, so nothing is forbidden (``forbidden.py``).
    forbidden=None,
    mistakes=MISTAKES,
    # a call of it while another exercise is graded is answered with this (answers.py)
    answer=answers.KV_CACHE_BYTES,
)
