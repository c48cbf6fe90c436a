"""Extensions: ``python -m autograder extend STUDENT ASSIGNMENT --days N [--hours H]``.

nbgrader's gradebook keeps an extension per submission (``SubmittedAssignment.extension``, set by
``Gradebook.grant_extension``); the submission's due date is then the assignment's plus the extension, and
``total_seconds_late``, which nbgrader's ``AssignLatePenalties`` hands to the course's late penalty
(``late.PercentPerDay``), counts from there. This command sets it, and everything that shows a grade follows:

* before the student hands in (no submission yet): the submission's row is made now, empty, to carry the extension;
  autograde fills it in later (nbgrader updates the row, the extension stays) and the penalty counts from the new
  date. An ungraded row is no submission to the report or the LMS files (``instructor.collect_grades``).
* after grading: the late penalty of each of the submission's notebooks is computed again at once, as
  ``AssignLatePenalties`` does (the same plugin, the same bounds), so formgrader, ``report`` and the grades CSV show
  the new score without grading again; where the student's feedback was made, it is made again
  (``nbgrader generate_feedback --student``), and the command says to release it.

``--days 0`` (and no hours) takes an extension back. Extensions do not add up (nbgrader's rule): the last one given
is the one that counts.
"""
from __future__ import annotations

import datetime as dt
import warnings
from dataclasses import dataclass
from pathlib import Path

from autograder import course, names, settings


@dataclass
class Granted:
    """What ``grant`` did: the new due date (UTC, as nbgrader keeps it), the penalty before and after, and whether
    the student had handed in (and been graded)."""

    student: str
    assignment: str
    extension: dt.timedelta | None
    due: dt.datetime | None
    graded: bool
    penalty_before: float = 0.0
    penalty_after: float = 0.0


def late_penalty_plugin():
    """The course's late penalty as ``AssignLatePenalties`` makes it (``course_config.py``: ``late_penalty``)."""
    from autograder.gradebook.late import PercentPerDay

    rules = settings.load().late_penalty
    return PercentPerDay(percent_per_day=rules.percent_per_day, grace_minutes=rules.grace_minutes,
                         max_percent=rules.max_percent)


def penalties_again(submission, plugin) -> None:
    """Each notebook's late penalty of ``submission`` from its (new) due date, as nbgrader's ``AssignLatePenalties``
    computes it: none when on time, else the plugin's, within ``[0, the notebook's score]``."""
    late = submission.total_seconds_late
    for notebook in submission.notebooks:
        penalty = None
        if late > 0:
            penalty = plugin.late_submission_penalty(submission.student.id, notebook.score, late)
            if penalty is not None:
                penalty = min(max(penalty, 0.0), notebook.score)
        notebook.late_submission_penalty = penalty


def grant(db_url: str, student: str, assignment: str, days: float = 0.0, hours: float = 0.0) -> Granted:
    """Give ``student`` an extension of ``days`` and ``hours`` on ``assignment`` (none: take it back) in the gradebook
    at ``db_url``, and compute the late penalty again where the submission is graded. Unknown names are
    ``names.UnknownName`` (nothing changed)."""
    from nbgrader.api import Gradebook, MissingEntry

    names.require("assignment", [assignment], settings.load().assignments, "course_config.py")
    if days < 0 or hours < 0:
        raise ValueError("an extension is not negative (--days 0 takes one back)")
    with Gradebook(db_url) as gb:
        names.require("student", [student], [s.id for s in sorted(gb.students, key=lambda s: s.id)], "the gradebook")
        names.require("assignment", [assignment], [a.name for a in gb.assignments],
                      "the gradebook (nbgrader generate_assignment adds one)")
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            with warnings.catch_warnings():   # SQLAlchemy's autoflush notes inside nbgrader's add_submission
                warnings.filterwarnings("ignore", module="nbgrader")
                submission = gb.add_submission(assignment, student)   # carries the extension until the hand-in
        before = submission.late_submission_penalty or 0.0
        gb.grant_extension(assignment, student, days=days, hours=hours)
        submission = gb.find_submission(assignment, student)
        graded = any(g.auto_score is not None or g.manual_score is not None
                     for nb in submission.notebooks for g in nb.grades)
        if graded:
            penalties_again(submission, late_penalty_plugin())
            gb.db.commit()
            submission = gb.find_submission(assignment, student)
        return Granted(student, assignment, submission.extension, submission.duedate, graded, before,
                       submission.late_submission_penalty or 0.0)


def local(moment: dt.datetime | None) -> str:
    """A UTC time of the gradebook in the course's time zone (``2026-12-09 23:59 KST``)."""
    if moment is None:
        return "no due date"
    from zoneinfo import ZoneInfo

    return moment.replace(tzinfo=dt.timezone.utc).astimezone(ZoneInfo(settings.load().timezone)) \
        .strftime("%Y-%m-%d %H:%M %Z")


def main(student: str, assignment: str, days: float, hours: float = 0.0, course_dir=".",
         db_url: str | None = None) -> int:
    """``python -m autograder extend``: grant, say what changed, make the student's feedback again where it exists."""
    course_dir = Path(course_dir).resolve()
    url = course.gradebook_url(course_dir, db_url)
    done = grant(url, student, assignment, days, hours)
    given = f"{days:g} day(s)" + (f" {hours:g} hour(s)" if hours else "") if done.extension else "no extension"
    print(f"extend: {student} {assignment}: {given}, due {local(done.due)}")
    if not done.graded:
        print("  not graded yet: the late penalty will count from this date when it is graded")
        return 0
    print(f"  late penalty {done.penalty_before:g} -> {done.penalty_after:g} (formgrader, report and the grades CSV "
          "show it now)")
    if (course_dir / "feedback" / student / assignment).is_dir():
        proc = course.nbgrader("generate_feedback", assignment, "--student", student, "--force", cwd=course_dir,
                               env={"COURSE_DB_URL": url}, check=False)
        if proc.returncode != 0:
            print(f"  the feedback could not be made again: {(proc.stdout + proc.stderr).strip()[-2000:]}")
            return 1
        print(f"  feedback made again; release it: nbgrader release_feedback {assignment} --student {student}")
    return 0
