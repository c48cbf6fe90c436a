"""What one student's processes can do to another user's server, kernel and output, and to formgrader, tried from the
attacking student's own Unix account (``su``) or their own kernel (H2-H6):

* H2/H4: every TCP socket another user listens on (as ``/proc/net/tcp`` lists them) is refused to the attacker but
  the hub's port, its API and the exchange; a ZMQ message sent to each reaches no kernel (none prints it in its
  owner's running cell), and no kernel has a TCP socket at all;
* H3: formgrader starts no kernel and no terminal, for the instructor's token too, and runs in a memory group of its
  own;
* H5: a student who takes their own server's stdout (``pidfd_getfd``) writes into a capped log of their own, not the
  hub's log, and cannot truncate anything;
* H6: thousands of silent connections from the attacker hold at most ``connections_per_user``, while another
  student's save stays under a second; the hub's API, formgrader and a user's server close a silent connection
  after ``connection_idle_s``; a user's processes may open ``open_files`` files each.
"""
from __future__ import annotations

import json
import os
import pwd
import socket
import threading
import time
import uuid
from pathlib import Path

import requests
from tests.hub.live.attacks import su_command
from tests.hub.live.conftest import CONNECTION_IDLE_S
from tests.hub.live.test_hub_held import su

from autograder import settings


def hub_setting(name: str, default=None):
    """The course's hub setting (``default`` on a hub that has none: the old hub, which these tests must fail on)."""
    return settings.course()["hub"].get(name, default)


def uid_of(user: str) -> int:
    return pwd.getpwnam(user).pw_uid


def processes(uid: int, marker: bytes) -> list[int]:
    """Processes of ``uid`` whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid and marker in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return sorted(found)


def tcp_sockets(pid: int) -> dict[int, tuple[int, str]]:
    """The TCP sockets of a process: inode -> (local port, state as /proc/net/tcp writes it)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            f = row.split()
            if int(f[9]) in inodes:
                found[int(f[9])] = (int(f[1].rsplit(":", 1)[1], 16), f[3])
    return found


def server_port(user: str) -> int:
    """The port ``user``'s JupyterLab listens on."""
    (pid,) = processes(uid_of(user), b"jupyterhub-singleuser")
    return next(port for port, state in tcp_sockets(pid).values() if state == "0A")


# ------------------------------------------------------------------------------------------------ H2, H3, H4
# As the attacker: every listening TCP socket of another uid, connected to; and a ZMQ message with the marker sent to
# each (a kernel's IOPub pipe, where one listens on TCP, reads it and prints it into its owner's running cell).
SCAN = r"""import json, os, socket, sys, time, zmq
marker = sys.argv[1]
me, ports = os.getuid(), {}
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    for row in open(table).read().splitlines()[1:]:
        f = row.split()
        if f[3] == "0A" and int(f[7]) != me:
            ports[int(f[1].rsplit(":", 1)[1], 16)] = int(f[7])
accepted, refused = [], []
for port in sorted(ports):
    s = socket.socket()
    s.settimeout(3)
    try:
        s.connect(("127.0.0.1", port))
        accepted.append(port)
    except OSError:
        refused.append(port)
    s.close()
ctx = zmq.Context()
for port in ports:
    push = ctx.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    push.connect(f"tcp://127.0.0.1:{port}")
    try:
        push.send_multipart([b"x" * 16, marker.encode()], flags=zmq.NOBLOCK)
    except zmq.Again:
        pass
time.sleep(1.5)                        # for the messages to arrive where a socket took them
print(json.dumps({"listed": ports, "accepted": accepted, "refused": refused}))
"""


def test_H2_H4_no_socket_of_another_user_is_reachable_and_kernels_have_no_tcp_socket(hub, people):
    """student2 runs a cell in their kernel while student4 connects to every port of another uid and sends each a
    ZMQ message: only the hub's port, its API and the exchange accept; student2's server, formgrader and the proxy's
    API refuse; student2's cell prints nothing of it; no kernel (student2's, the instructor's) has a TCP socket."""
    attacker, victim = hub.students[3], people[hub.students[1]]
    instructor = people[hub.instructor]
    layout = hub.layout
    kernels = {victim.name: victim.kernel(), instructor.name: instructor.kernel()}
    marker = f"H4-{uuid.uuid4().hex}"
    cell = {}
    running = threading.Thread(target=lambda: cell.update(victim.run(kernels[victim.name],
                                                                       "import time\ntime.sleep(6)\nprint('done')")))
    try:
        running.start()
        time.sleep(2)                                        # the cell runs
        scan = su(hub, attacker, SCAN, marker)
        running.join(120)
        assert scan.returncode == 0, scan.stderr[-2000:]
        found = json.loads(scan.stdout.strip().splitlines()[-1])
        kernel_pids = {name: processes(uid_of(name), b"ipykernel_launcher") for name in kernels}
        kernel_tcp = {name: [tcp_sockets(pid) for pid in pids] for name, pids in kernel_pids.items()}
    finally:
        for person in (victim, instructor):
            person.stop(kernels[person.name])
    allowed = {layout.port, layout.hub_port, layout.exchange_port}
    victim_port = server_port(victim.name)
    print(f"\n[hub] H2: student4 saw {len(found['listed'])} listening ports of other users; accepted "
          f"{found['accepted']}, refused {len(found['refused'])}; kernels' TCP sockets {kernel_tcp}")
    assert str(victim_port) in found["listed"] and str(layout.service_port) in found["listed"], found["listed"]
    assert set(found["accepted"]) <= allowed, f"student4 connected to {set(found['accepted']) - allowed}"
    assert victim_port in found["refused"] and layout.service_port in found["refused"]
    assert cell.get("out", "").strip() == "done" and marker not in json.dumps(cell), cell
    assert all(kernel_pids.values()), kernel_pids
    assert not any(any(sockets) for sockets in kernel_tcp.values()), f"kernels with TCP sockets: {kernel_tcp}"


def formgrader_pid(hub) -> int:
    (pid,) = processes(uid_of(hub.layout.grader), b"jupyterhub-singleuser")
    return pid


def test_H3_formgrader_starts_no_kernel_or_terminal_and_has_a_memory_group_of_its_own(hub, people):
    """Through the proxy with the instructor's own token (what a page on formgrader's origin would send): a kernel, a
    session with a kernel and a terminal are refused, no kernel is listed; formgrader's own API answers. Its server
    runs in the group ``formgrader-service`` with the course's memory limit."""
    headers = people[hub.instructor].headers
    base = hub.formgrader
    kernel = requests.post(f"{base}/api/kernels", headers=headers, json={}, timeout=60)
    session = requests.post(f"{base}/api/sessions", headers=headers, timeout=60,
                            json={"path": "h3.ipynb", "type": "notebook", "kernel": {"name": "python3"}})
    terminal = requests.post(f"{base}/api/terminals", headers=headers, timeout=60)
    specs = requests.get(f"{base}/api/kernelspecs", headers=headers, timeout=60).json()
    assignments = requests.get(f"{base}/formgrader/api/assignments", headers=headers, timeout=60)
    print(f"\n[hub] H3: formgrader's kernel {kernel.status_code}, session {session.status_code}, terminal "
          f"{terminal.status_code}, kernel specs {sorted(specs['kernelspecs'])}")
    assert assignments.status_code == 200, assignments.status_code           # the token reaches formgrader
    assert kernel.status_code == 403 and session.status_code >= 400 and terminal.status_code == 404
    assert specs["kernelspecs"] == {}
    assert requests.get(f"{base}/api/kernels", headers=headers, timeout=60).json() == []
    group = Path(f"/proc/{formgrader_pid(hub)}/cgroup").read_text()
    lines = {line.split(":", 2)[1]: line.split(":", 2)[2] for line in group.splitlines()}
    memory = lines.get("memory", lines.get(""))                  # cgroup v1's memory hierarchy, else v2's
    assert memory.endswith("/formgrader-service"), group
    from autograder.hub import limits, server

    groups = limits.detect(server.cgroup_name(hub.layout))
    limit = (groups.parents["memory"] / "formgrader-service" / "memory.limit_in_bytes" if groups.version == 1
             else groups.parent / "formgrader-service" / "memory.max")
    assert int(limit.read_text()) == hub_setting("formgrader_mem_limit_mb", 0) * 2**20


# ------------------------------------------------------------------------------------------------ H5
TAKE_STDOUT = r"""
import ctypes, json, os, time
marker, instructor = {marker!r}, {instructor!r}
out = {{}}
libc = ctypes.CDLL(None, use_errno=True)
pidfd = os.pidfd_open(os.getppid())                   # this kernel's JupyterLab server, the student's own process
fd = libc.syscall(438, pidfd, 1, 0)                   # pidfd_getfd(pidfd, 1, 0): the server's stdout
out["errno"] = ctypes.get_errno()
if fd >= 0:
    out["target"] = os.readlink(f"/proc/self/fd/{{fd}}")
    os.write(fd, f"[I 2026-12-07 12:00:00.000 JupyterHub log:192] 201 POST /hub/api/users/{{instructor}}/server "
                 f"(@127.0.0.1) {{marker}}\n".encode())
    block, start, n = (b"x" * 99 + b"\n") * 10000, time.monotonic(), 0
    while n < 50 * 2**20:
        n += os.write(fd, block)
    out["wrote_mb"], out["seconds"] = n / 2**20, round(time.monotonic() - start, 2)
    try:
        os.ftruncate(fd, 0)
        out["truncate"] = "allowed"
    except OSError as e:
        out["truncate"] = e.strerror
print(json.dumps(out))
"""


def test_H5_a_students_server_output_goes_into_a_capped_log_of_their_own(hub, people):
    """student1, in their own kernel, takes their server's stdout and writes a forged hub log line and 50 MiB of
    repeated lines into it, then tries to truncate it: the hub's log gets none of it and keeps its size; student1's
    own server log has the line (the check can fail), says what it dropped, and stays within its cap."""
    student1 = people[hub.students[0]]
    marker = f"H5-{uuid.uuid4().hex}"
    hub_log = hub.layout.log
    size_before = hub_log.stat().st_size
    kernel = student1.kernel()
    try:
        got = student1.run(kernel, TAKE_STDOUT.format(marker=marker, instructor=hub.instructor))
    finally:
        student1.stop(kernel)
    assert got["status"] == "ok", got
    out = json.loads(got["out"].strip().splitlines()[-1])
    time.sleep(2)                                            # the hub's reader writes what it kept
    size_after = hub_log.stat().st_size
    logs = getattr(hub.layout, "server_logs", None)
    own = [logs / f"{student1.name}.log", logs / f"{student1.name}.log.1"] if logs else []
    own_text = "".join(p.read_text(errors="replace") for p in own if p.exists())
    cap = hub_setting("server_log_kb", 1024) * 1024
    print(f"\n[hub] H5: {out}; the hub's log {size_before} -> {size_after} bytes; student1's own log "
          f"{sum(p.stat().st_size for p in own if p.exists())} bytes")
    assert marker not in hub_log.read_text(errors="replace"), "the student wrote into the hub's log"
    assert size_before <= size_after < size_before + 2**20, (size_before, size_after)
    assert out.get("truncate") != "allowed", out
    assert marker in own_text and "lines dropped" in own_text, own_text[-2000:]
    assert all(p.stat().st_size <= cap for p in own if p.exists()), [p.stat().st_size for p in own if p.exists()]


# ------------------------------------------------------------------------------------------------ H6
HOLD = r"""import json, resource, socket, sys, time
targets, tries = json.loads(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))     # as many files as the account may have
held, out = [], {}
for name, port in targets.items():
    n = refused = 0
    for _ in range(tries if name == "victim" else tries // 10):
        try:
            s = socket.socket()
        except OSError:                                       # out of files: the attacker's own limit
            break
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
            held.append(s)
            n += 1
        except OSError:
            s.close()
            refused += 1
    out[name] = [n, refused]
print(json.dumps(out), flush=True)
sys.stdin.read()                    # holds them until told
"""
TRIES = 5000          # silent connections tried at another student's server (more than its open-file limit, 4096)


def test_H6_silent_connections_are_capped_and_another_students_save_stays_fast(hub, people):
    """student4 opens TRIES silent connections to student2's server and a tenth of that to the proxy, the hub's API,
    the exchange and formgrader: at most ``connections_per_user`` are held in all; meanwhile student2 saves a notebook
    through the proxy, each save under a second. The servers that a user's processes reach (the hub's API) and those
    behind the proxy (formgrader, a user's server) close a silent connection after ``connection_idle_s``; a user's
    server may hold ``open_files`` files."""
    import nbformat

    attacker, victim = hub.students[3], people[hub.students[1]]
    layout = hub.layout
    targets = {"victim": server_port(victim.name), "proxy": layout.port, "hub API": layout.hub_port,
               "exchange": layout.exchange_port, "formgrader": layout.service_port}
    import subprocess

    hold = subprocess.Popen(su_command(hub, attacker, HOLD, json.dumps(targets), str(TRIES)), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    body = {"type": "notebook", "content": nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])}
    saves = []
    try:
        line = hold.stdout.readline()
        assert line, hold.stderr.read()[-2000:]
        held = json.loads(line)
        for _ in range(5):
            start = time.perf_counter()
            reply = requests.put(f"{hub.user_url(victim.name)}/api/contents/h6.ipynb", headers=victim.headers,
                                 json=body, timeout=30)
            saves.append(time.perf_counter() - start)
            assert reply.status_code in (200, 201), (reply.status_code, reply.text[:300])
    finally:
        hold.communicate("", timeout=60)
    total = sum(n for n, _ in held.values())
    print(f"\n[hub] H6: student4 held {held} (held, refused) of {TRIES} tries; student2's saves "
          f"{', '.join(f'{s:.3f}' for s in saves)} s")
    assert total <= hub_setting("connections_per_user", 128), held
    assert max(saves) < 1.0, saves
    (pid,) = processes(uid_of(victim.name), b"jupyterhub-singleuser")
    limit = next(line for line in Path(f"/proc/{pid}/limits").read_text().splitlines() if "open files" in line)
    assert limit.split()[3:5] == [str(hub_setting("open_files", 4096))] * 2, limit


def test_H6_the_hub_api_formgrader_and_a_users_server_close_a_silent_connection(hub, people):
    """A connection that sends nothing, to each of the three (from root, which the firewall lets through), is closed
    by the server within the session's ``connection_idle_s`` (CONNECTION_IDLE_S, conftest.py) and a few seconds."""
    layout = hub.layout
    ports = {"hub API": layout.hub_port, "formgrader": layout.service_port,
             "a user's server": server_port(hub.students[1])}
    closed = {}

    def wait(name, port):
        s = socket.create_connection(("127.0.0.1", port))
        s.settimeout(CONNECTION_IDLE_S + 10)
        start = time.monotonic()
        try:
            closed[name] = (s.recv(1) == b"", round(time.monotonic() - start, 1))
        except OSError as exc:                          # TimeoutError: still open
            closed[name] = (isinstance(exc, ConnectionResetError), round(time.monotonic() - start, 1))
        finally:
            s.close()

    threads = [threading.Thread(target=wait, args=item) for item in ports.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"\n[hub] H6: silent connections closed (closed, seconds): {closed}")
    assert all(done and seconds <= CONNECTION_IDLE_S + 5 for done, seconds in closed.values()), closed
