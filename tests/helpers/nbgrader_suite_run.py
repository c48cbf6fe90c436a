"""nbgrader's own suite (``tests/test_nbgrader_suite.py``) run in the background of a test session.

The session's first process (pytest's own, or pytest-xdist's controller) names the run's folder at start
(``name_folder``; the workers inherit it in ``$AUTOGRADER_NBGRADER_SUITE_DIR``) and starts the suite as soon as it
knows the session will run its test (``start_in_background``). Whichever process then runs the test waits for the
suite's ``returncode`` file in that folder (``wait``). At the session's end the suite is stopped if it still runs
(an interrupted session leaves nothing running) and an unused folder is removed (``stop``).

The suite proves something about the course's patches and the installed packages only, so it runs when one of them
changed since it last passed (``needed``): its plugin lists the repository's files that the suite's process loaded
(``ran.json``), and a passing run writes the stamp ``tests/nbgrader_suite/passed.json``: those files with their
sha256, a hash of every installed distribution's name and version and the Python version (``key``), and what passed.
Where the stamp's key is the key of the files and packages as they are now, the suite's result stands without
running it again (about 100 CPU-seconds of a 2-core machine's suite); any change to a patch, to a module a patch
imports, to the suite's plugin or runner, to a pinned package or to Python runs it, and a passing run writes the
new stamp into the checkout (commit it with the change). ``AUTOGRADER_NBGRADER_SUITE=always`` runs it regardless.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import importlib.metadata
import json
import os
import platform
import pwd
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

FOLDER_ENV = "AUTOGRADER_NBGRADER_SUITE_DIR"
SUITE = ["collect", "autograde", "generate_feedback", "releasefeedback", "fetchfeedback", "submit"]
PLUGIN = Path(__file__).resolve().parents[1] / "nbgrader_suite"
_STARTED: list = []   # the suite's process, in the process that started it
ROOT = PLUGIN.parents[1]
STAMP = PLUGIN / "passed.json"
FORCE_ENV = "AUTOGRADER_NBGRADER_SUITE"   # "always": run the suite whatever the stamp says
# Files in the key whether or not the suite's process loads them: this runner and the test (how the suite is run and
# judged), and the start-up hook that every interpreter of .venv runs from its own copy in site-packages.
ALWAYS = ("tests/helpers/nbgrader_suite_run.py", "tests/test_nbgrader_suite.py", "autograder/patches/startup.py")


def key(files) -> str:
    """sha256 of the Python version, every installed distribution (name and version) and ``files`` (repository
    paths) with their contents: what nbgrader's suite ran with."""
    digest = hashlib.sha256(f"python {platform.python_version()}\n".encode())
    # the environment's own site-packages, not sys.path: importing nbgrader's apps puts setuptools' vendored
    # packages (their own dist-info, other versions) on sys.path of whichever process did it
    site = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    distributions = sorted({f"{(d.metadata['Name'] or '').lower()}=={d.version}"
                            for d in importlib.metadata.distributions(path=site)})
    digest.update("\n".join(distributions).encode())
    for name in sorted(set(files) | set(ALWAYS)):
        path = ROOT / name
        digest.update(f"\n{name} {hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else '-'}".encode())
    return digest.hexdigest()


def read_stamp() -> dict | None:
    try:
        return json.loads(STAMP.read_text())
    except (OSError, ValueError):
        return None


def needed() -> bool:
    """Whether the suite must run: asked to (``AUTOGRADER_NBGRADER_SUITE=always``), no stamp, or the stamp's key is
    not the key of its files and the installed packages as they are now."""
    if os.environ.get(FORCE_ENV) == "always":
        return True
    stamp = read_stamp()
    return not (stamp and stamp.get("key") == key(stamp.get("files", [])))


def write_stamp(folder: Path, outcome: dict[str, str], seconds: float) -> dict:
    """After a passing run: the stamp of the files the suite's process loaded (``ran.json``) and what passed."""
    files = sorted(set(json.loads((folder / "ran.json").read_text())["files"]) | set(ALWAYS))
    stamp = {"key": key(files), "python": platform.python_version(),
             "nbgrader": importlib.metadata.version("nbgrader"),
             "passed_on": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
             "seconds": round(seconds), "files": files,
             "outcome": dict(sorted(outcome.items()))}
    STAMP.write_text(json.dumps(stamp, indent=1, ensure_ascii=False) + "\n")
    return stamp


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
