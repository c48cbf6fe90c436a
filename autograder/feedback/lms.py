"""The grades an LMS imports as they are (``python -m autograder report``): ``reports/grades.csv`` for Canvas's
gradebook import, ``reports/grades-moodle.csv`` for Moodle's "Import grades: CSV file", and nbgrader's own
``nbgrader export`` (``CsvExport``), every cell of text formula-safe.

**Canvas.** Canvas's importer (its ``GradebookImporter``) reads the first row as the header: ``Student``, ``ID``,
``SIS User ID``, ``SIS Login ID``, ``Section``, and then every other column is an assignment, matched by the id in
``Title (id)`` where there is one, else by the exact title, else created as a new assignment: a text column (a
``review`` note) would become an assignment. A row whose first cell is ``Points Possible`` gives the maxima. A
student is found by the ``ID`` (Canvas's own user id), else the SIS user id, else the login, else the name. A blank
grade is no grade. So this file has exactly those five columns, then one column per assignment: ``attention
(1234)`` where ``COURSE["lms"]["canvas_assignment_ids"]`` gives Canvas's id, else the assignment's name; the SIS
User ID is the roster's student number (the gradebook's ``lms_user_id``; the nbgrader id where there is none), the
SIS Login ID the e-mail; the Section the roster's (``--roster``; else ``COURSE["lms"]["section"]``). A score with a
written answer still waiting for a person (``needs_manual_grade``) is left blank, never counted as 0: the report and
the command's output say who waits (``pending``). ``tests/feedback/test_lms.py`` reads the file with those rules.

**Moodle.** One row per student: ``ID number`` (the student number), ``Username``, ``Email address``, ``First
name``, ``Last name`` and one column per assignment; in Moodle's import the instructor maps ``ID number`` (or the
e-mail) to the user and each assignment column to a grade item. Pending and missing grades are blank.

**Excel.** With ``bom`` (``report --bom``) the files start with UTF-8's byte-order mark, which Korean Windows Excel
needs to read UTF-8 (without it: mojibake). Canvas's header check still finds ``Student`` in the first cell.

**Formulas.** A cell of text that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (a roster name
``=HYPERLINK(...)``) is written with a leading apostrophe (``formula_safe``), so that a spreadsheet shows it as text
and never evaluates it. Numbers (scores) are written as numbers.
"""
from __future__ import annotations

import csv
from pathlib import Path

from nbgrader.plugins import CsvExportPlugin

from autograder import outputs, scores

BOM = "\ufeff"
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
CANVAS_STUDENT_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_STUDENT_COLUMNS = ("ID number", "Username", "Email address", "First name", "Last name")


def formula_safe(value) -> str:
    """A cell of text as a spreadsheet shows it, never evaluates it: a leading apostrophe before ``= + - @``, a tab or a
    carriage return (OWASP's "CSV injection" advice). Other text is unchanged.

    Example:
        >>> formula_safe('=HYPERLINK("http://x")')
        '\\'=HYPERLINK("http://x")'
    """
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def canvas_column(assignment: str, ids: dict) -> str:
    """The Canvas column of ``assignment``: ``attention (1234)`` where Canvas's assignment id is configured, which
    Canvas's importer matches whatever the assignment's title there; else the name (matched by exact title only)."""
    return f"{assignment} ({ids[assignment]})" if ids.get(assignment) else assignment


def grade_cell(row: dict, assignment: str) -> str:
    """A student's grade of ``assignment`` as an LMS reads it: the net score; blank when not handed in or while a
    written answer waits for a person (a blank is "no grade", never 0)."""
    graded = row["assignments"].get(assignment)
    if graded is None or graded.get("pending"):
        return ""
    return scores.text(graded["score"])


def _lms():
    from autograder import settings

    return settings.load().lms


def write_grades_csv(data: dict, path: Path, bom: bool = False, canvas_ids: dict | None = None,
                     section: str | None = None) -> Path:
    """Canvas's gradebook import file of ``data`` (``instructor.collect_grades``) at ``path``, replaced whole
    (``outputs.replacing``).

    Args:
        data: the class's grades.
        path: where to write it.
        bom: start with UTF-8's byte-order mark (Korean Excel).
        canvas_ids: assignment -> Canvas's assignment id (default: ``COURSE["lms"]["canvas_assignment_ids"]``).
        section: the Section of a student the roster gives none (default: ``COURSE["lms"]["section"]``).
    """
    lms = _lms() if canvas_ids is None or section is None else None
    ids = dict(lms.canvas_assignment_ids if canvas_ids is None else canvas_ids)
    default_section = lms.section if section is None else section
    maxima = [sum(data["exercise_max"].get(a, {}).values()) for a in data["assignments"]]
    rows = [[*CANVAS_STUDENT_COLUMNS, *(canvas_column(a, ids) for a in data["assignments"])],
            ["Points Possible", "", "", "", "", *(scores.text(scores.rounded(m)) for m in maxima)]]
    for row in data["students"]:
        rows.append([formula_safe(row["name"] or row["id"]), "", formula_safe(row.get("number") or row["id"]),
                     formula_safe(row["email"]), formula_safe(row.get("section") or default_section),
                     *(grade_cell(row, a) for a in data["assignments"])])
    return _write(path, rows, bom)


def write_moodle_csv(data: dict, path: Path, bom: bool = False) -> Path:
    """Moodle's grade import file of ``data`` at ``path`` (one row per student; pending and missing grades blank)."""
    rows = [[*MOODLE_STUDENT_COLUMNS, *data["assignments"]]]
    for row in data["students"]:
        rows.append([formula_safe(row.get("number") or ""), formula_safe(row["id"]), formula_safe(row["email"]),
                     formula_safe(row.get("first_name", "")), formula_safe(row.get("last_name", "")),
                     *(grade_cell(row, a) for a in data["assignments"])])
    return _write(path, rows, bom)


def _write(path: Path, rows: list, bom: bool) -> Path:
    with outputs.replacing(path, newline="", encoding="utf-8-sig" if bom else "utf-8") as fh:
        csv.writer(fh).writerows(rows)
    return Path(path)


class CsvExport(CsvExportPlugin):
    """``nbgrader export``'s CSV (``c.ExportApp.plugin_class`` in ``course_config.py``): nbgrader's columns and values,
    written as CSV (nbgrader joins them with commas unquoted: a name with a comma shifted the row), every text cell
    formula-safe, the file replaced whole."""

    def export(self, gradebook) -> None:
        from nbgrader.api import MissingEntry

        keys = ["assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email", "raw_score",
                "late_submission_penalty", "score", "max_score"]
        numbers = {"raw_score", "late_submission_penalty", "score", "max_score"}
        students, assignments = [str(s) for s in self.student], [str(a) for a in self.assignment]
        rows = [keys]
        for assignment in gradebook.assignments:
            if assignments and assignment.name not in assignments:
                continue
            for student in gradebook.students:
                if students and student.id not in students:
                    continue
                score = {"assignment": assignment.name, "duedate": assignment.duedate, "student_id": student.id,
                         "last_name": student.last_name, "first_name": student.first_name, "email": student.email,
                         "max_score": assignment.max_score}
                try:
                    submission = gradebook.find_submission(assignment.name, student.id)
                except MissingEntry:
                    score.update(timestamp="", raw_score=0.0, late_submission_penalty=0.0, score=0.0)
                else:
                    penalty = submission.late_submission_penalty
                    score.update(timestamp=submission.timestamp, raw_score=submission.score,
                                 late_submission_penalty=penalty, score=max(0.0, submission.score - penalty))
                rows.append([("" if score[k] is None else str(score[k])) if k in numbers else formula_safe(score[k])
                             for k in keys])
        self.log.info("Exporting grades to %s", self.to or "grades.csv")
        _write(Path(self.to or "grades.csv"), rows, bom=False)
