"""The hub's exchange without a hub: what the exchange service accepts of a submission when it arrives
(autograder/hub/exchange_service.py), ngshare on SQLAlchemy 2, and the grading side's collect and release of
feedback (autograder/hub/exchange.py), which go on past a submission they cannot take. tests/hub/live/ run the same
through a real hub, from the students' own accounts."""
from __future__ import annotations

import base64
import dataclasses
import json
import logging
import os

import pytest

os.environ.setdefault("USER", "nobody")      # ngshare-exchange reads $JUPYTERHUB_USER or $USER when imported
pytest.importorskip("ngshare_exchange")

from autograder import settings  # noqa: E402
from autograder.hub import exchange, exchange_service  # noqa: E402
from autograder.messages import Reason  # noqa: E402

LIMITS = dataclasses.replace(settings.load().exchange, max_submission_mb=1, max_files=5, max_submissions=3,
                             max_stored_mb=0)
NB = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def ngshare_path_ok(path: str) -> bool:
    from ngshare.ngshare import MyHelpers

    return MyHelpers().path_check(path)


def check(files) -> list:
    return exchange_service.check_submission(files if isinstance(files, str) else json.dumps(files), LIMITS,
                                             ngshare_path_ok)


def test_a_plain_submission_is_accepted():
    files = check([{"path": "attention.ipynb", "content": b64(NB)}, {"path": "data/x.npy", "content": b64(b"1")}])
    assert [f["path"] for f in files] == ["attention.ipynb", "data/x.npy"]


@pytest.mark.parametrize("files, reason", [
    (None, Reason.MALFORMED_SUBMISSION),
    ("not json", Reason.MALFORMED_SUBMISSION),
    ({"path": "a"}, Reason.MALFORMED_SUBMISSION),
    ([{"path": "a.ipynb"}], Reason.MALFORMED_SUBMISSION),
    ([{"path": f"f{i}", "content": ""} for i in range(6)], Reason.TOO_MANY_FILES),
    ([{"path": "big", "content": b64(bytes(1_000_001))}], Reason.SUBMISSION_TOO_BIG),
    ([{"path": "a", "content": b64(bytes(600_000))}, {"path": "b", "content": b64(bytes(600_000))}],
     Reason.SUBMISSION_TOO_BIG),
    ([{"path": "../x", "content": ""}], Reason.BAD_FILE_NAME),
    ([{"path": "/etc/passwd", "content": ""}], Reason.BAD_FILE_NAME),
    ([{"path": "a//b", "content": ""}], Reason.BAD_FILE_NAME),
    ([{"path": "", "content": ""}], Reason.BAD_FILE_NAME),
    ([{"path": "a\nb", "content": ""}], Reason.BAD_FILE_NAME),
    ([{"path": "x" * 300, "content": ""}], Reason.BAD_FILE_NAME),
    ([{"path": "a", "content": ""}, {"path": "a", "content": ""}], Reason.BAD_FILE_NAME),
], ids=["none", "not-json", "not-a-list", "no-content", "too-many", "too-big", "too-big-together",
        "dotdot", "absolute", "empty-part", "empty", "newline", "long", "twice"])
def test_a_bad_submission_is_refused_with_its_reason(files, reason):
    with pytest.raises(exchange_service.Refused) as refused:
        check(files if files is not None else None) if files is not None else \
            exchange_service.check_submission(None, LIMITS, ngshare_path_ok)
    assert refused.value.message.code is reason
    assert refused.value.status in (400, 413)


def test_ngshare_stores_releases_and_submissions_on_sqlalchemy_2(tmp_path):
    """Without the fix a new Assignment or Submission never joins the session: released and submitted nothing."""
    from ngshare.database import Assignment, Base, Course, Submission, User
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    from autograder.patches.hub import fix_ngshare_sqlalchemy2

    fix_ngshare_sqlalchemy2()
    engine = create_engine(f"sqlite:///{tmp_path / 'ngshare.db'}")
    Base.metadata.create_all(engine)
    db = sessionmaker(bind=engine)()
    student = User("s1")
    db.add_all([student, Course("c", [User("i1")])])
    db.commit()
    course = db.query(Course).one()
    assignment = Assignment("a", course)
    db.commit()
    Submission(student, assignment)
    db.commit()
    assert [a.id for a in db.query(Assignment)] == ["a"] and db.query(Submission).count() == 1


def test_what_a_student_has_stored_counts_every_assignment_and_nobody_elses(tmp_path):
    """``stored_bytes``: one student's stored total over the course's assignments (the ``max_stored_mb`` check)."""
    from ngshare.database import Assignment, Base, Course, File, Submission, User
    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker

    from autograder.patches.hub import fix_ngshare_sqlalchemy2

    fix_ngshare_sqlalchemy2()
    engine = create_engine(f"sqlite:///{tmp_path / 'ngshare.db'}")
    Base.metadata.create_all(engine)
    db = sessionmaker(bind=engine)()
    s1, s2 = User("s1"), User("s2")
    db.add_all([s1, s2, Course("c", [User("i1")])])
    db.commit()
    course = db.query(Course).one()
    for name, who, size in (("a", s1, 3_000_000), ("b", s1, 4_000_000), ("a", s2, 9_000_000)):
        assignment = db.query(Assignment).filter_by(id=name).one_or_none() or Assignment(name, course)
        db.commit()
        submission = Submission(who, assignment)
        stored = File(f"{name}.ipynb", b"", actual_name="x")
        stored.size = size                               # as stored for a file of that size
        submission.files.append(stored)
        db.commit()
    assert exchange_service.stored_bytes(course, "s1") == 7_000_000
    assert exchange_service.stored_bytes(course, "s2") == 9_000_000


def test_refusals_reach_the_hubs_log(tmp_path):
    """After ngshare's database upgrade (alembic disables every existing logger) the service still logs to stderr,
    which is the hub's log."""
    import subprocess
    import sys

    code = ("import sys\nfrom collections import namedtuple\nfrom ngshare import dbutil, ngshare\n"
            "from tornado.log import app_log, access_log\nfrom autograder.hub import exchange_service\n"
            f"dbutil.upgrade('sqlite:///{tmp_path}/ngshare.db', cmd_opts=namedtuple('C', ['x'])"
            f"(['data=true', 'storage={tmp_path}/files']))\n"
            "exchange_service.log_to_stderr()\n"
            "app_log.warning('exchange: refused a submission of c/a by s: why')\n"
            "access_log.info('200 GET every request')\naccess_log.warning('413 POST a refused one')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "USER": "nobody"})
    assert "exchange] exchange: refused a submission of c/a by s: why" in proc.stderr, proc.stderr[-2000:]
    assert "413 POST a refused one" in proc.stderr and "every request" not in proc.stderr


# ------------------------------------------------------------------------------------------------ the grading side
def test_collected_files_are_written_as_plain_files_and_the_time_is_never_the_students(tmp_path):
    files = [{"path": "attention.ipynb", "content": b64(NB)}, {"path": "sub/data.txt", "content": b64(b"x")},
             {"path": "timestamp.txt", "content": b64(b"2020-01-01 00:00:00")},
             {"path": "submission_secret.txt", "content": b64(b"mine")},
             {"path": "timestamp.txt/x", "content": b64(b"a folder where the time goes")}]
    left_out = exchange.write_files(files, str(tmp_path), LIMITS)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()) == \
        ["attention.ipynb", "sub/data.txt"]
    assert len(left_out) == 3


@pytest.mark.parametrize("files", [
    [{"path": "../escape", "content": ""}],
    [{"path": "/abs", "content": ""}],
    [{"path": "a", "content": b64(bytes(1_000_001))}],
    [{"path": f"f{i}", "content": ""} for i in range(6)],
    [{"path": "a", "content": ""}, {"path": "a", "content": ""}],
    [{"path": "a", "content": ""}, {"path": "a/b", "content": ""}],
    "not a list",
], ids=["dotdot", "absolute", "too-big", "too-many", "twice", "file-then-folder", "not-a-list"])
def test_a_submission_the_server_should_have_refused_is_skipped_whole(tmp_path, files):
    with pytest.raises(exchange.SkipSubmission):
        exchange.write_files(files, str(tmp_path), LIMITS)
    assert not (tmp_path.parent / "escape").exists()


@pytest.fixture(scope="module")
def course_root(tmp_path_factory):
    """A course directory whose gradebook's roster is s1..s4 (made once: nbgrader's gradebook takes seconds)."""
    import sys

    from nbgrader.api import Gradebook

    os.environ["PATH"] = f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"     # nbgrader runs `alembic`
    root = tmp_path_factory.mktemp("course")
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", "c") as gb:
        for student in ("s1", "s2", "s3", "s4"):
            gb.update_or_create_student(student)
    return root


def course(root):
    from nbgrader.coursedir import CourseDirectory

    return CourseDirectory(root=str(root), course_id="c", assignment_id="attention",
                           db_url=f"sqlite:///{root / 'gradebook.db'}")


class FakeCollect(exchange.ExchangeCollect):
    """The collect with the exchange's answers given (no server)."""
    answers: dict = {}

    def ngshare_api_get(self, url, params=None):
        return self.answers.get(url)


def test_collect_takes_the_roster_and_skips_a_bad_submission_with_a_reason(course_root, monkeypatch, caplog,
                                                                           course_setting):
    tmp_path = course_root
    course_setting(exchange=LIMITS)
    good = {"timestamp": "2026-12-01 10:00:00.000001", "files": [{"path": "attention.ipynb", "content": b64(NB)}]}
    FakeCollect.answers = {
        "/submissions/c/attention": {"submissions": [
            {"student_id": s, "timestamp": "2026-12-01 10:00:00.000001"} for s in ("s1", "s2", "s3", "fake")]},
        "/submission/c/attention/s1": good,
        "/submission/c/attention/s2": {"timestamp": good["timestamp"], "files": [{"path": "../x", "content": ""}]},
        "/submission/c/attention/s3": {"timestamp": good["timestamp"], "files": good["files"] + [
            {"path": "timestamp.txt", "content": b64(b"2020-01-01 00:00:00.000000")}]},
        "/submission/c/attention/fake": good,
    }
    collect = FakeCollect(coursedir=course(tmp_path))
    collect.update = True
    with caplog.at_level(logging.INFO):
        collect.init_src()
        collect.copy_files()
    submitted = tmp_path / "submitted"
    assert sorted(p.parent.name for p in submitted.glob("*/attention")) == ["s1", "s3"]   # s2 skipped, fake not
    assert not (submitted / "fake").exists()                                                # a student
    for student in ("s1", "s3"):
        assert (submitted / student / "attention" / "timestamp.txt").read_text() == good["timestamp"]
    log = caplog.text
    assert "Not collecting s2's submission" in log and "not allowed" in log
    assert "Not collecting fake's submission" in log and "roster" in log
    assert not list(submitted.glob(".attention-*")) and not (tmp_path / "x").exists()


class FakeRelease(exchange.ExchangeReleaseFeedback):
    posted: list = []

    def post_feedback(self, student_id, timestamp, feedback_info):
        if student_id == "s2":
            raise ConnectionError("the exchange went away")
        self.posted.append((student_id, timestamp, [f["notebook_id"] for f in feedback_info]))
        return {"success": True}


def test_release_feedback_goes_on_past_a_student_it_cannot_release(course_root, caplog):
    tmp_path, coursedir = course_root, course(course_root)
    for student in ("s1", "s2", "s3", "s4"):
        folder = tmp_path / "feedback" / student / "attention"
        folder.mkdir(parents=True)
        (folder / "attention.html").write_text("<p>report</p>")
        if student != "s3":
            (folder / "timestamp.txt").write_text("2026-12-01 10:00:00.000001" if student != "s4" else "garbage")
    release = FakeRelease(coursedir=coursedir)
    release.init_src()
    with caplog.at_level(logging.INFO):
        release.copy_files()
    assert FakeRelease.posted == [("s1", "2026-12-01 10:00:00.000001", ["attention"])]
    assert "Feedback of s2" in caplog.text and "ConnectionError" in caplog.text
    assert caplog.text.count("no readable time of its submission") == 2                     # s3 (none), s4 (garbage)


def test_a_student_downloads_their_own_submission_and_no_one_elses(tmp_path, monkeypatch):
    """ngshare (its application, its database, users from a request argument as ngshare's own tests have them):
    kim submits; kim downloads it back (ngshare itself answered 403, instructors only), lee is refused kim's, the
    instructor gets it."""
    import asyncio
    import base64
    import json
    import socket
    from urllib.parse import urlencode

    from ngshare import ngshare
    from tornado.httpclient import AsyncHTTPClient
    from tornado.httpserver import HTTPServer

    from autograder.patches.hub import fix_ngshare_sqlalchemy2, own_ngshare_submissions

    for name, value in (("JUPYTERHUB_API_URL", "http://hub.api"), ("JUPYTERHUB_API_TOKEN", "token"),
                        ("JUPYTERHUB_CLIENT_ID", "ngshare-client"), ("JUPYTERHUB_SERVICE_PREFIX", "/s/")):
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(ngshare.MyRequestHandler, "get_current_token", ngshare.MockAuth.get_current_token)
    monkeypatch.setattr(ngshare.MyRequestHandler, "user_for_token", ngshare.MockAuth.user_for_token)
    fix_ngshare_sqlalchemy2()
    own_ngshare_submissions()
    files = json.dumps([{"path": "hw.ipynb", "content": base64.b64encode(b"kim's notebook").decode()}])

    async def go():
        app = ngshare.MyApplication("/api/", f"sqlite:///{tmp_path / 'ngshare.db'}", str(tmp_path / "files"),
                                    admin=["root"], debug=False)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        sock.setblocking(False)
        server = HTTPServer(app)
        server.add_sockets([sock])
        base, client = f"http://127.0.0.1:{sock.getsockname()[1]}/api", AsyncHTTPClient()

        async def call(method, path, user, **data):
            if method == "GET":
                reply = await client.fetch(f"{base}{path}?{urlencode({'user': user})}", raise_error=False)
            else:
                reply = await client.fetch(f"{base}{path}", method=method, raise_error=False,
                                           body=urlencode({"user": user, **data}))
            return reply.code, json.loads(reply.body)

        try:
            assert (await call("POST", "/course/c1", "root", instructors='["prof"]'))[0] == 200
            for student in ("kim", "lee"):
                assert (await call("POST", f"/student/c1/{student}", "prof", first_name="a", last_name="b",
                                        email="x@y.z"))[0] == 200
            assert (await call("POST", "/assignment/c1/hw", "prof", files="[]"))[0] == 200
            assert (await call("POST", "/submission/c1/hw", "kim", files=files))[0] == 200
            return {who: await call("GET", "/submission/c1/hw/kim", who) for who in ("kim", "lee", "prof")}
        finally:
            server.stop()

    got = asyncio.new_event_loop().run_until_complete(go())
    assert got["kim"][0] == 200 and base64.b64decode(got["kim"][1]["files"][0]["content"]) == b"kim's notebook"
    assert got["lee"][0] == 403 and got["lee"][1]["message"] == "Permission denied"
    assert got["prof"][0] == 200
