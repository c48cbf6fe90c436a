"""The hidden grader of the `quiz` assignment, proven both ways.

* the answer key (autograder/graders/quiz/answer_key.py) is the source notebook's solution cells, and neither
  appears in the release notebook;
* the solution gets 19/19; the untouched release notebook gets 0 with a Korean "no answer" message;
* a wrong answer loses exactly its question's point (with the question's explanation in the message), a
  malformed one (a word instead of a letter, a list, None, a string for a number, a bool, a dict) gets a Korean
  message about the format and no grader error, and every other question keeps its point;
* the documented leniency: letters in any case with spaces around them, numbers within the key's tolerance, numpy
  numbers; the notebook's visible format check accepts exactly the same forms;
* the questions do not give their answers away: options of comparable length, the right one never the longest, at
  least four questions asking why.

The quiz notebook imports no keras, so a grading costs about a second.
"""
from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

from autograder.grade import GradeResult
from autograder.graders.compare import GradingFailure
from autograder.graders.quiz.answer_key import ANSWERS, WRITTEN


from tests.helpers import notebooks  # noqa: E402
from tests.helpers.graded import GradingCache  # noqa: E402

pytestmark = pytest.mark.slow

ASSIGNMENT = "quiz"
SEED = int(os.environ.get("QUIZ_GRADER_SEED", "20240613"))
SOLUTION = notebooks.solution_notebook(ASSIGNMENT)
QUESTIONS = [f"q{i}" for i in range(1, 20)]

NO_ANSWER = "답이 없습니다"
FORMAT_LETTER = "보기 글자"
FORMAT_NUMBER = "따옴표 없는 숫자"
WRONG = "오답입니다"
GRADER_ERROR = "채점기"


graded = GradingCache(ASSIGNMENT, SEED, step=0).graded   # every notebook with the same seed


def by_question(result: GradeResult) -> dict:
    return {e.name: e for e in result.exercises}


def message(result: GradeResult, name: str) -> str:
    return " ".join(t.message for t in by_question(result)[name].tests)


def answers(**given) -> dict:
    """Solution cells holding ``qN = <source>`` for the given questions."""
    return {name: f"{name} = {source}" for name, source in given.items()}


# ----------------------------------------------------------------------------------------------- the key
def solution_values() -> dict:
    """The values the source notebook's solution cells assign (they hold nothing but ``qN = literal``)."""
    values = {}
    for name, cell in notebooks.solution_cells(SOLUTION).items():
        namespace: dict = {}
        exec(cell.source, namespace)                                   # the instructor's own cell
        values[name] = namespace[name]
    return values


def test_answer_key_is_the_source_solution():
    """Every question of the key has a solution cell with the same answer, a grade cell of the same points."""
    values = solution_values()
    assert set(values) == set(ANSWERS) == set(QUESTIONS)
    points = notebooks.grade_points(SOLUTION)
    for name, key in ANSWERS.items():
        if key.kind == "choice":
            assert key.answer in ("A", "B", "C", "D") and values[name] == key.answer, name
        else:
            assert abs(values[name] - key.answer) <= key.atol, name
        assert points[name] == key.points == 1.0, name
        assert key.topic_ko and key.explanation_ko, name
    assert sum(k.points for k in ANSWERS.values()) == 19


def test_release_holds_no_answer():
    """The release notebook (generated, or the source with nbgrader's ClearSolutions) assigns no answer and
    carries neither the model answers of the written questions nor the key."""
    release = notebooks.release_notebook(ASSIGNMENT)
    text = json.dumps(release, ensure_ascii=False)
    assert "BEGIN SOLUTION" not in text and "모범 답안" not in text and "채점 기준" not in text
    for name, cell in notebooks.solution_cells(release).items():
        assert f"{name} =" not in cell.source, name
    for key in ANSWERS.values():
        assert key.explanation_ko[:40] not in text
    release_dir = notebooks.release_path(ASSIGNMENT).parent
    if release_dir.exists():
        assert not list(release_dir.rglob("answer_key*"))
    written = [c for c in release.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") in WRITTEN]
    assert len(written) == len(WRITTEN)


# ----------------------------------------------------------------------------------------------- full marks, none
def test_solution_gets_full_marks():
    result = graded("solution", lambda: SOLUTION)
    assert [e.name for e in result.exercises] == QUESTIONS
    assert {e.name: (e.score, e.max_score) for e in result.exercises} == {q: (1.0, 1.0) for q in QUESTIONS}
    assert result.score == result.max_score == 19


def test_release_notebook_gets_zero_with_no_answer_message():
    result = graded("release", lambda: notebooks.release_notebook(ASSIGNMENT))
    assert result.score == 0 and result.max_score == 19
    for name in QUESTIONS:
        assert NO_ANSWER in message(result, name), message(result, name)


# ----------------------------------------------------------------------------------------------- wrong, malformed
MIXED = answers(
    q1="0.7567",               # right: within ±0.001
    q2='" b "',                # right: case and spaces do not matter
    q3='"64"',                 # malformed: a string for a number
    q4='"D번"',                # malformed: a word, not a letter
    q5='["A"]',                # malformed: a list
    q6="None",                 # malformed: None
    q7="1",                    # malformed: a number for a letter
    q8="448.4",                # right: within ±0.5
    q9="4.0",                  # right: a float for an integer answer
    q10='"C"',                 # wrong letter
    q11='"A"',                 # wrong letter
    q12="True",                # malformed: a bool is not a number
    q13='"c"',                 # right: lower case
    q14='"E"',                 # malformed: not one of A-D
    q15='{"answer": "B"}',     # malformed: a dict
)
MIXED_RIGHT = {"q1", "q2", "q8", "q9", "q13", "q16", "q17", "q18", "q19"}   # q16-q19: the solution's
MIXED_WRONG = {"q10", "q11"}
MIXED_FORMAT = {"q4": FORMAT_LETTER, "q5": FORMAT_LETTER, "q7": FORMAT_LETTER, "q14": FORMAT_LETTER,
                "q15": FORMAT_LETTER, "q3": FORMAT_NUMBER, "q6": FORMAT_NUMBER, "q12": FORMAT_NUMBER}


def test_wrong_and_malformed_answers_lose_exactly_their_points():
    result = graded("mixed", lambda: notebooks.with_code(SOLUTION, MIXED))
    scores = {e.name: e.score for e in result.exercises}
    assert {q for q, s in scores.items() if s == 1.0} == MIXED_RIGHT, scores
    assert result.score == len(MIXED_RIGHT)
    for name in MIXED_WRONG:
        assert WRONG in message(result, name) and "풀이:" in message(result, name), message(result, name)
        assert ANSWERS[name].explanation_ko in message(result, name)
    for name, expected in MIXED_FORMAT.items():
        assert expected in message(result, name), (name, message(result, name))
    assert "따옴표를 지우세요" in message(result, "q3")
    for name in QUESTIONS:
        assert GRADER_ERROR not in message(result, name), (name, message(result, name))


NUMERIC = {
    **answers(q1="np.float64(0.7579)",   # right: a numpy float within the tolerance
              q3="np.int64(64)",         # right: a numpy integer
              q8="448.5",                # right: exactly at the tolerance
              q6="4.0000001",            # wrong: the tolerance is 0
              q9="float('nan')",         # malformed: not a finite number
              q12="np.array([256, 1])"),    # malformed: an array, not one number
}


def test_numbers_within_tolerance_and_numpy_numbers():
    result = graded("numeric", lambda: notebooks.with_code(SOLUTION, NUMERIC))
    scores = {e.name: e.score for e in result.exercises}
    lost = {q for q, s in scores.items() if s < 1.0}
    assert lost == {"q6", "q9", "q12"}, {q: message(result, q) for q in lost}
    assert result.score == 16
    assert WRONG in message(result, "q6")
    assert "유한한 숫자" in message(result, "q9")
    assert FORMAT_NUMBER in message(result, "q12")


def test_one_unanswered_question_costs_only_its_point():
    """A solution cell left as the stub (NotImplementedError) costs its question, and nothing else."""
    stub = {"q5": "# 여기에 코드를 작성하세요\nraise NotImplementedError()"}
    result = graded("one-stub", lambda: notebooks.with_code(SOLUTION, stub))
    assert {e.name: e.score for e in result.exercises if e.score < 1.0} == {"q5": 0.0}
    assert NO_ANSWER in message(result, "q5")


# ----------------------------------------------------------------------------------------------- the questions
def choice_options(nb) -> dict:
    """``{qN: {letter: option text}}`` of the multiple-choice questions, read from the notebook's markdown."""
    found = {}
    for cell in nb.cells:
        match = re.match(r"### 문제 (\d+)\.", cell.source)
        if cell.cell_type != "markdown" or not match:
            continue
        options = dict(re.findall(r"^\* ([A-D])\. (.+)$", cell.source, flags=re.M))
        if options:
            found[f"q{match.group(1)}"] = options
    return found


def test_the_right_option_is_not_given_away_by_its_length():
    """Every multiple-choice question has four options of comparable length (the longest at most 1.5 times the
    shortest) and the right one is never the single longest; the right letters are spread over A-D."""
    options = choice_options(SOLUTION)
    assert set(options) == {q for q, key in ANSWERS.items() if key.kind == "choice"}
    for name, texts in options.items():
        assert sorted(texts) == ["A", "B", "C", "D"], name
        lengths = {letter: len(text) for letter, text in texts.items()}
        right = lengths[ANSWERS[name].answer]
        assert right <= max(n for letter, n in lengths.items() if letter != ANSWERS[name].answer), (name, lengths)
        assert max(lengths.values()) <= 1.5 * min(lengths.values()), (name, lengths)
    letters = [key.answer for key in ANSWERS.values() if key.kind == "choice"]
    assert all(letters.count(letter) <= len(letters) // 2 for letter in "ABCD"), letters
    assert len(set(letters)) == 4, letters


def test_at_least_four_why_questions():
    """The quiz asks for reasons, not only recall and arithmetic: at least four questions ask why."""
    why = [c.source.split("\n")[0] for c in SOLUTION.cells if c.cell_type == "markdown"
           and c.source.startswith("### 문제") and re.search(r"왜|이유", c.source)]
    assert len(why) >= 4, why


def visible_checker():
    """The notebook's own ``check_answer`` (its locked helpers cell), run here."""
    helpers = next(c for c in SOLUTION.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "helpers")
    namespace: dict = {}
    exec(helpers.source, namespace)
    return namespace


def on_the_wire(value):
    """What the grader receives for a value: numpy scalars come as one-element arrays (the sandbox's frames)."""
    return np.atleast_1d(np.asarray(value)) if isinstance(value, np.generic) else value


ANSWER_FORMS = [
    ("choice", "B"), ("choice", "b"), ("choice", " B "), ("choice", "E"), ("choice", "B번"), ("choice", 2),
    ("choice", ["B"]), ("choice", None), ("number", 64), ("number", 64.0), ("number", np.int64(64)),
    ("number", np.float32(0.757)), ("number", np.array([576])), ("number", np.array(576.0)), ("number", "64"),
    ("number", True), ("number", np.bool_(True)), ("number", float("nan")), ("number", np.array([1, 2])),
    ("number", None), ("number", [64]),
]


@pytest.mark.parametrize("kind, value", ANSWER_FORMS, ids=[f"{k}-{v!r}" for k, v in ANSWER_FORMS])
def test_visible_check_accepts_exactly_what_the_grader_accepts(kind, value):
    """The format check a student runs before submitting agrees with the hidden grader on every form: lower-case
    letters and numpy numbers pass both, strings for numbers and bools fail both, and a failure shows only the
    Korean message (the exception renders itself without the helper's traceback)."""
    from autograder.graders.quiz import test_quiz as grader

    namespace = visible_checker()
    namespace["qx"] = value
    try:
        namespace["check_answer"]("qx", kind)
        visible = True
    except AssertionError as failure:
        visible = False
        assert failure._render_traceback_() == [str(failure)] and str(failure).startswith("❌ qx:"), failure
    try:
        (grader.read_choice if kind == "choice" else grader.read_number)("qx", on_the_wire(value))
        hidden = True
    except GradingFailure:
        hidden = False
    assert visible == hidden, (kind, value, visible, hidden)


def test_each_format_check_asks_for_the_kind_of_its_key():
    """A question's locked format check asks for a letter where the key holds a letter and a number where it holds
    a number (a changed question keeps its check in step)."""
    for name, key in ANSWERS.items():
        cell = next(c for c in SOLUTION.cells
                    if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == f"test_{name}")
        assert cell.source.strip() == f'check_answer("{name}", "{key.kind}")', (name, cell.source)


def test_numeric_keys_are_recomputed_from_the_configs():
    """q8's key is the formula on Qwen2.5-7B's config.json (28 layers, 4 KV heads, hidden 3,584 / 28 heads = 128),
    8,192 tokens, FP16, in MiB; q9 and q12 are the ratios the questions ask for."""
    layers, kv_heads, head_dim = 28, 4, 3584 // 28
    assert ANSWERS["q8"].answer == 2 * layers * kv_heads * head_dim * 8192 * 2 / 2**20 == 448
    assert ANSWERS["q9"].answer == 32 // 8
    assert ANSWERS["q12"].answer == (8192 // 512) ** 2


def test_the_dominating_key_question_holds_at_every_length_it_allows():
    """q15 ("one score is at least G above all the others, at most N keys"): its answer ("the output is almost
    that key's value") holds for the worst case the question allows, read from its text: N - 1 other keys all
    exactly G lower still leave that key a weight above 0.999. The old gap of 10 did not (0.84 at 4,096 keys,
    0.40 at 32,768, lengths the course discusses)."""
    cell = next(c for c in SOLUTION.cells if c.cell_type == "markdown" and c.source.startswith("### 문제 15."))
    gap = int(re.search(r"점수보다 (\d+) 이상 큽니다", cell.source).group(1))
    keys = int(re.search(r"많아야 [^=]*= ([\d,]+)개", cell.source).group(1).replace(",", ""))
    assert keys >= 131_072                                   # the longest context the course discusses (128K)

    def top_weight(gap, keys):
        return 1.0 / (1.0 + (keys - 1) * np.exp(-gap))

    assert top_weight(gap, keys) > 0.999, (gap, keys, top_weight(gap, keys))
    assert top_weight(10, 4096) < 0.85 and top_weight(10, 32768) < 0.41


def test_the_decoding_numbers_are_recomputed():
    """The numbers of the decoding questions (q17, q18) and of their explanations, recomputed here: a 13B FP16 model
    read at 3.35 TB/s takes 7.76 ms a token, its 26 GFLOPs 0.026 ms on an H100 SXM (989 TFLOPS BF16), about 300 times
    less; Llama-3-8B's KV cache at batch 16 and 8,192 tokens is 16 GiB (GQA, 8 KV heads) and 64 GiB as MHA. Neither
    repeats the notebook's worked numbers (8B at 2.0 TB/s: 8 ms; batch 32: 32 GiB)."""
    weights = 13e9 * 2                                                  # bytes of a 13B-parameter FP16 model
    read_ms = weights / 3.35e12 * 1e3
    assert abs(ANSWERS["q17"].answer - read_ms) < 0.005 and ANSWERS["q17"].answer != 8   # ms
    compute_ms = 2 * 13e9 / 989e12 * 1e3
    assert round(compute_ms, 3) == 0.026 and 280 < read_ms / compute_ms < 310
    assert "0.026 ms" in ANSWERS["q17"].explanation_ko and "300배" in ANSWERS["q17"].explanation_ko
    assert "129 토큰" in ANSWERS["q17"].explanation_ko and int(1e3 / read_ms) == 128 < 1e3 / read_ms < 129.5
    per_token = 2 * 32 * 8 * 128 * 2                                    # K and V, 32 layers, 8 KV heads, d 128, FP16
    assert per_token * 8192 * 16 == 16 * 2**30 and 4 * per_token * 8192 * 16 == 64 * 2**30
    question = next(c.source for c in SOLUTION.cells
                    if c.cell_type == "markdown" and c.source.startswith("### 문제 18."))
    assert "16 GiB" in question and "64 GiB" in question and "32 GiB" not in question


def test_the_title_and_the_hints_name_what_exists():
    """The quiz's title names all three assignments it covers, and every "**N절**(title)" a hint sends the student to
    is that section's heading (or a part of it) in the notebook named before it."""
    cells = [c for c in SOLUTION.cells if c.cell_type == "markdown"]
    title = cells[0].source.splitlines()[0]
    assert all(word in title for word in ("어텐션", "KV 캐시", "디코더")), title
    headings = {}
    for assignment in ("attention", "kv_cache", "decoder"):
        for cell in notebooks.solution_notebook(assignment).cells:
            for number, text in re.findall(r"^## (\d+)\. (.+)$", cell.source, re.M) if cell.cell_type == "markdown" \
                    else []:
                headings[assignment, number] = text
    checked = 0
    for cell in cells:
        for hint in re.findall(r"<summary>💡 힌트[^<]*</summary>(.*?)</details>", cell.source, re.S):
            notebook = None
            for named, number, text in re.findall(r"`(\w+)` 노트북|\*\*(\d+)절\*\*\(([^)]*\)?)\)", hint):
                notebook = named or notebook
                if number:
                    checked += 1
                    assert text.rstrip(")") in headings[notebook, number], (notebook, number, text)
    assert checked >= 5, checked




def test_the_sampling_question_is_recomputed():
    """q19's numbers, recomputed with the decoder's reference next_token_probs (Hugging Face's warpers): the
    softmax in the question, option C's distribution (the right one), option A's and B's claims false, and the
    explanation's numbers."""
    import numpy as np

    from autograder.graders.references import next_token_probs

    logits = np.array([[3.0, 2.0, 1.0, 0.0]])
    plain = next_token_probs(logits)[0]
    np.testing.assert_allclose(plain, [0.64, 0.24, 0.09, 0.03], atol=0.005)
    np.testing.assert_allclose(next_token_probs(logits, top_p=0.8)[0], [0.73, 0.27, 0, 0], atol=0.005)
    assert next_token_probs(logits, temperature=2.0)[0, 0] < plain[0]                       # A: flatter, not sharper
    assert abs(next_token_probs(logits, top_k=2)[0].sum() - 1) < 1e-12                      # B: renormalised
    explanation = ANSWERS["q19"].explanation_ko
    for number in (plain[0], plain[0] + plain[1], *next_token_probs(logits, top_p=0.8)[0, :2],
                   next_token_probs(logits, temperature=2.0)[0, 0]):
        assert f"{number:.3f}" in explanation, (number, explanation)
    assert ANSWERS["q19"].answer == "C"
