"""Issue 20's attacks on the exchange (rows B1, C1, D1-D5, A9), made from the attacking students' own accounts
(tests/hub/live/attacks.py, the ``exchange_attacks`` fixture, run before the instructor collects in
test_hub_course.py), and what the class looks like afterwards: every honest student's submission is theirs, at
the time the server received it, collected, graded and returned; no attacker's file, name or time got in; no
attack stopped collect, formgrader or feedback for the others.

On the hub before issue 20 (nbgrader's shared inbound folder) every one of these failed: the breaker's
submission aborted collect for the whole class (D1/D2), so nothing was graded or returned.
"""
from __future__ import annotations

import base64
import datetime
import json
import re
from pathlib import Path
from urllib.parse import quote

import nbformat
import pytest

pytest.importorskip("selenium", reason="selenium is not installed (pip install -r requirements-browser.txt)")

from tests.hub.live.attacks import FORGED_TIME  # noqa: E402
from tests.browser.labpage import wait_for  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from tests.browser.test_browser_student import SOFTMAX_AXIS_0  # noqa: E402
from tests.hub.live.test_hub_course import (ASSIGNMENT, RESULTS, assignment_row, login, modal, points,  # noqa: E402
                                            submissions)

from autograder import settings  # noqa: E402
from autograder.messages import Reason  # noqa: E402


def collected(hub, student: str) -> Path:
    return hub.layout.course_dir / "submitted" / student / ASSIGNMENT


def as_utc(epoch: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).replace(tzinfo=None)


def solution_cell(notebook: bytes) -> str:
    nb = nbformat.reads(notebook.decode(), 4)
    return [c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "solution_softmax"][0]


@pytest.fixture(scope="module")
def after(hub, exchange_attacks):
    """The class after the attacks and the instructor's collect, autograde and release of feedback (as far as
    test_hub_course.py got: each test here checks what it needs)."""
    attacks, victim_before = exchange_attacks
    return attacks, victim_before, hub.gradebook()


def collected_time(hub, student: str) -> datetime.datetime:
    """The time nbgrader takes for a collected submission (its timestamp.txt), as UTC without a zone."""
    from nbgrader.utils import parse_utc

    return parse_utc((collected(hub, student) / "timestamp.txt").read_text().strip())


def test_B1_no_student_submits_for_another(hub, after):
    """student3 made a submission "of student2" (a folder in the shared inbound with a blank notebook; the
    service's API with student2's name in every field): student2's graded submission is still their own."""
    attacks, victim_before, gradebook = after
    student2 = hub.students[1]
    assert hub.stored_submissions(student2) == victim_before            # nothing added to, or changed in, theirs
    assert SOFTMAX_AXIS_0.strip() in solution_cell((collected(hub, student2) / f"{ASSIGNMENT}.ipynb").read_bytes())
    score, penalty = (gradebook["submissions"][student2][k] for k in ("score", "late_penalty"))
    assert f"{score - penalty:g} / " in RESULTS["scores"][student2] and score < points()["test_softmax"], score
    forged = hub.stored_submissions(hub.students[2])                  # what student3 sent is student3's own
    assert len(forged) >= 2, forged


def test_C1_the_time_is_the_servers(hub, after):
    """student3 wrote an earlier time into their own timestamp.txt and sent one with the service's API: the time
    recorded for their submission is when the server received it."""
    attacks, _, gradebook = after
    forger = hub.students[2]
    recorded = collected_time(hub, forger)
    assert as_utc(attacks.started) - datetime.timedelta(seconds=1) <= recorded <= as_utc(attacks.ended), \
        (recorded, attacks.started, attacks.ended, attacks.forger.get("C1 inbound"), attacks.forger.get("C1 api"))
    assert recorded != datetime.datetime.fromisoformat(FORGED_TIME)
    graded = datetime.datetime.fromisoformat(gradebook["submissions"][forger]["timestamp"])
    assert graded.replace(tzinfo=None) == recorded                       # the gradebook took the same time
    for student in hub.students[:2]:            # the honest students' times: before the attacks
        assert collected_time(hub, student) <= as_utc(attacks.started), student


def test_D1_D2_one_bad_submission_never_stops_collect(hub, after):
    """student4 put a FIFO and then 101 MB (25 MB through the API) into their submission: the class was collected
    (all four), the too-big submission was refused on arrival with the reason in Korean."""
    attacks, _, _ = after
    kind, text = RESULTS["collect"]
    assert kind == "success", text
    for student in hub.students:
        assert (collected(hub, student) / f"{ASSIGNMENT}.ipynb").is_file(), student
    big = attacks.breaker["D2"]
    assert big[0] == 413 and Reason.SUBMISSION_TOO_BIG.found_in(json.loads(big[1])["message"]), big
    log = hub.layout.log.read_text(errors="replace")                 # and the instructor reads why, in English
    assert re.search(rf"refused a submission of {hub.layout.course_id}/{ASSIGNMENT} by {hub.students[3]}: the "
                     r"submission is 25\.\d MB, over the limit of 20 MB", log), log[-3000:]
    sizes = sum(f.stat().st_size for f in collected(hub, hub.students[3]).rglob("*") if f.is_file())
    assert sizes < 2_000_000, sizes                                    # none of the 25 MB got in
    assert not [f for f in collected(hub, hub.students[3]).rglob("*") if not f.is_file() and not f.is_dir()]


def test_D3_garbage_for_the_time_breaks_nothing(hub, chromium, after):
    """student4 sent garbage for the time (a timestamp.txt of garbage, a folder named timestamp.txt): formgrader's
    Manage Submissions still loads all four, and a second collect works."""
    _, _, gradebook = after
    assert gradebook["submissions"][hub.students[3]]["timestamp"]          # the server's time, parsed
    driver = chromium(hub.instructor)
    formgrader = f"/services/{hub.layout.course_id}/formgrader"
    driver.get(f"{hub.url}{formgrader}")
    if driver.find_elements(By.ID, "username_input"):
        login(driver, hub, hub.instructor, next_url=formgrader)
    assignment_row(driver).find_element(By.CSS_SELECTOR, "td.collect a").click()
    kind, text = modal(driver, 300)
    assert kind == "success", text
    assignment_row(driver).find_element(By.CSS_SELECTOR, "td.num-submissions a").click()
    table = wait_for(lambda: submissions(driver, len(hub.students)), 60, "Manage Submissions' rows")
    assert set(table) == set(hub.students), table


def test_D4_feedback_reaches_everyone(hub, after):
    """student4's collected submission had no submission_secret.txt and no timestamp.txt of theirs: feedback was
    released for every student, and student2 fetches theirs."""
    kind, text = RESULTS["release_feedback"]
    assert kind == "success", text
    cid = hub.layout.course_id
    for student in hub.students:
        stamp = (collected(hub, student) / "timestamp.txt").read_text().strip()
        reply = hub.exchange("GET", f"feedback/{cid}/{ASSIGNMENT}/{student}?list_only=true&timestamp={quote(stamp)}")
        assert reply.get("success") and [f["path"] for f in reply["files"]] == [f"{ASSIGNMENT}.html"], (student, reply)
    from tests.hub.live import attacks

    student2 = hub.students[1]
    code = ("import os, subprocess, sys, requests\nhub, me = sys.argv[1:3]\ns = requests.Session()\n"
            "s.get(f'{hub}/hub/login')\ns.post(f'{hub}/hub/login', data={'username': me, 'password': "
            "sys.stdin.read().strip(), '_xsrf': s.cookies.get('_xsrf')}, allow_redirects=False)\n"
            "token = s.post(f'{hub}/hub/api/users/{me}/tokens', json={}, headers={'X-XSRFToken': "
            "s.cookies.get('_xsrf')}).json()['token']\n"
            "p = subprocess.run([sys.executable, '-m', 'nbgrader', 'fetch_feedback', 'attention'], capture_output=True,"
            " text=True, env={**os.environ, 'JUPYTERHUB_API_TOKEN': token, 'JUPYTERHUB_USER': me})\n"
            "print(p.stdout + p.stderr)\n")
    proc = attacks.su(hub, student2, code, hub.url, student2, stdin=hub.passwords[student2])
    html = list((hub.home(student2) / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
    assert len(html) == 1, proc.stdout[-2000:]


def test_D5_no_fake_student_enters_the_gradebook(hub, after):
    """student3 made 300 fake students in 2 s (folders in the shared inbound; submissions through the API under
    300 made-up names): the gradebook holds the roster's students only, and the exchange kept at most its quota
    of student3's own submissions."""
    attacks, _, gradebook = after
    submitted = hub.layout.course_dir / "submitted"
    assert sorted(p.name for p in submitted.iterdir() if not p.name.startswith(".")) == sorted(hub.students)
    assert sorted(gradebook["students"]) == sorted(hub.students), gradebook["students"]
    assert sorted(gradebook["submissions"]) == sorted(hub.students)
    reply = hub.exchange("GET", f"students/{hub.layout.course_id}")
    assert sorted(s["username"] for s in reply["students"]) == sorted(hub.students), reply
    limit = settings.course()["exchange"]["max_submissions"]
    kept = hub.exchange("GET", f"submissions/{hub.layout.course_id}/{ASSIGNMENT}/{hub.students[2]}")
    assert len(kept["submissions"]) == limit, (len(kept["submissions"]), attacks.forger.get("D5 api"))
    assert attacks.forger["D5 api"].get("429"), attacks.forger["D5 api"]          # the rest refused, in Korean


def test_A9_no_student_changes_another_students_submission(hub, after):
    """student3 wrote into and renamed student2's submission (in the shared inbound, by its name; through the
    API: download it, upload feedback for it, delete the assignment, read its feedback): all refused, student2's
    is as submitted."""
    attacks, victim_before, _ = after
    assert hub.stored_submissions(hub.students[1]) == victim_before
    assert attacks.forger["A9 api"] == [403, 403, 403, 403], attacks.forger["A9 api"]
    stored = base64.b64encode(hub.submitted_notebook(hub.students[1])).decode()
    assert SOFTMAX_AXIS_0.strip() in solution_cell(base64.b64decode(stored))


READ_STORE = """import os, sqlite3, sys
store = sys.argv[1]
try:
    print(os.listdir(store + "/files"))
except OSError as exc:
    print("files:", type(exc).__name__)
else:
    sys.exit("listed the stored files")
try:
    print(sqlite3.connect(f"file:{store}/ngshare.db?mode=ro", uri=True).execute("select * from users").fetchall())
except sqlite3.Error as exc:
    print("db:", exc)
else:
    sys.exit("read the exchange's database")
"""


def test_the_exchange_store_is_out_of_every_students_reach(hub):
    """What the exchange stores (its database: who submitted when; the files) is root's alone, in the hub's state."""
    store = hub.layout.exchange_state
    assert (store / "ngshare.db").is_file() and any((store / "files").iterdir())
    proc = hub.run_as(hub.students[2], READ_STORE, str(store))
    assert proc.returncode == 0 and "PermissionError" in proc.stdout and "unable to open" in proc.stdout, \
        (proc.stdout, proc.stderr[-500:])
