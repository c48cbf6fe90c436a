import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
sys.path.insert(0, str(TESTS))

import nbgrader_suite_run  # noqa: E402

SUITE_TEST = "test_nbgraders_own_tests_pass_with_the_course_patches"


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def pytest_configure(config):
    """The session's folder of nbgrader's suite is named before pytest-xdist starts its workers, which inherit it."""
    if not hasattr(config, "workerinput"):
        nbgrader_suite_run.name_folder()


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        nbgrader_suite_run.stop()


def work_group(item) -> tuple[int, str]:
    """Which pytest-xdist worker group a test is in, and the group's place in the run.

    Tests that share a session's or a module's fixtures run in one worker (``--dist loadgroup``): a folder of tests
    with a conftest of its own is one group (the hub's, with every ``test_hub_*`` file, as they make Unix accounts
    and cgroups; the browser's; the sandbox's), any other test file is a group of its own. The long groups go first,
    so that the two workers finish together; nbgrader's suite, which runs in the background from the start, last."""
    path = Path(str(item.fspath)).resolve()
    folder = path.relative_to(TESTS).parts[0]
    if folder == "hub" or path.name.startswith("test_hub_"):
        return 0, "hub"
    if folder in ("browser", "sandbox"):
        return 1, folder
    if item.name == SUITE_TEST:
        return 3, path.name
    return 2, path.name


def pytest_collection_modifyitems(config, items):
    groups = {id(item): work_group(item) for item in items}
    items.sort(key=lambda item: groups[id(item)][0])   # stable: a group's and a module's tests stay in their order
    for item in items:
        item.add_marker(pytest.mark.xdist_group(groups[id(item)][1]))


def pytest_collection_finish(session):
    """nbgrader's own suite (``tests/test_nbgrader_suite.py``, minutes of nbgrader commands) starts in the background
    as soon as the session knows it will run it, and its test collects the result when its turn comes. Under
    pytest-xdist the controller starts it (``pytest_xdist_node_collection_finished``), not each worker."""
    if session.config.option.collectonly or hasattr(session.config, "workerinput"):
        return
    if any(item.name == SUITE_TEST for item in session.items):
        nbgrader_suite_run.start_in_background()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    if any(nodeid.endswith("::" + SUITE_TEST) for nodeid in ids):
        nbgrader_suite_run.start_in_background()
