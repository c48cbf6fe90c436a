"""How a hub's processes end, with no hub needed: what a hub that died leaves running (its proxy, its servers) is
found and ended, so that the next start gets its ports (stand-ins with the same command lines); the services a hub
starts stop on its first signal (the hub's config run in a stand-in)."""
from __future__ import annotations

import subprocess
import sys

from autograder.hub import server
from autograder.hub.layout import Layout

SLEEP = "import time; time.sleep(120)"


def test_a_dead_hubs_proxy_and_servers_are_stopped_and_nothing_else(tmp_path):
    layout = Layout(course_id="hubopsleft", port=18700, env=tmp_path / "env", state=tmp_path / "state")
    proxy = subprocess.Popen([sys.executable, "-c", SLEEP, "configurable-http-proxy", "--ip", "127.0.0.1",
                              "--api-port", str(layout.proxy_api_port)], start_new_session=True)
    user_server = subprocess.Popen([sys.executable, "-c", SLEEP, str(layout.env / "bin" / "jupyterhub-singleuser")],
                                   start_new_session=True)
    other_proxy = subprocess.Popen([sys.executable, "-c", SLEEP, "configurable-http-proxy", "--api-port",
                                    str(layout.proxy_api_port + 10)], start_new_session=True)
    try:
        assert sorted(server.leftovers(layout)) == sorted([proxy.pid, user_server.pid])
        server.stop_leftovers(layout, timeout=5)
        assert proxy.poll() is not None and user_server.poll() is not None
        assert not server.leftovers(layout)
        assert other_proxy.poll() is None                     # another hub's proxy (another port) lives on
    finally:
        for proc in (proxy, user_server, other_proxy):
            proc.kill()
            proc.wait()


SERVICE_SIGNALS = """
import signal, subprocess, sys, tempfile
from pathlib import Path
from autograder.hub import server
from autograder.hub.layout import Layout

def sigint_ignored_in_a_child():                      # what a service the hub spawns now would inherit
    status = subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True).stdout
    mask = int(next(line for line in status.splitlines() if line.startswith("SigIgn:")).split()[1], 16)
    return bool(mask & (1 << (signal.SIGINT - 1)))

signal.signal(signal.SIGINT, signal.SIG_IGN)          # as in a hub started by `cmd &`, nohup or CI
before = sigint_ignored_in_a_child()
server.load_config(server.Start.of(Layout.for_course(), ["student1"]), Path(tempfile.mkdtemp()))
print(before, sigint_ignored_in_a_child())
"""


def test_a_hub_started_with_sigint_ignored_starts_its_services_with_sigint_working():
    """JupyterHub stops each managed service with SIGINT, then SIGTERM 10 s later, and starts the services before it
    sets its own signal handlers: a hub started with SIGINT ignored (a script's background job, nohup, CI) gave the
    services SIGINT ignored, and its stop waited 10 s for each of the three (the formgrader, the exchange, the idle
    culler; ~31 s in CI's hub log). Its config, which JupyterHub runs first, gives back Python's SIGINT handler."""
    got = subprocess.run([sys.executable, "-c", SERVICE_SIGNALS], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr[-2000:]
    before, after = got.stdout.split()
    assert before == "True", "the test's stand-in hub should start with SIGINT ignored"
    assert after == "False", "a service started after the hub's config ran would still ignore SIGINT"
