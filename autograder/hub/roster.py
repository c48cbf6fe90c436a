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

``check`` refuses, before anything is made, every name the hub must not take over: an account of the system
(a uid below ``UID_MIN`` or above ``UID_MAX`` of ``/etc/login.defs``: ``root``, ``daemon``, ``sync``, ``postgres``,
``nobody``), any other account that exists and that this hub did not make (``accounts.made``), a name whose Unix
group exists already, and the names the hub itself uses (its grading account, the course id, its hub group and
services). The hub would otherwise reset such an account's password, take away its login shell, close its home
and mount a disk image over it.
"""
from __future__ import annotations

import csv
import grp
import pwd
import re
from dataclasses import dataclass, field
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
    line: int = field(default=0, compare=False)         # its line in the roster file (0: not from a file)

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
        person = Person(**{k: v for k, v in values.items() if v}, line=line)
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


def uid_range(login_defs: Path = Path("/etc/login.defs")) -> tuple[int, int]:
    """The uids of people's accounts (``UID_MIN``, ``UID_MAX`` of ``/etc/login.defs``; 1000 and 60000 without
    it): an account outside them is the system's."""
    found = {"UID_MIN": 1000, "UID_MAX": 60000}
    try:
        for line in login_defs.read_text(errors="replace").splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] in found and parts[1].isdigit():
                found[parts[0]] = int(parts[1])
    except OSError:
        pass
    return found["UID_MIN"], found["UID_MAX"]


def hub_names(layout) -> dict[str, str]:
    """The names the hub uses itself, each with what it is."""
    return {layout.grader: "the course's grading account (formgrader runs as it)",
            layout.course_id: "the course id (the exchange knows the grading service by that name)",
            layout.formgrade_group: "the hub group of the instructors",
            layout.EXCHANGE_SERVICE: "the hub's exchange service",
            "idle-culler": "the hub's idle-culler service"}


def refusals(people: list[Person], layout, made: set[str], user=pwd.getpwnam, group=grp.getgrnam,
             uids: tuple[int, int] | None = None) -> list[tuple[Person, str]]:
    """Each person whose name the hub must not take, with why (empty: every name is free or the hub's own).
    ``made``: the accounts this hub made (``accounts.made``); ``user``, ``group``: the system's look-ups."""
    low, high = uids or uid_range()
    reserved = hub_names(layout)
    refused = []
    for person in people:
        name = person.username
        if name in reserved:
            refused.append((person, reserved[name]))
            continue
        try:
            entry = user(name)
        except KeyError:
            entry = None
        if entry is not None:
            if not low <= entry.pw_uid <= high:
                refused.append((person, f"a system account (uid {entry.pw_uid})"))
            elif name not in made:
                refused.append((person, f"an existing account this hub did not make (uid {entry.pw_uid}, home "
                                        f"{entry.pw_dir})"))
            continue
        try:
            entry = group(name)
        except KeyError:
            continue
        if name not in made:
            refused.append((person, f"a group of that name exists (gid {entry.gr_gid}): the account would not get "
                                    "a group of its own"))
    return refused


def check(people: list[Person], layout, made: set[str], source: str = "the class", **lookups) -> None:
    """Raise ``RosterError`` listing every name of ``people`` that ``refusals`` refuses, and why."""
    refused = refusals(people, layout, made, **lookups)
    if refused:
        lines = "\n".join(f"  {f'line {p.line}: ' if p.line else ''}{p.username}: {why}" for p, why in refused)
        raise RosterError(f"{source}: {len(refused)} name(s) refused. The hub would reset each one's password, "
                          "take away its login shell, close its home and mount a disk image over it; give these "
                          f"people other user names:\n{lines}")
