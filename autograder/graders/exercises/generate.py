"""`generate` (decoder): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/decoder/test_generate.py``, declares at its top the references and tolerances it compares
with. Every mistake below is a whole ``generate`` as a student writes it, its cached block step inside; the
diagnosis runs it on the failing call's model and prompt in the grading process (with a trusted ``KVCache``).
"""
from autograder.graders import forbidden
from autograder.graders.exercises import LAYER_STEPS, Exercise, Mistake, rewritten

# The correct generate; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def generate(params, prompt, max_new_tokens, num_heads, use_cache=True, temperature=0.0, top_k=None, top_p=None,
             rng=None):
    def cached_block(x, block, cache):
        p = block["attn"]
        a = layer_norm(x, block["ln_1"]["gamma"], block["ln_1"]["beta"])
        q, k, v = (split_heads(a @ p["w_" + n] + p["b_" + n], num_heads) for n in "qkv")
        y = attend_with_cache(q, k, v, cache)                                      # @ATTEND
        h = x + merge_heads(y) @ p["w_o"] + p["b_o"]
        z = layer_norm(h, block["ln_2"]["gamma"], block["ln_2"]["beta"])
        return h + gelu(z @ block["w_1"] + block["b_1"]) @ block["w_2"] + block["b_2"]

    tokens = np.asarray(prompt)
    caches = [KVCache() for _ in params["blocks"]]
    for _ in range(max_new_tokens):
        start = len(caches[0]) if use_cache else 0                                 # @START
        x = tokens[:, start:]
        h = params["wte"][x] + params["wpe"][start:start + x.shape[1]]             # @POSITIONS
        for block, cache in zip(params["blocks"], caches):
            h = cached_block(h, block, cache) if use_cache else decoder_block(h, block, num_heads)   # @BLOCKS
        h = layer_norm(h[:, -1], params["ln_f"]["gamma"], params["ln_f"]["beta"])  # @FINAL
        logits = h @ params["wte"].T
        if temperature == 0:                                                       # @CHOICE_IF
            chosen = np.argmax(logits, axis=-1)                                    # @CHOOSE
        else:                                                                      # @ELSE
            chosen = sample(next_token_probs(logits, temperature, top_k, top_p), rng)   # @SAMPLE
        tokens = np.concatenate([tokens, chosen[:, None]], axis=1)
    return tokens                                                                  # @RETURN
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="gen_positions_off_by_one",
        exercise="generate",
        title="위치를 하나 밀려 셈: 새 토큰들에 wpe[start + 1 : …]를 더함 (위치는 0부터)",
        hint=("위치 임베딩은 0부터 셉니다: 첫 토큰은 wpe[0]입니다. 캐시에 든 토큰이 start개이면 새 토큰들의 위치는 "
              "start, start + 1, …이므로 params[\"wpe\"][start:start + t]를 더하세요 (start + 1부터가 아님)."),
        source=_with(POSITIONS='h = params["wte"][x] + params["wpe"][start + 1:start + 1 + x.shape[1]]'),
    ),
    Mistake(
        id="gen_samples",
        exercise="generate",
        title="가장 큰 로짓을 고르지 않고 softmax 확률로 토큰을 뽑음 (샘플링: 같은 입력에도 매번 다른 토큰)",
        hint=("temperature=0이면 generate는 탐욕적 디코딩입니다: "
              "행마다 np.argmax(logits, axis=-1)로 가장 큰 로짓의 토큰을 "
              "고릅니다(같은 값이면 번호가 작은 쪽). np.random으로 뽑으면 같은 프롬프트에도 결과가 달라집니다."),
        source=_with(CHOOSE="p = softmax(logits)\n"
                            "chosen = np.array([np.random.choice(len(row), p=row / row.sum()) for row in p])"),
        diagnosable=False,   # a fresh draw each call: named by the grader that calls it twice (test_generate.py)
    ),
    Mistake(
        id="gen_positions_restart",
        exercise="generate",
        title="캐시를 쓸 때 새 토큰의 위치를 0부터 다시 셈 (wpe[:t])",
        hint=("캐시를 쓰면 단계마다 새 토큰 하나만 넣지만 그 토큰의 위치는 0이 아니라 지금까지의 길이입니다. "
              "이미 캐시에 든 토큰 수 start = len(cache)부터 params[\"wpe\"][start:start + t]를 더하세요."),
        source=_with(POSITIONS='h = params["wte"][x] + params["wpe"][:x.shape[1]]'),
    ),
    Mistake(
        id="gen_attends_before_append",
        exercise="generate",
        title="새 토큰이 자기 키를 캐시에 넣기 전에 어텐션함 (새 토큰이 자기 자신을 못 봄)",
        hint=("새 토큰도 자기 자신을 봅니다. 새 토큰의 K, V를 먼저 캐시에 덧붙이고, 그다음 캐시 전체로 어텐션하세요 "
              "(주어진 attend_with_cache가 이 순서입니다)."),
        source=_with(ATTEND="if len(cache):\n"
                            "    y = scaled_dot_product_attention(q, cache.keys, cache.values)   # 과거만 봄\n"
                            "    cache.append(k, v)\n"
                            "else:\n"
                            "    y = attend_with_cache(q, k, v, cache)"),
    ),
    Mistake(
        id="gen_logits_without_ln_f",
        exercise="generate",
        title="마지막 층 정규화 ln_f를 빼고 정규화하지 않은 은닉 상태로 로짓을 계산함",
        hint=("GPT-2는 마지막 블록 뒤에 층 정규화 ln_f를 한 번 더 합니다: "
              "logits = layer_norm(h, ln_f의 gamma, beta) @ wte.T."),
        source=_with(FINAL="h = h[:, -1]"),
    ),
    Mistake(
        id="gen_first_position_logits",
        exercise="generate",
        title="마지막 위치가 아니라 첫 위치(h[:, 0])의 로짓으로 다음 토큰을 고름",
        hint=("다음 토큰을 예측하는 것은 시퀀스의 마지막 위치입니다: h[:, -1]. 프롬프트가 토큰 하나보다 길거나 캐시 "
              "없이 전체 시퀀스를 넣을 때 첫 위치와 달라집니다."),
        source=_with(FINAL='h = layer_norm(h[:, 0], params["ln_f"]["gamma"], params["ln_f"]["beta"])'),
    ),
    Mistake(
        id="gen_refeeds_whole_sequence",
        exercise="generate",
        title="캐시를 쓰면서도 매 단계 시퀀스 전체를 넣어 같은 키·값이 캐시에 거듭 쌓임",
        hint=("캐시에 이미 든 토큰은 다시 넣지 않습니다. 첫 단계(프리필)에는 프롬프트 전체를, 그다음부터는 새 토큰 "
              "하나만 넣으세요: x = tokens[:, len(cache):]."),
        source=_with(START="start = 0"),
    ),
    Mistake(
        id="gen_ignores_cache",
        exercise="generate",
        title="use_cache=True여도 주어진 KVCache를 쓰지 않고 매 단계 전체 시퀀스를 처음부터 다시 계산함",
        hint=("토큰은 맞지만 캐시의 이득이 없습니다: 단계마다 새 토큰 하나만 모델에 넣고, 층마다 주어진 KVCache에 쌓인 "
              "과거 토큰의 K, V를 다시 쓰세요 (attend_with_cache). 자기만의 캐시 대신 주어진 KVCache를 써야 합니다."),
        source=_with(START="start = 0", BLOCKS="h = decoder_block(h, block, num_heads)"),
        diagnosable=False,   # right tokens: named by the grader that watches the given KVCache (test_generate.py)
    ),
    Mistake(
        id="gen_cache_per_step",
        exercise="generate",
        title="단계마다 새 KVCache를 만들어 시퀀스 전체를 다시 넣음 (캐시가 과거를 기억하지 못함)",
        hint=("캐시는 generate를 시작할 때 층마다 하나 만들어 끝까지 씁니다. 단계마다 새로 만들면 과거 토큰의 K, V를 "
              "매번 다시 계산하게 되어 캐시를 쓰지 않는 것과 같습니다."),
        source=_with(START='caches = [KVCache() for _ in params["blocks"]]   # 단계마다 새 캐시\nstart = 0'),
        diagnosable=False,   # right tokens: named by the grader that watches the given KVCache (test_generate.py)
    ),
    # ------------------------------------------------------------------------------------------- sampling
    Mistake(
        id="gen_sampling_ignores_filters",
        exercise="generate",
        title="뽑을 때 top_k, top_p를 next_token_probs에 넘기지 않음 (온도만 적용한 분포에서 뽑음)",
        hint=("단계마다 sample(next_token_probs(logits, temperature, top_k, top_p), rng)로 뽑습니다. top_k와 top_p를 "
              "빠뜨리면 거르기가 없어 꼬리의 드문 토큰도 뽑힙니다."),
        source=_with(SAMPLE="chosen = sample(next_token_probs(logits, temperature), rng)   # top_k, top_p를 빠뜨림"),
    ),
    Mistake(
        id="gen_temperature_twice",
        exercise="generate",
        title="로짓을 generate에서 온도로 나눈 뒤 next_token_probs에 온도를 또 넘김 (온도가 두 번 적용됨)",
        hint=("온도는 next_token_probs가 한 번 적용합니다. generate에서 logits / temperature를 넘기면서 temperature도 "
              "넘기면 로짓이 temperature²으로 나뉩니다. 로짓을 그대로 넘기세요."),
        source=_with(SAMPLE="chosen = sample(next_token_probs(logits / temperature, temperature, top_k, top_p), rng)"),
    ),
    Mistake(
        id="gen_argmax_when_sampling",
        exercise="generate",
        title="temperature > 0이어도 뽑지 않고 가장 큰 로짓의 토큰을 고름 (늘 탐욕적 디코딩)",
        hint=("temperature=0일 때만 np.argmax로 고르고, temperature > 0이면 단계마다 "
              "sample(next_token_probs(logits, temperature, top_k, top_p), rng)로 뽑습니다."),
        source=_with(SAMPLE="chosen = np.argmax(logits, axis=-1)                        # 뽑지 않음"),
    ),
    Mistake(
        id="gen_ignores_rng",
        exercise="generate",
        title="받은 rng가 아니라 새로 만든 생성기나 전역 np.random으로 뽑음 (같은 시드에도 매번 다른 토큰)",
        hint=("뽑기에는 인자로 받은 rng를 그대로 sample에 넘깁니다: sample(probs, rng). np.random.default_rng()를 새로 "
              "만들거나 np.random.choice처럼 전역 난수를 쓰면 시드를 정해도 결과를 재현할 수 없고 채점기의 뽑기와 "
              "달라집니다."),
        source=_with(SAMPLE=("chosen = sample(next_token_probs(logits, temperature, top_k, top_p), "
                             "np.random.default_rng())")),
        diagnosable=False,   # a fresh draw each call: named by the grader that calls it again (test_generate.py)
    ),
    Mistake(
        id="gen_always_samples",
        exercise="generate",
        title="temperature=0에서도 sample로 뽑음 (rng=None이라 'NoneType'에 random이 없다는 AttributeError)",
        hint=("temperature=0이면 rng가 주어지지 않습니다(None). 이때는 뽑지 말고 np.argmax(logits, axis=-1)로 "
              "탐욕적으로 고르세요: if temperature == 0: ... else: sample(...)."),
        source=_with(CHOICE_IF="chosen = sample(next_token_probs(logits, temperature, top_k, top_p), rng)   # 늘 뽑음",
                     CHOOSE="", ELSE="", SAMPLE=""),
        raises="AttributeError",
    ),
    Mistake(
        id="gen_float_tokens",
        exercise="generate",
        title="토큰을 정수가 아니라 실수(float) 배열로 돌려줌",
        hint=("토큰은 번호이므로 정수 배열입니다(np.argmax와 sample은 정수를 돌려줍니다). np.zeros로 만든 배열(기본 "
              "float64)에 옮겨 담거나 실수와 이어 붙이면 float가 됩니다. 프롬프트에 새 토큰을 np.concatenate로 이어 "
              "붙이거나 dtype=int로 만드세요."),
        source=_with(RETURN="out = np.zeros(tokens.shape)                   # float64\nout[:] = tokens\nreturn out"),
        diagnosable=False,   # the right numbers: named by the graders' integer check (test_generate.py)
    ),
]

EXERCISE = Exercise(
    "generate",
    assignment="decoder",
    points=5,
    # The library routines it may not call (``forbidden.py``: checked at run time and in the submitted source).
    forbidden=forbidden.BLOCK,
    mistakes=MISTAKES,
    # answered with their answers while it is graded, so that it is judged on its own logic (isolation.py)
    # (the earlier assignments' functions are given in the decoder notebook; a student may paste their own)
    callees=LAYER_STEPS + ("layer_norm", "decoder_block", "next_token_probs"),
    # the notebook's given cache, watched while it is called: what each one holds is graded (test_generate.py)
    observes=("KVCache",),
)
