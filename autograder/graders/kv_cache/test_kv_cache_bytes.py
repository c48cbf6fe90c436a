"""kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2) -> exact int."""
import pytest
import torch

from autograder.graders import references
from autograder.graders.kv_cache import MODELS, expect_int, expect_integer_type

# Judged against (forbidden routines and known mistakes: exercises/kv_cache_bytes.py):
REFERENCE = references.kv_cache_bytes
REFERENCES = ("2 x layers x KV heads x head dim x tokens x batch x bytes",)
TOLERANCES = {"EXACT": "integers (kv_cache.expect_int)"}

REAL_MODELS = [pytest.param(*config, id=name.replace(" ", "-")) for name, config in MODELS.items()]


@pytest.mark.points(0.6)
@pytest.mark.parametrize("layers, kv_heads, head_dim, per_token", REAL_MODELS)
def test_real_model_configs(student, rng, layers, kv_heads, head_dim, per_token):
    """실제 모델 설정(GPT-2 small, Llama-3-8B/70B, Mistral-7B, Qwen3-8B, Gemma-2-9B)의 FP16 캐시 바이트"""
    got = student.kv_cache_bytes(layers, kv_heads, head_dim, 1)
    expect_int(got, per_token, what=f"토큰 하나, FP16 (L={layers}, H_kv={kv_heads}, d={head_dim})",
               call=student.last)
    seq_len = int(rng.choice([1000, 4096, 8192, 32_768, 131_072]))
    got = student.kv_cache_bytes(layers, kv_heads, head_dim, seq_len=seq_len)
    expect_int(got, per_token * seq_len, what=f"{seq_len:,} 토큰, FP16 (L={layers}, H_kv={kv_heads}, d={head_dim})",
               call=student.last)


PRECISIONS = [pytest.param(4, id="fp32"), pytest.param(2, id="fp16"), pytest.param(1, id="fp8")]


@pytest.mark.points(0.3)
@pytest.mark.parametrize("element_bytes", PRECISIONS)
def test_precisions(student, rng, element_bytes):
    """원소 하나의 바이트(FP32 4, FP16 2, FP8 1)에 비례"""
    layers, kv_heads, head_dim = (int(x) for x in (rng.integers(2, 81), rng.choice([1, 2, 4, 8, 16]),
                                                   rng.choice([64, 96, 128, 256])))
    seq_len = int(rng.integers(1, 40_000))
    got = student.kv_cache_bytes(layers, kv_heads, head_dim, seq_len, bytes_per_element=element_bytes)
    expected = REFERENCE(layers, kv_heads, head_dim, seq_len, 1, element_bytes)
    expect_int(got, expected, what=f"L={layers}, H_kv={kv_heads}, d={head_dim}, T={seq_len}, "
                                   f"원소 {element_bytes}바이트", call=student.last)


BATCHES = [pytest.param(4, id="batch4"), pytest.param(16, id="batch16"), pytest.param(64, id="batch64")]


@pytest.mark.points(0.3)
@pytest.mark.parametrize("batch", BATCHES)
def test_batch_size(student, rng, batch):
    """배치 크기(동시에 처리하는 시퀀스 수)에 비례, 인자 순서대로 넘겨도 같음"""
    name = rng.choice(list(MODELS))
    layers, kv_heads, head_dim, _ = MODELS[name]
    seq_len, element_bytes = int(rng.integers(100, 9000)), int(rng.choice([1, 2, 4]))
    expected = REFERENCE(layers, kv_heads, head_dim, seq_len, batch, element_bytes)
    got = student.kv_cache_bytes(layers, kv_heads, head_dim, seq_len, batch, element_bytes)
    what = f"{name}, T={seq_len}, 배치 {batch}, 원소 {element_bytes}바이트"
    expect_int(got, expected, what=what, call=student.last)
    got = student.kv_cache_bytes(num_layers=layers, num_kv_heads=kv_heads, head_dim=head_dim, seq_len=seq_len,
                                 batch_size=batch, bytes_per_element=element_bytes)
    expect_int(got, expected, what=what + " (키워드 인자)", call=student.last)


DTYPES = [pytest.param(torch.float32, id="float32"), pytest.param(torch.float16, id="float16"),
          pytest.param(torch.bfloat16, id="bfloat16"), pytest.param(torch.float8_e4m3fn, id="float8_e4m3fn")]


@pytest.mark.points(0.4)
@pytest.mark.parametrize("dtype", DTYPES)
def test_matches_torch_cache_tensors(student, rng, dtype):
    """층마다 K, V를 torch.empty(B, H_kv, T, d)로 만든 진짜 캐시 텐서의 nbytes 합과 같음"""
    layers, batch, kv_heads = int(rng.integers(2, 6)), int(rng.integers(1, 4)), int(rng.integers(1, 5))
    seq_len, head_dim = int(rng.integers(3, 40)), int(rng.choice([8, 16, 32]))
    cache = [(torch.empty(batch, kv_heads, seq_len, head_dim, dtype=dtype),
              torch.empty(batch, kv_heads, seq_len, head_dim, dtype=dtype)) for _ in range(layers)]
    real = sum(k.nbytes + v.nbytes for k, v in cache)
    got = student.kv_cache_bytes(layers, kv_heads, head_dim, seq_len, batch_size=batch,
                                 bytes_per_element=cache[0][0].element_size())
    expect_int(got, real, what=f"{dtype} 캐시 텐서 {2 * layers}개 (B={batch}, H_kv={kv_heads}, T={seq_len}, "
                               f"d={head_dim})의 nbytes", call=student.last)


@pytest.mark.points(0.4)
def test_returns_an_int(student, rng):
    """결과는 정수(int): 정수 값이어도 float이면 안 됨 (numpy 정수는 괜찮음)"""
    for layers, kv_heads, head_dim, per_token in list(MODELS.values())[:3]:
        seq_len = int(rng.integers(1, 10_000))
        got = student.kv_cache_bytes(layers, kv_heads, head_dim, seq_len, batch_size=2, bytes_per_element=1)
        expect_int(got, per_token // 2 * seq_len * 2, what=f"L={layers}, T={seq_len}, 배치 2, FP8",
                   call=student.last)
        expect_integer_type(got, what="kv_cache_bytes의 반환값", float_mistake="kv_bytes_float_result")
