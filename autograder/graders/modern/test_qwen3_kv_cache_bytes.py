"""qwen3_kv_cache_bytes(config, seq_len, batch_size=1, bytes_per_element=2): the KV-cache formula (the given
kv_cache_bytes) applied to a Hugging Face config.json: its layers, KV heads and head_dim (hidden_size //
num_attention_heads where the config has none), exact int; equal to the bytes the two libraries' Qwen3 allocate.
"""
import pytest

from autograder.graders import references
from autograder.graders.kv_cache import expect_int
from autograder.graders.modern import MODEL, store

# Judged against (forbidden routines and known mistakes: exercises/qwen3_kv_cache_bytes.py):
REFERENCE = references.qwen3_kv_cache_bytes
REFERENCES = ("2 x layers x KV heads x head_dim x tokens x batch x bytes of the config",
              "the bytes of the caches transformers' Qwen3ForCausalLM and KerasHub's Qwen3CausalLM allocate "
              "(stored: graders/modern/refs)")
TOLERANCES = {"EXACT": "integers (kv_cache.expect_int)"}


def _config(hidden, layers, heads, kv_heads, intermediate, tied, **more) -> dict:
    """A Qwen3 config.json's numbers (the keys a cache needs among the others a config has)."""
    return {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": hidden,
            "intermediate_size": intermediate, "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": kv_heads, "head_dim": 128, "max_position_embeddings": 40960,
            "vocab_size": 151936, "rope_theta": 1000000, "rms_norm_eps": 1e-06, "tie_word_embeddings": tied,
            "hidden_act": "silu", "torch_dtype": "bfloat16", **more}


# The Qwen3 family (Hugging Face's Qwen/Qwen3-* config.json; layers and query/KV heads as in the Qwen3 technical
# report, arXiv:2505.09388, tables 1 and 2). The notebook states the same numbers.
QWEN3 = {
    "Qwen3-0.6B": _config(1024, 28, 16, 8, 3072, True),
    "Qwen3-1.7B": _config(2048, 28, 16, 8, 6144, True),
    "Qwen3-4B": _config(2560, 36, 32, 8, 9728, True),
    "Qwen3-8B": _config(4096, 36, 32, 8, 12288, False),
    "Qwen3-14B": _config(5120, 40, 40, 8, 17408, False),
    "Qwen3-32B": _config(5120, 64, 64, 8, 25600, False),
    "Qwen3-30B-A3B": _config(2048, 48, 32, 4, 6144, False, model_type="qwen3_moe", num_experts=128,
                             num_experts_per_tok=8, moe_intermediate_size=768),
    "Qwen3-235B-A22B": _config(4096, 94, 64, 4, 12288, False, model_type="qwen3_moe", num_experts=128,
                               num_experts_per_tok=8, moe_intermediate_size=1536),
}
# Mistral-7B-v0.1's config.json has no head_dim: transformers takes hidden_size // num_attention_heads (4096 / 32).
NO_HEAD_DIM = {"architectures": ["MistralForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
               "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
               "max_position_embeddings": 32768, "vocab_size": 32000, "rope_theta": 10000.0}


@pytest.mark.points(1.0)
@pytest.mark.parametrize("name", list(QWEN3))
def test_qwen3_family_configs(student, rng, name):
    """Qwen3 가족의 config.json(0.6B~235B-A22B)으로 센 FP16/BF16 캐시 바이트"""
    config = QWEN3[name]
    seq_len = int(rng.choice([1, 4096, 8192, 32_768]))
    got = student.qwen3_kv_cache_bytes(dict(config), seq_len)
    expect_int(got, REFERENCE(config, seq_len), what=f"{name}, {seq_len:,} 토큰, 배치 1, 2바이트",
               call=student.last)


@pytest.mark.points(0.6)
@pytest.mark.parametrize("index", range(3))
def test_equals_the_bytes_the_libraries_allocate(student, index):
    """작은 Qwen3에서 공식의 바이트가 transformers(DynamicCache)와 KerasHub(Qwen3CausalLM)가 실제로 잡은 캐시와 같음"""
    case = store.load("cache_b2")
    a = case.args
    config = {"hidden_size": MODEL["d_model"], "num_hidden_layers": len(case.inputs["model"]["layers"]),
              "num_attention_heads": a["num_heads"], "num_key_value_heads": a["num_kv_heads"],
              "head_dim": MODEL["head_dim"], "intermediate_size": MODEL["hidden"], "vocab_size": MODEL["vocab"]}
    seq_len = a["lengths"][index]
    got = student.qwen3_kv_cache_bytes(dict(config), seq_len, a["batch_size"], a["bytes_per_element"])
    for library, label in (("hf_bytes", "transformers의 DynamicCache"), ("keras_hub_bytes", "KerasHub의 캐시 텐서")):
        expect_int(got, int(case.outputs[library][index]),
                   what=f"{label}가 {seq_len}토큰, 배치 {a['batch_size']}, float32에 잡은 바이트 (층 "
                        f"{config['num_hidden_layers']}, KV 헤드 {a['num_kv_heads']}, head_dim {config['head_dim']}, "
                        f"hidden_size {config['hidden_size']})", call=student.last)


@pytest.mark.points(0.2)
def test_a_config_without_head_dim(student, rng):
    """head_dim이 없는 config(Mistral-7B-v0.1)는 hidden_size // num_attention_heads"""
    seq_len = int(rng.integers(100, 9000))
    got = student.qwen3_kv_cache_bytes(dict(NO_HEAD_DIM), seq_len)
    expect_int(got, REFERENCE(NO_HEAD_DIM, seq_len), what=f"Mistral-7B-v0.1 (head_dim 없음), {seq_len:,} 토큰",
               call=student.last)


@pytest.mark.points(0.2)
@pytest.mark.parametrize("bytes_per_element", [pytest.param(1, id="fp8"), pytest.param(4, id="fp32")])
def test_batch_and_precision(student, rng, bytes_per_element):
    """배치와 원소 하나의 바이트를 넘겨받은 대로 씀 (배치 8, FP8과 FP32)"""
    name = str(rng.choice(list(QWEN3)))
    seq_len = int(rng.integers(100, 40_000))
    got = student.qwen3_kv_cache_bytes(dict(QWEN3[name]), seq_len, batch_size=8, bytes_per_element=bytes_per_element)
    expect_int(got, REFERENCE(QWEN3[name], seq_len, 8, bytes_per_element),
               what=f"{name}, {seq_len:,} 토큰, 배치 8, 원소 {bytes_per_element}바이트", call=student.last)
