"""The course in an LMS through LTI 1.3, end to end: an LMS from PyPI (lti1p3platform, ``platform.py``) launches
people into a real JupyterHub whose login is the package's (``autograder.lti.login`` with the config
``autograder.lti.hub.hub_config`` writes, the package's login page), and takes the scores ``python -m autograder
lti push`` sends, read back from its AGS results endpoint.

The hub is started by the test on https://127.0.0.1:18400 (a self-signed certificate, trusted by this process's
requests; its proxy's API 18401, its own 18402; the LMS on http://127.0.0.1:18403), as root, with JupyterHub's
default spawner and no Unix account: nothing here starts a user's server (the course hub's accounts, exchange and
formgrader are tests/hub/live's). One hub and one LMS serve the module.
"""
from __future__ import annotations

import base64
import dataclasses
import json
import os
import re
import secrets
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import jwt
import pytest
import requests

from autograder import settings
from autograder.hub import server
from autograder.hub.roster import Person
from autograder.lti import hub as lti_hub
from autograder.lti import tool
from autograder.messages import Label, LtiText
from tests.lti.platform import INSTRUCTOR, LEARNER, LMS, TA, rsa_pem
from tests.lti.platform import Person as Member

HUB_PORT, PROXY_API_PORT, HUB_API_PORT, LMS_PORT = 18400, 18401, 18402, 18403
HUB = f"https://127.0.0.1:{HUB_PORT}"
SERVICE_TOKEN = secrets.token_hex(16)
GROUP = "formgrade-ltitest"
ROSTER = [Person("kimmj", "2026001", "김", "민준"), Person("leesy", "2026002", "이", "서연"),
          Person("choisw", "2026003", "최", "성우"), Person("jungyh", "2026004", "정", "예희"),
          Person("parkprof", "P-01", "박", "교수", role="instructor")]
MEMBERS = [Member("u-kim", "김민준", "2026001", [LEARNER]), Member("u-lee", "이서연", "2026002", [LEARNER]),
           Member("u-choi", "최성우", "2026003", [LEARNER], concluded=True),
           Member("u-jung", "정예희", "2026004", [LEARNER]), Member("u-park", "박교수", "P-01", [INSTRUCTOR]),
           Member("u-out", "외부인", "2026999", [LEARNER])]


# The course hub's LTI lines (autograder/hub/jupyterhub_config.py ends with them), with this test's settings.
LTI_LINES = """
import json
from autograder import settings
from autograder.lti import hub
hub.configure(c, settings.Lti(**json.loads({lti!r})), json.loads({roster!r}), {group!r}, "ltitest")
"""


def base_config(state: Path) -> str:
    """The test hub's own lines: ports, TLS, state, the package's login page; a service token that reads users."""
    return f'''c = get_config()  # noqa: F821
c.JupyterHub.bind_url = "{HUB}"
c.JupyterHub.ssl_cert = "{state / 'hub.pem'}"
c.JupyterHub.ssl_key = "{state / 'hub.key'}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {HUB_API_PORT}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{PROXY_API_PORT}"
c.ConfigurableHTTPProxy.command = ["{server.PROXY}"]
c.ConfigurableHTTPProxy.pid_file = "{state / 'proxy.pid'}"
c.JupyterHub.db_url = "sqlite:///{state / 'hub.sqlite'}"
c.JupyterHub.cookie_secret_file = "{state / 'cookie_secret'}"
c.JupyterHub.pid_file = "{state / 'hub.pid'}"
c.JupyterHub.template_paths = ["{server.TEMPLATES}"]
c.JupyterHub.template_vars = {{"ko": {Label.korean_all()!r}}}
c.JupyterHub.services = [{{"name": "lti-test", "api_token": "{SERVICE_TOKEN}"}}]
c.JupyterHub.load_roles = [{{"name": "lti-test", "services": ["lti-test"], "scopes": ["list:users", "read:users"]}},
                           {{"name": "{GROUP}", "groups": ["{GROUP}"], "scopes": ["read:users:name"]}}]
'''


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The LMS and the hub it launches into, with the course's LTI settings (``settings.Lti``) that join them."""
    if os.geteuid() != 0:
        pytest.skip("the test hub runs as root (JupyterHub's default spawner)")
    if not server.PROXY.exists():
        pytest.fail(f"{server.PROXY} is missing: run scripts/setup.sh (configurable-http-proxy)")
    state = tmp_path_factory.mktemp("lti")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=hub",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(state / "hub.key"),
                    "-out", str(state / "hub.pem")], check=True, capture_output=True)
    trusted = os.environ.get("REQUESTS_CA_BUNDLE")
    os.environ["REQUESTS_CA_BUNDLE"] = str(state / "hub.pem")     # the LMS's and the tests' requests to the hub
    lms = LMS(LMS_PORT, HUB, MEMBERS)
    lti = dataclasses.replace(
        settings.load().lti, enabled=True, issuer=lms.url, client_id="tool-1", deployment_id="dep-1",
        auth_url=f"{lms.url}/authorize", token_url=f"{lms.url}/token", jwks_url=f"{lms.url}/jwks",
        tool_key=str(state / "tool.pem"), lineitems_url=f"{lms.url}/lineitems", memberships_url=f"{lms.url}/members")
    tool.make_key(lti.tool_key)
    assert lti_hub.refusal(lti, ROSTER) is None
    config = state / "jupyterhub_config.py"
    config.write_text(base_config(state) + LTI_LINES.format(lti=json.dumps(dataclasses.asdict(lti)),
                                                            roster=json.dumps(lti_hub.roster_ids(ROSTER)), group=GROUP))
    lms.start()
    log = open(state / "hub.log", "w")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "COURSE_"))}
    env["PATH"] = f"{Path(sys.executable).parent}:{server.PROXY.parent}:{env.get('PATH', '')}"
    hub = subprocess.Popen([str(Path(sys.executable).with_name("jupyterhub")), "-f", str(config)], cwd=state,
                           env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert hub.poll() is None, f"jupyterhub exited: {(state / 'hub.log').read_text()[-3000:]}"
            try:
                if requests.get(f"{HUB}/hub/api/", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, f"no hub: {(state / 'hub.log').read_text()[-3000:]}"
            time.sleep(0.2)
        yield dataclasses.make_dataclass("Course", ["lms", "lti", "state"])(lms, lti, state)
    finally:
        hub.terminate()
        try:
            hub.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(hub.pid, 9)
        log.close()
        lms.stop()
        if trusted is None:
            os.environ.pop("REQUESTS_CA_BUNDLE", None)
        else:
            os.environ["REQUESTS_CA_BUNDLE"] = trusted


class Forms(HTMLParser):
    """The LMS's launch form: its action and hidden fields."""

    def __init__(self, text):
        super().__init__()
        self.action, self.fields = None, {}
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.action = attrs["action"]
        elif tag == "input":
            self.fields[attrs["name"]] = attrs["value"]


def launch(lms, sub: str, forge=None) -> tuple[requests.Session, requests.Response]:
    """A person's click on the course's JupyterHub link in the LMS, as a browser follows it: the LMS's login
    initiation to the hub, the hub's authentication request to the LMS, the LMS's form posted to the hub. ``forge``
    changes the id_token before it is posted (a student's own)."""
    browser = requests.Session()
    page = browser.get(f"{lms.url}/launch/{sub}", timeout=30)
    assert page.status_code == 200 and page.url.startswith(f"{lms.url}/authorize"), (page.status_code, page.text)
    login = next(r for r in page.history if r.url.startswith(f"{HUB}/hub/lti13/oauth_login"))
    cookies = [c for c in login.raw.headers.getlist("Set-Cookie") if c.startswith("lti13authenticator-")]
    assert len(cookies) == 2 and all("SameSite=None" in c and "Secure" in c for c in cookies), cookies   # cross-site
    form = Forms(page.text)
    assert form.action == f"{HUB}/hub/lti13/oauth_callback", form.action
    if forge:
        form.fields["id_token"] = forge(form.fields["id_token"])
    return browser, browser.post(form.action, data=form.fields, allow_redirects=False, timeout=30)


def hub_user(name: str) -> dict | None:
    """The hub's record of a user (every roster account has one from the start: the allowed users)."""
    answer = requests.get(f"{HUB}/hub/api/users/{name}", headers={"Authorization": f"token {SERVICE_TOKEN}"},
                          timeout=10)
    return answer.json() if answer.status_code == 200 else None


def logins(course, name: str) -> int:
    """How often the hub logged ``name`` in (its log)."""
    return (course.state / "hub.log").read_text().count(f"User logged in: {name}\n")


def logged_in_as(browser: requests.Session) -> str | None:
    """Whom the browser's hub session is (the hub's home page greets its user), None where it has none."""
    home = browser.get(f"{HUB}/hub/home", allow_redirects=False, timeout=10)
    if home.status_code != 200:
        return None
    names = [p.username for p in ROSTER if re.search(rf"\b{p.username}\b", home.text)]
    return names[0] if len(names) == 1 else f"unclear: {names}"


def test_a_launch_logs_in_the_roster_account_of_its_student_number(course):
    """The LMS's user u-kim (SIS id 2026001) is the roster's kimmj; the LMS's instructor is the roster's parkprof,
    in the formgrade group (by the roster's role, whatever the launch's roles); a roster student launched with the
    TA role joins it, and leaves it at a launch as a learner."""
    browser, answer = launch(course.lms, "u-kim")
    assert answer.status_code == 302, answer.text
    assert logged_in_as(browser) == "kimmj" and logins(course, "kimmj") == 1
    assert hub_user("kimmj")["groups"] == []
    browser, answer = launch(course.lms, "u-park")
    assert answer.status_code == 302 and logged_in_as(browser) == "parkprof"
    assert hub_user("parkprof")["groups"] == [GROUP]
    course.lms.course.people["u-park"].roles = []
    launch(course.lms, "u-park")
    assert hub_user("parkprof")["groups"] == [GROUP] and logins(course, "parkprof") == 2
    course.lms.course.people["u-lee"].roles = [TA]
    browser, answer = launch(course.lms, "u-lee")
    assert answer.status_code == 302 and logged_in_as(browser) == "leesy"
    assert hub_user("leesy")["groups"] == [GROUP]
    course.lms.course.people["u-lee"].roles = [LEARNER]
    launch(course.lms, "u-lee")
    assert hub_user("leesy")["groups"] == []


def test_a_launch_of_someone_not_on_the_roster_is_refused_in_korean(course):
    """Someone the roster does not list, or a launch from another deployment of the tool: refused, the reason in
    Korean on the page and in English in the hub's log."""
    browser, answer = launch(course.lms, "u-out")
    assert answer.status_code == 403
    assert LtiText.NOT_ON_ROSTER.korean(lms_id="2026999") in answer.content.decode()    # the page's <meta charset>
    assert logged_in_as(browser) is None and hub_user("u-out") is None and logins(course, "u-out") == 0
    assert "LTI launch refused: lis_person_sourcedid '2026999'" in (course.state / "hub.log").read_text()
    registration = course.lms.config.get_registration()
    registration.set_deployment_id("dep-2")
    try:
        browser, answer = launch(course.lms, "u-kim")
    finally:
        registration.set_deployment_id("dep-1")
    assert answer.status_code == 403 and LtiText.OTHER_DEPLOYMENT.korean() in answer.content.decode()
    assert logged_in_as(browser) is None


def test_a_forged_launch_logs_no_one_in(course):
    """A student who posts the launch with another's student number, signed with a key of their own (the kid of the
    LMS's), or the LMS's signature over a changed body: the id_token's signature is checked against the LMS's key
    set, and neither logs in."""
    own_key, _ = rsa_pem()

    def impersonate(id_token, resign=True):
        claims = jwt.decode(id_token, options={"verify_signature": False})
        claims["https://purl.imsglobal.org/spec/lti/claim/lis"]["person_sourcedid"] = "2026004"
        if resign:
            return jwt.encode(claims, own_key, algorithm="RS256", headers=jwt.get_unverified_header(id_token))
        head, _, signature = id_token.split(".")
        body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
        return f"{head}.{body}.{signature}"

    for forge in (impersonate, lambda token: impersonate(token, resign=False)):
        browser, answer = launch(course.lms, "u-out", forge=forge)
        assert answer.status_code == 400 and "Signature verification failed" in answer.text, answer.text[-500:]
        assert logged_in_as(browser) is None
    assert logins(course, "jungyh") == 0
    browser, answer = launch(course.lms, "u-jung")       # the real jungyh does log in
    assert answer.status_code == 302 and logged_in_as(browser) == "jungyh" and logins(course, "jungyh") == 1


def test_the_hub_serves_what_the_lms_registers(course):
    """The login page says to come from the LMS (no password form); the tool's key set and Canvas's JSON
    configuration are served where ``lti urls`` says."""
    from autograder.lti.command import urls

    login = requests.get(f"{HUB}/hub/login", timeout=10)
    assert Label.LTI_ONLY.korean() in login.content.decode() and 'type="password"' not in login.text
    listed = list(urls(HUB).values())
    keys = requests.get(listed[3], timeout=10).json()
    assert keys == tool.load_key(course.lti.tool_key).jwks()
    canvas = requests.get(listed[4], timeout=10).json()
    assert (canvas["oidc_initiation_url"], canvas["public_jwk_url"]) == (listed[0], listed[3])
    assert canvas["extensions"][0]["privacy_level"] == "public"


# ---------------------------------------------------------------------------------------------------- no hub
LMS_SETTINGS = dict(enabled=True, issuer="https://lms.example.ac.kr", client_id="tool-1", deployment_id="dep-1",
                    auth_url="https://lms.example.ac.kr/authorize", token_url="https://lms.example.ac.kr/token",
                    jwks_url="https://lms.example.ac.kr/jwks", lineitems_url="https://lms.example.ac.kr/lineitems",
                    memberships_url="https://lms.example.ac.kr/members")


def test_the_course_hubs_config_logs_in_through_the_lms_where_it_is_on(tmp_path, course_setting):
    """The course hub's own config (``autograder/hub/jupyterhub_config.py``) ends with the LTI login where
    COURSE['lti'] is on: the package's authenticator with the roster's ids, groups its (no load_groups), and students'
    Lab without Create Assignment by the formgrade group (a TA promoted by the LMS keeps it); PAM and load_groups where
    it is off."""
    from types import SimpleNamespace

    from autograder.hub.layout import Layout

    layout = Layout.for_course(env=tmp_path / "env")

    def load():
        return server.load_config(server.Start.of(layout, ["kimmj", "leesy"], ["parkprof"], people=ROSTER), tmp_path)

    c = load()
    assert c.JupyterHub.authenticator_class == "pam" and c.JupyterHub.load_groups[layout.formgrade_group]
    course_setting("lti", **LMS_SETTINGS, tool_key=str(tmp_path / "tool.pem"))
    c = load()
    assert c.JupyterHub.authenticator_class == "autograder.lti.login.RosterLTIAuthenticator"
    assert c.JupyterHub.load_groups == {} and c.Authenticator.manage_groups is True
    assert c.RosterLTIAuthenticator.roster["2026001"] == {"username": "kimmj", "role": "student"}
    assert c.RosterLTIAuthenticator.formgrade_group == layout.formgrade_group
    environments = {}
    for user, groups in (("kimmj", []), ("leesy", [layout.formgrade_group]), ("parkprof", [layout.formgrade_group])):
        spawner = SimpleNamespace(user=SimpleNamespace(name=user, groups=[SimpleNamespace(name=g) for g in groups]),
                                  environment={})
        c.Spawner.pre_spawn_hook(spawner)
        environments[user] = "JUPYTER_CONFIG_PATH" in spawner.environment
    assert environments == {"kimmj": True, "leesy": False, "parkprof": False}


def test_settings_that_cannot_work_are_named_before_anything_runs(tmp_path, capsys):
    """Each missing or unusable LTI setting is named; the hub refuses to start with them, and without a roster
    that gives the LMS ids (one id per account)."""
    from autograder.cli import main

    lti = dataclasses.replace(settings.load().lti, enabled=True)
    assert set(tool.problems(lti, "login")) == {f"COURSE['lti']['{n}'] is empty" for n in tool.LOGIN_NEEDS}
    key = tmp_path / "tool.pem"
    assert main(["lti", "key", str(key)]) == 0 and (key.stat().st_mode & 0o777) == 0o600
    assert json.loads(capsys.readouterr().out.split("pasted):", 1)[1])["kid"] == tool.load_key(key).jwk["kid"]
    before = key.read_bytes()
    assert main(["lti", "key", str(key)]) == 2 and key.read_bytes() == before      # never replaced
    good = dataclasses.replace(lti, **LMS_SETTINGS, tool_key=str(key))
    assert tool.problems(good, "login") == [] and tool.problems(good, "push") == []
    key.chmod(0o644)
    assert "chmod 600" in " ".join(tool.problems(good, "login"))
    key.chmod(0o600)
    plain = dataclasses.replace(good, token_url="http://lms.example.ac.kr/token", memberships_url="")
    assert tool.problems(plain, "push") == [
        "COURSE['lti']['memberships_url'] is empty: with user_claim 'lis_person_sourcedid' the LMS's member list says "
        "which LMS user each student is (or use user_claim 'sub', the LMS's own user id)",
        "COURSE['lti']['token_url'] is 'http://lms.example.ac.kr/token': an https:// URL (http:// only on this "
        "machine's loopback)"]
    assert "finds students in the LMS's member list by sub, lis_person_sourcedid, email only" in \
        " ".join(tool.problems(dataclasses.replace(good, user_claim="custom:student_no"), "push"))
    assert lti_hub.refusal(good, ROSTER) is None
    assert lti_hub.refusal(dataclasses.replace(good, enabled=False), []) is None      # off: the hub's PAM login
    assert "no one on the roster has a student_id" in lti_hub.refusal(good, [Person("student1")])
    assert "gives student_id 2026001 to both kimmj and kimmj2" in \
        lti_hub.refusal(good, [*ROSTER, Person("kimmj2", "2026001")])


# ---------------------------------------------------------------------------------------------------- grade passback
GRADED = {   # student -> (autograded points of 10, hand-graded points of 4 or None: not graded yet, late penalty)
    "kimmj": (7.5, 3.0, 1.0), "leesy": (10.0, None, 0.0), "choisw": (9.0, 4.0, 0.0), "hanjy": (5.0, 2.0, 0.0)}
LMS_IDS = {"kimmj": "2026001", "leesy": "2026002", "choisw": "2026003", "hanjy": "2026777", "jungyh": "2026004"}


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory) -> tuple[Path, str]:
    """A course folder whose gradebook has ``attention`` graded: 10 points autograded, 4 by hand; kimmj late (a point
    off), leesy's written answer not graded yet, choisw's enrollment concluded in the LMS, hanjy not in the LMS,
    jungyh without a submission."""
    from nbgrader.api import Gradebook

    from autograder.patches.gradebook import head_in_process

    head_in_process()
    folder = tmp_path_factory.mktemp("course")
    db = f"sqlite:///{folder / 'gradebook.db'}"
    with Gradebook(db) as gb:
        gb.add_assignment("attention")
        gb.add_notebook("attention", "attention")
        gb.add_grade_cell("test_scaled_dot_product", "attention", "attention", max_score=10, cell_type="code")
        gb.add_grade_cell("written_1", "attention", "attention", max_score=4, cell_type="markdown")
        for student, lms_id in LMS_IDS.items():
            gb.add_student(student, lms_user_id=lms_id)
        for student, (auto, manual, late) in GRADED.items():
            gb.add_submission("attention", student)
            code = gb.find_grade("test_scaled_dot_product", "attention", "attention", student)
            code.auto_score, code.needs_manual_grade = auto, False
            if manual is not None:
                written = gb.find_grade("written_1", "attention", "attention", student)
                written.manual_score, written.needs_manual_grade = manual, False
            gb.find_submission_notebook("attention", "attention", student).late_submission_penalty = late
        gb.db.commit()
    return folder, db


def push(course, gradebook, course_setting, capsys, *flags, **lti) -> tuple[int, str, str]:
    """``python -m autograder lti push attention`` with the test LMS's settings (changed by ``lti``)."""
    from autograder.cli import main

    course_setting("lti", **{**dataclasses.asdict(course.lti), **lti})
    folder, db = gradebook
    code = main(["lti", "push", "attention", "--course-dir", str(folder), "--db-url", db, *flags])
    out, err = capsys.readouterr()
    return code, out, err


def test_push_sends_nothing_until_everything_is_checked(course, gradebook, course_setting, capsys, tmp_path):
    """A graded student the LMS does not know, or a key the LMS does not know: exit 2 with what failed, and the LMS
    got nothing (no line item made, no score). A dry run lists what would be sent."""
    lms = course.lms.course
    code, _, err = push(course, gradebook, course_setting, capsys)
    assert code == 2 and "nothing sent" in err and "hanjy (lis_person_sourcedid 2026777" in err
    assert "--skip-unmatched" in err
    other = tmp_path / "other.pem"
    tool.make_key(other)
    code, _, err = push(course, gradebook, course_setting, capsys, "--skip-unmatched", tool_key=str(other))
    assert code == 2 and "nothing sent: the access token: POST http://127.0.0.1:18403/token answered HTTP 400" in err
    code, out, err = push(course, gradebook, course_setting, capsys, "--dry-run", "--skip-unmatched")
    assert code == 0 and "kimmj\tu-kim\t9.5/14" in out and "leesy\tu-lee\tpending manual grading" in out
    assert lms.line_items == {} and lms.posted == []


def test_push_sends_the_grades_csv_totals_and_the_lms_holds_them(course, gradebook, course_setting, capsys):
    """Sent to the assignment's line item (made once, found the next time): kimmj's total less the late penalty (the
    grades CSV's number), leesy's as pending manual grading without a score; the score the LMS refuses (choisw's
    concluded enrollment) and the student it does not know (hanjy) named, exit 1. Read back from the LMS's AGS
    results endpoint."""
    import csv

    from autograder.feedback.instructor import collect_grades
    from autograder.feedback.lms import write_grades_csv
    from autograder.lti import ags

    code, out, err = push(course, gradebook, course_setting, capsys, "--skip-unmatched")
    assert code == 1, err
    assert "3 of 3 scores" not in out and "2 of 3 scores sent to http://127.0.0.1:18403/lineitems/1" in out, out
    assert "not sent: choisw: the score of u-choi: POST http://127.0.0.1:18403/lineitems/1/scores answered " \
           "HTTP 403" in err and "not found in the LMS, not sent: hanjy" in err
    lms = course.lms.course
    assert [(i["resourceId"], i["scoreMaximum"]) for i in lms.line_items.values()] == [("attention", 14)]
    pending = lms.scores[("1", "u-lee")]
    assert (pending["gradingProgress"], pending["activityProgress"]) == ("PendingManual", "Submitted")
    assert "scoreGiven" not in pending and "자동 채점 10/14점" in pending["comment"]

    client = ags.Platform(course.lti, tool.load_key(course.lti.tool_key))
    client.authorize([ags.RESULTS])
    results = client.results(lms.line_items["1"]["id"])
    assert [(r["userId"], r["resultScore"], r["resultMaximum"]) for r in results] == [("u-kim", 9.5, 14)]
    folder, db = gradebook
    rows = list(csv.reader(open(write_grades_csv(collect_grades(db, ["attention"], folder), folder / "grades.csv"),
                                encoding="utf-8-sig")))
    column = next(i for i, name in enumerate(rows[0]) if name.startswith("attention"))
    assert next(float(r[column]) for r in rows if "kimmj" in r) == results[0]["resultScore"]

    code, out, _ = push(course, gradebook, course_setting, capsys, "--skip-unmatched")   # again: the same line item
    assert code == 1 and "2 of 3 scores sent to http://127.0.0.1:18403/lineitems/1" in out
    assert list(lms.line_items) == ["1"] and len(lms.posted) == 6
