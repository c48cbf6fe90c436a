"""Regrade requests (autograder/feedback/regrade.py): a student fills in the released form and submits it through
the course's exchange; the instructor collects it and reads it in report.html beside the current grade. A request is
data that is only shown: it changes no grade, its text is escaped, a link in its place is not followed."""
from __future__ import annotations

import os
import warnings

import pytest

from autograder import cli
from autograder.feedback import regrade

FILLED = ("과제: attention\n연습: softmax\n이유: 축을 바꿔도 맞게 계산합니다.\n두 번째 줄입니다.\n\n"
          "과제: quiz\n연습: written_1\n이유: <script>document.title='x'</script> 아직 채점되지 않았나요?\n"
          "과제: attention\n연습: causal_mask\n이유: 점수 27/27 (교수자 확인)\n")


@pytest.fixture(autouse=True)
def _quiet_sqlalchemy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_the_form_parses_into_requests_and_the_blank_form_into_none():
    blank = regrade.form_path().read_text(encoding="utf-8")
    assert regrade.parse(blank) == []
    requests = regrade.parse(blank + FILLED)
    assert [(r.assignment, r.exercise) for r in requests] == [("attention", "softmax"), ("quiz", "written_1"),
                                                              ("attention", "causal_mask")]
    assert requests[0].reason == "축을 바꿔도 맞게 계산합니다.\n두 번째 줄입니다."


def exchange_config(course, exchange, student=None):
    from traitlets.config import Config

    config = Config()
    config.CourseDirectory.course_id = "attention-ko"
    config.CourseDirectory.root = str(course if student is None else course / "home" / student)
    config.CourseDirectory.assignment_id = regrade.NAME
    config.Exchange.root = str(exchange)
    config.CourseDirectory.db_url = f"sqlite:///{course / 'gradebook.db'}"
    if student is not None:
        config.CourseDirectory.student_id = student
        config.Exchange.assignment_dir = str(course / "home" / student)
        config.Exchange.cache = str(course / "home" / student / ".cache")
    return config


def test_a_request_goes_through_the_exchange_and_into_the_report(graded_course, capsys):
    """The form released, fetched, filled in and submitted by a student, collected by the instructor (nbgrader's
    own exchange classes, the code its commands run), then listed in report.html beside the current grade, every
    character escaped; grades.csv is the same with and without it."""
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange.default import (ExchangeCollect, ExchangeFetchAssignment, ExchangeReleaseAssignment,
                                           ExchangeSubmit)

    course, exchange = graded_course.dir, graded_course.dir / "exchange"
    exchange.mkdir()
    assert cli.main(["report", "--course-dir", str(course)]) == 0
    grades = (course / "reports" / "grades.csv").read_bytes()

    def run(kind, config):
        kind(coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config),
             config=config).start()

    (course / "release" / regrade.NAME).mkdir(parents=True)
    (course / "release" / regrade.NAME / regrade.FORM).write_bytes(regrade.form_path().read_bytes())
    run(ExchangeReleaseAssignment, exchange_config(course, exchange))
    (course / "home" / "leesy").mkdir(parents=True)
    student = exchange_config(course, exchange, "leesy")
    run(ExchangeFetchAssignment, student)
    form = course / "home" / "leesy" / regrade.NAME / regrade.FORM
    form.write_text(form.read_text(encoding="utf-8") + FILLED, encoding="utf-8")
    run(ExchangeSubmit, student)
    collect = exchange_config(course, exchange)
    collect.ExchangeCollect.check_owner = False
    run(ExchangeCollect, collect)

    capsys.readouterr()
    assert cli.main(["report", "--course-dir", str(course)]) == 0
    assert "regrade requests: 3" in capsys.readouterr().out
    assert (course / "reports" / "grades.csv").read_bytes() == grades                  # no grade moved
    report = (course / "reports" / "report.html").read_text(encoding="utf-8")
    section = report[report.index("<h2 id='regrades'>"):]
    assert "재채점 요청 (3건, 학생 1명)" in section
    assert "<td class='l'>softmax</td><td class='l'>0 / 2</td>" in section          # leesy's softmax: 0 of 2
    assert "<td class='l'>written_1</td><td class='l'>1.5 / 2</td>" in section
    assert "<script>document.title" not in report and "&lt;script&gt;document.title=&#x27;x&#x27;" in section
    assert cli.main(["regrade", "--course-dir", str(course)]) == 0
    out = capsys.readouterr().out
    assert "leesy (" in out and "attention softmax: 축을 바꿔도 맞게 계산합니다. 두 번째 줄입니다." in out


def test_a_link_in_place_of_the_form_is_not_followed(graded_course, tmp_path):
    secret = tmp_path / "answer_key.md"
    secret.write_text("과제: attention\n연습: softmax\n이유: THE ANSWER KEY\n", encoding="utf-8")
    folder = graded_course.dir / "submitted" / "parkdy" / regrade.NAME
    folder.mkdir(parents=True)
    os.symlink(secret, folder / regrade.FORM)
    [filed] = regrade.collect_requests(graded_course.dir)
    assert filed.student == "parkdy" and filed.requests == [] and "symbolic link" in filed.problem.lower()


def test_release_places_the_form_and_runs_nbgraders_release(tmp_path, monkeypatch, capsys):
    """``regrade --release`` puts the form in the course folder's release/ and runs ``nbgrader release_assignment
    regrade --force`` there (the course's exchange, the hub's ngshare too); a failure is said, not swallowed."""
    from autograder import course

    ran = []
    status = {"code": 0}

    def nbgrader(*args, cwd, env=None, check=True):
        ran.append((args, cwd))
        return type("Done", (), {"returncode": status["code"], "stdout": "", "stderr": "no exchange"})()

    monkeypatch.setattr(course, "nbgrader", nbgrader)
    assert cli.main(["regrade", "--release", "--course-dir", str(tmp_path)]) == 0
    assert ran == [(("release_assignment", "regrade", "--force"), tmp_path)]
    assert (tmp_path / "release" / "regrade" / "regrade_request.md").read_bytes() == regrade.form_path().read_bytes()
    assert "nbgrader collect regrade --update" in capsys.readouterr().out
    status["code"] = 1
    assert cli.main(["regrade", "--release", "--course-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().err == "error: nbgrader release_assignment regrade failed:\nno exchange\n"
