"""flash_attention(query, key, value, block_size=64, causal=False): online softmax over key blocks; the result of
scaled dot-product attention without ever holding a full Tq x Tk score matrix."""
import numpy as np
import pytest

from autograder.graders import gpu_checks, references
from autograder.graders.attention.inputs import normal
from autograder.graders.compare import GradingFailure, as_array, expect_close, expect_shape

# Judged against (forbidden routines and known mistakes: exercises/flash_attention.py):
REFERENCE = references.scaled_dot_product_attention
REFERENCES = ("float64 torch SDPA (math backend)", "causal: with references.causal_mask(Tq, Tk)")
TOLERANCES = {"STUDENT": "live references", "against_gpu": "stored GPU cases, by dtype"}
GPU_CASES = "flash_long"  # stored outputs of torch's SDPA backends in each dtype (gpu_refs), 4,096 tokens

# (leading dims, Tq, Tk, d, dv, block_size): block sizes 1, 7, 16, 64, Tk and > Tk, dividing Tk or not.
CASES = [
    pytest.param((2,), 5, 23, 8, 6, 1, id="b2-tq5-tk23-block1"),
    pytest.param((2, 3), 9, 50, 16, 16, 7, id="b2h3-tq9-tk50-block7"),
    pytest.param((), 12, 64, 32, 8, 16, id="nobatch-tq12-tk64-block16"),
    pytest.param((3,), 7, 100, 16, 4, 64, id="b3-tq7-tk100-block64"),
    pytest.param((2,), 10, 40, 8, 8, 40, id="b2-tq10-tk40-blockTk"),
    pytest.param((1, 2), 6, 30, 8, 5, 35, id="b1h2-tq6-tk30-block35"),
]

# Causal cases: Tq <= Tk (a query block that continues a cached prefix; bottom-right alignment, j <= i + Tk - Tq).
CAUSAL_CASES = [
    pytest.param((2,), 20, 20, 8, 8, 7, np.float32, id="b2-tq20-tk20-block7"),
    pytest.param((2, 2), 4, 37, 16, 8, 16, np.float32, id="b2h2-tq4-tk37-block16"),
    pytest.param((3,), 1, 50, 8, 8, 64, np.float32, id="b3-tq1-tk50-block64-decode"),
    pytest.param((), 12, 48, 16, 4, 1, np.float32, id="nobatch-tq12-tk48-block1"),
    pytest.param((2,), 9, 30, 8, 6, 30, np.float32, id="b2-tq9-tk30-blockTk"),
    pytest.param((2,), 33, 40, 8, 8, 8, np.float64, id="b2-tq33-tk40-block8-float64"),
]


def draw(rng, lead, tq, tk, d, dv, dtype=np.float32):
    return normal(rng, *lead, tq, d, dtype=dtype), normal(rng, *lead, tk, d, dtype=dtype), \
        normal(rng, *lead, tk, dv, dtype=dtype)


@pytest.mark.points(0.8)
@pytest.mark.parametrize("lead, tq, tk, d, dv, block_size", CASES)
def test_matches_reference(student, rng, lead, tq, tk, d, dv, block_size):
    """블록 크기(1, 7, 16, 64, Tk, Tk보다 큼)와 상관없이 스케일드 닷-프로덕트 어텐션(float64)과 같은 출력"""
    q, k, v = draw(rng, lead, tq, tk, d, dv)
    got = student.flash_attention(q, k, v, block_size=block_size)
    expect_close(got, REFERENCE(q, k, v), against="float64 torch SDPA",
                 call=student.last)


@pytest.mark.points(1.0)
@pytest.mark.parametrize("lead, tq, tk, d, dv, block_size, dtype", CAUSAL_CASES)
def test_causal_matches_reference(student, rng, lead, tq, tk, d, dv, block_size, dtype):
    """causal=True: causal_mask(Tq, Tk)처럼 오른쪽 아래에 맞춘 인과 어텐션과 같은 출력 (Tq < Tk 포함)"""
    q, k, v = draw(rng, lead, tq, tk, d, dv, dtype)
    got = student.flash_attention(q, k, v, block_size, True)
    expect_close(got, REFERENCE(q, k, v, references.causal_mask(tq, tk)),
                 against="float64 torch SDPA, 오른쪽 아래 정렬 인과 마스크", call=student.last)


@pytest.mark.points(0.4)
def test_block_size_does_not_change_the_result(student, rng):
    """같은 입력에 블록 크기만 바꾸면 (3과 Tk) 결과가 같음"""
    q, k, v = draw(rng, (2,), 8, 29, 16, 8)
    small = student.flash_attention(q, k, v, block_size=3, causal=True)
    expect_close(small, REFERENCE(q, k, v, references.causal_mask(8, 29)),
                 against="float64 torch SDPA", call=student.last)
    whole = student.flash_attention(q, k, v, block_size=29, causal=True)
    expect_close(whole, as_array(small), what="block_size=29의 출력", against="block_size=3의 출력")


@pytest.mark.points(0.4)
def test_running_max_grows_from_block_to_block(student, rng):
    """뒤 블록으로 갈수록 점수가 커질 때(행 최댓값이 블록마다 바뀜) 옛 합과 가중합을 새 최댓값 기준으로 고침"""
    tq, tk, d = 6, 40, 16
    q, k, v = draw(rng, (2,), tq, tk, d, 8)
    q[..., 0] = 4 + np.abs(q[..., 0])                                     # every query leans on feature 0
    k[..., 0] = np.linspace(-2, 6, tk, dtype=np.float32)                  # scores grow along the keys (to ~9)
    got = student.flash_attention(q, k, v, block_size=8)
    expect_close(got, REFERENCE(q, k, v), against="float64 torch SDPA",
                 call=student.last)


# The stored 4,096-token cases (one causal, one not; d = 64) are a big call each (``call`` = 20 s, outside the
# function's own 10 s budget, inside the submission's 30 s): the slowest correct implementations need 0.5-2 s for
# each here (tests/implementations/kv_cache_*.py, load 4). Block size 100 does not divide 4,096, so the last block
# is partial. Only the stored query rows are compared. No diagnosis here (re-running every mistake on 4,096 tokens
# costs seconds): the small cases above name the mistake.
@pytest.mark.points(0.4)
@pytest.mark.parametrize("name", gpu_checks.params(GPU_CASES))
def test_matches_stored_torch_references(student, name):
    """4,096 토큰의 저장된 torch SDPA 참조 출력과 일치"""
    case = gpu_checks.case(GPU_CASES, name)
    a = case.inputs
    got = student.flash_attention(a["query"], a["key"], a["value"], block_size=100, causal=bool(a["causal"]))
    gpu_checks.expect_matches_references(got, case)


test_matches_stored_torch_references.__doc__ = (
    f"4,096 토큰의 저장된 torch SDPA 참조 출력과 일치 (인과/비인과, 블록 크기 100; {gpu_checks.describe(GPU_CASES)})")


# Memory: what a call may hold grows with the key block, never with Tk. The first case is 128 queries over 524,288
# keys (d = 4, key blocks of 1,024): their full float32 score matrix is 256 MiB, and so is any memory that grows
# with Tk rather than with the block: 64 query rows at a time with a softmax over every key (row chunking) hold
# 128 MiB in float32 for one chunk's scores (256 MiB in float64), more than the allowance, while the blocked solutions
# (the notebook's, torch, float64 loops) need 10-60 MiB here (the inputs arrive within the call: 16 MiB, and float64
# copies of them) and run in 1-3 s on a loaded 2-core machine. The blocks are 1,024 keys (512 of them), not the
# default 64 (8,192 Python steps cost torch 5-17 s there). The second case is a block of 8,192 queries after 8,192
# cached tokens (Tk = 16,384, d = 16): its full bool mask, causal_mask(Tq, Tk) built once and sliced per block, is
# 128 MiB on its own, so a solution that materialises the mask instead of the scores fails here as it fails the
# notebook's visible check (the notebook says to build each block's (Tq, block) piece); the blocked solutions stay
# near 10 MiB (thin d = 16 pieces). Both beyond the Tk <= 64 of tolerances.STUDENT's derivation, a float32 online
# softmax over these N(0, 1) inputs stays within ~1e-7 of the float64 reference (measured), far inside it. What a
# call writes to its scratch folder (files on a tmpfs) counts as memory it holds (``RemoteCalls.call_with_memory``).
MEMORY_MB = 100
MEMORY_CASES = [  # (Tq, Tk, d, block_size, what a solution whose memory grows with Tk holds)
    pytest.param(128, 524_288, 4, 1024, "점수 행렬 256 MiB, 질의를 64개씩 나눠 키 전체에 softmax를 해도 "
                 "한 번에 128 MiB", id="keys-128x524288"),
    pytest.param(8192, 16384, 16, 64, "bool 마스크 128 MiB", id="mask-8192-after-8192-cached"),
]
REFERENCE_ROWS = 8   # the float64 reference of a sample of query rows, this many at a time (8 x 524,288 x 8 B = 32 MiB)


@pytest.mark.points(1.0)
@pytest.mark.parametrize("tq, tk, d, block_size, full", MEMORY_CASES)
def test_memory_stays_below_a_full_score_matrix(student, rng, tq, tk, d, block_size, full):
    """긴 시퀀스에서 키 수에 비례하는 메모리 없이(100 MiB 이하) 올바른 결과: 전체 점수 행렬도 전체 마스크도 없이"""
    q, k, v = draw(rng, (), tq, tk, d, d)
    try:
        got = student.with_memory(MEMORY_MB).flash_attention(q, k, v, block_size=block_size, causal=True)
    except GradingFailure as failure:
        if "메모리" not in failure.message:
            raise
        raise GradingFailure(f"{failure.message} (Tq={tq:,}, Tk={tk:,}: 통째로 만들면 {full}.) "
                             f"마스크도 마찬가지입니다: causal_mask(Tq, Tk) 같은 전체 마스크도 Tq x Tk 크기이니, "
                             f"블록마다 (Tq, block_size) 조각만 만드세요.", failure.diagnosis) from None
    got = expect_shape(got, (tq, d))
    rows = np.sort(rng.choice(tq, size=48, replace=False))               # check a sample of query rows
    expected = np.concatenate([
        REFERENCE(q[part], k, v, np.arange(tk)[None, :] <= part[:, None] + (tk - tq))   # causal_mask(Tq, Tk)[part]
        for part in np.split(rows, range(REFERENCE_ROWS, len(rows), REFERENCE_ROWS))])
    expect_close(got[rows], expected, what=f"Tq={tq:,}, Tk={tk:,} 출력의 일부 행",
                 against="float64 torch SDPA, 인과 마스크")
