"""Fixtures of the tests against a real JupyterHub: ``python -m autograder hub`` started (as root, on
127.0.0.1:8000 with student1 and student2) for the session and stopped after; headless Chromium per person.

The class's earlier work (student1's and student2's fetched notebooks, submissions, feedback, grades) is removed
first, so that every run starts from a released course. Screenshots go to ``build/screenshots/`` (``hub-*``),
the hub command's output to ``build/hub-logs/``.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from browser_course import CHROMEDRIVER, CHROMIUM, missing_browser  # noqa: E402

from autograder.hub import accounts, provision, server  # noqa: E402
from autograder.hub.layout import Layout, student_names  # noqa: E402

STUDENTS = student_names(2)
PORT = 8000
SCREENSHOTS = ROOT / "build" / "screenshots"
LOGS = ROOT / "build" / "hub-logs"
SETUP_TIMEOUT_S = 1500        # a fresh machine: students' environment, generate and release of every assignment


def pytest_configure(config):
    config.addinivalue_line("markers", "hub: against a real JupyterHub started by the test (root, port 8000, "
                                       "headless Chromium); select with -m hub, leave out with -m 'not hub'")


def pytest_collection_modifyitems(items):
    for item in items:
        if str(item.fspath).startswith(str(HERE)):
            item.add_marker(pytest.mark.hub)


def why_not() -> str | None:
    if os.geteuid() != 0:
        return "the hub tests create Unix users and run JupyterHub with PAM: run them as root"
    if not server.PROXY.exists():
        return f"{server.PROXY} is missing (scripts/setup.sh installs configurable-http-proxy with npm)"
    if not shutil.which("useradd") or not shutil.which("chpasswd"):
        return "useradd/chpasswd are missing"
    return missing_browser()


@dataclass
class Hub:
    layout: Layout
    passwords: dict
    process: subprocess.Popen

    @property
    def url(self) -> str:
        return self.layout.url

    def user_env(self, user: str) -> dict:
        return provision.grader_env(self.layout) if user == self.layout.grader else {}

    def run_as(self, user: str, code: str, *args, env=None, check=False) -> subprocess.CompletedProcess:
        """Python ``code`` run as ``user`` with the students' environment's interpreter (as the hub's users do)."""
        return provision.as_user(user, [str(self.layout.python), "-c", code, *args], self.layout, check=check,
                                 env={**self.user_env(user), **(env or {})})


def reset_class(layout: Layout) -> None:
    """Remove student1's and student2's earlier work everywhere: their folders, the exchange, the grader's copy
    and its gradebook (the released assignments stay)."""
    for student in STUDENTS:
        if accounts.exists(student):
            home = Path(f"/home/{student}")
            for name in ("attention", "kv_cache", "decoder", "quiz", ".local/share/jupyter/nbgrader_cache",
                         ".jupyter/lab/workspaces"):
                shutil.rmtree(home / name, ignore_errors=True)
        for path in (layout.exchange / layout.course_id / "inbound").glob(f"{student}+*"):
            shutil.rmtree(path, ignore_errors=True)
        for folder in ("submitted", "autograded", "feedback"):
            shutil.rmtree(layout.course_dir / folder / student, ignore_errors=True)
    shutil.rmtree(layout.exchange / layout.course_id / "feedback", ignore_errors=True)
    if (layout.course_dir / "gradebook.db").exists():
        provision.gradebook_students(layout, remove=STUDENTS)


@pytest.fixture(scope="module")
def hub():
    reason = why_not()
    if reason:
        pytest.skip(reason)
    layout = Layout.for_course(port=PORT, ip="127.0.0.1")
    assert server.running_pid(layout) is None, f"a hub already runs (pid {server.running_pid(layout)})"
    if layout.grader_home.exists():
        reset_class(layout)
    LOGS.mkdir(parents=True, exist_ok=True)
    log_path = LOGS / "hub-command.log"
    log = open(log_path, "w")
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "autograder", "hub", "--students", str(len(STUDENTS)),
                                "--ip", "127.0.0.1", "--port", str(PORT)], cwd=ROOT, stdout=log,
                               stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + SETUP_TIMEOUT_S
        while "hub: JupyterHub at" not in log_path.read_text():
            assert process.poll() is None, f"the hub command exited ({process.returncode}):\n{log_path.read_text()}"
            assert time.monotonic() < deadline, f"no hub after {SETUP_TIMEOUT_S} s:\n{log_path.read_text()}"
            time.sleep(1)
        print(f"\n[hub] up after {time.perf_counter() - start:.1f} s:\n{log_path.read_text()}")
        yield Hub(layout, accounts.read_passwords(layout.passwords), process)
    finally:
        process.send_signal(signal.SIGINT)                 # Ctrl-C: the command stops everything it started
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        shutil.copy(layout.log, LOGS / "jupyterhub.log")
    assert server.running_pid(layout) is None
    assert not server.leftovers(layout), f"servers left running: {server.leftovers(layout)}"


@pytest.fixture(scope="module")
def screenshots():
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOTS.glob("hub-*.png"):
        old.unlink()
    return SCREENSHOTS


@pytest.fixture(scope="module")
def chromium(tmp_path_factory, hub):
    """A fresh Chromium (own profile, so own hub cookies) per person; all quit at the end."""
    import labpage

    drivers = {}

    def open_for(person: str):
        if person not in drivers:
            drivers[person] = labpage.start_chromium(CHROMIUM, CHROMEDRIVER,
                                                     tmp_path_factory.mktemp(f"chromium-{person}"),
                                                     LOGS / f"chromedriver-{person}.log")
        return drivers[person]

    yield open_for
    for driver in drivers.values():
        driver.quit()
