"""causal_mask(t_q, t_k=None): bool (t_q, t_k), query i sees key j iff j <= i + (t_k - t_q) (bottom-right)."""
import warnings

import numpy as np
import pytest
import torch
from torch.nn.attention.bias import causal_lower_right

from autograder.graders import gpu_checks, references, tolerances
from autograder.graders.compare import as_array, expect_close, expect_true

# Judged against (forbidden routines and known mistakes: exercises/causal_mask.py):
REFERENCES = ("torch's causal_lower_right", "numpy's tril (below)")
TOLERANCES = {"EXACT": "masks", "against_gpu": "stored GPU cases, by dtype"}
GPU_CASES = "causal"  # stored outputs of torch's SDPA backends in each dtype (gpu_refs)


def torch_lower_right(t_q, t_k):
    """torch's bottom-right aligned causal bias as a bool (t_q, t_k) array."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                       # t_q > t_k: torch warns about NaN rows in SDPA
        bias = causal_lower_right(t_q, t_k)
    materialize = getattr(bias, "_materialize", None)
    if materialize is not None:
        return materialize(torch.device("cpu")).numpy().astype(bool)
    # Fallback through the documented use of the bias: SDPA with value = identity returns the weights.
    q, k = torch.zeros(1, t_q, 1, dtype=torch.float64), torch.zeros(1, t_k, 1, dtype=torch.float64)
    eye = torch.eye(t_k, dtype=torch.float64)[None]
    weights = torch.nn.functional.scaled_dot_product_attention(q, k, eye, attn_mask=bias)[0]
    return (torch.nan_to_num(weights) > 0).numpy()


def numpy_tril(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    return np.tril(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q)      # (t_q, t_k)


def expect_mask(got, expected, against, call):
    expect_close(got, expected, what="마스크", tol=tolerances.EXACT, against=against, call=call)


@pytest.mark.points(0.5)
@pytest.mark.parametrize("t_q, t_k", [pytest.param(4, 4, id="square-4"), pytest.param(3, 7, id="tq3-tk7"),
                                      pytest.param(1, 6, id="one-new-token-tk6")])
def test_matches_torch_causal_lower_right(student, t_q, t_k):
    """torch.nn.attention.bias.causal_lower_right(t_q, t_k)와 같은 마스크 (오른쪽 아래 정렬)"""
    got = student.causal_mask(t_q, t_k)
    expect_mask(got, torch_lower_right(t_q, t_k), "torch causal_lower_right", student.last)


@pytest.mark.points(0.5)
@pytest.mark.parametrize("t_q, t_k", [pytest.param(5, 9, id="cached-prefix-4"),
                                      pytest.param(6, 4, id="tq-longer-than-tk")])
def test_matches_numpy_tril_with_offset(student, t_q, t_k):
    """numpy.tril(ones, k = t_k - t_q)와 같은 마스크 (캐시된 앞부분 뒤에 이어지는 질의 블록 포함)"""
    got = student.causal_mask(t_q, t_k)
    expect_mask(got, numpy_tril(t_q, t_k), "numpy.tril(k = t_k - t_q)", student.last)


@pytest.mark.points(0.25)
def test_default_t_k_is_t_q(student, rng):
    """t_k를 생략하면 t_k = t_q인 아래 삼각 행렬"""
    t = int(rng.integers(3, 9))
    got = student.causal_mask(t)
    expect_mask(got, numpy_tril(t), f"numpy.tril(ones(({t}, {t})))", student.last)


@pytest.mark.points(0.25)
def test_dtype_is_bool(student, rng):
    """결과의 자료형은 bool (True = 볼 수 있음)"""
    t_q = int(rng.integers(2, 6))
    t_k = t_q + int(rng.integers(0, 4))
    got = student.causal_mask(t_q, t_k)
    expect_true(isinstance(got, np.ndarray) and got.dtype == np.bool_,
                f"causal_mask의 결과는 bool 배열이어야 합니다 (실제 자료형: "
                f"{getattr(got, 'dtype', type(got).__name__)}). 예: `j <= i + (t_k - t_q)` 비교의 결과.")
    expect_mask(got, numpy_tril(t_q, t_k), "numpy.tril(k = t_k - t_q)", student.last)


@pytest.mark.points(0.25)
def test_long_sequences(student, rng):
    """긴 시퀀스 (수십~수백 토큰)에서도 같은 규칙: 질의 i는 j <= i + (t_k - t_q)인 키만"""
    t_q = int(rng.integers(20, 65))
    t_k = t_q + int(rng.integers(1, 100))
    got = as_array(student.causal_mask(t_q, t_k), "마스크")
    expect_mask(got, torch_lower_right(t_q, t_k), "torch causal_lower_right", student.last)
    expect_true(np.array_equal(got.sum(-1), np.arange(t_q) + 1 + (t_k - t_q)),
                "각 행에서 볼 수 있는 키의 수가 i + 1 + (t_k - t_q)가 아닙니다.")


@pytest.mark.points(0.25)
@pytest.mark.parametrize("name", gpu_checks.params(GPU_CASES))
def test_mask_gives_stored_torch_outputs(student, name):
    """이 마스크로 계산한 어텐션이 저장된 torch 참조 출력(causal_lower_right)과 일치"""
    case = gpu_checks.case(GPU_CASES, name)
    args = case.inputs
    mask = as_array(student.causal_mask(args["t_q"], args["t_k"]), "마스크") > 0.5
    expect_true(mask.shape == (args["t_q"], args["t_k"]),
                f"마스크의 모양이 다릅니다: 기대 ({args['t_q']}, {args['t_k']}), 실제 {mask.shape}.")
    out = references.scaled_dot_product_attention(args["query"], args["key"], args["value"], mask)
    gpu_checks.expect_matches_references(out, case, what="이 마스크로 계산한 어텐션 출력")


test_mask_gives_stored_torch_outputs.__doc__ = (
    f"이 마스크로 계산한 어텐션이 저장된 torch 참조 출력(causal_lower_right; {gpu_checks.describe(GPU_CASES)})과 일치")
