import os
from pathlib import Path

import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
ROOT = Path(__file__).resolve().parent.parent
from tests.helpers import nbgrader_suite_run  # noqa: E402

SUITE_TEST = "test_nbgraders_own_tests_pass_with_the_course_patches"


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture()
def course_setting(monkeypatch):
    """Changes the course's settings for one test, in this process: ``course_setting("sandbox",
    allow_unsandboxed=False)`` (a section's values), ``course_setting(assignments=[...])`` (COURSE's own). What the
    package reads (``settings.load()``) is the changed copy until the test ends."""
    from tests.helpers.course import change_setting

    def change(section: str | None = None, **values):
        return change_setting(monkeypatch, section, **values)

    return change


def pytest_configure(config):
    """The session's folder of nbgrader's suite is named before pytest-xdist starts its workers, which inherit it."""
    if not hasattr(config, "workerinput"):
        nbgrader_suite_run.name_folder()


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        nbgrader_suite_run.stop()


def work_group(path: str, name: str = "") -> tuple[int, str]:
    """Which worker group a test is in (``path``: its file, relative to the repository, as in its id; ``name``: the
    test's), and the group's place in the run.

    Under pytest-xdist (``-n``) the tests that share a session's or a module's fixtures run in one worker, one group
    after another (``pytest_xdist_make_scheduler``): a folder of tests with a conftest of its own is one group (the
    hub's, ``tests/hub/`` with the real hub's ``live/`` and the hub's unit tests, as they make Unix accounts and
    cgroups; the browser's; the sandbox catalogues', ``tests/sandbox/live/``), any other test file is a group of its
    own. The long groups go first, so that the two workers finish together (of the files that are groups of their
    own, those with tests marked ``slow`` first: ``pytest_collection_modifyitems``); nbgrader's suite, which runs
    in the background from the start, last."""
    folder = "/".join(Path(path).parts[1:-1])   # the test's folder under tests/
    if folder.split("/")[0] == "hub":
        return 0, "hub"
    if folder in ("browser", "sandbox/live"):
        return 1, folder
    if name == SUITE_TEST:
        return 3, path
    return 2, path


def pytest_collection_modifyitems(config, items):
    """In a pytest-xdist worker: the groups' order (``work_group``), in each group the files with slow tests first;
    stable: a group's and a module's tests stay in their order. In one process the tests keep pytest's order."""
    if not hasattr(config, "workerinput"):
        return
    slow = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    # a file of slow tests scheduled last ran alone at the end (test_nbgrader.py: 105 s of 1,132 with one core idle)
    def place(item):
        path = item.nodeid.split("::")[0]
        group = work_group(path, item.name)[0]
        return group, group == 2 and path not in slow     # the shared groups (hub, browser, sandbox) keep their order

    items.sort(key=place)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scope scheduling (one scope runs in one worker, scopes given out in the tests' order) with the
    scopes of ``work_group``. (Its own ``--dist loadgroup`` does not work with pytest 9: xdist 3.8 writes the group
    into ``item._nodeid``, which pytest 9 no longer reads.)"""
    from xdist.scheduler import LoadScopeScheduling

    class ByWorkGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_group(nodeid.split("::")[0])[1]

    return ByWorkGroup(config, log)


def pytest_collection_finish(session):
    """nbgrader's own suite (``tests/test_nbgrader_suite.py``, minutes of nbgrader commands) starts in the background
    as soon as the session knows it will run it (and something it ran has changed since it last passed:
    ``nbgrader_suite_run.needed``), and its test collects the result when its turn comes. Under
    pytest-xdist the controller starts it (``pytest_xdist_node_collection_finished``), not each worker."""
    if session.config.option.collectonly or hasattr(session.config, "workerinput"):
        return
    if any(item.name == SUITE_TEST for item in session.items) and nbgrader_suite_run.needed():
        nbgrader_suite_run.start_in_background()


WORKER_REPORTS: list[dict] = []


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """A pytest-xdist worker's end: the catalogues' report, where it ran them (tests/sandbox/live/conftest.py;
    that conftest is not loaded in the controller, which collects nothing)."""
    report = getattr(node, "workeroutput", {}).get("catalogue_report")
    if report:
        WORKER_REPORTS.append(report)


def pytest_terminal_summary(terminalreporter):
    for report in WORKER_REPORTS:
        terminalreporter.section(report["title"])
        for line in report["lines"]:
            terminalreporter.write_line(line)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    if any(nodeid.endswith("::" + SUITE_TEST) for nodeid in ids) and nbgrader_suite_run.needed():
        nbgrader_suite_run.start_in_background()


@pytest.fixture(scope="session")
def graded_course_made(tmp_path_factory):
    """A graded course made once a session (tests/helpers/graded_course.py); tests take a copy: ``graded_course``."""
    import warnings

    from tests.helpers import graded_course

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # SQLAlchemy's autoflush notes inside nbgrader's add_submission
        return graded_course.make(tmp_path_factory.mktemp("graded") / "course")


@pytest.fixture()
def graded_course(graded_course_made, tmp_path):
    """A copy of the session's graded course for one test (its gradebook may be changed)."""
    import shutil

    from tests.helpers.graded_course import GradedCourse

    copy = tmp_path / "course"
    shutil.copytree(graded_course_made.dir, copy)
    return GradedCourse(copy, list(graded_course_made.people))
