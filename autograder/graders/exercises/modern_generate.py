"""`generate` (modern): its exercise record (at the end) and its known mistakes. (``decoder`` has a ``generate`` too:
hence this module's name, ``registry.key``.)

Every mistake is a whole ``generate`` as a student writes it with the exercises of the notebook; the diagnosis runs
it on the failing call's model and prompt in the grading process (with a trusted ``KVCache``).
"""
from autograder.graders import forbidden
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct generate; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def generate(params, prompt, max_new_tokens, num_heads, num_kv_heads, use_cache=True, temperature=0.0, top_k=None,
             top_p=None, rng=None):
    tokens = np.asarray(prompt)
    caches = [KVCache() if use_cache else None for _ in params["layers"]]
    head = params["embed_tokens"].T if params.get("lm_head") is None else params["lm_head"]   # @HEAD
    for _ in range(max_new_tokens):
        start = len(caches[0]) if use_cache else 0                                 # @START
        x = tokens[:, start:]
        positions = np.arange(start, start + x.shape[1])                           # @POSITIONS
        h = params["embed_tokens"][x]
        for block, cache in zip(params["layers"], caches):
            h = qwen3_block(h, block, positions, num_heads, num_kv_heads, cache)   # @BLOCKS
        h = rms_norm(h[:, -1], params["norm"])                                     # @FINAL
        logits = h @ head
        if temperature == 0:
            chosen = np.argmax(logits, axis=-1)
        else:
            chosen = sample(next_token_probs(logits, temperature, top_k, top_p), rng)
        tokens = np.concatenate([tokens, chosen[:, None]], axis=1)
    return tokens
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="q3_gen_positions_restart",
        exercise="generate",
        title="캐시를 쓸 때 새 토큰의 RoPE 위치를 0부터 다시 셈",
        hint=("캐시를 쓰면 단계마다 새 토큰 하나만 넣지만 그 토큰의 위치는 0이 아니라 지금까지의 길이입니다. "
              "positions = np.arange(start, start + t), start = len(cache)로 RoPE를 돌려야 캐시에 든 키(이미 제 위치로 "
              "돌려 둠)와 맞습니다."),
        source=_with(POSITIONS="positions = np.arange(x.shape[1])"),
    ),
    Mistake(
        id="q3_gen_always_tied",
        exercise="generate",
        title="lm_head가 있는데도 embed_tokens의 전치로 로짓을 계산함 (임베딩 공유를 늘 가정함)",
        hint=("작은 Qwen3(0.6B~4B)는 임베딩을 공유하지만 8B부터는 따로 lm_head를 둡니다(tie_word_embeddings). "
              "params에 \"lm_head\"가 있으면 logits = h @ params[\"lm_head\"], 없을 때만 embed_tokens.T를 쓰세요."),
        source=_with(HEAD="head = params[\"embed_tokens\"].T"),
    ),
    Mistake(
        id="q3_gen_no_final_norm",
        exercise="generate",
        title="마지막 RMSNorm(params[\"norm\"])을 빼고 로짓을 계산함",
        hint=("마지막 블록 뒤에 RMSNorm을 한 번 더 합니다: logits = rms_norm(h, params[\"norm\"]) @ head "
              "(사전 정규화 모델에서 잔차 경로는 정규화되지 않은 채로 끝나기 때문입니다)."),
        source=_with(FINAL="h = h[:, -1]"),
    ),
    Mistake(
        id="q3_gen_first_position_logits",
        exercise="generate",
        title="마지막 위치가 아니라 첫 위치(h[:, 0])의 로짓으로 다음 토큰을 고름",
        hint=("다음 토큰을 예측하는 것은 시퀀스의 마지막 위치입니다: h[:, -1]. 프롬프트가 토큰 하나보다 길거나 캐시 "
              "없이 전체 시퀀스를 넣을 때 첫 위치와 달라집니다."),
        source=_with(FINAL="h = rms_norm(h[:, 0], params[\"norm\"])"),
    ),
    Mistake(
        id="q3_gen_refeeds_whole_sequence",
        exercise="generate",
        title="캐시를 쓰면서도 매 단계 시퀀스 전체를 넣어 같은 키·값이 캐시에 거듭 쌓임",
        hint=("캐시에 이미 든 토큰은 다시 넣지 않습니다. 첫 단계(프리필)에는 프롬프트 전체를, 그다음부터는 새 토큰 "
              "하나만 넣으세요: x = tokens[:, len(cache):]."),
        source=_with(START="start = 0"),
    ),
    Mistake(
        id="q3_gen_ignores_cache",
        exercise="generate",
        title="use_cache=True여도 주어진 KVCache를 쓰지 않고 매 단계 전체 시퀀스를 처음부터 다시 계산함",
        hint=("토큰은 맞지만 캐시의 이득이 없습니다: 층마다 주어진 KVCache를 하나씩 두고 qwen3_block(..., cache)에 "
              "넘겨, 단계마다 새 토큰 하나만 모델에 넣으세요."),
        source=_with(START="start = 0",
                     BLOCKS="h = qwen3_block(h, block, positions, num_heads, num_kv_heads)"),
        diagnosable=False,   # right tokens: named by the grader that watches the given KVCache (test_generate.py)
    ),
]

EXERCISE = Exercise(
    "generate",
    assignment="modern",
    points=5,
    forbidden=forbidden.QWEN3_BLOCK,
    mistakes=MISTAKES,
    # answered with their answers while it is graded (isolation.py); qwen3_block and qwen3_attention with a cache are
    # the student's own (the cache is state in the student's process)
    callees=("rms_norm", "swiglu_mlp", "qwen3_attention", "qwen3_block", "next_token_probs"),
    # the notebook's given cache, watched while it is called: each layer's appends are graded (test_generate.py)
    observes=("KVCache",),
)
