"""The instructor's side: nbgrader's formgrader inside JupyterLab (Nbgrader > Formgrader) on a small class whose quiz
submissions were autograded by ``nbgrader autograde`` (the course's hidden graders): the scores, then a written
answer graded by hand, and the total that follows."""

import pytest

pytest.importorskip("selenium", reason="selenium is not installed (pip install -r requirements-browser.txt)")

from tests.browser.browser_course import STUDENTS, WRITTEN_ANSWERS  # noqa: E402
from tests.browser.labpage import wait_for  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

pytestmark = pytest.mark.browser


def open_formgrader(lab):
    """Nbgrader > Formgrader; switch into its frame."""
    lab.goto()
    lab.menu("Nbgrader", "nbgrader:open-formgrader")
    wait_for(lambda: [t for t in lab.driver.find_elements(By.CSS_SELECTOR, "#jp-main-dock-panel .lm-TabBar-tab")
                      if t.text.strip() == "Formgrader"], 20, "the Formgrader tab")
    frame = wait_for(lambda: lab.driver.find_elements(By.CSS_SELECTOR, "#jp-main-dock-panel iframe"), 20,
                     "the formgrader frame")[0]
    lab.driver.switch_to.frame(frame)


def rows(lab, selector: str) -> list:
    return lab.driver.find_elements(By.CSS_SELECTOR, selector)


def submissions_table(lab) -> dict[str, dict]:
    """manage_submissions: student id -> its row's cells' text, once every row shows a score."""
    def read():
        table = {}
        for row in rows(lab, "table tbody tr"):
            cells = {c: row.find_element(By.CSS_SELECTOR, f"td.{c}").text.strip()
                     for c in ("student-name", "student-id", "status", "score")}
            table[cells["student-id"]] = cells
        return table if len(table) == len(STUDENTS) and all(r["score"] for r in table.values()) else None
    return wait_for(read, 30, "the submissions with their scores")


def test_formgrader_shows_autograded_scores_and_a_manual_grade_updates_the_total(lab, course, graded_quiz):
    from autograder import course as course_tools

    from autograder.graders.quiz.answer_key import ANSWERS

    auto = sum(q.points for q in ANSWERS.values())                 # the auto-graded points; written: by hand
    kim, kim_max = graded_quiz["kim"]
    assert (kim, graded_quiz["lee"][0], graded_quiz["park"][0]) == (auto, auto - 3, 0)   # lee: three wrong
    open_formgrader(lab)

    # Manage Assignments: the quiz, released, with its 3 submissions.
    quiz_row = wait_for(lambda: [r for r in rows(lab, "table tbody tr")
                                 if r.find_elements(By.CSS_SELECTOR, "td.name") and
                                 r.find_element(By.CSS_SELECTOR, "td.name").text.strip() == "quiz"], 30,
                        "the quiz in Manage Assignments")[0]
    assert quiz_row.find_element(By.CSS_SELECTOR, "td.num-submissions").text.strip() == str(len(STUDENTS))
    lab.driver.switch_to.default_content()
    lab.screenshot("manage-assignments")
    lab.driver.switch_to.frame(lab.driver.find_element(By.CSS_SELECTOR, "#jp-main-dock-panel iframe"))

    # Its submissions: every student's autograded score, as in the gradebook.
    lab.click(By.CSS_SELECTOR, "td.num-submissions a", root=quiz_row)
    table = submissions_table(lab)
    for student, last, first in STUDENTS:
        score, max_score = graded_quiz[student]
        assert table[student]["score"] == f"{score:g} / {max_score:g}", table[student]
        assert table[student]["student-name"] == f"{last}, {first}"
    assert table["kim"]["status"] == "needs manual grading", table["kim"]
    lab.driver.switch_to.default_content()
    lab.screenshot("quiz-submissions-autograded")

    # 김민준's quiz notebook -> the formgrade view of the submission: the written answers with their grade boxes.
    frame = lab.driver.find_element(By.CSS_SELECTOR, "#jp-main-dock-panel iframe")
    lab.driver.switch_to.frame(frame)
    kim_row = [r for r in rows(lab, "table tbody tr") if r.find_element(By.CSS_SELECTOR, "td.student-id").text == "kim"]
    lab.click(By.CSS_SELECTOR, "td.student-name a", root=kim_row[0])
    notebook = wait_for(lambda: [a for a in lab.driver.find_elements(By.CSS_SELECTOR, "table tbody td.name a")
                                 if a.text.strip() == "quiz"], 30, "the student's quiz notebook")[0]
    notebook.click()
    boxes = {}
    for grade_id in WRITTEN_ANSWERS:
        boxes[grade_id] = wait_for(
            lambda grade_id=grade_id: lab.driver.find_elements(By.CSS_SELECTOR, f"input.score#{grade_id}"), 30,
            f"the manual-grade box of {grade_id}")[0]
        box = boxes[grade_id]                  # marked once the page has loaded the grades from the gradebook
        wait_for(lambda box=box: "needs_manual_grade" in box.get_attribute("class"), 30, f"{grade_id} marked ungraded")
        answer = boxes[grade_id].find_element(By.XPATH, "ancestor::div[contains(@class,'nbgrader_cell')]").text
        assert WRITTEN_ANSWERS[grade_id] in answer, answer[:300]
    page_text = lab.driver.find_element(By.TAG_NAME, "body").text
    assert "비공개 채점기" in page_text                                # the hidden graders' report in grade cells
    # The questions' math, rendered offline by the course's template (autograder-formgrade: KaTeX inlined; nbgrader's
    # loads MathJax from a CDN, and no network is reached here), none left as TeX.
    rendered = lab.driver.execute_script("return document.querySelectorAll('#notebook .katex').length")
    assert rendered >= 5 and not lab.driver.find_elements(By.CSS_SELECTOR, ".katex-error"), rendered
    assert "\\sqrt{d_k}" not in page_text and "$-\\infty$" not in page_text
    assert not lab.driver.execute_script(
        "return [...document.scripts].filter(s => s.src && !s.src.startsWith(location.origin)).length")
    lab.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", boxes["written_1"])

    # Grade both answers by hand: type the points into each box and move on (Tab), as the formgrader expects.
    for grade_id, points in (("written_1", "2"), ("written_2", "1.5")):
        box = boxes[grade_id]
        box.click()
        box.send_keys(points, Keys.TAB)
        wait_for(lambda box=box: "needs_manual_grade" not in box.get_attribute("class"), 30,
                 f"{grade_id}'s grade saved")
        assert box.get_attribute("value") == points
    lab.driver.switch_to.default_content()
    lab.screenshot("formgrade-written-answers-graded")

    # Back to the quiz's submissions (breadcrumbs and the side menu): the total includes the manual points.
    lab.driver.switch_to.frame(frame)
    lab.click(By.XPATH, "//a[normalize-space()='Manual Grading']")
    lab.click(By.XPATH, "//a[normalize-space()='Manage Assignments']")
    quiz_row = wait_for(lambda: [r for r in rows(lab, "table tbody tr") if r.find_elements(By.CSS_SELECTOR, "td.name")
                                 and r.find_element(By.CSS_SELECTOR, "td.name").text.strip() == "quiz"], 30,
                        "the quiz in Manage Assignments")[0]
    lab.click(By.CSS_SELECTOR, "td.num-submissions a", root=quiz_row)
    table = submissions_table(lab)
    assert table["kim"]["score"] == f"{kim + 3.5:g} / {kim_max:g}", table["kim"]
    assert table["kim"]["status"] == "graded", table["kim"]
    assert table["lee"]["score"] == f"{graded_quiz['lee'][0]:g} / {kim_max:g}"          # the others unchanged
    lab.driver.switch_to.default_content()
    lab.screenshot("quiz-submissions-total-updated")
    assert course_tools.scores(course, "quiz")["kim"] == (kim + 3.5, kim_max)          # and in the gradebook
