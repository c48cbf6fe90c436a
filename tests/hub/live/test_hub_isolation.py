"""What one student can reach of another's server and of the machine, tried from the attacking student's own
account and kernel (a kernel started in their own JupyterLab, as a notebook does; code sent to it by the student
with the kernel's own connection file): another user's kernel output (K1), files and memory kept in ``/dev/shm``
and ``/tmp`` past a restart of their server (K3), other users' processes in ``/proc``. Each check is shown to work
for the one it is meant for (the owner reads their own kernel, their own files, their own processes)."""
from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import requests
from tests.hub.live.test_hub_held import TOKEN, su

from autograder.hub import limits, server

# Run as the kernel's owner (su), with the connection file JupyterLab wrote for it: send ``code``; "wait": print what
# it printed, else leave it running.
RUN = """import json, sys, time
from jupyter_client import BlockingKernelClient
path, code, wait = sys.argv[1], sys.argv[2], sys.argv[3] == "wait"
kc = BlockingKernelClient()
kc.load_connection_file(path)
kc.start_channels(hb=False)             # a heartbeat missed for a second on a busy machine is no death here
kc.wait_for_ready(timeout=120)
if not wait:
    kc.execute(code)
    time.sleep(1)
    print(json.dumps({"status": "sent", "out": ""}))
    sys.exit()
out = []
def hook(msg):
    if msg["msg_type"] == "stream":
        out.append(msg["content"]["text"])
reply = kc.execute_interactive(code, timeout=300, output_hook=hook)
print(json.dumps({"status": reply["content"]["status"], "out": "".join(out),
                  "error": reply["content"].get("evalue")}))
"""

# In the attacker's kernel: every listening TCP socket of another uid (from /proc/net/tcp, as in the attack), an
# IOPub subscription to each for a few seconds; every kernel connection file or IPC socket in other homes; and the
# processes /proc shows with their owners.
SNOOP = r"""
import glob, json, os, time, zmq
me = os.getuid()
ports = set()
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        rows = open(table).read().splitlines()[1:]
    except OSError:
        continue
    for row in rows:
        f = row.split()
        if f[3] == "0A" and int(f[7]) != me:                     # LISTEN, another user's
            ports.add(int(f[1].rsplit(":", 1)[1], 16))
ctx = zmq.Context()
subs = []
for port in sorted(ports):
    s = ctx.socket(zmq.SUB)
    s.setsockopt(zmq.SUBSCRIBE, b"")
    s.setsockopt(zmq.LINGER, 0)
    s.connect(f"tcp://127.0.0.1:{port}")
    subs.append(s)
ipc = []
for path in glob.glob("/home/*/.local/share/jupyter/runtime/*") + glob.glob("/tmp/*") + glob.glob("/dev/shm/*"):
    ipc.append(path)
for path in glob.glob("/home/*/.local/share/jupyter/runtime"):
    try:
        ipc.extend(os.path.join(path, n) for n in os.listdir(path))
    except OSError:
        pass
for path in ipc:
    if "-ipc-" in path and not path.startswith(os.path.expanduser("~")):
        s = ctx.socket(zmq.SUB)
        s.setsockopt(zmq.SUBSCRIBE, b"")
        s.setsockopt(zmq.LINGER, 0)
        try:
            s.connect(f"ipc://{path}")
            subs.append(s)
        except zmq.ZMQError:
            pass
poller = zmq.Poller()
for s in subs:
    poller.register(s, zmq.POLLIN)
got = []
deadline = time.time() + 3              # 10 lines a second from each victim meanwhile
while time.time() < deadline:
    for s, _ in poller.poll(200):
        got.append(b"".join(s.recv_multipart()).decode("utf-8", "replace")[:2000])
owners = {}
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            owners[pid] = os.stat(f"/proc/{pid}").st_uid
        except OSError:
            pass
print(json.dumps({"ports": sorted(ports), "paths": ipc[:50], "got": got[:20],
                  "others": sorted({u for u in owners.values() if u != me}), "mine": len(owners)}))
"""


def token_of(hub, user: str) -> str:
    proc = su(hub, user, TOKEN, hub.url, user, stdin=hub.passwords[user])
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


class Person:
    """A hub user with their own token: their server started, kernels started in it and code run there."""

    def __init__(self, hub, name: str):
        self.hub, self.name = hub, name
        self.headers = {"Authorization": f"token {token_of(hub, name)}"}

    def server_up(self, timeout: float = 180) -> None:
        api = f"{self.hub.url}/hub/api/users/{self.name}"
        requests.post(f"{api}/server", headers=self.headers, timeout=60)
        deadline = time.monotonic() + timeout
        while not requests.get(api, headers=self.headers, timeout=30).json().get("servers", {}).get("", {}).get(
                "ready"):
            assert time.monotonic() < deadline, f"{self.name}'s server did not start"
            time.sleep(1)

    def server_down(self, timeout: float = 120) -> None:
        api = f"{self.hub.url}/hub/api/users/{self.name}"
        requests.delete(f"{api}/server", headers=self.headers, timeout=60)
        deadline = time.monotonic() + timeout
        while requests.get(api, headers=self.headers, timeout=30).json().get("servers", {}).get(""):
            assert time.monotonic() < deadline, f"{self.name}'s server did not stop"
            time.sleep(1)

    def kernel(self) -> str:
        reply = requests.post(f"{self.hub.user_url(self.name)}/api/kernels", headers=self.headers, json={},
                              timeout=120)
        assert reply.status_code == 201, (reply.status_code, reply.text[:500])
        kernel = reply.json()["id"]
        path = self.connection_file(kernel)
        deadline = time.monotonic() + 60
        while not path.exists():
            assert time.monotonic() < deadline, f"no connection file {path}"
            time.sleep(0.2)
        return kernel

    def connection_file(self, kernel: str) -> Path:
        return Path(f"/home/{self.name}/.local/share/jupyter/runtime/kernel-{kernel}.json")

    def run(self, kernel: str, code: str, wait: bool = True) -> dict:
        proc = su(self.hub, self.name, RUN, self.connection_file(kernel), code, "wait" if wait else "send")
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def stop(self, kernel: str) -> None:
        requests.delete(f"{self.hub.user_url(self.name)}/api/kernels/{kernel}", headers=self.headers, timeout=60)


def test_K1_no_student_reads_another_users_kernel(hub, people):
    """student2 and the instructor print a secret, again and again, in kernels of their own servers; student1, in
    their own kernel, finds every port and socket of other users that the machine shows them and subscribes to each
    (a kernel's IOPub needs no key): nothing of the secrets arrives, and /proc shows student1 only their own
    processes. The owner's own client receives its output (the kernel runs)."""
    student1, student2, instructor = (people[n] for n in (hub.students[0], hub.students[1], hub.instructor))
    secrets, kernels = {}, {}
    for victim in (student2, instructor):
        secrets[victim.name] = f"SECRET-{uuid.uuid4().hex}"
        kernels[victim.name] = victim.kernel()
    attacker = student1.kernel()
    try:
        for victim in (student2, instructor):
            code = (f"import time\nfor i in range(150):\n    print({secrets[victim.name]!r}, i, flush=True)\n"
                    "    time.sleep(0.1)\n")
            assert victim.run(kernels[victim.name], code, wait=False)["status"] == "sent"
        seen = student1.run(attacker, SNOOP)
        assert seen["status"] == "ok", seen
        found = json.loads(seen["out"].strip().splitlines()[-1])
        leaked = [m for m in found["got"] if any(s in m for s in secrets.values())]
        assert not leaked, f"student1 read another user's kernel: {leaked[:2]}"
        assert not found["others"], f"student1's /proc shows processes of uids {found['others']}"
        assert found["mine"] > 0
        own = student2.run(kernels[student2.name], "print('mine')")    # the owner's client: it runs
        assert own["out"].strip().endswith("mine"), own
        for victim in (student2, instructor):                         # no TCP port to find: IPC sockets
            info = json.loads(victim.connection_file(kernels[victim.name]).read_text())
            assert info["transport"] == "ipc" and info["ip"].startswith(f"/home/{victim.name}/"), info
    finally:
        for victim in (student2, instructor):
            victim.stop(kernels[victim.name])
        student1.stop(attacker)


def memory_mb(hub, user: str) -> float:
    groups = limits.detect(server.cgroup_name(hub.layout))
    if groups.version == 1:
        return int((groups.parents["memory"] / user / "memory.usage_in_bytes").read_text()) / 2**20
    return int((groups.parent / user / "memory.current").read_text()) / 2**20


def test_K3_dev_shm_and_tmp_are_each_students_own_counted_and_gone_after_a_restart(hub, people):
    """student1 fills /dev/shm and /tmp from their kernel (300 MB each): nobody else sees the files, their memory
    counts in student1's own control group, and after student1's server stops and starts again both are empty."""
    student1 = people[hub.students[0]]
    name = f"fill-{uuid.uuid4().hex[:8]}"
    kernel = student1.kernel()
    before = memory_mb(hub, student1.name)
    code = (f"import os\nfor d in ('/dev/shm', '/tmp'):\n"
            f"    with open(os.path.join(d, {name!r}), 'wb') as fh:\n"
            "        for _ in range(300):\n            fh.write(b'x' * 2**20)\n"
            f"print(sorted(os.listdir('/dev/shm')), sorted(os.listdir('/tmp')))\n")
    wrote = student1.run(kernel, code)
    assert wrote["status"] == "ok" and wrote["out"].count(name) == 2, wrote
    try:
        after = memory_mb(hub, student1.name)
        assert after - before > 500, f"the files are not counted in student1's memory: {before:.0f} -> {after:.0f} MB"
        for folder in ("/dev/shm", "/tmp"):                     # the machine's own, and so every other user's
            assert not (Path(folder) / name).exists(), f"{folder}/{name} is visible outside student1's server"
        exists = "import os, sys; print(os.path.exists(sys.argv[1]), os.path.exists(sys.argv[2]))"
        other = su(hub, hub.students[1], exists, f"/dev/shm/{name}", f"/tmp/{name}")
        assert other.stdout.strip() == "False False", other.stdout
    finally:
        student1.stop(kernel)
    student1.server_down()
    student1.server_up()
    kernel = student1.kernel()
    try:
        again = student1.run(kernel, f"import os\nprint([os.path.exists(os.path.join(d, {name!r})) "
                                     "for d in ('/dev/shm', '/tmp')])")
        assert again["out"].strip() == "[False, False]", again
    finally:
        student1.stop(kernel)


def test_K9_the_hubs_accounts_have_no_login_shell(hub):
    """Every account the hub command made (students, instructors, the grading account) has nologin as its shell:
    a student's password opens JupyterHub (their server inside its limits), not a shell on the machine (sshd, su,
    a console), where their processes would run outside every limit. Root's su without a shell of its own: refused."""
    import pwd
    import subprocess

    users = [*hub.students, *hub.layout.instructors, hub.layout.grader]
    shells = {u: pwd.getpwnam(u).pw_shell for u in users}
    assert set(shells.values()) == {"/usr/sbin/nologin"}, shells
    login = subprocess.run(["su", "-", hub.students[0], "-c", "id"], capture_output=True, text=True, timeout=60)
    assert login.returncode != 0 and "uid=" not in login.stdout, (login.returncode, login.stdout, login.stderr)


def test_K9_a_students_jupyterlab_terminal_still_starts_bash(hub, people):
    """The terminal of JupyterLab (the one shell a student has) starts bash, not the account's nologin."""
    import pwd

    student1 = people[hub.students[0]]
    api = f"{hub.user_url(student1.name)}/api/terminals"
    reply = requests.post(api, headers=student1.headers, timeout=60)
    assert reply.status_code == 200, (reply.status_code, reply.text[:300])
    name = reply.json()["name"]
    uid = pwd.getpwnam(student1.name).pw_uid
    try:
        deadline, shells = time.monotonic() + 30, []
        while not shells and time.monotonic() < deadline:
            shells = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _owner(p) == uid
                      and _comm(p) == "bash"]
            time.sleep(0.5)
        assert shells, "no bash of student1's terminal"
    finally:
        requests.delete(f"{api}/{name}", headers=student1.headers, timeout=60)


def _owner(proc: Path) -> int | None:
    try:
        return proc.stat().st_uid
    except OSError:
        return None


def _comm(proc: Path) -> str:
    try:
        return (proc / "comm").read_text().strip()
    except OSError:
        return ""


# Run as the grading account (formgrader's, not root) from its course copy: two submissions graded one after the
# other in one warm lane, as autograde grades a class. The first writes wherever it can and fills /dev/shm; the
# second looks for what the first left.
GRADE_TWO = r'''
import json
from autograder.sandbox import lanes
from autograder.sandbox.process import StudentProcess
WRITE = """
import os
MARK = "K4-MARK"
wrote = []
for folder in ("/", "/tmp", "/dev/shm", "/dev", "/scratch", os.getcwd(), os.path.dirname(os.getcwd())):
    try:
        with open(os.path.join(folder, MARK), "w") as fh:
            fh.write("x")
        wrote.append(folder)
    except OSError:
        pass
def written():
    return [wrote, shm_mb]
"""
FILL = """
import time
shm_mb, start = 0, time.monotonic()
try:
    for i in range(25):
        with open(f"/dev/shm/{MARK}-{i}", "wb") as fh:
            fh.write(b"x" * 60 * 2**20)
        shm_mb += 60
        if time.monotonic() - start > 4:
            break
except OSError:
    pass
"""
LOOK = """
import glob
def found():
    hits = []
    for pattern in ("/*", "/tmp/*", "/dev/shm/*", "/dev/*", "/scratch/*", "/scratch/*/*", "*", "../*"):
        try:
            hits += [p for p in glob.glob(pattern) if "K4-MARK" in p]
        except OSError:
            pass
    return hits
def caps():
    return [l.split()[1] for l in open("/proc/self/status") if l.startswith(("CapEff", "CapPrm", "CapAmb"))]
"""
lane = lanes.shared()
out = {"uid": lane.uid, "fallback": lane.fallback}
first = StudentProcess([WRITE, FILL, LOOK], lane)
report = first.start()
assert report.cells[0].get("ok") and report.cells[2].get("ok"), report.cells
out["written"], out["own"], out["caps"] = (first.calls.call(n)["value"] for n in ("written", "found", "caps"))
first.cleanup()
second = StudentProcess([LOOK], lane)
report = second.start()
assert all(c.get("ok") for c in report.cells), report.cells
out["second"] = second.calls.call("found")["value"]
second.cleanup()
print(json.dumps(out))
'''


def test_K4_K5_grading_as_the_grading_account_leaves_nothing_for_the_next_submission(hub):
    """Formgrader grades as the grading account, not root. The first submission writes into /, /tmp, /dev/shm,
    /dev, /scratch and its working folder, and up to 25 x 60 MB into /dev/shm; it can write only its own scratch folder,
    /dev/shm takes nothing, it holds no capability, and the next submission in the same lane finds none of it."""
    from autograder.sandbox.policy import Limits

    proc = hub.run_as(hub.layout.grader, GRADE_TWO, env={"KERAS_BACKEND": "torch"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    wrote, shm_mb = out["written"]
    assert out["second"] == [], f"the next submission found the first's files: {out['second']}"
    assert len(wrote) == 1 and wrote[0].startswith("/scratch/"), f"the submission wrote into {wrote}"
    assert shm_mb <= Limits.from_course().scratch_mb, f"{shm_mb} MB written into /dev/shm"
    assert any("K4-MARK" in p for p in out["own"]), out["own"]              # control: its own scratch file
    assert set(out["caps"]) == {"0000000000000000"}, out["caps"]


# K4/K5 through formgrader's Autograde button: student3's collected submission writes wherever it can and fills
# /dev/shm; student4's, autograded next, looks for what it left. Each one's softmax is right only if what it saw is
# what it must (the writer: its own scratch file; the looker: nothing of the writer's), so the softmax grade says it.
K4_WRITE = """import os
MARK = "K4F-MARK"
for folder in ("/", "/tmp", "/dev/shm", "/dev", "/scratch", os.getcwd(), os.path.dirname(os.getcwd()),
               os.path.expanduser("~")):
    try:
        with open(os.path.join(folder, MARK), "w") as fh:
            fh.write("x")
    except OSError:
        pass
for i in range(25):
    try:
        with open(f"/dev/shm/{MARK}-{i}", "wb") as fh:
            fh.write(b"x" * 60 * 2**20)
    except OSError:
        break
RIGHT = os.path.exists(MARK)      # its own scratch file is there
"""
K4_LOOK = """import glob, os
hits = []
for pattern in ("/*", "/tmp/*", "/dev/shm/*", "/dev/*", "/scratch/*", "/scratch/*/*", "*", "../*",
                os.path.expanduser("~/*")):
    hits += [p for p in glob.glob(pattern) if "K4F-MARK" in p]
RIGHT = not hits                  # nothing of the submission graded before
"""
SCORE = """import json, sys
from nbgrader.api import Gradebook
with Gradebook(sys.argv[1], sys.argv[2]) as gb:
    print(json.dumps({s: gb.find_grade("test_softmax", "attention", "attention", s).score for s in sys.argv[3:]}))
"""


def probe_notebook(probe: str):
    """The released attention notebook with a right softmax that answers wrong (zeros) unless ``RIGHT``."""
    import nbformat

    from autograder import settings

    nb = nbformat.read(settings.ROOT / "release" / "attention" / "attention.ipynb", as_version=4)
    key = nbformat.read(settings.ROOT / "solutions" / "attention" / "attention.ipynb", as_version=4)
    solution = next(c.source for c in key.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "solution_softmax")
    body = "\n".join(line for line in solution.splitlines() if "### " not in line)
    body = body.replace("    return e / np.sum(e, axis=axis, keepdims=True)",
                        "    out = e / np.sum(e, axis=axis, keepdims=True)\n    return out if RIGHT else out * 0")
    assert "return out if RIGHT" in body
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "solution_softmax")
    cell.source = probe + "\n\n" + body
    return nb


def test_K4_K5_formgrader_autograde_leaves_nothing_for_the_next_submission(hub, chromium):
    """instructor1 autogrades, from formgrader's Submissions page, student3's submission (the writer) and then
    student4's (the looker), both as collected into the course: both softmax grades are full, so the writer found its
    own file and the looker nothing of the writer's."""
    import os
    import pwd

    import nbformat
    from selenium.webdriver.common.by import By
    from tests.browser.labpage import wait_for
    from tests.hub.live.test_hub_course import AUTOGRADE_S, assignment_row, login, modal, points, submissions

    from autograder.hub import provision

    writer, looker = hub.students[2], hub.students[3]
    grader = pwd.getpwnam(hub.layout.grader)
    for student, probe in ((writer, K4_WRITE), (looker, K4_LOOK)):
        path = hub.layout.course_dir / "submitted" / student / "attention" / "attention.ipynb"
        assert path.parent.is_dir(), f"{student}'s submission was not collected"
        nbformat.write(probe_notebook(probe), str(path))
        os.chown(path, grader.pw_uid, grader.pw_gid)
    driver = chromium(hub.instructor)
    formgrader = f"/services/{hub.layout.course_id}/formgrader"
    driver.get(f"{hub.url}{formgrader}")
    wait_for(lambda: driver.find_elements(By.ID, "username_input") or "/formgrader" in driver.current_url, 120,
             "the login page or formgrader")
    if driver.find_elements(By.ID, "username_input"):                   # not logged in yet in this browser
        login(driver, hub, hub.instructor, next_url=formgrader)
    assignment_row(driver).find_element(By.CSS_SELECTOR, "td.num-submissions a").click()
    n = len(hub.students)
    for student in (writer, looker):
        wait_for(lambda: submissions(driver, n), 60, "the submissions")[student]["autograde"] \
            .find_element(By.TAG_NAME, "a").click()
        kind, text = modal(driver, AUTOGRADE_S)
        assert kind == "success", text
    proc = hub.run_as(hub.layout.grader, SCORE, provision.grader_env(hub.layout)["COURSE_DB_URL"],
                      hub.layout.course_id, writer, looker, check=True)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    full = points()["test_softmax"]
    assert got[writer] == full, f"the writer did not find its own scratch file: {got}"
    assert got[looker] == full, f"the next submission found what the one before it left: {got}"


def test_K8_a_raw_submission_opened_in_formgrader_loads_nothing_from_the_student(hub, chromium):
    """student3's submission carries a remote image in markdown, an <img> and an inline style with a remote URL, each
    pointing at a listener of theirs. instructor1 opens the raw submission in formgrader's JupyterLab (the notebook as
    collected, in the course folder): the page shows the images' elements, and the listener hears nothing."""
    import http.server
    import os
    import pwd
    import threading

    import nbformat
    from tests.browser.labpage import wait_for
    from selenium.webdriver.common.by import By
    from tests.hub.live.test_hub_course import login

    heard = []

    class Listener(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            heard.append(self.path)
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args):
            pass

    listener = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Listener)
    threading.Thread(target=listener.serve_forever, daemon=True).start()
    there = f"http://127.0.0.1:{listener.server_address[1]}"
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"![tracker]({there}/markdown.png)\n\n<img src=\"{there}/img.png\">\n\n"
                                      f"<div style=\"background-image: url('{there}/style.png')\">K8</div>")])
    name = f"k8-{uuid.uuid4().hex[:8]}.ipynb"
    path = hub.layout.course_dir / name
    nbformat.write(nb, str(path))
    grader = pwd.getpwnam(hub.layout.grader)
    os.chown(path, grader.pw_uid, grader.pw_gid)
    driver = chromium(hub.instructor)
    target = f"/services/{hub.layout.course_id}/lab/tree/{name}"
    try:
        driver.get(f"{hub.url}{target}")
        wait_for(lambda: driver.find_elements(By.ID, "username_input") or "/lab" in driver.current_url, 120,
                 "the login page or formgrader's JupyterLab")
        if driver.find_elements(By.ID, "username_input"):
            login(driver, hub, hub.instructor, next_url=target)
        wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, f'img[src^="{there}"]'), 180,
                 "the submission's remote image elements in formgrader's JupyterLab")
        time.sleep(5)                                    # time for any load the page would make
        assert heard == [], f"opening the submission reached the student's listener: {heard}"
    finally:
        listener.shutdown()
        path.unlink(missing_ok=True)


def test_K6_a_student_fills_at_most_their_own_home(hub, people):
    """student1 allocates 4 x 1 GiB in their home from their kernel (posix_fallocate: instant, no data written):
    they get "No space left on device" at their home's size (``home_mb``), and the machine's disk loses at most that."""
    import shutil

    from autograder import settings

    home_mb = settings.course()["hub"]["home_mb"]
    student1 = people[hub.students[0]]
    kernel = student1.kernel()
    free_before = shutil.disk_usage(hub.layout.state).free
    code = ("import os\ngot, error = 0, None\n"
            "for i in range(4):\n"
            "    fd = os.open(os.path.expanduser(f'~/k6-{i}.bin'), os.O_CREAT | os.O_WRONLY, 0o600)\n"
            "    try:\n"
            "        os.posix_fallocate(fd, 0, 2**30)\n"
            "        got += 1024\n"
            "    except OSError as e:\n"
            "        error = e.strerror\n"
            "        break\n"
            "    finally:\n"
            "        os.close(fd)\n"
            "print('K6', got, error)\n")
    try:
        out = student1.run(kernel, code)
        free_during = shutil.disk_usage(hub.layout.state).free
    finally:
        student1.run(kernel, "import glob, os\n[os.unlink(p) for p in glob.glob(os.path.expanduser('~/k6-*.bin'))]")
        student1.stop(kernel)
    line = [x for x in out["out"].splitlines() if x.startswith("K6 ")]
    assert line, out
    got, error = line[-1].split(maxsplit=2)[1:]
    assert int(got) <= home_mb and "No space left" in error, out
    assert free_before - free_during < (home_mb + 128) * 2**20, (free_before, free_during)
