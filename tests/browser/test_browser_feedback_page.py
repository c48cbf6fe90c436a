"""The students' feedback page (``autograder/feedback/html.py``) in Chromium, with no network: LaTeX rendered by
the KaTeX inlined into the page, markdown tables as tables, the headings in Korean, scores with the course's
precision, no bare "Out[ ]: score" under grade cells; and a student's own script in a written answer still does not
run (autograder/feedback/sanitize.py), while the page's KaTeX does."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("selenium", reason="selenium is not installed (pip install -r requirements-browser.txt)")

from tests.browser.browser_course import ROOT  # noqa: E402
from tests.browser.labpage import wait_for  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

from autograder.feedback import html as feedback_html  # noqa: E402
from autograder.feedback.sanitize import SanitizeStudentHTML  # noqa: E402
from autograder.messages import Label  # noqa: E402

pytestmark = pytest.mark.browser

ATTACK = ("내 답: $\\sqrt{d_k}$로 나눕니다.\n\n<script>window.studentScriptRan = true</script>"
          "<img src=x onerror=\"window.studentScriptRan = true\">\n\n| 헤드 | 캐시 |\n|---|---|\n| 8 | 576 MiB |\n")


def feedback_page(tmp_path: Path) -> Path:
    """attention's release notebook as a graded submission (softmax 2.625 of its points, a late penalty), made inert
    by the course's sanitiser, exported by the course's feedback exporter."""
    if feedback_html.katex() is None:
        pytest.skip(f"KaTeX is missing in {feedback_html.KATEX} (scripts/setup.sh installs it)")
    nb = nbformat.read(str(ROOT / "release" / "attention" / "attention.ipynb"), 4)
    nb.cells.append(nbformat.v4.new_markdown_cell(ATTACK))
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            meta["score"] = 2.625 if meta["grade_id"] == "test_softmax" else 0.0
            if cell.cell_type == "code":
                cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": str(meta["score"])},
                                                       execution_count=1)]
    nb, _ = SanitizeStudentHTML().preprocess(nb, {})
    exporter = feedback_html.FeedbackExporter()
    page, _ = exporter.from_notebook_node(nb, {"nbgrader": {"notebook": "attention", "score": 2.625,
                                                            "max_score": 27, "late_penalty": 0.26}})
    path = tmp_path / "attention.html"
    path.write_text(page, encoding="utf-8")
    return path


def test_feedback_renders_math_and_tables_offline_in_korean(browser, tmp_path, screenshots):
    path = feedback_page(tmp_path)
    page = path.read_text(encoding="utf-8")
    fetched = r"""src=["']?(https?:)?//|url\(["']?(https?:)?//|<link[^>]+href=["']?(https?:)?//"""
    assert not re.search(fetched, page)                                     # nothing loaded from a network
    browser.get(path.as_uri())
    rendered = wait_for(lambda: browser.execute_script("return document.querySelectorAll('.katex').length"), 30,
                        "KaTeX's rendered math")
    browser.save_screenshot(str(screenshots / "feedback-page-katex.png"))
    text = browser.find_element(By.TAG_NAME, "body").text
    assert rendered > 10 and not browser.find_elements(By.CSS_SELECTOR, ".katex-error")
    assert "$$" not in text and "\\mathrm{softmax}" not in text                       # no TeX left as text
    assert "\\sqrt{d_k}" not in text                                                   # the student's math too
    assert browser.execute_script("return window.studentScriptRan === undefined")     # the student's script: inert
    tables = browser.find_elements(By.CSS_SELECTOR, "#notebook table")
    assert tables and any("576 MiB" in t.text for t in tables)
    assert "| 헤드 |" not in text
    labels = Label.korean_all()
    assert f"softmax ({labels['score']}: 2.625 / 2)" in text                          # 2.625, not 2.62
    assert f"{labels['late_penalty']} ({labels['score']}: -0.26)" in text
    for english in ("Test cell", "Score:", "Late submission penalty", "Comment"):
        assert english not in text, english
    assert "Out[" not in text                                                          # the score is in the heading


def test_the_student_sees_math_and_tables_in_jupyterlabs_html_viewer(lab, tmp_path):
    """The way a student opens their feedback: from the feedback folder in JupyterLab's file browser, the page opens
    in JupyterLab's own HTML viewer (the default for .html; here by its URL, as a double-click does), and they press
    "Trust HTML". The viewer hands the page on without its doctype (what is inside <html> only): in quirks mode KaTeX
    renders nothing. The page must still come out in standards mode, with its math rendered and its tables (the
    student's, and the release's forbidden-routines table inside a list) as tables."""
    from urllib.parse import quote

    page = feedback_page(tmp_path)
    relative = "feedback-view/attention/attention.html"
    target = lab.server.root / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(page.read_bytes())
    lab.goto("tree/" + quote(relative))
    lab.click(By.XPATH, "//*[contains(@class, 'jp-Toolbar')]//*[normalize-space(text())='Trust HTML']", timeout=60)
    frame = wait_for(lambda: lab.driver.find_elements(By.CSS_SELECTOR, "#jp-main-dock-panel iframe"), 30,
                     "the HTML viewer's frame")[0]
    lab.driver.switch_to.frame(frame)
    try:
        rendered = wait_for(lambda: lab.driver.execute_script(
            "return document.compatMode === 'CSS1Compat' && document.querySelectorAll('.katex').length"), 60,
            "KaTeX's math in standards mode")
        text = lab.driver.find_element(By.TAG_NAME, "body").text
        tables = [t.text for t in lab.driver.find_elements(By.CSS_SELECTOR, "#notebook table")]
        errors = lab.driver.find_elements(By.CSS_SELECTOR, ".katex-error")
    finally:
        lab.driver.switch_to.default_content()
    lab.screenshot("feedback-in-html-viewer")
    assert rendered > 10 and not errors
    assert "$$" not in text and "\\mathrm{softmax}" not in text and "\\sqrt{d_k}" not in text
    assert any("576 MiB" in t for t in tables) and any("torch.softmax" in t for t in tables), tables
    assert "| 헤드 |" not in text and "|---|" not in text
