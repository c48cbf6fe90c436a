"""The course on a real JupyterHub (``python -m autograder hub``), as its people use it, in headless Chromium.

In order: student1 logs in, fetches ``attention`` from nbgrader's Assignment List, writes ``softmax``, validates
and submits; student2 submits a wrong ``softmax`` (axis 0); a student who is not in the formgrade group gets no
formgrader; instructor1 opens the course's formgrader service, collects, autogrades both submissions (this
package's pipeline, as the non-root grading account), sees both scores, generates and releases feedback; student1
fetches it and reads the Korean report. Then the permission checks, each both ways (student1 fails, the grading
account succeeds). Screenshots: build/screenshots/hub-*.png.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import nbformat
import pytest

pytest.importorskip("selenium", reason="selenium is not installed (pip install -r requirements-browser.txt)")

import labpage  # noqa: E402
from labpage import wait_for  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from test_browser_assignments import listed  # noqa: E402
from test_browser_student import SOFTMAX, SOFTMAX_AXIS_0  # noqa: E402

from autograder import settings  # noqa: E402

ASSIGNMENT = "attention"
SPAWN_S = 300               # a user's first JupyterLab (the hub spawns it after login)
AUTOGRADE_S = 900           # one submission through formgrader on a busy 2-core machine
RESULTS = {}                # what one step hands the next (the steps run in this file's order)


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


def login(driver, hub, user: str, next_url: str = "") -> None:
    """The hub's login page: user name, password (PAM), Sign in."""
    driver.get(f"{hub.url}/hub/login" + (f"?next={quote(next_url)}" if next_url else ""))
    wait_for(lambda: driver.find_elements(By.ID, "username_input"), 60, "the login form")
    driver.find_element(By.ID, "username_input").send_keys(user)
    driver.find_element(By.ID, "password_input").send_keys(hub.passwords[user])
    driver.find_element(By.ID, "login_submit").click()


def student_lab(hub, chromium, screenshots, user: str) -> HubLab:
    driver = chromium(user)
    lab = HubLab(driver, UserServer(f"{hub.url}/user/{user}", Path(f"/home/{user}")), screenshots, f"hub-{user}")
    driver.get(f"{hub.url}/user/{user}/lab")           # the hub asks for a login first, once per browser
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


def row_named(rows, name: str):
    return [r for r in rows if r.find_element(By.CSS_SELECTOR, ".item_name").text == name][0]


def fetch(lab, hub, user: str) -> None:
    assignment_list(lab)
    assignments = settings.course()["assignments"]          # the hub releases every assignment of course_config.py
    released = listed(lab, "released", len(assignments))
    assert {r.find_element(By.CSS_SELECTOR, ".item_course").text for r in released} == {hub.layout.course_id}
    assert {r.find_element(By.CSS_SELECTOR, ".item_name").text for r in released} == set(assignments)
    lab.screenshot("released")
    row_named(released, ASSIGNMENT).find_element(By.CSS_SELECTOR, ".item_status button").click()     # Fetch
    listed(lab, "fetched", 1)
    assert (Path(f"/home/{user}") / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()
    lab.screenshot("fetched")


def submit(lab, hub, user: str) -> Path:
    assignment_list(lab)
    fetched = row_named(listed(lab, "fetched", 1), ASSIGNMENT)
    fetched.find_element(By.XPATH, ".//*[contains(@class,'item_status')]//button[normalize-space()='Submit']").click()
    listed(lab, "submitted", 1)
    lab.screenshot("submitted")
    inbound = list((hub.layout.exchange / hub.layout.course_id / "inbound").glob(f"{user}+{ASSIGNMENT}+*"))
    assert len(inbound) == 1, inbound
    return inbound[0]


def points() -> dict[str, float]:
    """grade_id -> points of every grade cell of the released assignment."""
    nb = nbformat.read(str(Path(__file__).resolve().parents[2] / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"), 4)
    return {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"].get("points", 0) for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("grade")}


# ------------------------------------------------------------------------------------------------ the students
def test_student1_logs_in_fetches_writes_softmax_validates_and_submits(hub, chromium, screenshots):
    lab = student_lab(hub, chromium, screenshots, "student1")
    lab.screenshot("logged-in")
    fetch(lab, hub, "student1")

    nb = lab.open_notebook(f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb")
    lab.type_into_cell(nb.index("solution_softmax"), SOFTMAX)
    kind, text = lab.validate()                        # saves, then runs the notebook on the server
    lab.screenshot("validated")
    assert kind == "error", text                       # the other exercises are not done yet ...
    assert re.search(r"❌ \w+: 아직 구현하지 않았습니다", text), text[:2000]
    assert "❌ softmax" not in text, text[:2000]       # ... but softmax passes its visible checks
    lab.close_dialog()
    assert SOFTMAX.strip() in lab.saved(nb).cells[nb.index("solution_softmax")].source

    submission = submit(lab, hub, "student1")
    submitted = nbformat.read(str(submission / f"{ASSIGNMENT}.ipynb"), 4)
    assert SOFTMAX.strip() in submitted.cells[nb.index("solution_softmax")].source


def test_student2_submits_a_wrong_softmax(hub, chromium, screenshots):
    """Fetch and Submit in the browser; the wrong answer (softmax over axis 0) is written into the fetched
    notebook as student2, as an editor would save it."""
    lab = student_lab(hub, chromium, screenshots, "student2")
    fetch(lab, hub, "student2")
    edit = ("import sys, nbformat\nnb = nbformat.read(sys.argv[1], 4)\n"
            "cell = [c for c in nb.cells if c.metadata.get('nbgrader', {}).get('grade_id') == 'solution_softmax'][0]\n"
            "cell.source = sys.argv[2]\nnbformat.write(nb, sys.argv[1])\n")
    hub.run_as("student2", edit, f"/home/student2/{ASSIGNMENT}/{ASSIGNMENT}.ipynb", SOFTMAX_AXIS_0, check=True)
    submit(lab, hub, "student2")


def test_a_student_gets_no_formgrader(hub, chromium, screenshots):
    """student1 (logged in, not in formgrade-<course>) asks for the course's formgrader: the hub refuses (403)."""
    driver = chromium("student1")
    driver.get(f"{hub.url}/services/{hub.layout.course_id}/formgrader")
    page = wait_for(lambda: (t := driver.find_element(By.TAG_NAME, "body").text) and "403" in t and t, 120,
                    "the hub's 403 page")
    labpage.Lab(driver, None, screenshots, "hub-student1").screenshot("formgrader-403")
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
    return wait_for(find, 60, f"{ASSIGNMENT} in Manage Assignments")


def submissions(driver, expect: int) -> dict[str, dict]:
    table = {}
    for row in driver.find_elements(By.CSS_SELECTOR, "table tbody tr"):
        cells = {c: row.find_element(By.CSS_SELECTOR, f"td.{c}")
                 for c in ("student-id", "status", "score", "autograde")}
        table[cells["student-id"].text.strip()] = cells
    return table if len(table) == expect else None


def test_instructor1_collects_autogrades_and_releases_feedback(hub, chromium, screenshots):
    driver = chromium("instructor1")
    shot = labpage.Lab(driver, None, screenshots, "hub-instructor1").screenshot
    formgrader = f"/services/{hub.layout.course_id}/formgrader"
    login(driver, hub, "instructor1", next_url=formgrader)
    row = assignment_row(driver)
    shot("formgrader")

    row.find_element(By.CSS_SELECTOR, "td.collect a").click()
    kind, text = modal(driver, 300)
    assert kind == "success", text
    wait_for(lambda: assignment_row(driver).find_element(By.CSS_SELECTOR, "td.num-submissions").text.strip() == "2",
             60, "2 submissions")
    shot("collected")

    assignment_row(driver).find_element(By.CSS_SELECTOR, "td.num-submissions a").click()
    wait_for(lambda: submissions(driver, 2), 60, "the 2 submissions")
    times = {}
    for student in ("student1", "student2"):
        start = time.perf_counter()
        wait_for(lambda: submissions(driver, 2), 60, "the submissions")[student]["autograde"] \
            .find_element(By.TAG_NAME, "a").click()
        kind, text = modal(driver, AUTOGRADE_S)
        times[student] = time.perf_counter() - start
        assert kind == "success", text
    print(f"\n[hub] autograde from formgrader as {hub.layout.grader}: "
          + ", ".join(f"{s} {t:.1f} s" for s, t in times.items()))
    RESULTS["autograde_s"] = times
    scores = wait_for(lambda: (t := submissions(driver, 2)) and all(t[s]["score"].text.strip() for s in t) and
                      {s: t[s]["score"].text.strip() for s in t}, 60, "both scores")
    shot("autograded")
    total, softmax = sum(points().values()), points()["test_softmax"]
    assert scores["student1"] == f"{softmax:g} / {total:g}", scores    # softmax right, nothing else
    wrong, out_of = (float(x) for x in scores["student2"].split(" / "))
    assert out_of == total and 0 <= wrong < softmax, scores                             # softmax over the wrong axis

    driver.get(f"{hub.url}{formgrader}")
    assignment_row(driver).find_element(By.CSS_SELECTOR, "td.generate-feedback a").click()
    kind, text = modal(driver, AUTOGRADE_S)
    assert kind == "success", text
    assignment_row(driver).find_element(By.CSS_SELECTOR, "td.release-feedback a").click()
    kind, text = modal(driver, 300)
    assert kind == "success", text
    shot("feedback-released")


def test_student1_fetches_feedback_and_reads_the_korean_report(hub, chromium, screenshots):
    lab = student_lab(hub, chromium, screenshots, "student1")
    assignment_list(lab)
    row = row_named(listed(lab, "submitted", 1), ASSIGNMENT)
    row.find_element(By.XPATH, ".//button[normalize-space()='Fetch Feedback']").click()
    wait_for(lambda: row_named(listed(lab, "submitted", 1), ASSIGNMENT)
             .find_elements(By.XPATH, ".//a[contains(., 'view feedback')]"), 120, "the feedback link")
    lab.screenshot("feedback-fetched")
    html = list(Path("/home/student1", ASSIGNMENT, "feedback").glob(f"*/{ASSIGNMENT}.html"))
    assert len(html) == 1, html
    lab.driver.get(f"{lab.server.url}/files/{quote(str(html[0].relative_to('/home/student1')))}")
    text = wait_for(lambda: "비공개 채점기" in (t := lab.driver.find_element(By.TAG_NAME, "body").text) and t, 60,
                    "the feedback page")
    lab.screenshot("feedback")
    softmax = points()["test_softmax"]
    assert f"[softmax] {softmax:g} / {softmax:g}점 (비공개 채점기)" in text, text[:3000]
    assert "아직 구현하지 않았습니다" in text                   # the exercises left undone, said in Korean


# ------------------------------------------------------------------------------------------------ permissions
READ_COURSE = "import sys\nprint(open(sys.argv[1] + '/course_config.py').read()[:20]); import os\n" \
              "print(os.listdir(sys.argv[1] + '/autograder/graders'))"
IMPORT_AUTOGRADER = "import autograder.graders, sys\nprint(autograder.graders.__file__)"
READ_SUBMISSION = ("import glob, os, sys\ninbound = sys.argv[1]\nprint(os.listdir(inbound))\n"
                   "found = glob.glob(inbound + '/student2+*/*.ipynb')\nassert found, 'not found'\n"
                   "print(open(found[0]).read()[:20])")
READ_GRADEBOOK = ("import sqlite3, sys\ndb = sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True)\n"
                  "print(db.execute('select id from student').fetchall())")


def checks(hub):
    layout = hub.layout
    inbound = str(layout.exchange / layout.course_id / "inbound")
    return {
        "read the course repository": (READ_COURSE, [str(layout.course_dir)], {}),
        # student1's kernel runs the students' environment's python; even pointed at the copy, no autograder
        "import autograder in the students' environment": (IMPORT_AUTOGRADER, [],
                                                            {"PYTHONPATH": str(layout.course_dir)}),
        "read student2's submission in the exchange": (READ_SUBMISSION, [inbound], {}),
        "read the gradebook": (READ_GRADEBOOK, [str(layout.course_dir / "gradebook.db")], {}),
    }


@pytest.mark.parametrize("what", ["read the course repository", "import autograder in the students' environment",
                                  "read student2's submission in the exchange", "read the gradebook"])
def test_student1_cannot_but_the_grading_account_can(hub, what):
    code, args, env = checks(hub)[what]
    student = hub.run_as("student1", code, *args, env=env)
    grader = hub.run_as(hub.layout.grader, code, *args)
    assert student.returncode != 0, f"student1 could {what}:\n{student.stdout}"
    assert re.search(r"PermissionError|ModuleNotFoundError|unable to open|not found", student.stderr), student.stderr
    assert grader.returncode == 0, f"{hub.layout.grader} could not {what}:\n{grader.stderr}"


def test_student_kernels_run_the_students_environment(hub):
    spec = json.loads((hub.layout.env / "share" / "jupyter" / "kernels" / "attention-course" / "kernel.json")
                      .read_text())
    assert Path(spec["argv"][0]) == hub.layout.python and spec["env"]["KERAS_BACKEND"] == "torch", spec
