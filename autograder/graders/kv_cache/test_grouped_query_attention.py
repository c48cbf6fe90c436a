"""grouped_query_attention(query, key, value, mask=None): query head h uses key/value head h // (Hq // Hkv)."""
import numpy as np
import pytest

from autograder.graders import gpu_checks, references, tolerances
from autograder.graders.attention.inputs import key_mask, normal
from autograder.graders.compare import GradingFailure, as_array, expect_close, expect_true
from autograder.graders.diagnosis import by_id, with_causes
from autograder.graders.kv_cache import keras_gqa, raised

# Judged against (forbidden routines and known mistakes: exercises/grouped_query_attention.py):
REFERENCE = references.grouped_query_attention
REFERENCES = ("float64 torch SDPA with enable_gqa=True", "keras.layers.GroupQueryAttention")
TOLERANCES = {"STUDENT_VS_KERAS": "against Keras", "STUDENT": "otherwise", "against_gpu": "stored GPU cases, by dtype"}
GPU_CASES = "gqa"  # stored outputs of torch's SDPA backends in each dtype (gpu_refs)

# (B, Hq, Hkv, Tq, Tk, d, mask, dtype): GQA with groups of 2 and 4, MQA (Hkv = 1), plain MHA (Hkv = Hq), and
# masks of every form the contract allows: (Tq, Tk) causal aligned bottom-right, (B, 1, Tq, Tk), (B, Hq, Tq, Tk).
CASES = [
    pytest.param(2, 8, 2, 5, 7, 16, None, np.float32, id="gqa-hq8-hkv2-b2-tq5-tk7"),
    pytest.param(2, 8, 4, 6, 6, 8, "causal", np.float64, id="gqa-hq8-hkv4-causal-float64"),
    pytest.param(1, 6, 3, 4, 9, 16, "b1", np.float32, id="gqa-hq6-hkv3-maskB1"),
    pytest.param(2, 4, 1, 3, 8, 32, "bh", np.float32, id="mqa-hq4-hkv1-maskBHq"),
    pytest.param(3, 1, 1, 4, 5, 8, "2d", np.float32, id="mqa-hq1-hkv1-mask2d"),
    pytest.param(2, 4, 4, 5, 6, 8, "causal", np.float32, id="mha-hq4-hkv4-causal"),
    pytest.param(2, 12, 3, 2, 10, 64, "bh", np.float64, id="gqa-hq12-hkv3-maskBHq-d64"),
]


def draw(rng, b, hq, hkv, tq, tk, d, mask_kind, dtype=np.float32):
    q, k, v = normal(rng, b, hq, tq, d, dtype=dtype), normal(rng, b, hkv, tk, d, dtype=dtype), \
        normal(rng, b, hkv, tk, d, dtype=dtype)
    if mask_kind == "causal":
        mask = references.causal_mask(tq, tk)                         # (Tq, Tk), bottom-right
    elif mask_kind == "2d":
        mask = key_mask(rng, tq, tk)                                  # (Tq, Tk)
    elif mask_kind == "b1":
        mask = key_mask(rng, b, 1, tq, tk)                            # (B, 1, Tq, Tk)
    elif mask_kind == "bh":
        mask = key_mask(rng, b, hq, tq, tk)                           # (B, Hq, Tq, Tk)
    else:
        mask = None
    return q, k, v, mask


@pytest.mark.points(1.0)
@pytest.mark.parametrize("b, hq, hkv, tq, tk, d, mask_kind, dtype", CASES)
def test_matches_torch_sdpa_enable_gqa(student, rng, b, hq, hkv, tq, tk, d, mask_kind, dtype):
    """torch scaled_dot_product_attention(..., enable_gqa=True) (float64)와 같은 출력 (GQA, MQA, MHA, 마스크)"""
    q, k, v, mask = draw(rng, b, hq, hkv, tq, tk, d, mask_kind, dtype)
    got = student.grouped_query_attention(q, k, v, mask) if mask is not None \
        else student.grouped_query_attention(q, k, v)
    expect_close(got, REFERENCE(q, k, v, mask),
                 against="float64 torch SDPA enable_gqa=True", call=student.last)


KERAS_CASES = [
    pytest.param(2, 5, 7, 16, 8, 2, 8, False, id="hq8-hkv2-D16-d8"),
    pytest.param(2, 4, 6, 12, 6, 3, 4, True, id="hq6-hkv3-D12-d4-mask"),
    pytest.param(1, 3, 9, 8, 4, 1, 16, True, id="mqa-hq4-hkv1-D8-d16-mask"),
]


@pytest.mark.points(0.6)
@pytest.mark.parametrize("b, tq, tk, d_model, hq, hkv, head_dim, masked", KERAS_CASES)
def test_matches_keras_group_query_attention(student, rng, b, tq, tk, d_model, hq, hkv, head_dim, masked):
    """keras.layers.GroupQueryAttention: 그 층의 투영으로 만든 Q, K, V로 계산해 출력 투영을 거치면 같은 출력"""
    out, q, k, v, mask, w_o, b_o = keras_gqa(rng, b, tq, tk, d_model, hq, hkv, head_dim, masked)
    q, k, v = (a.astype(np.float32) for a in (q, k, v))
    got = student.grouped_query_attention(q, k, v, mask) if mask is not None \
        else student.grouped_query_attention(q, k, v)
    expect_close(got, REFERENCE(q, k, v, mask), what="헤드별 출력",
                 against="float64 torch SDPA enable_gqa=True", call=student.last)
    heads = as_array(got)                                                  # (B, Hq, Tq, d)
    projected = np.einsum("buqh,uhm->bqm", heads, w_o) + b_o              # (B, Tq, D)
    expect_close(projected, out, what="출력 투영을 거친 결과", tol=tolerances.STUDENT_VS_KERAS,
                 against="keras.layers.GroupQueryAttention")


@pytest.mark.points(0.5)
def test_same_as_mha_with_repeated_kv_heads(student, rng):
    """KV 헤드를 그룹 크기만큼 반복(h // g)해 Hq 개로 만든 MHA와 같은 결과, 그룹마다 다른 KV 헤드를 봄"""
    b, hq, hkv, tq, tk, d = 2, 8, 2, 4, 6, 8
    q, k, v, mask = draw(rng, b, hq, hkv, tq, tk, d, "b1")
    grouped = student.grouped_query_attention(q, k, v, mask)
    expect_close(grouped, REFERENCE(q, k, v, mask), against="float64 torch SDPA",
                 call=student.last)
    group = hq // hkv
    repeated = student.grouped_query_attention(q, np.repeat(k, group, axis=1), np.repeat(v, group, axis=1), mask)
    expect_close(repeated, as_array(grouped), what="KV 헤드를 반복한 MHA의 출력", against="GQA의 출력")
    # Query heads 0..3 share KV head 0 and 4..7 share KV head 1: giving every query head of a group the same
    # query must give the same output within a group, and different outputs across groups.
    same_q = np.repeat(q[:, ::group], group, axis=1)                       # (B, Hq, Tq, d)
    out = as_array(student.grouped_query_attention(same_q, k, v, mask))
    expect_close(out, REFERENCE(same_q, k, v, mask), against="float64 torch SDPA",
                 call=student.last)
    expect_close(out[:, :group], np.repeat(out[:, :1], group, axis=1), what="한 그룹 안의 헤드 출력",
                 against="같은 그룹의 첫 헤드")


@pytest.mark.points(0.4)
@pytest.mark.parametrize("name", gpu_checks.params(GPU_CASES))
def test_matches_stored_torch_references(student, name):
    """저장된 torch 참조 출력(enable_gqa=True)과 일치"""
    case = gpu_checks.case(GPU_CASES, name)
    a = case.inputs
    got = student.grouped_query_attention(a["query"], a["key"], a["value"], a.get("mask"))
    gpu_checks.expect_matches_references(got, case, call=student.last)


test_matches_stored_torch_references.__doc__ = (
    f"저장된 torch 참조 출력(SDPA enable_gqa=True, GQA와 MQA; {gpu_checks.describe(GPU_CASES)})과 일치")


INCOMPATIBLE = [pytest.param(6, 4, id="hq6-hkv4"), pytest.param(4, 3, id="hq4-hkv3"),
                pytest.param(2, 4, id="hq2-hkv4")]


@pytest.mark.points(0.5)
@pytest.mark.parametrize("hq, hkv", INCOMPATIBLE)
def test_incompatible_heads_raise_value_error(student, rng, hq, hkv):
    """Hq가 Hkv의 배수가 아니면 ValueError (다른 예외나 결과 반환은 안 됨)"""
    q, k, v, _ = draw(rng, 1, hq, hkv, 3, 5, 8, None)
    try:
        student.grouped_query_attention(q, k, v)
    except GradingFailure as failure:
        if raised(failure, "ValueError"):
            return
        if "NotImplementedError" in failure.message:
            raise
        found = [by_id("gqa_assert_instead_of_value_error")] if raised(failure, "AssertionError") else []
        message = (f"Hq={hq}, Hkv={hkv}: ValueError를 내야 하는데 다른 예외가 발생했습니다. "
                   f"`raise ValueError(...)`로 알리세요. ({failure.message})")
        raise GradingFailure(with_causes(message, found), found) from None
    expect_true(False, f"Hq={hq}, Hkv={hkv}: 질의 헤드 수가 KV 헤드 수의 배수가 아닌데 ValueError 없이 결과를 "
                       f"돌려주었습니다. 먼저 Hq % Hkv를 확인해 `raise ValueError(...)`로 알리세요.")
