"""Fixtures of the tests against a real JupyterHub: ``python -m autograder hub --namespace aghub`` started (as
root, on 127.0.0.1:18000 with two students) once for the tests of this folder and stopped when the last of them is done;
headless Chromium per person. (Package scope: in a session's worker the hub, its servers and the browsers' open pages
kept using CPU until the whole session ended, beside the tests that came after them.)

The tests' hub is a namespace of its own (``autograder/hub/layout.py``): course id ``aghub``, accounts
``aghub-student1``, ``aghub-student2``, ``aghub-instructor1``, ``aghub-instructor2`` and ``grader-aghub``, its own
exchange, state folder, students' environment and ports. Whatever an earlier run left of it is removed first;
at the end the hub command is stopped with Ctrl-C (its home images unmounted) and everything of it is removed by
``python -m autograder hub --remove`` (accounts with their homes, home images, control groups, services, folders,
each checked gone); the course's own hub (its accounts,
exchange, state, course copy and gradebook) is never read or written, which the session checks at its end.
``AUTOGRADER_HUB_TEST_NAMESPACE`` and ``AUTOGRADER_HUB_TEST_PORT`` choose another name and port. Screenshots go to
``build/screenshots/`` (``hub-*``), the hub command's output to ``build/hub-logs/``, with JupyterHub's log (copied
when a test fails and at the end: the state folder that holds it is removed).

The hub reads the course's settings from a copy of ``course_config.py`` (``COURSE_CONFIG``) that differs in one
value: ``attention`` was due an hour before the session started, so every submission of the session is late (one
started day: the course's 10 %), as a class's hub is after its due date.
"""
from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]

from tests.browser.browser_course import CHROMEDRIVER, CHROMIUM, missing_browser  # noqa: E402

from autograder.hub import accounts, homes, provision, server, teardown  # noqa: E402
from autograder.hub.layout import Layout  # noqa: E402

NAMESPACE = os.environ.get("AUTOGRADER_HUB_TEST_NAMESPACE", "aghub")
PORT = int(os.environ.get("AUTOGRADER_HUB_TEST_PORT", "18000"))
N_STUDENTS = 4              # student1, student2: the honest class (Chromium); student3, student4: attackers
SCREENSHOTS = ROOT / "build" / "screenshots"
LOGS = ROOT / "build" / "hub-logs"
SETUP_TIMEOUT_S = 1500        # a fresh machine: students' environment, generate and release of every assignment
LATE_ASSIGNMENT = "attention"
KOREAN_NAMES = [("김", "민준"), ("이", "서연"), ("박", "지호"), ("최", "하은")]
CONNECTION_IDLE_S = 5        # the session's hub: a silent connection is closed after this (the course's: 60 s)


def student_number(i: int) -> str:
    """The university's number of the roster's i-th student (1-based)."""
    return f"2026{i:03d}"


def write_roster(folder: Path, layout: Layout) -> Path:
    """The class as an instructor gives it (``--roster``): the accounts of the layout, student numbers, Korean
    names."""
    lines = ["username,student_id,last_name,first_name,email,role"]
    for i, user in enumerate(layout.students(N_STUDENTS), 1):
        last, first = KOREAN_NAMES[(i - 1) % len(KOREAN_NAMES)]
        lines.append(f"{user},{student_number(i)},{last},{first},,student")
    lines += [f"{user},,교수,{i},,instructor" for i, user in enumerate(layout.instructors, 1)]
    path = folder / "roster.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
OPEN_BROWSERS: dict = {}      # person -> Chromium (the chromium fixture's)


def pytest_configure(config):
    config.addinivalue_line("markers", "hub: against a real JupyterHub started by the test (root, a namespace of its "
                                       "own, headless Chromium); select with -m hub, leave out with -m 'not hub'")


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
    due: dt.datetime                  # LATE_ASSIGNMENT's due date in this session (UTC)

    @property
    def url(self) -> str:
        return self.layout.url

    @property
    def students(self) -> list[str]:
        return self.layout.students(N_STUDENTS)

    @property
    def instructor(self) -> str:
        return self.layout.instructors[0]

    def user_url(self, user: str) -> str:
        """``user``'s server: on its own origin (``<user>.hub.localhost``), where the hub has one per user."""
        if hasattr(self.layout, "user_url"):
            return self.layout.user_url(user)
        return f"{self.url}/user/{user}"                       # one origin for everyone (the hub before it)

    @property
    def formgrader(self) -> str:
        """The formgrader service's base URL (``.../services/<course id>``), on its own origin where it has one."""
        if hasattr(self.layout, "service_url"):
            return self.layout.service_url(self.layout.course_id)
        return f"{self.url}/services/{self.layout.course_id}"

    def roster(self, student: str) -> tuple[str, str]:
        """(student number, "last, first" as formgrader shows the name) of a student of the roster."""
        i = self.students.index(student) + 1
        last, first = KOREAN_NAMES[(i - 1) % len(KOREAN_NAMES)]
        return student_number(i), f"{last}, {first}"

    def home(self, user: str) -> Path:
        return Path(f"/home/{user}")

    def exchange(self, method: str, path: str, data: dict | None = None) -> dict:
        """A request to the exchange service as the course's grading service."""
        return provision.exchange_request(self.layout, method, path, data)

    def stored_submissions(self, student: str, assignment: str = "attention") -> list[tuple[str, dict]]:
        """What the exchange keeps of a student's submissions: (time, {file: checksum}) each, oldest first. On a
        filesystem exchange (the hub before issue 20) the inbound folders' names and files."""
        if not hasattr(self.layout, "exchange_url"):
            import hashlib

            inbound = self.layout.exchange / self.layout.course_id / "inbound"
            return [(p.name, {f.name: hashlib.md5(f.read_bytes()).hexdigest() for f in p.iterdir() if f.is_file()})
                    for p in sorted(inbound.glob(f"{student}+{assignment}+*"))]
        cid = self.layout.course_id
        listed = self.exchange("GET", f"submissions/{cid}/{assignment}/{student}")
        assert listed.get("success"), listed
        stored = []
        for sub in listed["submissions"]:
            files = self.exchange("GET", f"submission/{cid}/{assignment}/{student}?list_only=true&timestamp="
                                         + quote(sub["timestamp"]))
            assert files.get("success"), files
            stored.append((sub["timestamp"], {f["path"]: f["checksum"] for f in files["files"]}))
        return sorted(stored)

    def submitted_notebook(self, student: str, assignment: str = "attention") -> bytes:
        """The notebook of a student's latest stored submission."""
        if not hasattr(self.layout, "exchange_url"):
            inbound = self.layout.exchange / self.layout.course_id / "inbound"
            return sorted(inbound.glob(f"{student}+{assignment}+*"))[-1].joinpath(f"{assignment}.ipynb").read_bytes()
        import base64

        reply = self.exchange("GET", f"submission/{self.layout.course_id}/{assignment}/{student}")
        assert reply.get("success"), reply
        return base64.b64decode([f for f in reply["files"] if f["path"] == f"{assignment}.ipynb"][0]["content"])

    def gradebook(self, assignment: str = "attention") -> dict:
        """The grading account's gradebook: its students, and each one's submission of ``assignment`` (time as
        nbgrader recorded it, score)."""
        import json

        proc = self.run_as(self.layout.grader, GRADEBOOK, provision.grader_env(self.layout)["COURSE_DB_URL"],
                           self.layout.course_id, assignment, check=True)
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def user_env(self, user: str) -> dict:
        return provision.grader_env(self.layout) if user == self.layout.grader else {}

    def run_as(self, user: str, code: str, *args, env=None, check=False) -> subprocess.CompletedProcess:
        """Python ``code`` run as ``user`` with the students' environment's interpreter (as the hub's users do)."""
        return provision.as_user(user, [str(self.layout.python), "-c", code, *args], self.layout, check=check,
                                 env={**self.user_env(user), **(env or {})})


GRADEBOOK = """import json, sys
from nbgrader.api import Gradebook, MissingEntry
out = {"students": [], "submissions": {}}
with Gradebook(sys.argv[1], sys.argv[2]) as gb:
    for student in gb.students:
        out["students"].append(student.id)
        try:
            sub = gb.find_submission(sys.argv[3], student.id)
        except MissingEntry:
            continue
        out["submissions"][student.id] = {"timestamp": sub.timestamp.isoformat() if sub.timestamp else None,
                                          "score": sub.score, "late_penalty": sub.late_submission_penalty}
print(json.dumps(out))
"""


def test_layout() -> Layout:
    return Layout.for_course(namespace=NAMESPACE, port=PORT, ip="127.0.0.1")


def late_course_config(folder: Path, due: dt.datetime) -> Path:
    """A copy of the course's config whose LATE_ASSIGNMENT is due at ``due`` (UTC), and whose servers close a silent
    connection after CONNECTION_IDLE_S (the idle-timeout test waits that long, not the course's minute)."""
    text = (ROOT / "course_config.py").read_text(encoding="utf-8")
    text, n = re.subn(rf'("{LATE_ASSIGNMENT}": )"[^"]*"', rf'\1"{due:%Y-%m-%d %H:%M:%S} +0000"', text, count=1)
    assert n == 1, f"no due date of {LATE_ASSIGNMENT} in course_config.py"
    text = re.sub(r'("connection_idle_s": )\d+', rf"\g<1>{CONNECTION_IDLE_S}", text, count=1)
    path = folder / "course_config.py"
    path.write_text(text, encoding="utf-8")
    return path


def footprint(layout: Layout) -> dict:
    """What a hub changes of a course, listed: its accounts, and the names, sizes and times of every file under
    its exchange, state folder, students' environment's config and grading account's home (nothing is read)."""
    found = {"accounts": [u for u in (*layout.instructors, *layout.students(9), layout.grader) if accounts.exists(u)]}
    for root in (layout.exchange, layout.state, layout.grader_home, layout.nbgrader_config.parent):
        entries = {}
        if root.exists():
            for dirpath, dirnames, filenames in os.walk(root):
                for name in [*dirnames, *filenames]:
                    st = os.lstat(os.path.join(dirpath, name))
                    entries[os.path.join(dirpath, name)] = (st.st_mode, st.st_size, st.st_mtime_ns)
        found[str(root)] = entries
    return found


def keep_hub_log(layout: Layout, name: str) -> None:
    if layout.log.exists():
        LOGS.mkdir(parents=True, exist_ok=True)
        shutil.copy(layout.log, LOGS / name)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """JupyterHub's log at a hub test's failure, under build/hub-logs (its state folder goes at the end)."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and str(item.fspath).startswith(str(HERE)):
        keep_hub_log(test_layout(), f"jupyterhub-{item.name}.log"[:200].replace("/", "_"))
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        for person, driver in OPEN_BROWSERS.items():           # what each person's browser showed
            try:
                driver.save_screenshot(str(SCREENSHOTS / f"hub-failed-{item.name[:80]}-{person}.png"))
            except Exception:  # noqa: BLE001  (a browser that is gone has nothing to show)
                pass


@pytest.fixture(scope="package")
def hub(tmp_path_factory):
    """One hub for the tests of this folder (its start-up is the expensive part), in the tests' namespace."""
    reason = why_not()
    if reason:
        pytest.skip(reason)
    layout = test_layout()
    course = Layout.for_course(port=8000)
    assert (layout.course_id, layout.exchange, layout.state, layout.env, layout.grader) != \
        (course.course_id, course.exchange, course.state, course.env, course.grader)
    assert server.running_pid(layout) is None, f"a test hub already runs (pid {server.running_pid(layout)})"
    live = server.running_pid(course) is not None      # the class's own hub runs: its files change as it works
    before = footprint(course)
    removed = teardown.remove(layout)                   # whatever an earlier run left of the namespace
    if removed:
        print(f"\n[hub] removed an earlier run's {', '.join(removed)}")
    LOGS.mkdir(parents=True, exist_ok=True)
    mode = ROOT.stat().st_mode & 0o7777
    os.chmod(ROOT, mode & ~0o007)                          # the hub refuses a checkout its students can read
    log_path = LOGS / "hub-command.log"
    log = open(log_path, "w")
    start = time.perf_counter()
    due = (dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=1)).replace(microsecond=0, tzinfo=None)
    config = late_course_config(tmp_path_factory.mktemp("hub-config"), due)
    roster = write_roster(config.parent, layout)
    process = subprocess.Popen([sys.executable, "-m", "autograder", "hub", "--namespace", NAMESPACE,
                                "--roster", str(roster), "--ip", "127.0.0.1", "--port", str(PORT)], cwd=ROOT,
                               stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "COURSE_CONFIG": str(config)})
    try:
        deadline = time.monotonic() + SETUP_TIMEOUT_S
        while "hub: JupyterHub at" not in log_path.read_text():
            assert process.poll() is None, f"the hub command exited ({process.returncode}):\n{log_path.read_text()}"
            assert time.monotonic() < deadline, f"no hub after {SETUP_TIMEOUT_S} s:\n{log_path.read_text()}"
            time.sleep(1)
        print(f"\n[hub] up after {time.perf_counter() - start:.1f} s:\n{log_path.read_text()}")
        yield Hub(layout, accounts.read_passwords(layout.passwords), process, due)
    finally:
        process.send_signal(signal.SIGINT)                 # Ctrl-C: the command stops everything it started
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        os.chmod(ROOT, mode)
        keep_hub_log(layout, "jupyterhub.log")
        stopped = server.running_pid(layout) is None and not server.leftovers(layout)
        left, mounted = server.leftovers(layout), homes.mounted_images(layout)        # Ctrl-C unmounts the homes
        made = teardown.plan(layout)
        # `python -m autograder hub --remove`: everything the hub command made, gone
        removal = subprocess.run([sys.executable, "-m", "autograder", "hub", "--remove", "--namespace", NAMESPACE,
                                  "--port", str(PORT)], cwd=ROOT, capture_output=True, text=True, timeout=300)
        print(f"\n[hub] --remove: {removal.stdout}{removal.stderr}")
    assert stopped, f"servers left running: {left}"
    assert not mounted, f"home images still mounted after the hub stopped: {mounted}"
    assert removal.returncode == 0, removal.stderr
    assert made.accounts and made.groups and made.folders, made           # there was something to remove
    assert not teardown.namespace_users(layout) and not any(accounts.exists(u) for u in made.accounts)
    assert not any(p.exists() for p in (layout.state, layout.exchange, layout.env, layout.grader_home))
    assert not homes.mounted_images(layout) and not any(f"/home/{layout.user_prefix}" in line for line in
                                                        Path("/proc/self/mounts").read_text().splitlines())
    assert not teardown.group_folders(layout) and not any(g.exists() for g in made.groups)
    assert not server.leftovers(layout) and not teardown.services_of(layout)
    assert live or footprint(course) == before, "the tests' hub changed the course's own hub"


@pytest.fixture(scope="package")
def screenshots():
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOTS.glob("hub-*.png"):
        old.unlink()
    return SCREENSHOTS


@pytest.fixture(scope="package")
def chromium(tmp_path_factory, hub):
    """A fresh Chromium (own profile, so own hub cookies) per person; all quit at the end."""
    from tests.browser import labpage

    drivers = OPEN_BROWSERS

    def open_for(person: str):
        if person not in drivers:
            drivers[person] = labpage.start_chromium(CHROMIUM, CHROMEDRIVER,
                                                     tmp_path_factory.mktemp(f"chromium-{person}"),
                                                     LOGS / f"chromedriver-{person}.log")
        return drivers[person]

    yield open_for
    for driver in drivers.values():
        driver.quit()
    drivers.clear()


@pytest.fixture(autouse=True)
def pages_closed_after_each_test():
    """After each test every person's Chromium shows a blank page (every test opens the page it reads: a login,
    ``student_lab``, formgrader's URL; the hub's cookies stay). A JupyterLab page left open polls its server and
    renders on: in a clean-clone CI (CI22) student1's renderer used 32 CPU-seconds and student2's 15 over the ~275 s
    after their tests, beside the tests that came after them. A failed test's screenshots are taken before this
    (``pytest_runtest_makereport``)."""
    yield
    from selenium.common.exceptions import WebDriverException

    from tests.browser import labpage

    for person, driver in OPEN_BROWSERS.items():
        try:
            labpage.Lab(driver, None, None, person).leave()
        except WebDriverException:   # a browser that crashed has no page to close; its test has said so
            pass


@pytest.fixture(scope="module")
def people(hub):
    """student1, student2 and the instructor, each with their own token and their server up
    (``test_hub_isolation.Person``: kernels started and code run as they would)."""
    from tests.hub.live.test_hub_isolation import Person

    found = {}
    for name in (hub.students[0], hub.students[1], hub.instructor):
        found[name] = Person(hub, name)
        found[name].server_up()
    return found


@pytest.fixture(scope="package")
def exchange_attacks(hub):
    """student3 and student4 attack the exchange from their own accounts (tests/hub/live/attacks.py), once the honest
    students have submitted and before the instructor collects; what student2 had stored is recorded first."""
    from tests.hub.live import attacks

    inbound = hub.layout.exchange / hub.layout.course_id / "inbound"
    victim = sorted(p.name for p in inbound.glob(f"{hub.students[1]}+attention+*")) if inbound.is_dir() else []
    victim_before = hub.stored_submissions(hub.students[1])
    done = attacks.run(hub, victim[-1] if victim else "")
    print(f"\n[hub] attacks ({done.ended - done.started:.1f} s): forger {done.forger}\nbreaker {done.breaker}")
    return done, victim_before
