"""What held in issue 20's attacks, kept with tests: each tried from student1's own Unix account (their own
password and token, the students' environment's python), and each shown to work for whom it is meant (the check
can fail): other homes closed, the hub's secrets unreadable, the students' environment read-only, the hub's API,
the proxy's API and the formgrader service refusing a student's token, another student's kernel deaf to messages
without its key. (The exchange's rows are test_hub_exchange.py's; the course copy, the gradebook and ``import
autograder`` are test_hub_course.py's.)"""
from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
import requests

TOKEN = """import json, sys, requests
hub, me = sys.argv[1:3]
s = requests.Session()
s.get(f"{hub}/hub/login")
r = s.post(f"{hub}/hub/login", data={"username": me, "password": sys.stdin.read().strip(),
                                     "_xsrf": s.cookies.get("_xsrf")}, allow_redirects=False)
assert r.status_code in (302, 303), r.status_code
print(s.post(f"{hub}/hub/api/users/{me}/tokens", json={"note": "held"},
             headers={"X-XSRFToken": s.cookies.get("_xsrf")}).json()["token"])
"""

OPEN = """import sys
for path in sys.argv[1:]:
    try:
        with open(path, "rb") as fh:
            fh.read(1)
        print("read", path)
    except OSError as e:
        print("refused", path, type(e).__name__)
"""

WRITE = """import os, sys
for path in sys.argv[1:]:
    try:
        if os.path.isdir(path):
            open(os.path.join(path, "planted.py"), "w").write("x = 1")
        else:
            open(path, "a").write("# planted")
        print("wrote", path)
    except OSError as e:
        print("refused", path, type(e).__name__)
"""

GET = """import json, sys, requests
token, urls = sys.argv[1], sys.argv[2:]
def status(url):
    try:
        return requests.get(url, headers={"Authorization": f"token {token}"}, timeout=30).status_code
    except requests.ConnectionError:
        return "refused"
print(json.dumps([status(u) for u in urls]))
"""

SEND = """import json, sys, zmq
from jupyter_client.session import Session
address, key, marker = sys.argv[1], sys.argv[2].encode(), sys.argv[3]
session = Session(key=key, username="attacker")
sock = zmq.Context().socket(zmq.DEALER)
sock.connect(address)
code = f"open({marker!r}, 'w').write('ran')"
session.send(sock, "execute_request", {"code": code, "silent": False, "store_history": False,
                                       "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
print("reply" if sock.poll(8000) else "no reply")
"""


def su(hub, user: str, code: str, *args, stdin: str = ""):
    """``code`` run by ``user``'s own login shell (``su -s /bin/bash``), with the students' environment's python."""
    from tests.hub.live.attacks import su as su_python

    return su_python(hub, user, code, *map(str, args), stdin=stdin, timeout=300)


@pytest.fixture(scope="module")
def tokens(hub):
    """student1's and instructor1's own API tokens, from their own logins."""
    found = {}
    for user in (hub.students[0], hub.instructor):
        proc = su(hub, user, TOKEN, hub.url, user, stdin=hub.passwords[user])
        assert proc.returncode == 0, proc.stderr[-2000:]
        found[user] = proc.stdout.strip().splitlines()[-1]
    return found


def test_other_homes_and_the_hubs_secrets_are_closed_to_a_student(hub):
    student1, student2 = hub.students[:2]
    state = hub.layout.state
    notes = f"/home/{student2}/held-notes.txt"
    assert su(hub, student2, WRITE, notes).stdout.startswith("wrote")     # student2 writes a file of their own
    secrets = [state / "jupyterhub.sqlite", state / "jupyterhub_cookie_secret", hub.layout.passwords,
               hub.layout.formgrader_token, notes]
    for path in secrets[:4]:
        assert path.is_file(), path                                      # they exist: root reads them
    out = su(hub, student1, OPEN, *secrets).stdout
    assert out.count("refused") == len(secrets) and "read " not in out, out
    own = su(hub, student2, OPEN, notes).stdout
    assert own.startswith("read"), own                                    # student2 reads their own


def test_the_students_environment_is_read_only_for_a_student(hub):
    import numpy

    student1 = hub.students[0]
    site = next(hub.layout.env.glob("lib/python3*/site-packages"))
    targets = [site, site / "numpy" / Path(numpy.__file__).name, hub.layout.env / "bin",
               hub.layout.nbgrader_config]
    out = su(hub, student1, WRITE, *targets).stdout
    assert out.count("refused") == len(targets) and "wrote" not in out, out
    home = su(hub, student1, WRITE, f"/home/{student1}").stdout              # their own home: writable
    assert home.startswith("wrote"), home


def test_the_hub_api_the_proxy_and_formgrader_refuse_a_students_token(hub, tokens):
    """The hub's API and formgrader (through the proxy, where browsers reach it) refuse student1's own token; the
    proxy's API and formgrader's own port do not even take student1's connection (the firewall: only the hub's
    port, its API and the exchange are reachable); the instructor's token reaches formgrader from the same place."""
    student1, instructor = hub.students[0], hub.instructor
    layout = hub.layout
    urls = [f"{hub.url}/hub/api/users",                                   # every user: admins only
            f"{hub.formgrader}/formgrader/api/assignments",               # the formgrade group only
            f"http://127.0.0.1:{layout.proxy_api_port}/api/routes",       # the proxy's API: the hub's own token only
            f"http://127.0.0.1:{layout.service_port}/services/{layout.course_id}/formgrader/api/assignments",
            f"{hub.url}/hub/api/users/{student1}"]                        # their own: allowed
    student = json.loads(su(hub, student1, GET, tokens[student1], *urls).stdout)
    assert student[:2] == [403, 403] and student[2] in ("refused", 401, 403) and student[3] in ("refused", 403), \
        student
    assert student[4] == 200, student
    teacher = json.loads(su(hub, student1, GET, tokens[instructor], urls[1]).stdout)
    assert teacher == [200], teacher                  # the formgrade group's token reaches formgrader (same place)


def test_another_students_kernel_ignores_messages_without_its_key(hub):
    """student2's kernel (started in their server, as JupyterLab does): student1, who cannot read its connection
    file, sends it an execute_request signed with another key: no reply, nothing runs. With the key (student2, who
    owns the file), the same message runs."""
    student1, student2 = hub.students[:2]
    proc = su(hub, student2, TOKEN, hub.url, student2, stdin=hub.passwords[student2])
    token = proc.stdout.strip().splitlines()[-1]
    server = f"{hub.user_url(student2)}/api/kernels"
    headers = {"Authorization": f"token {token}"}
    kernel = requests.post(server, headers=headers, json={}, timeout=120).json()["id"]
    try:
        runtime = Path(f"/home/{student2}/.local/share/jupyter/runtime/kernel-{kernel}.json")
        deadline = time.monotonic() + 60
        while not runtime.exists():
            assert time.monotonic() < deadline, f"no connection file {runtime}"
            time.sleep(0.2)
        time.sleep(2)                                            # the kernel binds its ports after writing the file
        info = json.loads(runtime.read_text())
        shell = (f"ipc://{info['ip']}-{info['shell_port']}" if info["transport"] == "ipc"
                 else f"tcp://127.0.0.1:{info['shell_port']}")
        forged, honest = (f"/home/{student2}/held-{uuid.uuid4().hex[:8]}" for _ in range(2))
        attack = su(hub, student1, SEND, shell, "not-the-key", forged)
        assert attack.returncode == 0, attack.stderr[-2000:]
        peek = su(hub, student1, OPEN, str(runtime)).stdout
        owner = su(hub, student2, SEND, shell, info["key"], honest)
        assert owner.stdout.strip() == "reply", owner.stderr[-2000:]
        assert Path(honest).exists()                                   # the check can fail: a keyed message runs
        assert attack.stdout.strip() == "no reply" and not Path(forged).exists(), attack.stdout
        assert peek.startswith("refused"), peek                       # nor can student1 read the key
    finally:
        requests.delete(f"{server}/{kernel}", headers=headers, timeout=60)
