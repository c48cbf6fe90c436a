"""The simulated class: who the students are and what each one hands in.

A plan says how a student's notebook is built from the release they fetched:
``solution`` (the instructor's solutions), ``impl:<name>`` (a differently written correct implementation),
``partial:<n>`` (the first n exercises done, the rest left as stubs), ``mistake:<id>`` (one mistake of the
catalogue, the rest correct), ``empty`` (the release unchanged), ``broken`` (a truncated file), ``cheat`` (an
attempt to fake the grade, reaching for the grader's frame on the way: on the instructor's review list), ``copy:<student id>`` (that student's notebook with the local variables renamed),
``paste:<name>`` (the solutions, with a library routine's source pasted in: ``submissions.PASTED``), and for the
quiz ``answers:<set>``. The copy (2026029 of 2026004) and the paste (2026005, Keras's ``Attention`` scoring) are
what the instructor's similarity report must find, and nothing else among the class's independent
implementations (tests/feedback/test_similarity.py).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Student:
    id: str
    first_name: str
    last_name: str
    plans: dict          # assignment -> plan
    late: bool = False   # hands in after the due date

    @property
    def email(self) -> str:
        return f"{self.id}@example.ac.kr"


# The modern assignment's plans by student number; everyone else hands in the instructor's solution there.
MODERN = {2: "impl:modern_torch", 3: "impl:modern_loops", 4: "impl:modern_numpy",
          6: "mistake:q3_rms_mean_subtracted", 7: "mistake:q3_gen_positions_restart",
          8: "mistake:q3_attn_rope_interleaved", 9: "mistake:q3_swiglu_gate_up_swapped",
          10: "mistake:q3_attn_kv_heads_tiled", 11: "mistake:q3_bytes_query_heads", 12: "mistake:q3_attn_no_qk_norm",
          13: "mistake:q3_block_parallel", 14: "mistake:q3_gen_ignores_cache",
          15: "mistake:q3_attn_caches_repeated_heads",
          16: "mistake:q3_attn_qk_norm_whole_projection", 17: "mistake:q3_gen_always_tied",
          21: "partial:2", 22: "partial:4", 23: "partial:1", 24: "partial:5", 25: "empty", 26: "empty",
          29: "copy:2026004", 31: "broken", 32: "cheat"}


def _s(number, last, first, attention, kv_cache, decoder, quiz, late=False):
    return Student(f"2026{number:03d}", first, last,
                   {"attention": attention, "kv_cache": kv_cache, "decoder": decoder,
                    "modern": MODERN.get(number, "solution"), "quiz": quiz}, late)


ROSTER = [  # number, last and first name, the plans for attention, kv_cache, decoder and quiz (modern: MODERN)
    _s(1, "김", "민준", "solution", "solution", "solution", "answers:all_correct"),
    _s(2, "이", "서연", "impl:attention_torch", "impl:kv_cache_torch", "impl:decoder_torch", "answers:all_correct"),
    _s(3, "박", "도윤", "impl:attention_loops", "impl:kv_cache_loops", "impl:decoder_loops", "answers:two_wrong"),
    _s(4, "최", "하은", "impl:attention_kerasops", "solution", "solution", "answers:all_correct", late=True),
    _s(5, "정", "시우", "paste:keras_attention", "impl:kv_cache_numpy", "impl:decoder_numpy", "answers:one_wrong"),
    _s(6, "강", "지아", "mistake:sdpa_missing_scale", "mistake:kv_bytes_missing_factor_2",
       "mistake:block_post_norm", "answers:two_wrong"),
    _s(7, "조", "서준", "mistake:sdpa_scale_by_d", "mistake:gqa_tiled_heads",
       "mistake:gen_positions_restart", "answers:one_wrong"),
    _s(8, "윤", "하윤", "mistake:softmax_ignores_axis", "mistake:flash_sum_not_rescaled",
       "mistake:ntp_temperature_after_softmax", "answers:all_correct"),
    _s(9, "장", "예준", "mistake:causal_top_left", "mistake:attend_top_left_mask",
       "mistake:gen_attends_before_append", "answers:seed_mistake"),
    _s(10, "임", "수아", "mistake:causal_triu", "mistake:kvcache_wrong_axis",
       "mistake:block_residual_twice", "answers:two_wrong", late=True),
    _s(11, "한", "주원", "mistake:sdpa_mask_with_zero", "mistake:max_tokens_ceil",
       "mistake:ln_eps_outside_sqrt", "answers:one_wrong"),
    _s(12, "오", "지유", "mistake:split_heads_reshape_without_transpose", "mistake:kv_bytes_query_heads",
       "mistake:block_no_causal_mask", "answers:seed_mistake"),
    _s(13, "서", "지호", "mistake:layer_missing_output_projection", "mistake:flash_materializes_scores",
       "mistake:gen_logits_without_ln_f", "answers:all_correct"),
    _s(14, "신", "채원", "mistake:layer_biases_ignored", "mistake:kv_bytes_bits_not_bytes",
       "mistake:gen_ignores_cache", "answers:one_wrong"),
    _s(15, "권", "건우", "mistake:softmax_no_max_subtraction", "mistake:flash_causal_top_left",
       "mistake:block_mlp_reads_x", "answers:two_wrong"),
    _s(16, "황", "다은", "mistake:additive_product_instead_of_sum", "mistake:kv_bytes_ignores_batch",
       "mistake:gen_refeeds_whole_sequence", "answers:all_correct"),
    _s(17, "안", "우진", "mistake:sdpa_mask_after_softmax", "mistake:gqa_tiled_heads",
       "mistake:ntp_top_p_drops_crossing", "answers:one_wrong"),
    _s(18, "송", "서윤", "mistake:sdpa_missing_scale", "mistake:flash_sum_not_rescaled",
       "mistake:gen_first_position_logits", "answers:seed_mistake", late=True),
    _s(19, "류", "현우", "mistake:merge_heads_reshape_without_transpose", "solution",
       "solution", "answers:all_correct"),
    _s(20, "전", "지민", "mistake:mha_scale_by_model_dim", "mistake:attend_ignores_cached_keys",
       "mistake:block_ln_1_twice", "answers:two_wrong"),
    _s(21, "홍", "준서", "partial:4", "partial:2", "partial:1", "answers:half"),
    _s(22, "고", "은서", "partial:7", "partial:4", "partial:2", "answers:all_correct"),
    _s(23, "문", "도현", "partial:2", "partial:1", "partial:1", "answers:half"),
    _s(24, "양", "하린", "partial:9", "partial:5", "partial:2", "answers:one_wrong", late=True),
    _s(25, "손", "지후", "empty", "empty", "empty", "answers:none"),
    _s(26, "배", "수빈", "empty", "partial:3", "empty", "answers:malformed"),
    _s(27, "백", "민재", "broken", "solution", "solution", "answers:all_correct"),
    _s(28, "허", "예린", "cheat", "solution", "solution", "answers:all_correct"),
    _s(29, "유", "승우", "copy:2026004", "solution", "mistake:ln_gamma_beta_swapped", "answers:malformed"),
    _s(30, "남", "지원", "impl:attention_numpy", "mistake:kvcache_nbytes_keys_only",
       "mistake:block_relu_mlp", "answers:all_correct"),
    _s(31, "심", "태윤", "mistake:bahdanau_sum_instead_of_v", "broken", "broken", "answers:two_wrong"),
    _s(32, "노", "유나", "mistake:self_attention_no_value_projection", "cheat", "cheat", "answers:one_wrong"),
]

# Quiz answer sets: overrides of the answer key (None = leave the question unanswered).
QUIZ_ANSWERS = {
    "all_correct": {},
    "one_wrong": {"q2": "A"},
    "two_wrong": {"q5": "B", "q9": 1},
    "seed_mistake": {"q8": 1024, "q13": "B"},       # the seed's wrong Qwen3-8B cache size and pair count
    "half": {f"q{i}": None for i in range(8, 19)},
    "none": {f"q{i}": None for i in range(1, 19)},
    "malformed": {"q1": "0.757쯤", "q2": "B번", "q3": [64]},
}

WRITTEN = {
    "good": ("KV 캐시는 이미 계산한 토큰의 키와 값을 저장해 두었다가 다음 토큰을 만들 때 다시 쓰므로, 새 토큰 하나의 "
             "질의·키·값만 계산하면 됩니다. 대신 레이어마다 키와 값을 모두 들고 있어야 하므로 문맥 길이와 배치에 비례해 "
             "메모리가 늘어납니다."),
    "short": "속도가 빨라집니다.",
}

# What the demo's instructor does besides grading (`python -m autograder extend`, the regrade form): an extension
# given before the due date, in days (this late student's hand-in then counts as on time), and the regrade request a
# student files after reading the feedback (autograder/feedback/regrade.py).
EXTENSIONS = {("2026024", "attention"): 2}
REGRADE_REQUESTS = {
    "2026006": ("과제: attention\n연습: scaled_dot_product_attention\n"
                "이유: 점수를 키의 차원 수의 제곱근으로 나누지 않았다는 진단을 받았는데, 셀 위의 설명과 같은 식으로 "
                "구현했습니다. 다시 확인해 주세요.\n"),
}
