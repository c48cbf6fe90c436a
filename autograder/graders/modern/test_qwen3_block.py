"""qwen3_block(x, block, positions, num_heads, num_kv_heads, cache=None): the pre-norm Qwen3 block,
h = x + qwen3_attention(rms_norm(x, input_layernorm), ...), then h + swiglu_mlp(rms_norm(h, post_attention_layernorm)).

While it is graded, the student's rms_norm, qwen3_attention and swiglu_mlp are answered by the references
(isolation.py), so it is judged on its own logic; a call of qwen3_attention with a cache is the student's own (the
cache is state in the student's process), so the cached test also rests on the student's cached attention.
"""
import numpy as np
import pytest

from autograder.graders import references, tolerances
from autograder.graders.attention.inputs import normal
from autograder.graders.compare import expect_close
from autograder.graders.modern import MODEL, random_block, store

# Judged against (forbidden routines and known mistakes: exercises/qwen3_block.py):
REFERENCE = references.qwen3_block
REFERENCES = ("float64 torch Qwen3 block (references.qwen3_block)",
              "transformers' Qwen3DecoderLayer (stored: graders/modern/refs)",
              "KerasHub's Qwen3TransformerDecoder (stored: graders/modern/refs)")
TOLERANCES = {"STUDENT": "against the float64 reference", "QWEN3_FLOAT32": "against the stored library outputs"}

D = MODEL["d_model"]
CASES = [  # B, T, H, Hkv, first position, dtype
    pytest.param(2, 7, 4, 2, 0, np.float32, id="gqa-b2-t7"),
    pytest.param(1, 5, 4, 1, 6, np.float32, id="mqa-b1-t5-from6"),
    pytest.param(2, 4, 4, 2, 3, np.float64, id="gqa-b2-t4-from3-float64"),
]


@pytest.mark.points(1.2)
@pytest.mark.parametrize("b, t, heads, kv_heads, start, dtype", CASES)
def test_matches_float64_reference(student, rng, b, t, heads, kv_heads, start, dtype):
    """사전 정규화 블록: 어텐션 부분층과 SwiGLU 부분층, 잔차 둘 (float64 참조)"""
    block = {k: v.astype(dtype) for k, v in random_block(rng, heads, kv_heads).items()}
    x = normal(rng, b, t, D, dtype=dtype)
    positions = np.arange(start, start + t)
    got = student.qwen3_block(x, block, positions, heads, kv_heads)
    expect_close(got, REFERENCE(x, block, positions, heads, kv_heads), tol=tolerances.STUDENT,
                 against="float64 Qwen3 블록", call=student.last)


@pytest.mark.points(0.6)
@pytest.mark.parametrize("name", store.names("block"))
def test_matches_transformers_qwen3_decoder_layer(student, name):
    """같은 가중치를 넣은 transformers의 Qwen3DecoderLayer(float64)와 같음 (저장해 둔 출력)"""
    case = store.load(name)
    i, a = case.inputs, case.args
    got = student.qwen3_block(i["x"], i["block"], i["positions"], a["num_heads"], a["num_kv_heads"])
    expect_close(got, case.outputs["hf"], tol=tolerances.QWEN3_FLOAT32,
                 against=f"transformers의 Qwen3DecoderLayer ({name})", call=student.last)


@pytest.mark.points(0.6)
def test_matches_keras_hub_qwen3_decoder(student):
    """같은 가중치를 넣은 KerasHub의 Qwen3TransformerDecoder(float32, Keras 층)와 float32 허용치 안에서 같음"""
    case = store.load("block_gqa_b2_t7")
    i, a = case.inputs, case.args
    got = student.qwen3_block(i["x"], i["block"], i["positions"], a["num_heads"], a["num_kv_heads"])
    expect_close(got, case.outputs["keras_hub"], tol=tolerances.QWEN3_FLOAT32,
                 against="KerasHub의 Qwen3TransformerDecoder (block_gqa_b2_t7)", call=student.last)


@pytest.mark.points(0.6)
def test_with_the_given_cache(student, rng):
    """주어진 KVCache를 넘기면 프리필과 다음 토큰의 출력이 전체 시퀀스 블록의 행과 같음"""
    block = random_block(rng)
    x = normal(rng, 2, 6, D)
    full = REFERENCE(x, block, np.arange(6), MODEL["num_heads"], MODEL["num_kv_heads"])
    cache = student.KVCache()
    for a, e in ((0, 5), (5, 6)):
        got = student.qwen3_block(x[:, a:e], block, np.arange(a, e), MODEL["num_heads"], MODEL["num_kv_heads"],
                                  cache)
        expect_close(got, full[:, a:e], what=f"위치 {a}..{e - 1} (캐시에 {a}개가 있을 때)의 출력",
                     tol=tolerances.STUDENT, against="전체 시퀀스의 Qwen3 블록 (float64)")
