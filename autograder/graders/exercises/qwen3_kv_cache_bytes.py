"""`qwen3_kv_cache_bytes` (modern): its exercise record (at the end) and its known mistakes."""
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct qwen3_kv_cache_bytes; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
def qwen3_kv_cache_bytes(config, seq_len, batch_size=1, bytes_per_element=2):
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]   # @HEAD_DIM
    return kv_cache_bytes(config["num_hidden_layers"], config["num_key_value_heads"], head_dim,   # @CALL
                          seq_len, batch_size, bytes_per_element)                                  # @ARGS
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="q3_bytes_query_heads",
        exercise="qwen3_kv_cache_bytes",
        title="KV 헤드 수 대신 질의 헤드 수(num_attention_heads)로 셈 (원문의 Qwen3-8B 계산과 같은 실수)",
        hint=("캐시에 드는 것은 키와 값이고, GQA 모델은 그 헤드가 질의보다 적습니다: config[\"num_key_value_heads\"] "
              "(Qwen3-8B: 질의 32, KV 8). 질의 헤드로 세면 캐시가 4배로 나옵니다."),
        source=_with(CALL=("return kv_cache_bytes(config[\"num_hidden_layers\"], config[\"num_attention_heads\"], "
                           "head_dim,")),
    ),
    Mistake(
        id="q3_bytes_head_dim_from_hidden",
        exercise="qwen3_kv_cache_bytes",
        title="config의 head_dim을 두고 hidden_size // num_attention_heads로 셈",
        hint=("Qwen3의 config.json에는 head_dim(128)이 따로 있고, hidden_size / 헤드 수와 다를 수 있습니다"
              "(Qwen3-0.6B: 1,024 / 16 = 64인데 head_dim은 128). config에 head_dim이 있으면 그것을 쓰세요."),
        source=_with(HEAD_DIM="head_dim = config[\"hidden_size\"] // config[\"num_attention_heads\"]"),
    ),
    Mistake(
        id="q3_bytes_hidden_size",
        exercise="qwen3_kv_cache_bytes",
        title="토큰 하나의 K(와 V) 크기를 hidden_size로 셈 (KV 헤드 × head_dim이 아님)",
        hint=("층마다 토큰 하나가 캐시에 남기는 것은 KV 헤드 수 × head_dim 크기의 키와 값입니다. hidden_size는 "
              "잔차 경로의 폭이라 GQA 모델에서는 훨씬 큽니다."),
        source=_with(CALL="return kv_cache_bytes(config[\"num_hidden_layers\"], 1, config[\"hidden_size\"],"),
    ),
    Mistake(
        id="q3_bytes_drops_batch_and_dtype",
        exercise="qwen3_kv_cache_bytes",
        title="batch_size와 bytes_per_element를 kv_cache_bytes에 넘기지 않음 (늘 배치 1, FP16)",
        hint=("인자로 받은 batch_size와 bytes_per_element를 그대로 kv_cache_bytes에 넘기세요. 빠뜨리면 기본값(배치 1, "
              "2바이트)이 쓰입니다."),
        source=_with(ARGS="                      seq_len)"),
    ),
    Mistake(
        id="q3_bytes_max_positions",
        exercise="qwen3_kv_cache_bytes",
        title="seq_len 대신 config의 max_position_embeddings(최대 문맥)로 셈",
        hint=("캐시의 크기는 지금까지 든 토큰 수 seq_len에 비례합니다. max_position_embeddings는 모델이 다룰 수 있는 "
              "최대 길이일 뿐, 캐시가 미리 그만큼 차지한다는 뜻이 아닙니다(Hugging Face의 DynamicCache는 토큰이 "
              "들어올 때마다 자랍니다)."),
        source=_with(ARGS="                      config[\"max_position_embeddings\"], batch_size, bytes_per_element)"),
    ),
]

EXERCISE = Exercise(
    "qwen3_kv_cache_bytes",
    assignment="modern",
    points=2,
    forbidden=None,
    mistakes=MISTAKES,
    # answered with its answer while it is graded (isolation.py): the formula is the kv_cache assignment's
    callees=("kv_cache_bytes",),
)
