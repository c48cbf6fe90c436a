"""nbgrader's own suite (``tests/test_nbgrader_suite.py``) run in the background of a test session.

The session's first process (pytest's own, or pytest-xdist's controller) names the run's folder at start
(``name_folder``; the workers inherit it in ``$AUTOGRADER_NBGRADER_SUITE_DIR``) and starts the suite as soon as it
knows the session will run its test (``start_in_background``). Whichever process then runs the test waits for the
suite's ``returncode`` file in that folder (``wait``). At the session's end the suite is stopped if it still runs
(an interrupted session leaves nothing running) and an unused folder is removed (``stop``).
"""
from __future__ import annotations

import os
import pwd
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FOLDER_ENV = "AUTOGRADER_NBGRADER_SUITE_DIR"
SUITE = ["collect", "autograde", "generate_feedback", "releasefeedback", "fetchfeedback", "submit"]
PLUGIN = Path(__file__).resolve().parents[1] / "nbgrader_suite"
_STARTED: list = []   # the suite's process, in the process that started it


def name_folder() -> Path:
    if not os.environ.get(FOLDER_ENV):
        os.environ[FOLDER_ENV] = tempfile.mkdtemp(prefix="nbgrader-suite-")
    return Path(os.environ[FOLDER_ENV])


def start_in_background() -> None:
    """Start nbgrader's suite (niced) in the session's folder, at most once per session."""
    folder = name_folder()
    if (folder / "started").exists():
        return
    (folder / "started").write_text(str(time.time()))
    # $USER is the account's own name: nbgrader's tests read it for the folder that submit names after the account
    # (another test module sets $USER=nobody when it is unset, as in CI)
    env = {**os.environ, "PYTHONPATH": str(PLUGIN), "USER": pwd.getpwuid(os.getuid()).pw_name,
           "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"}   # alembic
    command = ["nice", "-n", "10", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
               "patched_nbgrader", "-W", "ignore", "-rfEX", f"--junitxml={folder / 'report.xml'}", "--pyargs",
               *(f"nbgrader.tests.apps.test_nbgrader_{name}" for name in SUITE)]
    with open(folder / "stdout.txt", "w") as out, open(folder / "stderr.txt", "w") as err:
        _STARTED.append(subprocess.Popen(["sh", "-c", '"$@"; echo $? > returncode.tmp; mv returncode.tmp returncode',
                                          "nbgrader-suite", *command],
                                         cwd=folder, env=env, stdout=out, stderr=err, start_new_session=True))


def wait(timeout: float) -> tuple[Path, int, float]:
    """(the folder, the suite's exit status, seconds since it started), once it has ended."""
    folder = name_folder()
    deadline = time.monotonic() + timeout
    while not (folder / "returncode").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"nbgrader's suite did not end in {timeout:.0f} s ({folder})")
        time.sleep(1)
    started = float((folder / "started").read_text())
    return folder, int((folder / "returncode").read_text()), time.time() - started


def stop() -> None:
    for proc in _STARTED:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    folder = os.environ.get(FOLDER_ENV)
    if folder and not _STARTED:
        try:
            os.rmdir(folder)
        except OSError:
            pass
