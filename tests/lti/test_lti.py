"""The course in an LMS through LTI 1.3, end to end: an LMS from PyPI (lti1p3platform, ``platform.py``) launches
people into a real JupyterHub whose login is the package's (``autograder.lti.login`` with the config
``autograder.lti.hub.hub_config`` writes, the package's login page), and takes the scores ``python -m autograder
lti push`` sends, read back from its AGS results endpoint.

The hub is started by the test on 127.0.0.1:18400 (its proxy's API 18401, its own 18402; the LMS 18403), as root,
with JupyterHub's default spawner and no Unix account: nothing here starts a user's server (the course hub's
accounts, exchange and formgrader are tests/hub/live's). One hub and one LMS serve the module.
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
HUB = f"http://127.0.0.1:{HUB_PORT}"
SERVICE_TOKEN = secrets.token_hex(16)
GROUP = "formgrade-ltitest"
ROSTER = [Person("kimmj", "2026001", "김", "민준"), Person("leesy", "2026002", "이", "서연"),
          Person("choisw", "2026003", "최", "성우"), Person("jungyh", "2026004", "정", "예희"),
          Person("parkprof", "P-01", "박", "교수", role="instructor")]
MEMBERS = [Member("u-kim", "김민준", "2026001", [LEARNER]), Member("u-lee", "이서연", "2026002", [LEARNER]),
           Member("u-choi", "최성우", "2026003", [LEARNER], concluded=True),
           Member("u-jung", "정예희", "2026004", [LEARNER]), Member("u-park", "박교수", "P-01", [INSTRUCTOR]),
           Member("u-out", "외부인", "2026999", [LEARNER])]


def base_config(state: Path) -> str:
    """The test hub's own lines: ports, state, the package's login page; a service token that reads users."""
    return f'''c = get_config()  # noqa: F821
c.JupyterHub.bind_url = "{HUB}"
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
    lms = LMS(LMS_PORT, HUB, MEMBERS)
    lti = dataclasses.replace(
        settings.load().lti, enabled=True, issuer=lms.url, client_id="tool-1", deployment_id="dep-1",
        auth_url=f"{lms.url}/authorize", token_url=f"{lms.url}/token", jwks_url=f"{lms.url}/jwks",
        tool_key=str(state / "tool.pem"), lineitems_url=f"{lms.url}/lineitems", memberships_url=f"{lms.url}/members")
    tool.make_key(lti.tool_key)
    assert lti_hub.refusal(lti, ROSTER) is None
    config = state / "jupyterhub_config.py"
    config.write_text(base_config(state) + lti_hub.hub_config(lti, ROSTER, GROUP, "ltitest"))
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
    configuration are served."""
    login = requests.get(f"{HUB}/hub/login", timeout=10)
    assert Label.LTI_ONLY.korean() in login.content.decode() and 'type="password"' not in login.text
    keys = requests.get(f"{HUB}/hub/lti13/jwks", timeout=10).json()
    assert keys == tool.load_key(course.lti.tool_key).jwks()
    canvas = requests.get(f"{HUB}/hub/lti13/config", timeout=10).json()
    assert (canvas["oidc_initiation_url"], canvas["public_jwk_url"]) == \
        (f"{HUB}/hub/lti13/oauth_login", f"{HUB}/hub/lti13/jwks")
    assert canvas["extensions"][0]["privacy_level"] == "public"
