"""Every numerical tolerance the graders use, in one place, with the reason for each.

A comparison passes when ``|got - expected| <= atol + rtol * |expected|`` element-wise (``numpy.isclose``).

Live references are computed on the grading machine: a float64 reference (torch/numpy in float64 on the CPU)
and the Keras layer named in the contract (float32, torch backend). Students may compute in float32 or
float64, whatever dtype they are given, so every tolerance admits a float32 computation:

* float32 unit round-off is u = 2**-24 ~ 6e-8. The graders draw inputs from N(0, 1) with feature size
  d <= 64 and key length Tk <= 64, so a score q.k/sqrt(d) carries an error of about sqrt(d) * u * |q||k|/sqrt(d)
  ~ 5e-7, exp() turns it into the same relative error of a weight, and the weighted sum of Tk values of size
  ~3 adds at most Tk * u * 3 ~ 1e-5. ``atol = rtol = 1e-4`` is ten times that bound.
* Keras layers compute in float32 themselves, so "student vs Keras" carries two float32 errors: the same bound,
  still well inside 1e-4.
* Every mistake of the catalogue (``registry.catalogue``) moves outputs by more than 1e-2 on the graders' inputs;
  the package's tests prove each one fails at these tolerances.

Stored GPU references (``graders/gpu_refs``) carry the error of their own dtype and backend. The anchors are
PyTorch's own test tolerances (torch/testing/_comparison.py and test/test_transformers.py): fp32 atol 1e-5 /
rtol 1.3e-6, fp16 1e-3 to 5e-3 against an fp32 math reference, bf16 rtol 1.6e-2; TF32 1e-3 for one matmul,
0.005 to 0.05 for composite ops (``tf32_on_and_off``). A student's result is compared with a stored output of
dtype X with ``STUDENT + GPU[X]`` (the two errors add up). The tolerance depends on the dtype only, not on the
backend: every backend rounds to the same dtype, and the worst one (flash, which also rounds the softmax weights
to fp16/bf16 before P @ V) stays within these values on the stored inputs. Those inputs are N(0, 1) values
exact in fp16 and bf16, with scores of order 1: on them a correct float64 answer uses at most 0.45 of the fp16
and bf16 tolerances (stored CPU outputs and a rounding emulation of flash; gpu_refs/README.md). TF32 rounds
every matmul input to 11 significant bits, and an attention layer chains two (SDPA) to four (MHA: in-projection,
Q @ Kᵀ, P @ V, out-projection) such matmuls: emulated, the MHA case uses 0.74 of a 1e-3 tolerance with inputs
rounded to nearest and 1.45 with inputs truncated (the worst case); 2e-3 brings that to 0.39 and 0.76.

Kept elsewhere, on purpose (every other closeness of autograder/graders is here): the quiz's tolerances are part of
its questions (``quiz/answer_key.py``: each ``Question``'s ``atol``, which the question states to the student)
with ``quiz/test_quiz.py``'s ``ROUNDING`` (1e-9: the float error of key + atol, 0.757 + 0.001 != 0.758);
``eps=1e-5`` in the layer norms is the function's contract (exercises.md), not a tolerance.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    why: str = ""

    def __add__(self, other: "Tolerance") -> "Tolerance":
        return Tolerance(self.atol + other.atol, self.rtol + other.rtol, f"{self.why} + {other.why}")

    def describe(self) -> str:
        return f"atol={self.atol:g}, rtol={self.rtol:g}"


# A student's result (float32 or float64 computation) against a float64 reference.
STUDENT = Tolerance(1e-4, 1e-4, "float32 computation by the student, inputs N(0,1), d, Tk <= 64")

# A student's result against a Keras layer computing in float32.
STUDENT_VS_KERAS = Tolerance(1e-4, 1e-4, "float32 computation on both sides")

# Large-logit stability checks (logits of +-1000, exactly representable in float32): only finiteness and
# the softmax of the shifted logits matter, so the float32 bound above applies unchanged.
STABILITY = STUDENT

# float16 inputs: the student may compute in float16 (unit round-off 4.9e-4); a softmax of a handful of
# logits then carries a few units of that. Mistakes on these inputs move weights by > 0.05.
FLOAT16 = Tolerance(2e-3, 2e-3, "float16 computation (u = 4.9e-4), a few roundings")

# Integer results (cache sizes, token counts) must be exact.
EXACT = Tolerance(0.0, 0.0, "integers are exact")

# decoder: layer_norm and decoder_block compare with STUDENT (float64 reference) and STUDENT_VS_KERAS (Keras
# layers). A layer norm divides by sqrt(var + eps): its output is O(1) whatever the scale of x, with float32 error a
# few u, so STUDENT holds for its small-variance rows too (x ~ 3e-3 N(0,1), var ~ eps: the rows that tell eps inside
# the square root from eps outside, 41 % apart). The block (D <= 24, F <= 64, T <= 9) chains two layer norms, four
# projections, an attention and two MLP matmuls: float32 error ~ 1e-6 on outputs of size ~3, well inside 1e-4.
# The keys and values a cached generate leaves in each layer's KVCache (graders' models: D = 16, two blocks, T <= 9)
# are a projection of a layer norm of the first blocks' output: the same chain, so STUDENT holds for them too; a
# cache filled with anything else (zeros, another layer's keys, a position shifted) is off by O(1).
#
# generate returns tokens, compared exactly (EXACT). A token is an argmax: a float32 computation of the logits
# (the student's) and the float64 reference may choose differently only where the two best logits are within the
# float32 error of each other. On the graders' tiny models (D = 16, two blocks, logits of size ~10) that error is
# at most 1.6e-5 (a float32 torch forward against the float64 reference, 12 models x 6 steps x 3 rows:
# tests/graders/test_decoder_graders.py); the graders redraw a model and prompt until every step's best logit leads the
# second by at least TOKEN_MARGIN, 600 times that, so a correct float32 implementation always gets the reference's
# tokens (about one draw in 30-60 is redrawn; the redraw is deterministic: it uses the test's rng).
TOKEN_MARGIN = 1e-2

# generate's sampled tokens: drawn by the notebook's given sample from next_token_probs with a seeded generator, and
# compared exactly. A float32 computation of the graders' logits is off by at most 1.6e-5 (above), so each
# probability by at most 1.6e-5 * p and each cumulative probability by at most 1.6e-5; the graders redraw until
# every draw u and every top-p boundary (the probability ranked above a token against top_p) lies SAMPLE_MARGIN away
# from a cumulative probability, 60 times that (top-k cuts lead by TOKEN_MARGIN in logits / temperature).
SAMPLE_MARGIN = 1e-3

# modern (Qwen3): rms_norm, swiglu_mlp, qwen3_attention and qwen3_block compare with STUDENT against the float64
# reference (references.py) and with QWEN3_FLOAT32 against the two libraries' stored outputs (graders/modern/refs:
# transformers' Qwen3 in float64, whose RMSNorm and rotary angles are float32 by design; KerasHub's Qwen3 in float32,
# whose QK-norm adds eps 1e-5 where Qwen3's config says 1e-6). A block of the graders' size (D = 24, 4 query and 2 KV
# heads of 8, SwiGLU 40 wide, T <= 7, outputs of size ~5) chains two RMSNorms, the QK-norms, RoPE at positions < 16,
# four projections, an attention and three MLP matmuls: measured, transformers' float64 output is within 4e-7 of the
# float64 reference, KerasHub's float32 within 2.8e-5 (its attention, mostly its QK-norm's eps; 1.6e-5 for the
# block), and a float32 torch implementation of the student's within 1e-6 (tests/graders/test_modern_references.py
# prints each). Student and KerasHub together stay under 3e-5: under a third of 1e-4, the bound both comparisons use
# (the same as STUDENT_VS_KERAS).
# scripts/modern_refs refuses to store an output farther than half of it from the float64 reference. Every mistake
# of the modern catalogue moves outputs by more than 1e-2 (tests/graders/test_modern_graders.py).
QWEN3_FLOAT32 = Tolerance(1e-4, 1e-4, "float32 Qwen3 block (KerasHub's or the student's) against float64 or float32")
# The tokens of generate: compared exactly (EXACT) with transformers' Qwen3ForCausalLM.generate(do_sample=False) and the
# float64 reference, on models whose greedy choices lead by TOKEN_MARGIN (above): the logits of a float32 forward of
# the graders' Qwen3 models are within 2e-5 of the float64 ones (KerasHub's float32: 5e-4, measured on logits of size
# ~20 after a final norm of gain 4), twenty times inside it.

# softmax's worked example: the course text prints softmax([4.06, 5.65, 3.51]) to three decimals
# ([0.154, 0.757, 0.089]): the printed values are within 5e-4 of the exact ones, and 1e-3 is twice that.
WORKED_EXAMPLE = Tolerance(1e-3, 0, "the text's values, printed to three decimals")

# apply_rope: scores of rotated vectors, a sum of d = 8 products, each off by about 100 * 1.2e-7 * |q_c k_c| in
# float32 (positions below 100), so |error| ~ 8 * 1.2e-5 * 2 = 2e-4 for N(0, 1) entries: ten times less than 1e-3.
ROPE_SCORES = Tolerance(1e-3, 1e-3, "scores of float32-rotated vectors, d = 8, positions < 100")
# apply_rope: a rotated unit vector e_i has components outside its plane (i, i + d/2) that any correct computation
# makes exactly 0 (rotate-half, a rotation matrix or complex numbers: sums of products with zeros); a component that
# leaks is a cos or sin of the angle, of order 0.1-1.
ROPE_LEAK_ATOL = 1e-6

# The diagnosis of mistakes (diagnosis.py) names a mistake when its output is within DIAGNOSIS_CLOSE of the
# student's (atol = rtol: the float32 bound of STUDENT) and at least DIAGNOSIS_APART from the expected one, or
# DIAGNOSIS_APART_UNITS units of the coarsest floating input's precision where that is more (float16: 1e-2); a
# mistake that explains the failing call must agree with the function's other results within DIAGNOSIS_CONSISTENT,
# looser because those results were computed by the student in float32 (or float16) on other inputs.
DIAGNOSIS_CLOSE = 1e-4
DIAGNOSIS_APART = 1e-4
DIAGNOSIS_APART_UNITS = 10
DIAGNOSIS_CONSISTENT = 1e-2

# Stored GPU outputs: the error of the dtype/backend that produced them (anchored on PyTorch's SDPA tests).
GPU = {
    "float64": Tolerance(1e-10, 1e-10, "float64 math backend"),
    "float32": Tolerance(1e-5, 1.3e-6, "PyTorch SDPA test tolerance for fp32"),
    "tf32": Tolerance(2e-3, 2e-3, "TF32 matmuls keep a 10-bit mantissa; attention chains 2-4 of them "
                                  "(PyTorch: 1e-3 per matmul, 5e-3 and up for composite ops)"),
    "float16": Tolerance(5e-3, 5e-3, "fp16 against an fp32 math reference (PyTorch: 1e-3 to 5e-3)"),
    "bfloat16": Tolerance(1.6e-2, 1.6e-2, "bf16 keeps an 8-bit mantissa (PyTorch: ~1.6e-2)"),
}


def against_gpu(dtype: str) -> Tolerance:
    """Tolerance for a student's result against a stored output of ``dtype``."""
    return STUDENT + GPU[dtype]
