"""Extensions (``python -m autograder extend``, autograder/gradebook/extensions.py): nbgrader's per-submission
``extension`` set through its gradebook, and every grade that shows it follows: the late penalty (nbgrader's own
``AssignLatePenalties`` with the course's plugin, and at once where the submission is already graded), the grades
CSV, the report and the feedback page."""
from __future__ import annotations

import csv
import datetime as dt
import warnings

import pytest

from autograder import cli
from autograder.gradebook import extensions


@pytest.fixture(autouse=True)
def _quiet_sqlalchemy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def penalty(course, student="choihe", assignment="attention") -> float:
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url) as gb:
        return gb.find_submission(assignment, student).late_submission_penalty


def test_an_extension_after_grading_takes_the_late_penalty_off_everywhere(graded_course, capsys):
    """choihe handed in 1.2 days late (-20 %: 5.4 points); a 2-day extension makes the hand-in on time: the penalty
    is 0 in the gradebook at once, and the grades CSV and the report show 27 (one day's extension: still one
    started day late, -10 %)."""
    assert penalty(graded_course) == pytest.approx(5.4)
    assert cli.main(["extend", "choihe", "attention", "--days", "1", "--course-dir", str(graded_course.dir)]) == 0
    assert penalty(graded_course) == pytest.approx(2.7)
    assert cli.main(["extend", "choihe", "attention", "--days", "2", "--course-dir", str(graded_course.dir)]) == 0
    out = capsys.readouterr().out
    assert "extend: choihe attention: 2 day(s), due 2026-12-09 23:59 KST" in out and "late penalty 2.7 -> 0" in out
    assert penalty(graded_course) == 0
    assert cli.main(["report", "--course-dir", str(graded_course.dir), "attention"]) == 0
    rows = {r["SIS User ID"]: r for r in csv.DictReader((graded_course.dir / "reports" / "grades.csv").open())}
    assert rows["2026004"]["attention"] == "27"
    report = (graded_course.dir / "reports" / "report.html").read_text(encoding="utf-8")
    assert "27 연장 2일" in report and "기한 연장 1명" in report
    assert cli.main(["extend", "choihe", "attention", "--days", "0", "--course-dir", str(graded_course.dir)]) == 0
    assert penalty(graded_course) == pytest.approx(5.4)                       # taken back: late again


def test_nbgraders_own_late_penalty_counts_from_the_extended_date(graded_course):
    """An extension granted before grading (the submission's row made to carry it): nbgrader's
    ``AssignLatePenalties`` with the course's ``PercentPerDay``, as autograde runs it, gives no penalty to a hand-in
    within the extension, and the usual one past it."""
    import nbformat
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import AssignLatePenalties
    from traitlets.config import Config

    from autograder import settings

    granted = extensions.grant(graded_course.db_url, "jungsw", "attention", days=2)
    assert (granted.graded, granted.due) == (False, dt.datetime(2026, 12, 9, 14, 59))
    data = _grades(graded_course)
    assert "attention" not in next(r for r in data["students"] if r["id"] == "jungsw")["assignments"]

    def autograde(hours_after_due: float) -> float:   # what nbgrader's autograde does to the row, then its penalty
        with Gradebook(graded_course.db_url) as gb:
            sub = gb.update_or_create_submission("attention", "jungsw",
                                                 timestamp=dt.datetime(2026, 12, 7, 14, 59)
                                                 + dt.timedelta(hours=hours_after_due))
            for grade in sub.notebooks[0].grades:
                grade.auto_score, grade.needs_manual_grade = grade.max_score, False
            gb.db.commit()
        rules = settings.load().late_penalty
        config = Config({"AssignLatePenalties": {"plugin_class": "autograder.gradebook.late.PercentPerDay"},
                         "PercentPerDay": {"percent_per_day": rules.percent_per_day}})
        resources = {"nbgrader": {"notebook": "attention", "assignment": "attention", "student": "jungsw",
                                  "db_url": graded_course.db_url}}
        AssignLatePenalties(config=config).preprocess(nbformat.v4.new_notebook(), resources)
        return penalty(graded_course, "jungsw")

    assert autograde(40) == 0                           # 40 h after the due date, within the 2-day extension
    assert autograde(50) == pytest.approx(2.7)          # 2 h past the extension: one started day, -10 % of 27


def _grades(course):
    from autograder.feedback import instructor

    return instructor.collect_grades(course.db_url, ["attention"], course.dir)


def test_the_feedback_page_says_the_extension(graded_course):
    """The feedback exporter reads the student's extension from the gradebook: its length and the new due date in
    the course's time zone, in Korean; a student without one sees no such line."""
    import nbformat

    from autograder.feedback import html as feedback_html
    from autograder.messages import Label

    extensions.grant(graded_course.db_url, "choihe", "attention", days=2, hours=12)
    nb = nbformat.v4.new_notebook()

    def page(student):
        resources = {"nbgrader": {"notebook": "attention", "assignment": "attention", "student": student,
                                  "db_url": graded_course.db_url, "score": 27, "max_score": 27, "late_penalty": 0}}
        return feedback_html.FeedbackExporter().from_notebook_node(nb, resources)[0]

    said = Label.EXTENSION.korean(days="2일 12시간", due="2026-12-10 11:59 KST")
    assert said in page("choihe") and "class=\"extension\"" not in page("kimmj")


def extensions_given(course) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url) as gb:
        return {(s.assignment.name, s.student.id): s.extension for a in gb.assignments
                for s in gb.assignment_submissions(a.name)}


def test_extend_refuses_unknown_names_and_changes_nothing(graded_course, capsys):
    before = extensions_given(graded_course)
    for argv, said in ((["extend", "chohe", "attention"], "unknown student 'chohe' (did you mean 'choihe'?)"),
                       (["extend", "choihe", "atention"], "unknown assignment 'atention'")):
        assert cli.main([*argv, "--days", "1", "--course-dir", str(graded_course.dir)]) == 2
        assert said in capsys.readouterr().err
    assert extensions_given(graded_course) == before and not any(before.values())


def test_extend_makes_the_students_feedback_again(graded_course, monkeypatch, capsys):
    """Where the student's feedback exists, ``extend`` makes it again with nbgrader (``generate_feedback --student
    --force`` on the course's gradebook: the page then carries the new penalty and the extension) and says to
    release it."""
    from autograder import course

    ran = []
    monkeypatch.setattr(course, "nbgrader", lambda *args, **kw: ran.append((args, kw["env"])) or
                        type("Done", (), {"returncode": 0, "stdout": "", "stderr": ""})())
    assert cli.main(["extend", "choihe", "attention", "--days", "2", "--course-dir", str(graded_course.dir)]) == 0
    assert ran == []                                                  # no feedback made yet: nothing to make again
    (graded_course.dir / "feedback" / "choihe" / "attention").mkdir(parents=True)
    assert cli.main(["extend", "choihe", "attention", "--days", "3", "--course-dir", str(graded_course.dir)]) == 0
    assert ran == [(("generate_feedback", "attention", "--student", "choihe", "--force"),
                    {"COURSE_DB_URL": graded_course.db_url})]
    assert "release it: nbgrader release_feedback attention --student choihe" in capsys.readouterr().out
