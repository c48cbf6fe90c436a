"""What instructors and students read, opened as they open it (a local file in Chromium, no network): the
instructor's report sorts its per-student table by the heading clicked, stays within a 1400 px window (a wide table
scrolls in its own box), draws the totals' histogram and shows a written answer that waits for a person as pending;
the feedback page's index names each exercise. Screenshots: build/screenshots/report-*.png, feedback-index.png."""
from __future__ import annotations

import warnings

import pytest

pytest.importorskip("selenium", reason="selenium is not installed (pip install -r requirements-browser.txt)")

from selenium.webdriver.common.by import By  # noqa: E402

from autograder import cli  # noqa: E402
from tests.browser.labpage import wait_for  # noqa: E402

pytestmark = pytest.mark.browser


def column(browser, table: str, index: int) -> list[str]:
    return browser.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0] + ' tbody tr'))"
        ".map(r => r.cells[arguments[1]].textContent.trim())", f"#{table}", index)


def test_the_report_and_the_feedback_index_read_well(browser, screenshots, graded_course, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli.main(["report", "--course-dir", str(graded_course.dir), "attention", "quiz"]) == 0
    browser.set_window_size(1400, 1000)
    browser.get((graded_course.dir / "reports" / "report.html").as_uri())
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#overview th[aria-sort]"), 10, "the sorting script")
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    browser.save_screenshot(str(screenshots / "report-top.png"))

    total = 6   # the overview's columns: the student's 4, attention, quiz, the sum
    heading = browser.find_elements(By.CSS_SELECTOR, "#overview thead th")[total]
    heading.click()
    ascending = [float(x) for x in column(browser, "overview", total)]
    assert ascending == sorted(ascending) and heading.get_attribute("aria-sort") == "ascending"
    heading.click()
    assert [float(x) for x in column(browser, "overview", total)] == sorted(ascending, reverse=True)
    browser.find_elements(By.CSS_SELECTOR, "#overview thead th")[1].click()   # the user names: text
    assert column(browser, "overview", 1) == sorted(p.username for p in graded_course.people)
    browser.save_screenshot(str(screenshots / "report-sorted.png"))

    quiz = browser.find_element(By.ID, "students-quiz")
    browser.execute_script("arguments[0].scrollIntoView()", quiz)
    written = [c.text for c in quiz.find_elements(By.CSS_SELECTOR, "tbody td.pending")]
    assert written and set(written) == {"대기"}                        # pending, not 0
    box = browser.execute_script("const b = arguments[0].parentElement; return [b.scrollWidth, b.clientWidth]", quiz)
    assert box[0] > box[1], "the quiz's 21 questions scroll in their box (the page itself stays 1400 px wide)"
    browser.save_screenshot(str(screenshots / "report-quiz.png"))
    bars = browser.find_element(By.CSS_SELECTOR, "#a-attention ~ .hist").find_elements(By.CLASS_NAME, "b")
    assert [b.size["height"] > 0 for b in bars].count(True) == 3   # attention's totals: 21 | 21.6, 23, 24 | 27

    from tests.browser.test_browser_feedback_page import feedback_page

    browser.get(feedback_page(tmp_path).as_uri())
    links = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#toc li a")]
    assert links[:3] == ["softmax", "additive_attention", "bahdanau_attention"] and "채점 셀" not in links
    browser.save_screenshot(str(screenshots / "feedback-index.png"))
