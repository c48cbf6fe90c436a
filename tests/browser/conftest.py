"""Fixtures of the real-browser tests: a scratch course, `jupyter lab` on localhost, headless Chromium.

* ``course``: a course directory in a temporary folder (``autograder.course.scratch_course``) with every
  assignment released by the real ``nbgrader generate_assignment``, its own SQLite gradebook and exchange.
* ``graded_quiz``: three students' quiz submissions autograded there by the real ``nbgrader autograde``.
* ``lab_server``: ``jupyter lab`` with that course directory as its root (so nbgrader's formgrader, validate and
  assignment list read the course's ``nbgrader_config.py``), on 127.0.0.1, a free port and a fresh token, with the
  course kernel (``scripts/install_kernel.sh``) as the only kernel. Stopped (with its kernels) when the last test
  of this folder is done.
* ``browser``: one headless Chromium (Debian's /usr/bin/chromium and /usr/bin/chromedriver, Selenium 4) for the
  tests of this folder, with a fresh profile. ``lab``: a page object on it for one test (see ``labpage.py``).
The course and server helpers are in ``browser_course.py``. The fixtures are the package's (this folder's), not the
session's: the server, its kernels and Chromium stop when the folder's tests are done instead of idling beside the
rest of the session.

Screenshots of every step go to ``build/screenshots/`` (emptied at the start of a session); the server's log and
chromedriver's log to ``build/browser-logs/``. The tests skip, with the reason, where Chromium, chromedriver or
Selenium is missing; anywhere else they run.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

HERE = Path(__file__).resolve().parent

from tests.browser.browser_course import (ASSIGNMENTS, CHROMEDRIVER, CHROMIUM, LOGS, ROOT, SCREENSHOTS,  # noqa: E402
                                          STUDENTS, WRITTEN_ANSWERS, font_cache_dir, missing_browser, quiz_answer_key,
                                          quiz_submission, start_lab, stop_lab)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "browser: real-browser tests (headless Chromium + JupyterLab + nbgrader's lab extension); "
                   "deselect with -m 'not browser'")


@pytest.fixture(scope="session", autouse=True)
def _browser_available():
    reason = missing_browser()
    if reason:
        pytest.skip(reason)


# ------------------------------------------------------------------------------------------------ the course
@pytest.fixture(scope="package")
def course(tmp_path_factory):
    """A released course: source/, release/ of every assignment, gradebook.db, exchange/."""
    from autograder import course as course_tools

    start = time.perf_counter()
    work = course_tools.scratch_course(tmp_path_factory.mktemp("browser") / "course", list(ASSIGNMENTS))
    env = course_tools.course_env(work)
    (work / "exchange").mkdir()
    for assignment in ASSIGNMENTS:
        course_tools.nbgrader("generate_assignment", assignment, "--force", cwd=work, env=env)
    print(f"\n[browser] course released in {time.perf_counter() - start:.1f} s: {work}")
    return work


@pytest.fixture(scope="package")
def graded_quiz(course, tmp_path_factory):
    """Three quiz submissions autograded by nbgrader: all right, three wrong, blank. Returns their scores."""
    from autograder import course as course_tools

    start = time.perf_counter()
    env = course_tools.course_env(course)
    for student, last, first in STUDENTS:
        course_tools.nbgrader("db", "student", "add", student, f"--last-name={last}", f"--first-name={first}",
                              cwd=course, env=env)
    key = quiz_answer_key()
    wrong = {**key, "solution_q2": "q2 = 'A'", "solution_q8": "q8 = 1024", "solution_q13": "q13 = 'B'"}
    notebooks = {"kim": quiz_submission(course, key, WRITTEN_ANSWERS),
                 "lee": quiz_submission(course, wrong, {"written_1": WRITTEN_ANSWERS["written_1"]}),
                 "park": quiz_submission(course, {}, {})}
    incoming = tmp_path_factory.mktemp("incoming")
    paths = {}
    for student, nb in notebooks.items():
        paths[student] = incoming / f"{student}.ipynb"
        nbformat.write(nb, str(paths[student]))
    course_tools.autograde(course, "quiz", paths)
    scores = course_tools.scores(course, "quiz")
    print(f"\n[browser] quiz autograded for {len(paths)} students in {time.perf_counter() - start:.1f} s: {scores}")
    return scores


# ------------------------------------------------------------------------------------------------ the server
@pytest.fixture(scope="package")
def kernel_dir(tmp_path_factory):
    """The course kernelspec, installed by scripts/install_kernel.sh into a temporary prefix (added to JUPYTER_PATH
    of the server), so the tests do not depend on whether the set-up already installed it into .venv."""
    prefix = tmp_path_factory.mktemp("kernel-prefix")
    run = subprocess.run(["bash", str(ROOT / "scripts" / "install_kernel.sh"), "--prefix", str(prefix),
                          "--kernel-only"], capture_output=True, text=True,
                         env={**os.environ, "PYTHON_VENV": sys.executable})
    assert run.returncode == 0, f"scripts/install_kernel.sh failed:\n{run.stdout}\n{run.stderr}"
    return prefix / "share" / "jupyter"


@pytest.fixture(scope="package")
def jupyter_home(tmp_path_factory):
    """Jupyter's, JupyterLab's and matplotlib's folders of the server and its kernels (``jupyter_env``), with
    matplotlib's font list built there before any kernel starts: a kernel that builds it itself prints "Matplotlib is
    building the font cache" on stderr where that takes over 5 s (a loaded machine), in the first cell of whichever
    notebook a session runs first, and the blank release's test reads every stderr of a cell as an error."""
    home = tmp_path_factory.mktemp("jupyter-home")
    run = subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], capture_output=True, text=True,
                         env={**os.environ, "MPLCONFIGDIR": str(font_cache_dir(home))})
    assert run.returncode == 0, f"matplotlib's font list was not built:\n{run.stderr}"
    return home


@pytest.fixture(scope="package")
def lab_server(course, kernel_dir, jupyter_home):
    start = time.perf_counter()
    for attempt in range(3):           # the free port can be taken between free_port() and the server's bind
        try:
            server = start_lab(course, kernel_dir, jupyter_home, LOGS / "jupyter-lab.log")
            break
        except RuntimeError:
            if attempt == 2:
                raise
    print(f"\n[browser] jupyter lab answering at {server.url} after {time.perf_counter() - start:.1f} s")
    yield server
    stop_lab(server)


# ------------------------------------------------------------------------------------------------ the browser
@pytest.fixture(scope="package")
def screenshots():
    if SCREENSHOTS.exists():
        shutil.rmtree(SCREENSHOTS)
    SCREENSHOTS.mkdir(parents=True)
    return SCREENSHOTS


@pytest.fixture(scope="package")
def browser(tmp_path_factory):
    from tests.browser import labpage

    driver = labpage.start_chromium(CHROMIUM, CHROMEDRIVER, tmp_path_factory.mktemp("chromium-profile"),
                                    LOGS / "chromedriver.log")
    yield driver
    driver.quit()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.browser_failed = report.failed


@pytest.fixture
def lab(request, browser, lab_server, screenshots):
    """JupyterLab for one test; on failure a screenshot FAILED-<test>.png; afterwards every kernel is shut down."""
    from tests.browser import labpage

    page = labpage.Lab(browser, lab_server, screenshots, request.node.name)
    yield page
    if getattr(request.node, "browser_failed", False):
        page.screenshot("FAILED")
    page.leave()
    lab_server.shutdown_kernels()
