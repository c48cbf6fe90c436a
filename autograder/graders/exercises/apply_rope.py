"""`apply_rope` (attention): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/attention/test_apply_rope.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders import forbidden
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct apply_rope; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def apply_rope(x, positions, base=10000.0):
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]                                                              # @SIZE
    inv_freq = base ** (-2 * np.arange(d // 2) / d)                              # @FREQUENCIES
    angles = np.asarray(positions)[:, None] * inv_freq                           # @ANGLES
    cos, sin = np.cos(angles), np.sin(angles)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]                                  # @PAIRS
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)   # @ROTATE
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="rope_interleaved_pairs",
        exercise="apply_rope",
        title="회전 반쪽 방식(i, i + d/2) 대신 이웃 짝 방식(2i, 2i + 1)으로 짝지음",
        hint="이 과제는 GPT-NeoX, Hugging Face transformers의 Llama 구현, Keras Hub와 같은 "
             "회전 반쪽 방식입니다: 마지막 축의 앞 절반과 뒤 절반의 같은 자리를 짝지어 돌리세요. "
             "이웃한 성분 x[..., 0::2], x[..., 1::2]를 짝짓는 것은 Meta의 Llama 참조 코드와 RoFormer "
             "논문의 이웃 짝 방식입니다(W_q, W_k 출력 성분의 순서만 다른 같은 방법이지만 같은 벡터에는 "
             "다른 값을 냅니다).",
        source=_with(FREQUENCIES="inv_freq = base ** (-np.arange(0, d, 2) / d)",
                     PAIRS="x1, x2 = x[..., 0::2], x[..., 1::2]",
                     ROTATE="out = np.empty_like(x)\n"
                            "out[..., 0::2] = x1 * cos - x2 * sin\n"
                            "out[..., 1::2] = x2 * cos + x1 * sin\n"
                            "return out"),
    ),
    Mistake(
        id="rope_frequencies_without_two",
        exercise="apply_rope",
        title="주파수를 base ** (-2i/d)가 아니라 base ** (-i/d)로 계산",
        hint="i = 0, 1, ..., d/2 - 1에 대해 주파수는 base ** (-2 * i / d)입니다. np.arange(d // 2) / d를 쓰면 "
             "지수가 절반이 되어 모든 짝이 너무 빨리 돕니다.",
        source=_with(FREQUENCIES="inv_freq = base ** (-np.arange(d // 2) / d)"),
    ),
    Mistake(
        id="rope_rotation_sign",
        exercise="apply_rope",
        title="회전 방향(sin의 부호)이 반대",
        hint="각도 θ만큼 돌리는 식은 (x1 cos θ - x2 sin θ, x2 cos θ + x1 sin θ)입니다. 부호가 바뀌면 -θ만큼 돕니다.",
        source=_with(ROTATE="return np.concatenate([x1 * cos + x2 * sin, x2 * cos - x1 * sin], axis=-1)"),
    ),
    Mistake(
        id="rope_ignores_positions",
        exercise="apply_rope",
        title="positions 인자를 무시하고 위치를 0, 1, ..., T-1로 가정",
        hint=("위치는 언제나 positions에서 가져오세요. "
              "캐시 뒤에 이어지는 토큰의 위치는 0이 아니라 캐시 길이부터 시작합니다."),
        source=_with(SIZE="T, d = x.shape[-2], x.shape[-1]", ANGLES="angles = np.arange(T)[:, None] * inv_freq"),
    ),
    Mistake(
        id="rope_positions_from_first",
        exercise="apply_rope",
        title="위치를 첫 위치 기준으로 다시 셈 (positions - positions[0])",
        hint="positions는 전체 시퀀스에서의 절대 위치입니다. 빼거나 번호를 다시 매기지 말고 그대로 각도에 곱하세요.",
        source=_with(SIZE="d = x.shape[-1]\npositions = np.asarray(positions) - np.asarray(positions)[0]",
                     ANGLES="angles = positions[:, None] * inv_freq"),
    ),
    Mistake(
        id="rope_base_ignored",
        exercise="apply_rope",
        title="base 인자를 무시하고 늘 10000을 씀",
        hint="주파수의 밑은 인자로 받은 base입니다: base ** (-2 * i / d). 10000.0은 기본값일 뿐입니다.",
        source=_with(FREQUENCIES="inv_freq = 10000.0 ** (-2 * np.arange(d // 2) / d)"),
    ),
]

EXERCISE = Exercise(
    "apply_rope",
    assignment="attention",
    points=2,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.ROPE,
    mistakes=MISTAKES,
)
