"""The hub's class list and its gradebook (issue 20, item 4), without a hub: the roster file, the accounts and
groups it becomes in the hub's config, and what the release step writes into the gradebook (names, student
numbers, the course's due dates)."""
from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from traitlets.config import Config

from autograder import settings
from autograder.hub import provision, roster, server
from autograder.hub.layout import Layout

ROSTER = """username,student_id,last_name,first_name,email,role
kimmj,2026001,김,민준,kimmj@example.ac.kr,student
leesy,2026002,이,서연,,
parkprof,,박,교수,,instructor
"""


def test_a_roster_becomes_people(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text(ROSTER, encoding="utf-8")
    people = roster.read(path)
    assert [p.username for p in people] == ["kimmj", "leesy", "parkprof"]
    assert [p.role for p in people] == ["student", "student", "instructor"]
    assert people[0].gradebook() == {"id": "kimmj", "last_name": "김", "first_name": "민준",
                                     "email": "kimmj@example.ac.kr", "lms_user_id": "2026001"}
    assert people[1].gradebook()["email"] is None


@pytest.mark.parametrize("text, error", [
    ("user,last_name\nkim,김\n", "'username'"),
    ("username,nickname\nkim,k\n", "unknown column"),
    ("username\nKim Min\n", "line 2: user name 'Kim Min'"),
    ("username\n../root\n", "user name '../root'"),
    ("username,role\nkim,student\nkim,student\n", "line 3: kim is listed twice"),
    ("username,role\nkim,admin\n", "role 'admin'"),
    ("username,role\nprof,instructor\n", "no student"),
], ids=["no-username-column", "unknown-column", "space-in-name", "path-in-name", "twice", "bad-role", "no-student"])
def test_a_bad_roster_is_refused_with_its_line(tmp_path, text, error):
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(roster.RosterError, match=error):
        roster.read(path)


def test_the_roster_decides_who_logs_in_and_who_grades(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text(ROSTER, encoding="utf-8")
    people = roster.read(path)
    layout = Layout.for_course()
    namespace = {"get_config": Config}
    text = server.config_text(layout, [p.username for p in people if p.role == "student"],
                              [p.username for p in people if p.role == "instructor"])
    exec(compile(text, "jupyterhub_config.py", "exec"), namespace)
    c = namespace["c"]
    assert c.Authenticator.allowed_users == {"kimmj", "leesy", "parkprof"}
    assert c.JupyterHub.load_groups == {layout.formgrade_group: {"users": ["parkprof"]}}


def test_release_writes_names_student_numbers_and_due_dates_into_the_gradebook(tmp_path, monkeypatch):
    """``provision.GRADEBOOK_SYNC`` (what the grading account runs at release) on a gradebook that nbgrader's
    generate_assignment left without due dates: formgrader then shows the course's due date and the names."""
    from nbgrader.api import Gradebook

    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")   # nbgrader's alembic
    db = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(db) as gb:
        for name in settings.course()["assignments"]:
            gb.update_or_create_assignment(name)
        gb.update_or_create_student("kimmj")
    task = {"add": [p.gradebook() for p in roster.generated(["s1"], [])] +
            [roster.Person("kimmj", "2026001", "김", "민준").gradebook()],
            "remove": [], "due_dates": provision.due_dates_utc(settings.course()["due_dates"])}
    run = subprocess.run([sys.executable, "-c", provision.GRADEBOOK_SYNC, db, json.dumps(task)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    with Gradebook(db) as gb:
        for name, due in settings.course()["due_dates"].items():
            local = dt.datetime.strptime(due, "%Y-%m-%d %H:%M:%S %z")
            assert gb.find_assignment(name).duedate == local.astimezone(dt.timezone.utc).replace(tzinfo=None)
        kim = gb.find_student("kimmj")
        assert (kim.last_name, kim.first_name, kim.lms_user_id) == ("김", "민준", "2026001")
        assert (gb.find_student("s1").last_name, gb.find_student("s1").first_name) == ("학생", "1")


def test_due_dates_are_read_with_their_offset():
    """nbgrader's parse_utc reads "+0900" as 900 seconds: 2026-12-07 23:59 KST would become 23:44 UTC, 8 h 45 min
    late. The hub's release parses the course's due dates itself."""
    from nbgrader.utils import parse_utc

    assert parse_utc("2026-12-07 23:59:00 +0900") == dt.datetime(2026, 12, 7, 23, 44)     # nbgrader's reading
    assert provision.due_dates_utc({"a": "2026-12-07 23:59:00 +0900", "b": "2026-12-07T23:59:00+09:00"}) == \
        {"a": "2026-12-07T14:59:00", "b": "2026-12-07T14:59:00"}
    with pytest.raises(ValueError, match="no time zone"):
        provision.due_dates_utc({"a": "2026-12-07 23:59:00"})


def test_students_lab_leaves_out_create_assignment_and_the_login_page_speaks_korean(tmp_path):
    """The hub's config: a pre-spawn hook gives students (not instructors) a Jupyter config folder whose
    page_config disables nbgrader's Create Assignment; the login page template is the package's Korean one, its
    words from autograder/messages.py."""
    from types import SimpleNamespace

    from autograder.messages import Label

    layout = Layout.for_course(env=tmp_path / "env")
    namespace = {"get_config": Config}
    exec(compile(server.config_text(layout, ["kimmj"], ["parkprof"]), "jupyterhub_config.py", "exec"), namespace)
    c = namespace["c"]
    spawned = {}
    for user in ("kimmj", "parkprof"):
        spawner = SimpleNamespace(user=SimpleNamespace(name=user), environment={"PATH": "/usr/bin"})
        c.Spawner.pre_spawn_hook(spawner)
        spawned[user] = spawner.environment
    assert spawned["kimmj"]["JUPYTER_CONFIG_PATH"] == str(provision.students_config_dir(layout))
    assert "JUPYTER_CONFIG_PATH" not in spawned["parkprof"]
    page = json.loads(provision.students_page_config(layout).read_text())
    assert page == {"disabledExtensions": {"@jupyter/nbgrader:create-assignment": True}}
    assert c.JupyterHub.template_vars["ko"]["sign_in"] == Label.SIGN_IN.korean()
    login = (server.TEMPLATES / "login.html").read_text()
    assert c.JupyterHub.template_paths == [str(server.TEMPLATES)]
    for field in ("username_input", "password_input", "login_submit", "ko.sign_in", "ko.username", "ko.password"):
        assert field in login


def test_formgrader_shows_due_dates_in_the_courses_time_zone(root, tmp_path, monkeypatch):
    """Formgrader's API (configured by the course's nbgrader_config.py) shows 2026-12-07 23:59 KST as that, not as
    "2026-12-07 14:59:00 UTC"."""
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")   # nbgrader's alembic
    db = f"sqlite:///{tmp_path / 'gradebook.db'}"
    due = provision.due_dates_utc({"attention": settings.course()["due_dates"]["attention"]})["attention"]
    with Gradebook(db) as gb:
        gb.update_or_create_assignment("attention", duedate=dt.datetime.fromisoformat(due))
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    config.CourseDirectory.root, config.CourseDirectory.db_url = str(tmp_path), db
    config.Exchange.root = str(tmp_path / "exchange")
    (tmp_path / "source" / "attention").mkdir(parents=True)
    (tmp_path / "exchange").mkdir()
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    assignment = api.get_assignment("attention")
    assert assignment["display_duedate"] == "2026-12-07 23:59:00 KST", assignment
    assert assignment["duedate_notimezone"] == "2026-12-07T23:59:00" and assignment["duedate_timezone"] == "+0900"
