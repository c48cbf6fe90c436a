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
    c = server.load_config(server.Start.of(layout, [p.username for p in people if p.role == "student"],
                                           [p.username for p in people if p.role == "instructor"]), tmp_path)
    assert c.Authenticator.allowed_users == {"kimmj", "leesy", "parkprof"}
    assert c.JupyterHub.load_groups == {layout.formgrade_group: {"users": ["parkprof"]}}


def test_release_writes_names_student_numbers_and_due_dates_into_the_gradebook(tmp_path, monkeypatch):
    """``provision.GRADEBOOK_SYNC`` (what the grading account runs at release) on a gradebook that nbgrader's
    generate_assignment left without due dates: formgrader then shows the course's due date and the names. The
    script runs in this process (its own interpreter would only import nbgrader again), its gradebooks stamped with
    the migration head read in the process as the course's nbgrader does (``head_in_process``)."""
    import nbgrader.api
    from nbgrader.api import Gradebook

    from autograder.patches.gradebook import head_in_process

    monkeypatch.setattr(nbgrader.api, "get_alembic_version", nbgrader.api.get_alembic_version)   # put back after
    head_in_process()
    db = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(db) as gb:
        for name in settings.course()["assignments"]:
            gb.update_or_create_assignment(name)
        gb.update_or_create_student("kimmj")
    task = {"add": [p.gradebook() for p in roster.generated(["s1"], [])] +
            [roster.Person("kimmj", "2026001", "김", "민준").gradebook()],
            "remove": [], "due_dates": provision.due_dates_utc(settings.course()["due_dates"])}
    monkeypatch.setattr(sys, "argv", ["-c", db, json.dumps(task)])
    exec(compile(provision.GRADEBOOK_SYNC, "GRADEBOOK_SYNC", "exec"), {"__name__": "__main__"})
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
    c = server.load_config(server.Start.of(layout, ["kimmj"], ["parkprof"]), tmp_path)
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


# ------------------------------------------------------------------------------------------------ names refused
def entry(name: str, uid: int, home: str = ""):
    import pwd

    return pwd.struct_passwd((name, "x", uid, uid, "", home or f"/home/{name}", "/bin/bash"))


def test_the_roster_refuses_system_accounts_others_accounts_and_the_hubs_own_names(tmp_path):
    """H8: an instructor's roster naming root, sync, daemon, postgres, nobody, the grading account or the course id
    is refused before anything is made, every refused name listed with its line and why; so is an account of the
    machine that this hub did not make and a name whose Unix group exists. New names and the hub's own earlier
    accounts pass."""
    import grp
    import pwd

    layout = Layout.for_course(namespace="hubroster")
    system = {"root": 0, "sync": 4, "daemon": 1, "postgres": 101, "nobody": 65534}
    others = {"leeta": entry("leeta", 1001), "kimmj": entry("kimmj", 1002)}     # leeta: a TA's own account

    def user(name):
        if name in system:
            return entry(name, system[name])
        if name in others:
            return others[name]
        raise KeyError(name)

    def group(name):
        if name in ("shadow", "docker"):
            return grp.struct_group((name, "x", 42, []))
        raise KeyError(name)

    rows = ["root", "sync", "daemon", "postgres", "nobody", layout.grader, layout.course_id, "ngshare", "leeta",
            "shadow", "kimmj", "parkjh"]
    path = tmp_path / "roster.csv"
    path.write_text("username,role\n" + "".join(f"{u},student\n" for u in rows), encoding="utf-8")
    people = roster.read(path)
    refused = {p.username: why for p, why in roster.refusals(people, layout, made={"kimmj"}, user=user, group=group,
                                                             uids=(1000, 60000))}
    assert set(refused) == set(rows) - {"kimmj", "parkjh"}, refused     # kimmj: this hub made it; parkjh: new
    assert refused["root"] == "a system account (uid 0)" and refused["nobody"] == "a system account (uid 65534)"
    assert "grading account" in refused[layout.grader] and "course id" in refused[layout.course_id]
    assert refused["leeta"].startswith("an existing account this hub did not make (uid 1001")
    assert refused["shadow"].startswith("a group of that name exists")
    with pytest.raises(roster.RosterError) as caught:
        roster.check(people, layout, {"kimmj"}, source=str(path), user=user, group=group, uids=(1000, 60000))
    message = str(caught.value)
    assert message.startswith(f"{path}: 10 name(s) refused")
    assert "line 2: root: a system account (uid 0)" in message and "line 10: leeta: an existing account" in message
    assert "kimmj" not in message and "parkjh" not in message
    # the machine's own look-ups: root, daemon and sync are the system's here too
    real = {p.username for p, _ in roster.refusals(people, layout, made=set())}
    assert {"root", "daemon", "sync", "nobody", layout.grader} <= real and "parkjh" not in real
    assert pwd.getpwnam("root").pw_uid == 0


def test_uid_range_is_read_from_login_defs(tmp_path):
    defs = tmp_path / "login.defs"
    defs.write_text("# comment\nUID_MIN\t\t\t 2000\nUID_MAX  30000\nGID_MIN 1000\n")
    assert roster.uid_range(defs) == (2000, 30000)
    assert roster.uid_range(tmp_path / "missing") == (1000, 60000)


@pytest.mark.skipif(os.geteuid() != 0, reason="the hub command runs as root")
def test_the_hub_command_refuses_such_a_roster_before_it_makes_anything(tmp_path):
    """``python -m autograder hub --roster`` with root and the grading account in it: exit status 2, the English
    reasons, and nothing made (no account, no state folder)."""
    from autograder.hub import accounts

    layout = Layout.for_course(namespace="hubroster")
    path = tmp_path / "roster.csv"
    path.write_text(f"username,role\nhubroster-kim,student\nroot,student\n{layout.grader},instructor\n",
                    encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "autograder", "hub", "--namespace", "hubroster", "--roster",
                          str(path), "--port", "18990", "--ip", "127.0.0.1"], capture_output=True, text=True,
                         timeout=120,
                         cwd=Path(__file__).resolve().parents[2])
    assert run.returncode == 2, run.stdout + run.stderr
    assert "2 name(s) refused" in run.stderr and "line 3: root: a system account (uid 0)" in run.stderr
    assert f"line 4: {layout.grader}: the course's grading account" in run.stderr
    assert not accounts.exists("hubroster-kim") and not layout.state.exists()


def test_the_accounts_the_hub_made_are_written_down(tmp_path):
    """``accounts.record`` keeps the list (root only); a state folder of an earlier version, without the list, counts
    the people's accounts of its passwords.txt as made, never a system account that an old roster named."""
    from autograder.hub import accounts

    state = tmp_path / "state"
    state.mkdir()
    (state / "passwords.txt").write_text("root pw\nnosuchaccount-x pw\n")
    assert accounts.made(state) == set()                     # root: the system's; the other does not exist
    accounts.record(state, "hubroster-kim")
    accounts.record(state, "hubroster-lee")
    assert accounts.made(state) == {"hubroster-kim", "hubroster-lee"}
    assert (state / accounts.MADE).stat().st_mode & 0o777 == 0o600
