"""max_cached_tokens(memory_bytes, num_layers, num_kv_heads, head_dim, batch_size=1, bytes_per_element=2) -> int."""
import pytest

from autograder.graders import references
from autograder.graders.kv_cache import GB, MODELS, GiB, MiB, expect_int, expect_integer_type

# Judged against (forbidden routines and known mistakes: exercises/max_cached_tokens.py):
REFERENCE = references.max_cached_tokens
REFERENCES = ("memory // bytes of one token",)
TOLERANCES = {"EXACT": "integers (kv_cache.expect_int)"}


def per_token(layers, kv_heads, head_dim, batch=1, element_bytes=2):
    return references.kv_cache_bytes(layers, kv_heads, head_dim, 1, batch, element_bytes)


def expect_largest_fit(student, memory, layers, kv_heads, head_dim, batch=1, element_bytes=2, label=""):
    """The student's answer is the reference, and the inverse property holds: t tokens fit, t + 1 do not."""
    what = (f"{label + ': ' if label else ''}메모리 {memory:,} 바이트, L={layers}, H_kv={kv_heads}, d={head_dim}, "
            f"배치 {batch}, 원소 {element_bytes}바이트")
    got = student.max_cached_tokens(memory, layers, kv_heads, head_dim, batch_size=batch,
                                    bytes_per_element=element_bytes)
    expected = REFERENCE(memory, layers, kv_heads, head_dim, batch, element_bytes)
    step = per_token(layers, kv_heads, head_dim, batch, element_bytes)

    def explain(t):
        if t < 0:
            return "토큰 수는 음수일 수 없습니다."
        if t * step > memory:
            return f"{t:,} 토큰의 캐시({t * step:,} 바이트)는 메모리를 넘칩니다."
        if t == int(t):
            return f"{int(t) + 1:,} 토큰도 들어갑니다: 들어가는 가장 큰 값을 구하세요."
        return "토큰 수는 정수입니다."

    expect_int(got, expected, what=what, call=student.last, explain=explain)
    return got


GPUS = [  # (label, memory, layers, kv heads, head dim, batch, bytes per element)
    pytest.param("Llama-3-8B, 80 GB - 16 GB", 64 * GB, 32, 8, 128, 1, 2, id="llama3-8b-64GB-fp16"),
    pytest.param("Llama-3-8B, FP8", 64 * GB, 32, 8, 128, 1, 1, id="llama3-8b-64GB-fp8"),
    pytest.param("Llama-3-8B를 MHA로 가정", 64 * GB, 32, 32, 128, 1, 2, id="llama3-8b-as-mha"),
    pytest.param("Llama-3-70B, 요청 16개", 40 * GiB, 80, 8, 128, 16, 2, id="llama3-70b-40GiB-batch16"),
    pytest.param("GPT-2 small, 1 GB", 10**9, 12, 12, 64, 1, 2, id="gpt2-1GB"),
    pytest.param("Gemma-2-9B, FP32, 요청 3개", 24 * GiB, 42, 8, 256, 3, 4, id="gemma2-9b-24GiB-fp32-batch3"),
]


@pytest.mark.points(0.6)
@pytest.mark.parametrize("label, memory, layers, kv_heads, head_dim, batch, element_bytes", GPUS)
def test_real_gpus(student, label, memory, layers, kv_heads, head_dim, batch, element_bytes):
    """실제 GPU 메모리와 모델: 들어가는 가장 큰 토큰 수 (한 토큰 더하면 넘침)"""
    expect_largest_fit(student, memory, layers, kv_heads, head_dim, batch, element_bytes, label)


@pytest.mark.points(0.4)
def test_boundary_at_an_exact_multiple(student, rng):
    ("""메모리가 토큰당 바이트의 정확한 배수일 때 그 토큰 수, 1바이트 모자라면 하나 적게, """
     """거의 한 토큰 더 있어도 그대로""")
    name = str(rng.choice(list(MODELS)))
    layers, kv_heads, head_dim, _ = MODELS[name]
    batch, element_bytes = int(rng.integers(1, 9)), int(rng.choice([1, 2, 4]))
    tokens = int(rng.integers(100, 50_000))
    step = per_token(layers, kv_heads, head_dim, batch, element_bytes)
    for memory, label in [(tokens * step, "정확히 배수"), (tokens * step - 1, "1바이트 모자람"),
                          (tokens * step + step - 1, "한 토큰에 1바이트 모자람")]:
        expect_largest_fit(student, memory, layers, kv_heads, head_dim, batch, element_bytes, f"{name}, {label}")


@pytest.mark.points(0.3)
@pytest.mark.parametrize("element_bytes", [pytest.param(1, id="fp8"), pytest.param(2, id="fp16"),
                                           pytest.param(4, id="fp32")])
def test_random_configs_batch_and_precision(student, rng, element_bytes):
    """무작위 설정, 배치 크기와 정밀도(FP8/FP16/FP32)"""
    layers, kv_heads = int(rng.integers(1, 100)), int(rng.choice([1, 2, 4, 8, 16, 32]))
    head_dim, batch = int(rng.choice([32, 64, 80, 128, 256])), int(rng.integers(1, 65))
    memory = int(rng.integers(10**8, 10**11))
    expect_largest_fit(student, memory, layers, kv_heads, head_dim, batch, element_bytes)


@pytest.mark.points(0.1)
def test_not_even_one_token(student):
    """토큰 하나도 들어가지 않으면 0"""
    expect_largest_fit(student, 10_000, 12, 12, 64, label="GPT-2 small, 10,000 바이트")
    expect_largest_fit(student, 0, 32, 8, 128, label="메모리 0")


@pytest.mark.points(0.2)
def test_integer_arithmetic_for_huge_memory(student, rng):
    """아주 큰 값에서도 정확: 부동소수 나눗셈의 반올림에 기대지 않고 정수 연산(//)으로"""
    # memory = 9 * 2**57 - 1 bytes (< 2**63, so numpy int64 works too): as a float it rounds up to 9 * 2**57,
    # and 9 * 2**57 / 36,864 is exactly 2**45, so int(memory / per_token) gives one token too many.
    layers, kv_heads, head_dim, _ = MODELS["GPT-2 small"]
    tokens = 2**45 - int(rng.integers(0, 2)) * 2**40           # the float rounding error shows either way
    memory = tokens * per_token(layers, kv_heads, head_dim) - 1
    expect_largest_fit(student, memory, layers, kv_heads, head_dim, label="GPT-2 small, 아주 큰 메모리")


@pytest.mark.points(0.4)
def test_returns_an_int(student, rng):
    """결과는 정수(int): 정수 값이어도 float이면 안 됨 (numpy 정수는 괜찮음)"""
    layers, kv_heads, head_dim, _ = MODELS["Llama-3-8B"]
    for memory in (int(rng.integers(10**9, 10**11)), 576 * MiB):
        got = expect_largest_fit(student, memory, layers, kv_heads, head_dim, label="Llama-3-8B")
        expect_integer_type(got, what="max_cached_tokens의 반환값")
