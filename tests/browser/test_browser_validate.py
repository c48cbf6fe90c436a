"""nbgrader's Validate button (the lab extension's notebook toolbar): what a student learns before submitting."""
import pytest

pytest.importorskip("selenium", reason="selenium is not installed (pip install -r requirements-browser.txt)")

from tests.browser.browser_course import WRITTEN_ANSWERS, quiz_answer_key, student_copy  # noqa: E402

pytestmark = pytest.mark.browser


def test_validate_reports_unanswered_then_badly_formatted_then_passes(lab, course):
    """Quiz: Validate on the blank notebook fails on all 15 questions (the Korean "not answered" message) and both
    written answers; with every answer typed in, but one multiple-choice answer in the wrong format, it fails on
    that one cell only, with the Korean format hint; with that answer fixed it succeeds."""
    nb = lab.open_notebook(student_copy(course, "quiz", "validate"))
    key = quiz_answer_key()
    questions = sorted(key, key=lambda g: int(g.removeprefix("solution_q")))

    kind, text = lab.validate()
    assert kind == "error", text
    # every question's check, and the two written answers ("You did not provide a response.")
    assert text.count("The following cell failed:") == len(questions) + len(WRITTEN_ANSWERS), text[:400]
    assert text.count("You did not provide a response.") == len(WRITTEN_ANSWERS)
    for grade_id in questions:
        name = grade_id.removeprefix("solution_")
        assert f"❌ {name}: 아직 답하지 않았습니다" in text, f"{name} not reported:\n{text[:2000]}"
    lab.screenshot("blank-validation-failed")
    lab.close_dialog()

    for grade_id in questions:
        answer = "q2 = 'B번'" if grade_id == "solution_q2" else key[grade_id]
        lab.type_into_cell(nb.index(grade_id), answer)
    for grade_id, answer in WRITTEN_ANSWERS.items():
        lab.write_markdown(nb.index(grade_id), answer)
    kind, text = lab.validate()
    assert kind == "error", text
    assert text.count("The following cell failed:") == 1, text[:2000]
    assert "❌ q2: A, B, C, D 가운데 한 글자만 적으세요 (지금은 'B번')" in text, text[:2000]
    lab.screenshot("q2-format-validation-failed")
    lab.close_dialog()

    lab.type_into_cell(nb.index("solution_q2"), key["solution_q2"])
    kind, text = lab.validate()
    assert kind == "success", text
    assert "Success! Your notebook passes all the tests." in text
    lab.screenshot("validation-passed")
    lab.close_dialog()
    saved = lab.saved(nb)
    assert all(saved.cells[nb.index(g)].source == key[g] for g in questions)   # Validate saved the notebook first
    assert all(saved.cells[nb.index(g)].source == text for g, text in WRITTEN_ANSWERS.items())
