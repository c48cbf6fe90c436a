"""A student floods the exchange service from their own account (K2, K7): connections that announce a large body
and never finish it, and threads that upload bodies the service refuses. Meanwhile another student fetches the
assignment again and again: each fetch answers within a second, the service's memory stays small, and the service
runs in a control group of its own with a memory limit."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import threading
import time
from pathlib import Path

import requests
from tests.hub.live.attacks import su_command
from tests.hub.live.test_hub_isolation import token_of

from autograder.hub import exchange_service, server

FLOOD_S = 20
CPU_SHARE = 0.25   # of one core, at most, that one student's refused uploads may cost the exchange

FLOOD = r"""
import json, socket, sys, threading, time
from collections import Counter
from urllib.parse import urlparse
import requests
hub, exchange, course, me, seconds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
s = requests.Session()
s.get(f"{hub}/hub/login")
r = s.post(f"{hub}/hub/login", data={"username": me, "password": sys.stdin.read().strip(),
                                     "_xsrf": s.cookies.get("_xsrf")}, allow_redirects=False)
token = s.post(f"{hub}/hub/api/users/{me}/tokens", json={"note": "flood"},
               headers={"X-XSRFToken": s.cookies.get("_xsrf")}).json()["token"]
url = urlparse(exchange)
path = url.path.rstrip("/") + f"/submission/{course}/attention"
held, out = [], Counter()

def hold(size):                                     # K2: announce `size` bytes, send all but one, keep the socket
    sock = socket.create_connection((url.hostname, url.port))
    sock.sendall((f"POST {path} HTTP/1.1\r\nHost: {url.hostname}\r\nAuthorization: token {token}\r\n"
                  "Content-Type: application/x-www-form-urlencoded\r\n"
                  f"Content-Length: {size}\r\n\r\n").encode())
    chunk, left = b"a" * (1 << 20), size - 1
    try:
        while left > 0:
            n = min(left, len(chunk))
            sock.sendall(chunk[:n])
            left -= n
    except OSError:
        return "closed by the service"
    held.append(sock)
    return "held"

stop = time.time() + seconds

def upload(n):                                      # K7: bodies refused as too big, again and again
    body = {"files": json.dumps([{"path": "attention.ipynb", "content": "A" * n}])}
    while time.time() < stop:
        try:
            code = requests.post(exchange.rstrip("/") + f"/submission/{course}/attention", data=body, timeout=60,
                                 headers={"Authorization": f"token {token}"}).status_code
        except requests.RequestException as e:
            code = type(e).__name__
        out[f"upload {n // 10**6} MB: {code}"] += 1

threads = [threading.Thread(target=upload, args=(n,)) for n in [38_700_000] * 4 + [29_000_000] * 4]
for t in threads:
    t.start()
for size in [40_000_000] * 20 + [30_000_000] * 4:
    out[hold(size)] += 1
for t in threads:
    t.join()
print(json.dumps(out))
"""


def exchange_pid(hub) -> int:
    marker = str(hub.layout.exchange_state).encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                if marker in cmdline and b"exchange_service" in cmdline:
                    return int(entry.name)
            except OSError:
                continue
    raise AssertionError("no exchange service running")


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid: int) -> float:
    """User and system CPU seconds the process has used (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_K2_K7_a_flooding_student_neither_holds_the_exchanges_memory_nor_slows_anothers_fetch(hub):
    attacker, victim = hub.students[3], hub.students[1]
    token = token_of(hub, victim)
    fetch = f"{hub.layout.exchange_url.rstrip('/')}/assignment/{hub.layout.course_id}/attention"
    headers = {"Authorization": f"token {token}"}
    assert requests.get(fetch, headers=headers, timeout=30).json().get("success"), "student2 cannot fetch at all"
    pid = exchange_pid(hub)
    before, cpu_before = rss_mb(pid), cpu_s(pid)
    flood = subprocess.Popen(su_command(hub, attacker, FLOOD, hub.url, hub.layout.exchange_url, hub.layout.course_id,
                                        attacker, str(FLOOD_S)),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    flood.stdin.write(hub.passwords[attacker])      # the flood starts now (it reads its password first), and the
    flood.stdin.close()                             # fetches below run while it floods
    flood.stdin = None
    peak, times, errors = [before], [], []
    done = threading.Event()

    def watch():
        while not done.is_set():
            try:
                peak.append(rss_mb(pid))
            except OSError:
                return
            time.sleep(0.2)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        deadline = time.monotonic() + FLOOD_S + 60
        while flood.poll() is None and time.monotonic() < deadline:
            start = time.perf_counter()
            try:
                ok = requests.get(fetch, headers=headers, timeout=30).json().get("success")
            except (requests.RequestException, ValueError) as exc:
                ok = f"{type(exc).__name__}"
            times.append(time.perf_counter() - start)
            if ok is not True:
                errors.append(ok)
            time.sleep(0.25)
        out, err = flood.communicate(timeout=300)
    finally:
        done.set()
        watcher.join()
        if flood.poll() is None:
            flood.kill()
    cpu = cpu_s(pid) - cpu_before
    assert flood.returncode == 0, err[-3000:]
    print(f"\n[flood] {out.strip()}\n[flood] student2's fetch: {len(times)} x, median "
          f"{statistics.median(times):.3f} s, max {max(times):.3f} s; the service {before:.0f} -> peak "
          f"{max(peak):.0f} MB, {cpu:.1f} s of CPU in {FLOOD_S} s")
    assert len(times) >= 10 and not errors, (len(times), errors[:5])
    assert max(times) < 1.0, f"student2's fetch took up to {max(times):.2f} s while student4 flooded"
    assert max(peak) - before < 400, f"the exchange grew from {before:.0f} to {max(peak):.0f} MB"
    # K7: refused uploads cost the student (paused at the door), not the service's CPU
    counts = json.loads(out.strip().splitlines()[-1])
    assert any(k.endswith(": 429") for k in counts), counts
    assert cpu < CPU_SHARE * FLOOD_S, f"the exchange spent {cpu:.1f} s of CPU in {FLOOD_S} s of flooding"
    group = Path(f"/proc/{pid}/cgroup").read_text()
    assert f"{server.cgroup_name(hub.layout)}/{exchange_service.SERVICE_GROUP}" in group, group
