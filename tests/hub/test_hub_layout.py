"""The hub's namespace (``python -m autograder hub --namespace NAME``, what tests/hub/live start): a second hub on the
same machine that shares nothing with the course's own (no hub is started here)."""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from autograder import settings
from autograder.hub import provision, server, teardown
from autograder.hub.layout import NAMESPACE_ENV, Layout


def names(layout: Layout) -> dict:
    return {"course id": layout.course_id, "accounts": {*layout.instructors, *layout.students(3), layout.grader},
            "formgrade group": layout.formgrade_group, "exchange": layout.exchange, "state": layout.state,
            "environment": layout.env, "grading home": layout.grader_home, "nbgrader config": layout.nbgrader_config,
            "ports": {layout.port, layout.proxy_api_port, layout.hub_port, layout.service_port, layout.exchange_port},
            "exchange state": layout.exchange_state}


def test_the_course_hub_keeps_its_names_and_ports(monkeypatch):
    monkeypatch.delenv(NAMESPACE_ENV, raising=False)
    layout = Layout.for_course()
    assert layout.namespace is None and layout.course_id == settings.course()["course_id"]
    assert layout.exchange == Path(settings.course()["exchange_root"])
    assert layout.students(2) == ["student1", "student2"] and layout.instructors == ["instructor1", "instructor2"]
    assert layout.grader == f"grader-{layout.course_id}"
    assert (layout.proxy_api_port, layout.hub_port, layout.service_port) == (8001, 8081, 9999)   # as before
    assert layout.exchange_state.is_relative_to(layout.state)            # not ngshare's /srv/ngshare


def test_a_namespace_shares_nothing_with_the_course(monkeypatch):
    monkeypatch.delenv(NAMESPACE_ENV, raising=False)
    course = Layout.for_course()
    ns = Layout.for_course(namespace="aghub", port=18000, ip="127.0.0.1")
    mine, theirs = names(ns), names(course)
    for what in mine:
        if isinstance(mine[what], set):
            assert not mine[what] & theirs[what], what
        else:
            assert mine[what] != theirs[what], what
    for path in ("exchange", "state", "environment", "grading home"):        # not inside one another either
        a, b = Path(mine[path]), Path(theirs[path])
        assert not (a.is_relative_to(b) or b.is_relative_to(a)), path
    assert all(u.startswith("aghub-") for u in ns.students(3) + ns.instructors) and ns.grader == "grader-aghub"


def test_the_namespace_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(NAMESPACE_ENV, "aghubenv")
    assert Layout.for_course().course_id == "aghubenv"
    assert Layout.for_course(namespace="other").course_id == "other"     # the option wins


@pytest.mark.parametrize("bad", ["attention-ko", "Upper", "a", "x" * 17, "a/b", "../srv", "a-b"])
def test_bad_namespaces_are_refused(bad):
    with pytest.raises(ValueError):
        Layout.for_course(namespace=bad)


def test_the_namespace_hub_config_names_nothing_of_the_course(tmp_path):
    course = Layout.for_course(namespace=None)
    ns = Layout.for_course(namespace="aghub", port=18000, ip="127.0.0.1")
    text = repr(server.load_config(server.Start.of(ns, ns.students(2)), tmp_path))    # every value the hub reads
    env = provision.grader_env(ns)
    for word in (course.course_id, str(course.exchange), str(course.state), str(course.env), "'student1'",
                 "'instructor1'", ":8000", ":8001", ":8081", ":9999", ":10000", "/srv/ngshare"):
        assert word not in text, word
        assert not any(word in value for value in env.values()), word
    for port in (18000, 18001, 18081, 19999, 20000):
        assert f":{port}" in text or f"'hub_port': {port}" in text, port
    assert env["COURSE_ID"] == "aghub" and env["COURSE_NGSHARE_URL"] == ns.exchange_url


def test_the_course_copy_takes_the_namespace_course_id(tmp_path):
    """The grading account's nbgrader reads course_config.py with the hub's COURSE_ID."""
    import subprocess
    import sys

    code = "from autograder import settings; print(settings.course()['course_id'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "COURSE_ID": "aghub"}).stdout.strip()
    assert out == "aghub"


def test_the_nbgrader_config_is_the_hubs_own(tmp_path):
    """Written into the hub's students' environment (read by every nbgrader there), not /etc/jupyter (shared by
    every hub of the machine)."""
    ns = dataclasses.replace(Layout.for_course(namespace="aghub"), env=tmp_path / "env")
    path = provision.global_config(ns)
    assert path == tmp_path / "env" / "etc" / "jupyter" / "nbgrader_config.py"
    text = path.read_text()
    assert "c.CourseDirectory.course_id = 'aghub'" in text and f"configureExchange(c, '{ns.exchange_url}')" in text


def test_remove_takes_only_what_the_hub_made(tmp_path):
    """The course's own hub (no prefix on its accounts) is removed by what its state folder lists as made, never by
    a name's look: a list that names the system's accounts (root, daemon) or none that exist removes no account; its
    folders are its state and environment, not the machine's nbgrader exchange (the hub never made it)."""
    from autograder.hub import accounts

    course = dataclasses.replace(Layout.for_course(namespace=None), state=tmp_path / "state", env=tmp_path / "env")
    course.state.mkdir()
    (course.state / accounts.MADE).write_text("root\ndaemon\nnosuchaccount-x\n")
    todo = teardown.plan(course)
    assert teardown.namespace_users(course) == []
    assert todo.accounts == ([course.grader] if accounts.exists(course.grader) else [])
    assert todo.folders == [course.state] and course.exchange not in todo.folders


def test_a_running_namespace_hub_is_never_removed(tmp_path):
    """Its pid file names a live process (this one): remove refuses before touching anything."""
    ns = dataclasses.replace(Layout.for_course(namespace="aghubrun"), state=tmp_path)
    ns.pid_file.write_text(str(os.getpid()))
    with pytest.raises(RuntimeError, match="stop it first"):
        teardown.remove(ns)
    assert ns.pid_file.exists()


def test_no_student_is_named_like_the_grading_service():
    """The exchange knows the grading service (an instructor of the course) by the course id: a student of that
    name would be taken for it. Refused before anything is asked of the exchange."""
    ns = Layout.for_course(namespace="aghub")
    with pytest.raises(RuntimeError, match="may not be named aghub"):
        provision.exchange_course(ns, ["aghub-student1", "aghub"], ns.instructors)
