"""The instructor's report (autograder/feedback/instructor.py) as data and page: the exercises ranked by difficulty
with a written answer that waits for a person left out (not a 0), the totals' histogram, the sortable tables and
the one script the page's policy allows (tests/browser/test_browser_report.py clicks them)."""
from __future__ import annotations

import base64
import hashlib
import re
import warnings

from autograder.feedback import instructor


def test_the_ranking_and_the_page_show_pending_grades_as_pending(graded_course_made, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = instructor.collect_grades(graded_course_made.db_url, ["attention", "quiz"], graded_course_made.dir)
    kim = next(r for r in data["students"] if r["id"] == "kimmj")["assignments"]["quiz"]
    assert kim["pending"] == ["written_1", "written_2"] and kim["exercises"]["written_1"] is None
    assert kim["score"] == 19                                         # what is graded so far; 4 points wait
    ranking = {e["exercise"]: e for e in instructor.difficulty(data, "quiz")}
    assert ranking["written_1"]["pending"] == 3 and ranking["written_1"]["students"] == 1   # leesy's 1.5 only
    assert ranking["written_1"]["share"] == 0.75                      # not (1.5 + 0 + 0 + 0) / 4 / 2
    hardest = [e["exercise"] for e in instructor.difficulty(data, "attention")][:3]
    assert hardest == ["softmax", "causal_mask", "self_attention"]   # 70 %, 70 % (notebook order), 80 %

    page = instructor.write_report(data, tmp_path / "report.html").read_text(encoding="utf-8")
    policy = re.search(r"script-src '(sha256-[^']+)'", page).group(1)
    script = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert len(script) == 1 and policy == "sha256-" + base64.b64encode(
        hashlib.sha256(script[0].encode()).digest()).decode()          # the sorter runs, nothing else can
    assert page.count("<table class='sortable'") >= 3 and "<pre>" not in page   # real tables, no text block
    assert "class='hist'" in page and "수기 채점 대기 3명 (합계와 분포에서 제외)" in page
    quiz = page[page.index("id='students-quiz'"):]
    assert quiz.count("<td data-sort='' class='pending'>대기</td>") == 6   # 3 students x 2 written answers
