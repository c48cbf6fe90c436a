"""`max_cached_tokens` (kv_cache): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/kv_cache/test_max_cached_tokens.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct max_cached_tokens; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def max_cached_tokens(memory_bytes, num_layers, num_kv_heads, head_dim, batch_size=1, bytes_per_element=2):  # @DEF
    per_token = kv_cache_bytes(num_layers, num_kv_heads, head_dim, 1, batch_size, bytes_per_element)  # @PER_TOKEN
    return memory_bytes // per_token                                                                  # @DIVIDE
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="max_tokens_excludes_exact_fit",
        exercise="max_cached_tokens",
        title="메모리를 꼭 채우는 경우를 빼서 하나 적음 (`<=`가 아니라 `<`로 셈)",
        hint="캐시가 메모리와 정확히 같아도 들어갑니다: kv_cache_bytes(..., t, ...) <= memory_bytes인 가장 큰 t, "
             "즉 memory_bytes // (토큰 하나의 바이트)입니다.",
        source=_with(DIVIDE="t = memory_bytes // per_token\n"
                            "if t * per_token >= memory_bytes:      # 꽉 차면 넘친다고 봄\n"
                            "    t -= 1\n"
                            "return t"),
    ),
    Mistake(
        id="max_tokens_ceil",
        exercise="max_cached_tokens",
        title="올림(ceil)을 써서 한 토큰 더 셈",
        hint="넘치지 않는 가장 큰 토큰 수이므로 내림입니다: memory_bytes // (토큰 하나의 바이트).",
        source=_with(DEF=("import math\n\n\n"
                          "def max_cached_tokens(memory_bytes, num_layers, num_kv_heads, head_dim, batch_size=1, "
                          "bytes_per_element=2):"),
                     DIVIDE="return math.ceil(memory_bytes / per_token)"),
    ),
    Mistake(
        id="max_tokens_float_division",
        exercise="max_cached_tokens",
        title="`/`로 나눠 소수 토큰 수(float)를 돌려줌",
        hint="토큰 수는 정수입니다. 정수 나눗셈 memory_bytes // (토큰 하나의 바이트)를 쓰세요.",
        source=_with(DIVIDE="return memory_bytes / per_token"),
    ),
    Mistake(
        id="max_tokens_int_of_float_division",
        exercise="max_cached_tokens",
        title="int(memory / per_token): 아주 큰 값에서 부동소수 반올림으로 한 토큰 더 나옴",
        hint="float는 유효 숫자가 약 16자리라 큰 정수의 나눗셈이 반올림됩니다. 정수끼리 `//`로 나누세요.",
        source=_with(DIVIDE="return int(memory_bytes / per_token)"),
    ),
    Mistake(
        id="max_tokens_ignores_batch",
        exercise="max_cached_tokens",
        title="배치 크기를 빼고 토큰 하나의 바이트를 셈 (요청이 여럿이면 너무 많이 담는다고 답함)",
        hint=("배치의 시퀀스마다 토큰을 하나씩 더하므로 토큰 하나가 늘 때 캐시는 batch_size배로 늘어납니다: "
              "kv_cache_bytes(…, 1, batch_size, bytes_per_element)로 나누세요."),
        source=_with(PER_TOKEN="",
                     DIVIDE="return memory_bytes // kv_cache_bytes(num_layers, num_kv_heads, head_dim, 1, 1, "
                            "bytes_per_element)"),
    ),
]

EXERCISE = Exercise(
    "max_cached_tokens",
    assignment="kv_cache",
    points=2,
    # No library routine computes it, so nothing is forbidden (``forbidden.py``).
    forbidden=None,
    mistakes=MISTAKES,
    # answered with their answers while it is graded, so that it is judged on its own logic (isolation.py)
    callees=("kv_cache_bytes",),
)
