"""What two students do to the exchange from their own Unix accounts (``su -s /bin/bash <student> -c ...``, their
own environment's python, their own password), before the instructor collects: the rows B1, C1, D1-D5 and A9 of
issue 20. Each attack is made against whatever the student can reach: the shared inbound folder of nbgrader's
filesystem exchange where there is one (the old hub), and the exchange service's API with the student's own token
(the hub now) with forged names, times and files. What each attempt got back is recorded (``Attacks``); the tests
in test_hub_exchange.py check the class afterwards, not the attempts.

* the **forger** (student3): submits honestly first, then B1 (a submission for student2), C1 (an earlier time
  for their own submission), A9 (writes into student2's submission) and D5 (300 fake students);
* the **breaker** (student4): submits, then D1 (a FIFO), D2 (over 100 MB), D3 (garbage for the time) and D4 (no
  ``submission_secret.txt``, no ``timestamp.txt``), each in the submission that would be collected.
"""
from __future__ import annotations

import json
import shlex
import subprocess
import time
from dataclasses import dataclass, field

FORGED_TIME = "2020-01-01 00:00:00.000000"

# Run as the student: login with their password (stdin), their own token, then the attacks. Prints JSON.
COMMON = r'''
import base64, json, os, subprocess, sys, time
import requests

hub, exchange, inbound, course, me, victim = sys.argv[1:7]
password = sys.stdin.read().strip()
home = os.path.expanduser("~")
s = requests.Session()
s.get(f"{hub}/hub/login")
r = s.post(f"{hub}/hub/login", data={"username": me, "password": password, "_xsrf": s.cookies.get("_xsrf")},
           allow_redirects=False)
assert r.status_code in (302, 303), r.status_code
r = s.post(f"{hub}/hub/api/users/{me}/tokens", json={"note": "mine"}, headers={"X-XSRFToken": s.cookies.get("_xsrf")})
token = r.json()["token"]
env = {**os.environ, "JUPYTERHUB_API_TOKEN": token, "JUPYTERHUB_USER": me}
out = {}

def nbgrader(*args, timeout=180, full=False):
    try:
        p = subprocess.run([sys.executable, "-m", "nbgrader", *args], env=env, cwd=home, capture_output=True,
                           text=True, timeout=timeout)
        return [p.returncode, (p.stdout + p.stderr) if full else (p.stdout + p.stderr)[-600:]]
    except subprocess.TimeoutExpired:
        return ["timeout", ""]

def attempt(what, fn):
    try:
        out[what] = fn()
    except Exception as exc:
        out[what] = f"{type(exc).__name__}: {exc}"[:300]

def api_submit(files, **fields):
    if not exchange:
        return "no exchange service"
    r = requests.post(f"{exchange}/submission/{course}/attention", headers={"Authorization": f"token {token}"},
                      data={"files": json.dumps(files), **fields}, timeout=300)
    return [r.status_code, r.text[:400]]

def b64(data):
    return base64.b64encode(data).decode()

def inbound_folder(name):
    return os.path.join(inbound, name)

out["fetch"] = nbgrader("fetch_assignment", "attention")
code, text = nbgrader("submit", "attention", full=True)
out["submit"] = [code, text[-600:]]
# my own submission's folder in a shared inbound, as nbgrader's submit names it ("Destination: ..."), if any
mine = [line.split("Destination: ", 1)[1].strip() for line in text.splitlines() if "Destination: " in line]
mine = mine[-1] if mine and mine[-1].startswith(inbound) else None
blank = open(f"{home}/attention/attention.ipynb", "rb").read()
'''

FORGER = COMMON + r'''
victim_folder = sys.argv[7]
stamp = time.strftime("%Y-%m-%d %H:%M:%S.000000 UTC", time.gmtime(time.time() + 60))

def b1_folder():             # a submission "of student2" in the shared inbound folder
    folder = inbound_folder(f"{victim}+attention+{stamp}+x")
    os.makedirs(folder)
    open(f"{folder}/attention.ipynb", "wb").write(blank)
    open(f"{folder}/timestamp.txt", "w").write(stamp)
    return "made"

attempt("B1 inbound", b1_folder)
attempt("B1 api", lambda: api_submit([{"path": "attention.ipynb", "content": b64(blank)}], user=victim,
                                     student_id=victim, username=victim))

def c1_folder():             # an earlier time in my own timestamp.txt
    if not mine:
        return "no submission folder of mine"
    open(os.path.join(mine, "timestamp.txt"), "w").write("""''' + FORGED_TIME + r'''""")
    return mine

attempt("C1 inbound", c1_folder)
attempt("C1 api", lambda: api_submit([{"path": "attention.ipynb", "content": b64(blank)},
                                      {"path": "timestamp.txt", "content": b64(b"''' + FORGED_TIME + r'''")}],
                                     timestamp="''' + FORGED_TIME + r'''"))

def a9_folder():             # replace the notebook in student2's submission folder, rename the folder
    folder = inbound_folder(victim_folder)
    os.unlink(f"{folder}/attention.ipynb")
    open(f"{folder}/attention.ipynb", "wb").write(blank)
    os.rename(folder, folder + "x")
    return "replaced and renamed"

H = {"Authorization": f"token {token}"}
attempt("A9 inbound", a9_folder)
attempt("A9 api", lambda: [requests.get(f"{exchange}/submission/{course}/attention/{victim}", headers=H).status_code,
                           requests.post(f"{exchange}/feedback/{course}/attention/{victim}", headers=H,
                                         data={"timestamp": "x", "files": "[]"}).status_code,
                           requests.delete(f"{exchange}/assignment/{course}/attention", headers=H).status_code,
                           requests.get(f"{exchange}/feedback/{course}/attention/{victim}", headers=H,
                                        params={"timestamp": "2026-01-01 00:00:00.000000"}).status_code]
                          if exchange else "no exchange service")

def d5_folders():            # 300 fake students
    for i in range(300):
        folder = inbound_folder(f"fake{i:03d}+attention+{stamp}")
        os.makedirs(folder)
        open(f"{folder}/attention.ipynb", "wb").write(blank)
        open(f"{folder}/timestamp.txt", "w").write(stamp)
    return 300

def d5_api():
    codes = {}
    for i in range(300):
        code = api_submit([{"path": "attention.ipynb", "content": b64(blank)}], user=f"fake{i:03d}",
                          student_id=f"fake{i:03d}")
        code = code[0] if isinstance(code, list) else code
        codes[code] = codes.get(code, 0) + 1
    return codes

t0 = time.time()
attempt("D5 inbound", d5_folders)
attempt("D5 api", d5_api)
out["D5 seconds"] = round(time.time() - t0, 1)
print(json.dumps(out))
'''

BREAKER = COMMON + r'''
def latest_folder():
    return mine

def d1():                    # a FIFO in my submission
    folder = latest_folder()
    if folder and os.path.isdir(folder):
        os.mkfifo(f"{folder}/pipe")
        return "FIFO in the inbound folder"
    os.mkfifo(f"{home}/attention/pipe")
    try:
        return ["submit with a FIFO", nbgrader("submit", "attention", timeout=10)]
    finally:
        os.unlink(f"{home}/attention/pipe")

def d2():                    # over 100 MB
    folder = latest_folder()
    if folder and os.path.isdir(folder):
        with open(f"{folder}/data.bin", "wb") as fh:
            fh.truncate(101 * 1000 * 1000)
        return "101 MB file in the inbound folder"
    return api_submit([{"path": "attention.ipynb", "content": b64(blank)},
                       {"path": "data.bin", "content": b64(bytes(25 * 1000 * 1000))}])

def d3():                    # garbage for the time
    folder = latest_folder()
    if folder and os.path.isdir(folder):
        open(f"{folder}/timestamp.txt", "w").write("not a time at all \x00\xff")
        return "garbage timestamp.txt in the inbound folder"
    return [api_submit([{"path": "attention.ipynb", "content": b64(blank)},
                        {"path": "timestamp.txt", "content": b64(b"not a time \x00\xff")}], timestamp="garbage"),
            api_submit([{"path": "attention.ipynb", "content": b64(blank)},
                        {"path": "timestamp.txt/x", "content": b64(b"a folder where the time goes")}])]

def d4():                    # no submission_secret.txt, no timestamp.txt
    folder = latest_folder()
    if folder and os.path.isdir(folder):
        for name in ("submission_secret.txt",):
            os.unlink(f"{folder}/{name}")
        return "submission_secret.txt removed (timestamp.txt is garbage)"
    return api_submit([{"path": "attention.ipynb", "content": b64(blank)}])

for what, fn in (("D1", d1), ("D2", d2), ("D3", d3), ("D4", d4)):
    attempt(what, fn)
print(json.dumps(out))
'''


@dataclass
class Attacks:
    started: float                       # the machine's clock before the first attack (epoch seconds)
    ended: float
    forger: dict = field(default_factory=dict)
    breaker: dict = field(default_factory=dict)


def su_command(hub, user: str, code: str, *args: str) -> list[str]:
    """``su`` running Python ``code`` as ``user`` (a login as that Unix user, as a student's terminal is), with
    the students' environment's python."""
    command = " ".join(shlex.quote(a) for a in (str(hub.layout.python), "-c", code, *args))
    return ["su", "-s", "/bin/bash", user, "-c", f"cd ~ && PATH={hub.layout.env}/bin:$PATH {command}"]


def su(hub, user: str, code: str, *args: str, stdin: str = "", timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(su_command(hub, user, code, *args), input=stdin, capture_output=True, text=True,
                          timeout=timeout)


def run(hub, victim_folder: str) -> Attacks:
    """Both attackers at once (each as their own user); returns what they got back."""
    layout = hub.layout
    forger, breaker = hub.students[2], hub.students[3]
    exchange = getattr(layout, "exchange_url", "")            # the exchange service (none on the old hub)
    inbound = str(layout.exchange / layout.course_id / "inbound")
    started = time.time()
    procs = {}
    for who, code, extra in ((forger, FORGER, [victim_folder]), (breaker, BREAKER, [])):
        procs[who] = subprocess.Popen(su_command(hub, who, code, hub.url, exchange, inbound, layout.course_id, who,
                                                 hub.students[1], *extra),
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = {}
    for who, proc in procs.items():
        stdout, stderr = proc.communicate(hub.passwords[who], timeout=900)
        assert proc.returncode == 0, f"{who}'s attack script failed:\n{stderr[-3000:]}"
        results[who] = json.loads(stdout.strip().splitlines()[-1])
    return Attacks(started, time.time(), results[forger], results[breaker])
