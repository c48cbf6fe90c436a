"""The Assignment List of a student's JupyterLab on the hub (autograder/hub/lab_assignments.py), without a hub: the
course's teaching order, due dates and submission times in its time zone, each submission's download and feedback
page, a refused submission's reason. The hub test (tests/hub/live/test_hub_course.py) reads them in Chromium."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("USER", "nobody")      # ngshare-exchange reads $JUPYTERHUB_USER or $USER when imported
pytest.importorskip("ngshare_exchange")

from autograder import settings  # noqa: E402
from autograder.hub import environment, lab_assignments  # noqa: E402
from autograder.messages import ListText  # noqa: E402


def nbgrader_list(root: str) -> dict:
    """What nbgrader's manager answers (released and submitted, sorted by name as nbgrader sorts them)."""
    submitted = {"course_id": "c", "assignment_id": "attention", "student_id": "kim", "status": "submitted",
                 "submissions": [{"course_id": "c", "assignment_id": "attention", "student_id": "kim",
                                  "status": "submitted", "timestamp": "2026-12-07 05:03:21.123456",
                                  "has_local_feedback": True, "local_feedback_path": "attention/feedback/x",
                                  "notebooks": [{"notebook_id": "attention", "has_local_feedback": True,
                                                 "local_feedback_path": f"{root}/attention/feedback/"
                                                                        "2026-12-07 05:03:21.123456/attention.html"}]}]}
    released = [{"course_id": "c", "assignment_id": name, "status": "released", "notebooks": []}
                for name in sorted(settings.load().assignments)]
    return {"success": True, "value": released + [submitted]}


def test_the_list_is_in_teaching_order_with_due_dates_and_local_times():
    data = environment.assignments_data()
    reply = lab_assignments.dressed(nbgrader_list("/home/kim"), "/home/kim", data)
    names = [a["assignment_id"] for a in reply["value"] if a["status"] == "released"]
    assert names == list(settings.load().assignments) == data["assignments"]   # the course's teaching order
    released = {a["assignment_id"]: a for a in reply["value"] if a["status"] == "released"}
    # course_config.py: attention is due 2026-12-07 23:59:00 +0900, the course's zone is Asia/Seoul
    assert released["attention"]["due_date"] == ListText.DUE.korean(when="2026-12-07 23:59 (KST)")
    submission = [a for a in reply["value"] if a["status"] == "submitted"][0]["submissions"][0]
    assert submission["timestamp"] == "2026-12-07 14:03 (KST)"                    # 05:03 UTC
    assert submission["exchange_timestamp"] == "2026-12-07 05:03:21.123456"
    assert submission["download_url"] == ("assignments/submission?course_id=c&assignment_id=attention&timestamp="
                                          "2026-12-07+05%3A03%3A21.123456")
    assert submission["feedback_url"] == "files/attention/feedback/2026-12-07%2005%3A03%3A21.123456/attention.html"
    assert lab_assignments.dressed({"success": False, "value": "x"}, "/") == {"success": False, "value": "x"}


def test_a_refused_submission_fails_with_the_exchanges_reason(tmp_path, monkeypatch):
    """ngshare-exchange logged a refusal and returned as if it had submitted; ``CourseSubmit`` raises it."""
    from nbgrader.exchange import ExchangeError

    reason = "최근 10분 동안 제출이 3번 거부되어 14:05 (KST)까지(약 5분) 제출을 받지 않습니다."

    class Refused:
        status_code = 429

        def json(self):
            return {"success": False, "message": reason}

    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory

    monkeypatch.setattr(lab_assignments.CourseSubmit, "encode_dir", lambda self, src, ignore=None: {})
    monkeypatch.setattr(lab_assignments.CourseSubmit, "ignore_patterns", lambda self: None)
    monkeypatch.setattr(lab_assignments.CourseSubmit, "ngshare_api_post",
                        lambda self, url, data, params=None: self._ngshare_api_check_error(Refused(), url))
    submit = lab_assignments.CourseSubmit(coursedir=CourseDirectory(course_id="c", assignment_id="attention"),
                                          authenticator=Authenticator())
    with pytest.raises(ExchangeError) as caught:
        submit.post_submission(str(tmp_path))
    assert str(caught.value) == reason
