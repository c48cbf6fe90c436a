"""The course on a real JupyterHub (``python -m autograder hub``), as its people use it, in headless Chromium.

In order: student1 logs in, fetches ``attention`` from nbgrader's Assignment List, writes ``softmax``, validates
(the dialog in Korean: one line per exercise) and submits; student2 submits a wrong ``softmax`` (axis 0); student2
allocates past their memory limit in their own kernel while student1 validates again (G1: only student2's kernel
ends); a student who is not in the formgrade group gets no formgrader; instructor1 opens the course's formgrader
service, collects, autogrades both submissions (this package's pipeline, as the non-root grading account), sees
both scores net of the late penalty (the session's ``attention`` was due an hour before it started: conftest.py)
with the course's precision, generates and releases feedback; student1 fetches it and reads the Korean report with
its late penalty and rendered math. Then the permission checks, each both ways (student1 fails, the grading
account succeeds). Screenshots: build/screenshots/hub-*.png.
"""
from __future__ import annotations

import datetime as dt
import json
import re
import time
import zipfile
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import nbformat
import pytest

from autograder import scores, settings
from autograder.hub import limits, server
from autograder.messages import Label, ListText, ValidateText

pytest.importorskip("selenium", reason="selenium is not installed (pip install -r requirements-browser.txt)")

from tests.browser import labpage  # noqa: E402
from tests.browser.labpage import wait_for  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from tests.browser.test_browser_assignments import listed  # noqa: E402
from tests.browser.test_browser_student import SOFTMAX, SOFTMAX_AXIS_0  # noqa: E402

os.environ.setdefault("USER", "root")        # ngshare-exchange (under lab_assignments) reads it when imported
from autograder.hub import lab_assignments  # noqa: E402

ASSIGNMENT = "attention"
SPAWN_S = 300               # a user's first JupyterLab (the hub spawns it after login)
AUTOGRADE_S = 900           # one submission through formgrader on a busy 2-core machine
RESULTS = {}                # what one step hands the next (the steps run in this file's order)
RELEASE = Path(__file__).resolve().parents[3] / "release" / ASSIGNMENT


@dataclass
class UserServer:
    url: str
    root: Path
    token: str = ""


class HubLab(labpage.Lab):
    """labpage.Lab on a user's server behind the hub (the hub's login cookie instead of a token)."""

    def goto(self, route: str = "") -> None:
        workspace = f"h{next(self._workspaces)}"
        self.driver.get(f"{self.server.url}/lab/workspaces/{workspace}/{route}")
        wait_for(lambda: self.driver.find_elements(By.CSS_SELECTOR, "#jp-main-dock-panel"), SPAWN_S, "JupyterLab")
        wait_for(lambda: self.driver.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-itemLabel"), 60, "the menu bar")

    def open_notebook(self, path: str) -> labpage.Notebook:
        """Open a notebook (by URL) and wait until it shows its first cell and its kernel is idle: the cells a step
        uses are waited for when it uses them (``cell``). Not every cell: JupyterLab attaches the cells out of view
        only in the browser's idle time (a requestIdleCallback with a 3 s timeout, 50 ms of work each), so on a
        busy machine that runs the hub, its kernels and every person's Chromium a 56-cell notebook took a minute
        (CI: one cell a second) while nothing of the hub was involved; the browser tests check the rendering."""
        file = self.server.root / path
        nb = labpage.Notebook(path, file, nbformat.read(str(file), as_version=4).cells)
        self.goto("tree/" + quote(path))
        wait_for(lambda: (s := self.state()) and s["cells"] >= 1, 60, f"the first cell of {path}")
        wait_for(lambda: (s := self.state())["status"] == "idle" and s["kernel"] not in (None, "", "No Kernel"),
                 90, "the kernel to be idle")
        return nb

    def cell(self, index: int):
        """Cell ``index`` once JupyterLab has attached it (cells before it first: in idle time, see above)."""
        return wait_for(lambda: (cells := self.driver.find_elements(
            By.CSS_SELECTOR, ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-viewport > .jp-Cell"))
            and len(cells) > index and cells[index], 60, f"cell {index} of the notebook")


def login(driver, hub, user: str, next_url: str = "") -> None:
    """The hub's login page: user name, password (PAM), Sign in."""
    driver.get(f"{hub.url}/hub/login" + (f"?next={quote(next_url)}" if next_url else ""))
    wait_for(lambda: driver.find_elements(By.ID, "username_input"), 60, "the login form")
    driver.find_element(By.ID, "username_input").send_keys(user)
    driver.find_element(By.ID, "password_input").send_keys(hub.passwords[user])
    driver.find_element(By.ID, "login_submit").click()


def student_lab(hub, chromium, screenshots, user: str) -> HubLab:
    driver = chromium(user)
    lab = HubLab(driver, UserServer(hub.user_url(user), Path(f"/home/{user}")), screenshots, f"hub-{user}")
    driver.get(f"{hub.user_url(user)}/lab")            # the hub asks for a login first, once per browser
    wait_for(lambda: driver.find_elements(By.ID, "username_input") or f"/user/{user}/lab" in driver.current_url,
             SPAWN_S, f"{user}'s login page or JupyterLab")
    if driver.find_elements(By.ID, "username_input"):
        login(driver, hub, user)
        wait_for(lambda: f"/user/{user}/lab" in driver.current_url, SPAWN_S, f"{user}'s JupyterLab to be spawned")
    lab.goto()
    return lab


def assignment_list(lab) -> None:
    lab.goto()
    lab.menu("Nbgrader", "nbgrader:open-assignment-list")


def name_of(row) -> str:
    """An Assignment List row's assignment name (the due date follows it: lab_assignments.py)."""
    return row.find_element(By.CSS_SELECTOR, ".item_name > :first-child").text


def row_named(rows, name: str):
    return [r for r in rows if name_of(r) == name][0]


def fetch(lab, hub, user: str) -> None:
    """Fetch in the Assignment List, which shows the course's assignments in teaching order, each with its due date
    in the course's time zone (``attention``'s is the session's: conftest.py)."""
    assignment_list(lab)
    assignments = settings.course()["assignments"]          # the hub releases every assignment of course_config.py
    released = listed(lab, "released", len(assignments))
    assert {r.find_element(By.CSS_SELECTOR, ".item_course").text for r in released} == {hub.layout.course_id}
    assert [name_of(r) for r in released] == assignments                     # teaching order, not by name
    due = {name_of(r): r.find_element(By.CSS_SELECTOR, ".attention-course-due").text for r in released}
    zone = settings.course()["timezone"]
    assert due[ASSIGNMENT] == "· " + ListText.DUE.korean(
        when=lab_assignments.local_time(hub.due.replace(tzinfo=dt.timezone.utc), zone)), due
    assert due["kv_cache"] == "· " + ListText.DUE.korean(when="2026-12-14 23:59 (KST)"), due
    lab.screenshot("released")
    row_named(released, ASSIGNMENT).find_element(By.CSS_SELECTOR, ".item_status button").click()     # Fetch
    listed(lab, "fetched", 1)
    assert (Path(f"/home/{user}") / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()
    lab.screenshot("fetched")


def submit(lab, hub, user: str) -> bytes:
    """Submit in the Assignment List; returns the notebook the exchange stored (exactly one submission)."""
    assignment_list(lab)
    fetched = row_named(listed(lab, "fetched", 1), ASSIGNMENT)
    fetched.find_element(By.XPATH, ".//*[contains(@class,'item_status')]//button[normalize-space()='Submit']").click()
    listed(lab, "submitted", 1)
    lab.screenshot("submitted")
    stored = hub.stored_submissions(user)
    assert len(stored) == 1 and f"{ASSIGNMENT}.ipynb" in stored[0][1], stored
    return hub.submitted_notebook(user)


def exercises() -> list[str]:
    """The exercises of the released assignment, as Validate names them (grade ids without ``test_``)."""
    return [grade_id.removeprefix("test_") for grade_id in points()]


def late_penalty(score: float) -> float:
    """The course's penalty for a submission one started day late (autograder/gradebook/late.py)."""
    return scores.rounded(score * settings.course()["late_penalty"]["percent_per_day"] / 100)


def check_validation_dialog(lab, kind: str, text: str, passed: set[str]) -> None:
    """Validate's dialog in Korean: its title, and one short line per exercise, ``passed`` ones passed and the
    others failed with their visible check's reason (not nbgrader's English and every failing cell's source)."""
    assert lab.dialog_title() == ValidateText.TITLE.korean()
    assert kind == "error" and ValidateText.COUNTS.korean(passed=len(passed), failed=len(exercises()) - len(passed)) \
        in text, text[:2000]
    lines = [line for line in text.splitlines() if line.startswith(("✅", "❌"))]
    assert len(lines) == len(exercises()), text[:3000]
    undone = "아직 구현하지 않았습니다 (NotImplementedError). 해답 셀을 완성하세요."     # the notebook's visible_check
    for name, line in zip(exercises(), lines, strict=True):
        if name in passed:
            assert line == ValidateText.PASSED.korean(name=name), line
        else:
            assert line == ValidateText.FAILED.korean(name=name, reason=undone), line
    assert len(text) < 3000 and "The following cell" not in text and "visible_check(" not in text, len(text)


def points() -> dict[str, float]:
    """grade_id -> points of every grade cell of the released assignment."""
    nb = nbformat.read(str(RELEASE / f"{ASSIGNMENT}.ipynb"), 4)
    return {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"].get("points", 0) for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("grade")}


# ------------------------------------------------------------------------------------------------ the students
def test_student1_logs_in_fetches_writes_softmax_validates_and_submits(hub, chromium, screenshots):
    student1 = hub.students[0]
    lab = student_lab(hub, chromium, screenshots, student1)
    lab.screenshot("logged-in")
    fetch(lab, hub, student1)

    nb = lab.open_notebook(f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb")
    lab.type_into_cell(nb.index("solution_softmax"), SOFTMAX)
    kind, text = lab.validate()                        # saves, then runs the notebook on the server
    lab.screenshot("validated")
    check_validation_dialog(lab, kind, text, passed={"softmax"})     # softmax passes, the others are not done yet
    lab.close_dialog()
    assert SOFTMAX.strip() in lab.saved(nb).cells[nb.index("solution_softmax")].source

    submitted = nbformat.reads(submit(lab, hub, student1).decode(), 4)
    assert SOFTMAX.strip() in submitted.cells[nb.index("solution_softmax")].source


def test_student2_submits_a_wrong_softmax(hub, chromium, screenshots):
    """Fetch and Submit in the browser; the wrong answer (softmax over axis 0) is written into the fetched
    notebook as student2, as an editor would save it."""
    student2 = hub.students[1]
    lab = student_lab(hub, chromium, screenshots, student2)
    fetch(lab, hub, student2)
    edit = ("import sys, nbformat\nnb = nbformat.read(sys.argv[1], 4)\n"
            "cell = [c for c in nb.cells if c.metadata.get('nbgrader', {}).get('grade_id') == 'solution_softmax'][0]\n"
            "cell.source = sys.argv[2]\nnbformat.write(nb, sys.argv[1])\n")
    hub.run_as(student2, edit, f"/home/{student2}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb", SOFTMAX_AXIS_0, check=True)
    submit(lab, hub, student2)


# A notebook of the given cells, written as the student (argv: path, cells as JSON, metadata as JSON)
SCRATCH = ("import json, sys, nbformat\nnb = nbformat.v4.new_notebook(metadata=json.loads(sys.argv[3]))\n"
           "nb.cells += [nbformat.v4.new_code_cell(c) for c in json.loads(sys.argv[2])]\n"
           "nbformat.write(nb, sys.argv[1])\n")
# g1: student1's notebook copied with a last cell that holds Validate's kernel until the test writes ``go``
G1_HOLD_S = 90                 # under Validate's limit of a cell (the course's timeouts.validate: 120 s)
HOLD_COPY = ("import sys, nbformat\nnb = nbformat.read(sys.argv[1], 4)\n"
             "nb.cells.append(nbformat.v4.new_code_cell(sys.argv[3]))\nnbformat.write(nb, sys.argv[2])\n")
HOLD_CELL = ("import os, time\n_end = time.time() + {seconds}\n"
             "while not os.path.exists({go!r}) and time.time() < _end:\n    time.sleep(0.2)")


def test_g1_a_student_past_their_memory_limit_loses_only_their_own_kernel(hub, chromium, screenshots):
    """student2 allocates past their memory limit in their own kernel while student1's Validate runs (its kernel
    importing torch and running the notebook): the kernel's OOM killer ends student2's kernel in student2's control
    group; student2's server lives on (JupyterLab restarts the kernel) and student1's Validate completes with the
    same result. Measured: how long the kill took, student2's peak, Validate's time.

    student2 first holds 512 MiB less than their limit (its first cell, before Validate starts), then asks for 1 GiB
    more once Validate's kernel runs. (Allocating all of it at once took 6.5 s to be killed, longer than the whole of
    Validate once the packages' bytecode was installed.) Validate runs on a copy of student1's notebook whose last
    cell waits (at most ``G1_HOLD_S``) until the test has seen the kill: on a loaded machine the kill once came 23.3 s
    after Run, when Validate had ended 0.5 s before, and the test had measured nothing (CI21)."""
    student1, student2 = hub.students[:2]
    groups = limits.detect(server.cgroup_name(hub.layout))
    limit_mb = settings.course()["hub"]["mem_limit_mb"]
    hold = f"held = bytearray({limit_mb - 512} * 2**20)   # under this student's {limit_mb} MiB\nprint('held')"
    allocate = "x = bytearray(1024 * 2**20)   # past the limit\nprint('allocated')"
    metadata = nbformat.read(str(RELEASE / f"{ASSIGNMENT}.ipynb"), 4).metadata     # its kernel (Lab: by language)
    hub.run_as(student2, SCRATCH, f"/home/{student2}/g1.ipynb", json.dumps([hold, allocate]), json.dumps(metadata),
               check=True)
    hog = student_lab(hub, chromium, screenshots, student2)
    hog.open_notebook("g1.ipynb")
    hog.start_cell(0)
    wait_for(lambda: "held" in hog.outputs()[0]["text"], 120, "student2's first cell (holding memory)")
    oom_before = {s: groups.oom_kills(s) for s in (student1, student2)}

    go = Path(f"/home/{student1}/.g1-go")                         # written by the test once the kill was seen
    held = f"{ASSIGNMENT}/g1-validate.ipynb"
    hub.run_as(student1, HOLD_COPY, f"/home/{student1}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb", f"/home/{student1}/{held}",
               HOLD_CELL.format(go=str(go), seconds=G1_HOLD_S), check=True)
    try:
        lab = student_lab(hub, chromium, screenshots, student1)
        lab.open_notebook(held)
        idle = groups.processes(student1)
        start = time.perf_counter()
        lab.start_validate()
        # Validate's kernel runs in student1's group (a process that was not there before): now student2 allocates.
        wait_for(lambda: groups.processes(student1) - idle, 120, "Validate's kernel in student1's group")
        run = time.perf_counter()
        hog.start_cell(1)
        wait_for(lambda: groups.oom_kills(student2) > oom_before[student2], 120, "the OOM killer in student2's group")
        killed_s = time.perf_counter() - run
        peak_mb = groups.memory_peak_mb(student2)
        running = bool(groups.processes(student1) - idle)         # student1's Validate still at work meanwhile
        go.touch()
        kind, text = lab.validation_result()
    finally:
        go.unlink(missing_ok=True)
        Path(f"/home/{student1}/{held}").unlink(missing_ok=True)
    validate_s = time.perf_counter() - start
    lab.screenshot("validated-during-g1")
    check_validation_dialog(lab, kind, text, passed={"softmax"})
    lab.close_dialog()
    died = wait_for(lambda: [d for d in hog.driver.find_elements(By.CSS_SELECTOR, ".jp-Dialog")
                             if "appears to have died" in d.text], 120, "student2's 'kernel died' dialog")[0]
    hog.screenshot("kernel-died")
    died.find_element(By.CSS_SELECTOR, "button.jp-Dialog-button").click()
    wait_for(lambda: (st := hog.state()) and st["status"] == "idle", 120, "student2's restarted kernel")
    print(f"\n[hub] G1: student2's 1024 MiB more past {limit_mb - 512} MiB held killed {killed_s:.1f} s after Run "
          f"(group peak {peak_mb:.0f} MiB of {limit_mb}); student1's Validate ran meanwhile and completed in "
          f"{validate_s:.1f} s; "
          f"OOM kills: student1 {groups.oom_kills(student1) - oom_before[student1]}, "
          f"student2 {groups.oom_kills(student2) - oom_before[student2]}")
    RESULTS["g1"] = {"killed_s": killed_s, "peak_mb": peak_mb, "validate_s": validate_s}
    assert running, "student1's Validate had finished before student2's kernel was killed: nothing was measured"
    assert groups.oom_kills(student1) == oom_before[student1]            # nothing of student1's was killed
    assert peak_mb <= limit_mb + 1                                        # the group never got past its limit
    assert groups.processes(student2), "student2's server ended"


ENDLESS = "x = 0\nwhile True:\n    x += 1"
H7_LIMIT_S = 15                # Validate's limit while H7 runs (the course's own, timeouts.validate_total, is longer)
OPEN_AND_SAVE = """const [path, done] = arguments;
const base = JSON.parse(document.getElementById("jupyter-config-data").textContent).baseUrl;
const xsrf = (document.cookie.match(/(?:^|; )_xsrf=([^;]*)/) || [])[1];
const headers = {"Content-Type": "application/json"};
if (xsrf) headers["X-XSRFToken"] = decodeURIComponent(xsrf);
const url = base + "api/contents/" + path, start = performance.now();
fetch(url + "?content=1", {headers}).then(r => r.json()).then(model => {
    const opened = performance.now() - start;
    return fetch(url, {method: "PUT", headers, body: JSON.stringify(
        {type: "notebook", format: "json", content: model.content})}).then(
        r => done([opened / 1000, (performance.now() - start - opened) / 1000, r.status]));
}).catch(e => done([-1, -1, String(e)]));"""


def validate_label(lab) -> str:
    return lab.driver.find_element(By.CSS_SELECTOR, ".jp-NotebookPanel:not(.lm-mod-hidden) jp-button.validate-button"
                                   ).text.strip()


def test_h7_validate_of_an_endless_loop_leaves_the_lab_usable_and_ends_at_its_limit(hub, chromium, screenshots):
    """H7: student1 validates a notebook whose first cell never ends (nbgrader's Validate ran it on the server's
    event loop: the whole JupyterLab froze for 26 min). Validate's button says that it runs and cancels it when
    clicked; run again, it ends at its limit (``c.KoreanValidateHandler.limit_s`` of the students' nbgrader config,
    lowered for this test) with the Korean message naming the cell that ran, and meanwhile student1's lab opens and
    saves a notebook in a second or two and saves the open one."""
    student1 = hub.students[0]
    config = hub.layout.nbgrader_config
    original = config.read_text()
    lowered, n = re.subn(r"c\.KoreanValidateHandler\.limit_s = \S+", f"c.KoreanValidateHandler.limit_s = {H7_LIMIT_S}",
                         original)
    assert n == 1, "the hub's nbgrader config sets no Validate limit"
    metadata = json.dumps(nbformat.read(str(RELEASE / f"{ASSIGNMENT}.ipynb"), 4).metadata)
    hub.run_as(student1, SCRATCH, f"/home/{student1}/h7.ipynb", json.dumps([ENDLESS, "y = 1"]), metadata, check=True)
    hub.run_as(student1, SCRATCH, f"/home/{student1}/h7-other.ipynb", json.dumps(["z = 2"]), metadata, check=True)
    config.write_text(lowered)
    try:
        lab = student_lab(hub, chromium, screenshots, student1)
        lab.open_notebook("h7.ipynb")
        lab.start_validate()                                            # cancelled from its own button
        wait_for(lambda: validate_label(lab) == ValidateText.RUNNING.korean(), 60, "Validate's 'running' label")
        lab.click(By.CSS_SELECTOR, ".jp-NotebookPanel:not(.lm-mod-hidden) jp-button.validate-button")
        kind, text = lab.validation_result(60)
        lab.screenshot("h7-cancelled")
        assert kind == "error" and text.startswith(ValidateText.CANCELLED.korean(running="").strip()), text
        lab.close_dialog()

        start = time.perf_counter()                                     # run to its limit
        lab.start_validate()
        wait_for(lambda: validate_label(lab) == ValidateText.RUNNING.korean(), 60, "Validate's 'running' label")
        times = []
        for _ in range(3):
            opened, saved, status = lab.driver.execute_async_script(OPEN_AND_SAVE, "h7-other.ipynb")
            assert status == 200, status
            times += [opened, saved]
        lab.type_into_cell(1, "y = 2")
        edited = time.perf_counter()
        lab.shortcut(Keys.CONTROL, "s")
        wait_for(lambda: not lab.state()["dirty"], 30, "the notebook to be saved")
        times.append(time.perf_counter() - edited)
        during = time.perf_counter() - start
        kind, text = lab.validation_result(H7_LIMIT_S + 60)
        took = time.perf_counter() - start
        lab.screenshot("h7-time-limit")
        print(f"\n[hub] H7: open, save during Validate: {', '.join(f'{t:.2f}' for t in times)} s (the last: the open "
              f"notebook, Ctrl+S); Validate ended after {took:.1f} s (limit {H7_LIMIT_S} s)")
        assert during < H7_LIMIT_S, "Validate had ended before the lab was tried"
        assert max(times) < 2.0, times
        running = ValidateText.WAS_RUNNING.korean(where=ValidateText.CODE_CELL.korean(number=1))
        assert kind == "error" and text == ValidateText.TIME_LIMIT.korean(seconds=H7_LIMIT_S, running=running), text
        assert took < H7_LIMIT_S + 20, took
        lab.close_dialog()
    finally:
        config.write_text(original)


def test_a_student_gets_no_formgrader(hub, chromium, screenshots):
    """student1 (logged in, not in formgrade-<course>) asks for the course's formgrader: the hub refuses (403)."""
    driver = chromium(hub.students[0])
    driver.get(f"{hub.url}/services/{hub.layout.course_id}/formgrader")
    page = wait_for(lambda: (t := driver.find_element(By.TAG_NAME, "body").text) and "403" in t and t, 120,
                    "the hub's 403 page")
    labpage.Lab(driver, None, screenshots, f"hub-{hub.students[0]}").screenshot("formgrader-403")
    assert "Manage Assignments" not in page and "Forbidden" in page, page[:500]


# ------------------------------------------------------------------------------------------------ the instructor
def modal(driver, timeout: float) -> tuple[str, str]:
    """formgrader's result dialog: ("success" or "error", its text); closed afterwards."""
    found = wait_for(lambda: [m for m in driver.find_elements(By.CSS_SELECTOR, "#success-modal, #error-modal")
                              if m.is_displayed()], timeout, "formgrader's result dialog")[0]
    kind, text = found.get_attribute("id").split("-")[0], found.text

    def closed():
        """Click its button until it is gone, as a person would: Bootstrap ignores a click that lands while the
        dialog is still fading in (one CI run waited 30 s for a dialog whose only click came too early)."""
        shown = [m for m in driver.find_elements(By.CSS_SELECTOR, ".modal") if m.is_displayed()]
        if shown:
            found.find_element(By.CSS_SELECTOR, ".modal-footer button").click()
        return not shown

    wait_for(closed, 30, "the dialog to close", interval=1.0)
    return kind, text


def assignment_row(driver):
    def find():
        for row in driver.find_elements(By.CSS_SELECTOR, "table tbody tr"):
            name = row.find_elements(By.CSS_SELECTOR, "td.name")
            if name and name[0].text.strip() == ASSIGNMENT:
                return row
    # formgrader lists the assignments from the gradebook after its page loaded: once (CI21, the machine loaded by
    # the other worker's class run) not within 60 s; a wait, not a bound of anything the test measures
    return wait_for(find, 120, f"{ASSIGNMENT} in Manage Assignments")


def account_of(student_id_cell: str) -> str:
    """The account name in formgrader's "Student ID" cell: "2026001 (student1)" (the roster's number first) or
    "student1"."""
    found = re.fullmatch(r".*\((.+)\)", student_id_cell.strip())
    return found.group(1) if found else student_id_cell.strip()


def submissions(driver, expect: int) -> dict[str, dict]:
    """The rows of an assignment's Submissions page by account."""
    table = {}
    for row in driver.find_elements(By.CSS_SELECTOR, "table tbody tr"):
        cells = {c: row.find_element(By.CSS_SELECTOR, f"td.{c}")
                 for c in ("student-id", "status", "score", "autograde")}
        table[account_of(cells["student-id"].text)] = cells
    return table if len(table) == expect else None


def test_instructor1_collects_autogrades_and_releases_feedback(hub, chromium, screenshots, exchange_attacks):
    """After student3 and student4 attacked the exchange (tests/hub/live/attacks.py): the whole class is collected,
    autograded and gets feedback; test_hub_exchange.py checks the rest."""
    n = len(hub.students)
    driver = chromium(hub.instructor)
    shot = labpage.Lab(driver, None, screenshots, f"hub-{hub.instructor}").screenshot
    formgrader = f"/services/{hub.layout.course_id}/formgrader"
    login(driver, hub, hub.instructor, next_url=formgrader)
    row = assignment_row(driver)
    shot("formgrader")

    row.find_element(By.CSS_SELECTOR, "td.collect a").click()
    kind, text = modal(driver, 300)
    RESULTS["collect"] = (kind, text)
    assert kind == "success", text
    wait_for(lambda: assignment_row(driver).find_element(By.CSS_SELECTOR, "td.num-submissions").text.strip() == str(n),
             60, f"{n} submissions")
    shot("collected")

    assignment_row(driver).find_element(By.CSS_SELECTOR, "td.num-submissions a").click()
    wait_for(lambda: submissions(driver, n), 60, f"the {n} submissions")
    times = {}
    student1, student2 = hub.students[:2]
    for student in hub.students:
        start = time.perf_counter()
        wait_for(lambda: submissions(driver, n), 60, "the submissions")[student]["autograde"] \
            .find_element(By.TAG_NAME, "a").click()
        kind, text = modal(driver, AUTOGRADE_S)
        times[student] = time.perf_counter() - start
        assert kind == "success", text
    print(f"\n[hub] autograde from formgrader as {hub.layout.grader}: "
          + ", ".join(f"{s} {t:.1f} s" for s, t in times.items()))
    RESULTS["autograde_s"] = times
    scores = wait_for(lambda: (t := submissions(driver, n)) and all(t[s]["score"].text.strip() for s in t) and
                      {s: t[s]["score"].text.strip() for s in t}, 60, "every score")
    RESULTS["scores"] = scores
    shot("autograded")
    # "Student ID" is the roster's student number, the account after it (conftest.write_roster)
    shown = {s: c["student-id"].text.strip() for s, c in submissions(driver, n).items()}
    assert shown == {s: f"{hub.roster(s)[0]} ({s})" for s in hub.students}, shown
    total, softmax = sum(points().values()), points()["test_softmax"]
    # Both submitted after the due date (conftest.py): the totals are net of the late penalty (one started day).
    late = softmax - late_penalty(softmax)
    assert 0 < late < softmax
    assert scores[student1] == f"{late:g} / {total:g}", scores         # softmax right, nothing else, late
    wrong, out_of = (float(x) for x in scores[student2].split(" / "))
    assert out_of == total and 0 <= wrong < late, scores                                # softmax over the wrong axis
    # Formgrader's pages round every score to the course's precision (its own: 2 decimals).
    decimals = settings.course()["score_decimals"]
    assert driver.execute_script("return roundToPrecision(2.6251, 2)") == round(2.6251, decimals)
    # The student's own page in formgrader (Manage Students > student1): the same total for attention.
    driver.get(f"{hub.url}{formgrader}/manage_students/{student1}")
    row = wait_for(lambda: [r for r in driver.find_elements(By.CSS_SELECTOR, "table tbody tr")
                            if r.find_elements(By.CSS_SELECTOR, "td.name") and
                            r.find_element(By.CSS_SELECTOR, "td.name").text.strip() == ASSIGNMENT
                            and r.find_element(By.CSS_SELECTOR, "td.score").text.strip()], 60,
                   f"{ASSIGNMENT} on {student1}'s page")[0]
    assert row.find_element(By.CSS_SELECTOR, "td.score").text.strip() == f"{late:g} / {total:g}"
    shot("student1-late-total")
    driver.get(f"{hub.url}{formgrader}/manage_students")                   # Manage Students: the roster's numbers
    students = wait_for(lambda: (rows := {r.find_element(By.CSS_SELECTOR, "td.id").text.strip():
                                          r.find_element(By.CSS_SELECTOR, "td.name").text.strip()
                                          for r in driver.find_elements(By.CSS_SELECTOR, "table tbody tr")
                                          if r.find_elements(By.CSS_SELECTOR, "td.id")}) and len(rows) >= n and rows,
                        60, "the Students page")
    for student in hub.students:
        number, name = hub.roster(student)
        assert students.get(f"{number} ({student})") == name, students
    shot("students-page")

    driver.get(f"{hub.url}{formgrader}")
    assignment_row(driver).find_element(By.CSS_SELECTOR, "td.generate-feedback a").click()
    kind, text = modal(driver, AUTOGRADE_S)
    assert kind == "success", text
    assignment_row(driver).find_element(By.CSS_SELECTOR, "td.release-feedback a").click()
    kind, text = modal(driver, 300)
    RESULTS["release_feedback"] = (kind, text)
    assert kind == "success", text
    shot("feedback-released")


def test_student1_fetches_feedback_and_reads_the_korean_report(hub, chromium, screenshots, tmp_path):
    """Fetch Feedback; the submission's row shows its time in the course's zone, a download of it (the zip holds
    the notebook the exchange keeps) and "view feedback", which opens the report itself in a tab of its own, its
    math rendered (nbgrader opened the feedback's folder; JupyterLab's viewer showed raw math until "Trust HTML")."""
    student1 = hub.students[0]
    lab = student_lab(hub, chromium, screenshots, student1)
    assignment_list(lab)
    row = row_named(listed(lab, "submitted", 1), ASSIGNMENT)
    row.find_element(By.XPATH, ".//button[normalize-space()='Fetch Feedback']").click()
    link = wait_for(lambda: row_named(listed(lab, "submitted", 1), ASSIGNMENT)
                    .find_elements(By.XPATH, ".//a[contains(., 'view feedback')]"), 120, "the feedback link")[0]
    lab.screenshot("feedback-fetched")
    html = list(Path(f"/home/{student1}", ASSIGNMENT, "feedback").glob(f"*/{ASSIGNMENT}.html"))
    assert len(html) == 1, html
    submission = row_named(listed(lab, "submitted", 1), ASSIGNMENT).find_element(By.CSS_SELECTOR,
                                                                                 ".nested_list_item .item_name")
    stamp = hub.stored_submissions(student1)[0][0]                            # the exchange's time (UTC)
    local = lab_assignments.local_time(lab_assignments.exchange_time(stamp), settings.course()["timezone"])
    assert submission.text.startswith(local), (submission.text, stamp)
    # the download, as student1 clicks it: a zip of the notebook as the exchange keeps it, through their own server
    lab.driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(tmp_path)})
    submission.find_element(By.CSS_SELECTOR, "a.attention-course-download").click()
    zipped = wait_for(lambda: list(tmp_path.glob(f"{ASSIGNMENT}-*.zip")), 60, "the downloaded submission")[0]
    with zipfile.ZipFile(zipped) as archive:
        assert archive.read(f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb") == hub.submitted_notebook(student1)
    # view feedback: the page itself, in a tab of its own
    tabs = set(lab.driver.window_handles)
    link.click()
    new_tab = wait_for(lambda: set(lab.driver.window_handles) - tabs, 30, "the feedback's tab")
    lab.driver.switch_to.window(new_tab.pop())
    assert lab.driver.current_url.endswith(f"/files/{quote(str(html[0].relative_to(f'/home/{student1}')))}"), \
        lab.driver.current_url
    text = wait_for(lambda: "비공개 채점기" in (t := lab.driver.find_element(By.TAG_NAME, "body").text) and t, 60,
                    "the feedback page")
    lab.screenshot("feedback")
    softmax = points()["test_softmax"]
    assert f"[softmax] {softmax:g} / {softmax:g}점 (비공개 채점기)" in text, text[:3000]
    assert "아직 구현하지 않았습니다" in text                   # the exercises left undone, said in Korean
    labels = Label.korean_all()
    assert f"{labels['late_penalty']} ({labels['score']}: -{late_penalty(softmax):g})" in text, text[:3000]
    # The page's math, rendered in the student's browser by the KaTeX inlined into it (no network), none left raw.
    rendered = lab.driver.execute_script("return document.querySelectorAll('.katex').length")
    assert rendered > 10 and not lab.driver.find_elements(By.CSS_SELECTOR, ".katex-error"), rendered
    assert "$$" not in text and "\\mathrm{softmax}" not in text
    lab.driver.close()
    lab.driver.switch_to.window(sorted(tabs)[0])


# ------------------------------------------------------------------------------------------------ permissions
READ_COURSE = "import sys\nprint(open(sys.argv[1] + '/course_config.py').read()[:20]); import os\n" \
              "print(os.listdir(sys.argv[1] + '/autograder/graders'))"
IMPORT_AUTOGRADER = "import autograder.graders, sys\nprint(autograder.graders.__file__)"
READ_GRADEBOOK = ("import sqlite3, sys\ndb = sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True)\n"
                  "print(db.execute('select id from student').fetchall())")


def checks(hub):
    layout = hub.layout
    return {
        "read the course repository": (READ_COURSE, [str(layout.course_dir)], {}),
        # student1's kernel runs the students' environment's python; even pointed at the copy, no autograder
        "import autograder in the students' environment": (IMPORT_AUTOGRADER, [],
                                                            {"PYTHONPATH": str(layout.course_dir)}),
        "read the gradebook": (READ_GRADEBOOK, [str(layout.course_dir / "gradebook.db")], {}),
    }


@pytest.mark.parametrize("what", ["read the course repository", "import autograder in the students' environment",
                                  "read the gradebook"])
def test_student1_cannot_but_the_grading_account_can(hub, what):
    code, args, env = checks(hub)[what]
    student = hub.run_as(hub.students[0], code, *args, env=env)
    grader = hub.run_as(hub.layout.grader, code, *args)
    assert student.returncode != 0, f"student1 could {what}:\n{student.stdout}"
    assert re.search(r"PermissionError|ModuleNotFoundError|unable to open|not found", student.stderr), student.stderr
    assert grader.returncode == 0, f"{hub.layout.grader} could not {what}:\n{grader.stderr}"


def test_student_kernels_run_the_students_environment(hub):
    spec = json.loads((hub.layout.env / "share" / "jupyter" / "kernels" / "attention-course" / "kernel.json")
                      .read_text())
    assert Path(spec["argv"][0]) == hub.layout.python and spec["env"]["KERAS_BACKEND"] == "torch", spec


READ_SUBMISSION = """import base64, os, sys, requests
exchange, course, victim = sys.argv[1:4]
token = os.environ.get("JUPYTERHUB_API_TOKEN")
if not token:                                   # a student: their own token, from their own login
    hub, me = sys.argv[4:6]
    s = requests.Session()
    s.get(f"{hub}/hub/login")
    s.post(f"{hub}/hub/login", data={"username": me, "password": sys.stdin.read().strip(),
                                     "_xsrf": s.cookies.get("_xsrf")}, allow_redirects=False)
    token = s.post(f"{hub}/hub/api/users/{me}/tokens", json={},
                   headers={"X-XSRFToken": s.cookies.get("_xsrf")}).json()["token"]
r = requests.get(f"{exchange}/submission/{course}/attention/{victim}", headers={"Authorization": f"token {token}"})
print(r.status_code)
assert r.status_code == 200, r.text[:200]
print(base64.b64decode(r.json()["files"][0]["content"])[:20])
"""


def test_student1_cannot_read_student2s_submission_but_the_grading_account_can(hub):
    """The exchange service gives a submission to the course's instructors (the grading service) and to the student
    who submitted it; student1 asks with their own token (from their own login): their own is given, student2's is
    refused."""
    from tests.hub.live import attacks

    from autograder.hub.provision import formgrader_token

    layout, (student1, student2) = hub.layout, hub.students[:2]
    own = attacks.su(hub, student1, READ_SUBMISSION, layout.exchange_url, layout.course_id, student1, hub.url,
                     student1, stdin=hub.passwords[student1])
    assert own.returncode == 0 and own.stdout.startswith("200"), (own.stdout, own.stderr[-500:])
    student = attacks.su(hub, student1, READ_SUBMISSION, layout.exchange_url, layout.course_id, student2, hub.url,
                         student1, stdin=hub.passwords[student1])
    grader = hub.run_as(layout.grader, READ_SUBMISSION, layout.exchange_url, layout.course_id, student2,
                        env={"JUPYTERHUB_API_TOKEN": formgrader_token(layout)})
    assert student.returncode != 0 and student.stdout.startswith("403"), (student.stdout, student.stderr[-500:])
    assert grader.returncode == 0 and grader.stdout.startswith("200"), grader.stderr[-500:]
