"""nbgrader's Assignments panel (Nbgrader > Assignment List): the student fetches the released quiz and submits it
through the course's exchange."""
import pytest

pytest.importorskip("selenium", reason="selenium is not installed (pip install -r requirements-browser.txt)")

from tests.browser.labpage import wait_for  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

pytestmark = pytest.mark.browser


def listed(lab, name: str, count: int):
    """The rows of one list of the panel (released, fetched, submitted) once it has loaded ``count`` of them."""
    def rows():
        for state in ("loading", "placeholder", "error"):
            if any(e.is_displayed() for e in lab.driver.find_elements(By.ID, f"{name}_assignments_list_{state}")):
                return None
        found = lab.driver.find_elements(By.CSS_SELECTOR, f"#{name}_assignments_list > .list_item")
        return found if len(found) == count else None
    return wait_for(rows, 60, f"{count} {name} assignment(s)")


def test_student_fetches_and_submits_the_quiz_from_the_assignments_panel(lab, course):
    from autograder import course as course_tools

    course_tools.nbgrader("release_assignment", "quiz", "--force", cwd=course, env=course_tools.course_env(course))
    lab.goto()
    lab.menu("Nbgrader", "nbgrader:open-assignment-list")

    released = listed(lab, "released", 1)[0]
    assert released.find_element(By.CSS_SELECTOR, ".item_name").text == "quiz"
    assert released.find_element(By.CSS_SELECTOR, ".item_course").text == "attention-ko"
    lab.screenshot("released")

    released.find_element(By.CSS_SELECTOR, ".item_status button").click()            # Fetch
    fetched = listed(lab, "fetched", 1)[0]
    assert fetched.find_element(By.CSS_SELECTOR, ".item_name").text == "quiz"
    assert (course / "quiz" / "quiz.ipynb").exists()                                    # into the student's folder
    lab.screenshot("fetched")

    fetched.find_element(By.XPATH, ".//*[contains(@class,'item_status')]//button[normalize-space()='Submit']").click()
    submitted = listed(lab, "submitted", 1)[0]
    assert submitted.find_element(By.CSS_SELECTOR, ".item_name").text == "quiz"
    inbound = list((course / "exchange" / "attention-ko" / "inbound").glob("*+quiz+*"))
    assert len(inbound) == 1 and (inbound[0] / "quiz.ipynb").exists(), inbound
    lab.screenshot("submitted")
