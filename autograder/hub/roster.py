"""The class list of the hub: who logs in, under which name, with which student number (``--roster FILE``).

A roster is a UTF-8 CSV file with a header line; one person per line::

    username,student_id,last_name,first_name,email,role
    kimmj,2026001,김,민준,kimmj@example.ac.kr,student
    leesy,2026002,이,서연,,student
    parkprof,,박,교수,,instructor

* ``username`` (required): the Unix account and hub login, which is also nbgrader's student id (the name on every
  submission): 1-32 of ``a-z 0-9 _ -``, starting with a letter or ``_``.
* ``student_id``: the university's student number, kept as the gradebook's ``lms_user_id`` (exports to an LMS).
* ``last_name``, ``first_name``: shown by formgrader as "last, first" (Korean names: family name, given name).
* ``email``: optional.
* ``role``: ``student`` (default) or ``instructor`` (in the formgrade group: reaches formgrader).
* ``section``: optional, the student's section (분반) as the LMS names it: the Section column of the grades CSV
  (``python -m autograder report --roster FILE``).

``python -m autograder hub --roster FILE`` makes every account (a password each, in the hub's root-only
``passwords.txt``), lets exactly these people log in, and puts every student with their names into the gradebook.
Without a roster the hub makes ``student1``..``studentN`` and ``instructor1``/``instructor2``.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

USERNAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
COLUMNS = ("username", "student_id", "last_name", "first_name", "email", "role", "section")
ROLES = ("student", "instructor")


class RosterError(ValueError):
    """A roster that cannot be used (the message names the file and line)."""


@dataclass(frozen=True)
class Person:
    username: str
    student_id: str = ""
    last_name: str = ""
    first_name: str = ""
    email: str = ""
    role: str = "student"
    section: str = ""

    def gradebook(self) -> dict:
        """The gradebook's fields of this student (nbgrader's ``Student``)."""
        return {"id": self.username, "last_name": self.last_name or None, "first_name": self.first_name or None,
                "email": self.email or None, "lms_user_id": self.student_id or None}


def read(path: Path) -> list[Person]:
    """The people of a roster file, checked: known columns, valid and unique user names, known roles."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise RosterError(f"{path}: cannot read it as UTF-8 text ({exc})") from exc
    rows = csv.DictReader(text.splitlines())
    header = [h.strip() for h in rows.fieldnames or []]
    if "username" not in header:
        raise RosterError(f"{path}: the first line must name the columns, 'username' among them "
                          f"(known: {', '.join(COLUMNS)})")
    unknown = [h for h in header if h not in COLUMNS]
    if unknown:
        raise RosterError(f"{path}: unknown column(s) {', '.join(unknown)} (known: {', '.join(COLUMNS)})")
    people, seen = [], set()
    for line, row in enumerate(rows, start=2):
        values = {k.strip(): (v or "").strip() for k, v in row.items() if k}
        if not any(values.values()):
            continue
        person = Person(**{k: v for k, v in values.items() if v})
        if not USERNAME.match(person.username):
            raise RosterError(f"{path}, line {line}: user name {person.username!r}: 1-32 of a-z 0-9 _ -, "
                              "a letter or _ first")
        if person.role not in ROLES:
            raise RosterError(f"{path}, line {line}: role {person.role!r}: one of {', '.join(ROLES)}")
        if person.username in seen:
            raise RosterError(f"{path}, line {line}: {person.username} is listed twice")
        seen.add(person.username)
        people.append(person)
    if not any(p.role == "student" for p in people):
        raise RosterError(f"{path}: no student in it")
    return people


def generated(students: list[str], instructors: list[str]) -> list[Person]:
    """The made-up class of a hub without a roster (names that say what they are)."""
    return [*(Person(u, last_name="교수자", first_name=str(i), role="instructor")
              for i, u in enumerate(instructors, 1)),
            *(Person(u, last_name="학생", first_name=str(i)) for i, u in enumerate(students, 1))]
