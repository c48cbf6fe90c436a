"""Late penalties, applied by nbgrader's ``AssignLatePenalties`` (configured in ``course_config.py``), and their sums
as formgrader shows scores (``LatePenalties``, ``net_answer``: used by ``autograder.patches.formgrader``)."""
from __future__ import annotations

from dataclasses import dataclass

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float

from autograder import scores


class PercentPerDay(LateSubmissionPlugin):
    """Deduct a percentage of the score for every started day past the due date, after a grace period."""

    percent_per_day = Float(10.0, help="Percent of the score deducted per started day late.").tag(config=True)
    grace_minutes = Float(0.0, help="Minutes after the due date that still count as on time.").tag(config=True)
    max_percent = Float(100.0, help="The most that late penalties may take, in percent.").tag(config=True)

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        days, percent, penalty = scores.late_penalty(score, total_seconds_late, self.percent_per_day,
                                                     self.grace_minutes, self.max_percent)
        if not penalty:
            return 0.0
        self.log.info("Late penalty for %s: %d day(s) late, -%g%% = -%g points", student_id, days, percent, penalty)
        return penalty


@dataclass
class LatePenalties:
    """Every positive late penalty of a gradebook, summed the ways formgrader's pages show scores."""

    by_notebook_submission: dict
    by_submission: dict             # (assignment, student)
    by_student: dict
    by_assignment: dict
    by_notebook: dict               # (assignment, notebook)

    @classmethod
    def read(cls, gb) -> "LatePenalties":
        from nbgrader.api import Assignment, Notebook, Student, SubmittedAssignment, SubmittedNotebook

        rows = (gb.db.query(SubmittedNotebook.id, Assignment.name, Notebook.name, Student.id,
                            SubmittedNotebook.late_submission_penalty)
                .join(SubmittedAssignment, SubmittedNotebook.assignment)
                .join(Notebook, SubmittedNotebook.notebook)
                .join(Assignment, SubmittedAssignment.assignment)
                .join(Student, SubmittedAssignment.student)
                .filter(SubmittedNotebook.late_submission_penalty > 0).all())
        found = cls({}, {}, {}, {}, {})
        for nb_id, assignment, notebook, student, penalty in rows:
            found.by_notebook_submission[nb_id] = penalty
            for table, key in ((found.by_submission, (assignment, student)), (found.by_student, student),
                               (found.by_assignment, assignment), (found.by_notebook, (assignment, notebook))):
                table[key] = table.get(key, 0.0) + penalty
        return found


def net(entry: dict | None, penalty: float) -> None:
    """``entry``'s score net of ``penalty`` (once: an entry that carries its penalty is left alone)."""
    if not entry or "late_submission_penalty" in entry or entry.get("score") is None:
        return
    entry["late_submission_penalty"] = penalty
    entry["score"] = max(0.0, entry["score"] - penalty)


def average(entry: dict | None, total: float, count: int) -> None:
    """An entry's ``average_score`` net of ``total`` penalties over ``count`` submissions (once)."""
    if entry and total and count and entry.get("average_score") and "late_submission_penalty" not in entry:
        entry["late_submission_penalty"] = total / count
        entry["average_score"] = max(0.0, entry["average_score"] - total / count)


def net_answer(api, method: str, answer, arguments: dict, late: LatePenalties) -> None:
    """Formgrader's ``answer`` of ``NbGraderAPI.<method>`` (called with ``arguments``), net of ``late`` in place."""
    assignment = arguments.get("assignment_id")
    if method == "get_assignment":
        total = late.by_assignment.get(assignment, 0.0)
        if total:
            with api.gradebook as gb:
                count = gb.find_assignment(assignment).num_submissions
            average(answer, total, count)
    elif method == "get_notebooks":
        for entry in answer:
            total = late.by_notebook.get((assignment, entry.get("name")), 0.0)
            if total:
                with api.gradebook as gb:
                    count = gb.find_notebook(entry["name"], assignment).num_submissions
                average(entry, total, count)
    elif method == "get_submission":
        net(answer, late.by_submission.get((assignment, arguments["student_id"]), 0.0))
    elif method == "get_submissions":
        for entry in answer:
            net(entry, late.by_submission.get((assignment, entry["student"]), 0.0))
    elif method in ("get_notebook_submissions", "get_student_notebook_submissions"):
        for entry in answer:
            net(entry, late.by_notebook_submission.get(entry.get("id"), 0.0))
    elif method == "get_student":
        net(answer, late.by_student.get(arguments["student_id"], 0.0))
    elif method == "get_students":
        for entry in answer:
            net(entry, late.by_student.get(entry["id"], 0.0))
    else:
        raise ValueError(f"no late penalties for NbGraderAPI.{method}")
