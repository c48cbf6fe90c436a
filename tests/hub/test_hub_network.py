"""No TCP between the hub's users and connections bounded, without a hub: the firewall's chains on this machine for a
made-up hub whose one user is ``nobody`` (autograder/hub/firewall.py), and the idle timeout every server of the hub
gets (autograder/hub/connections.py, environment.server_timeouts). The live hub's attacks are
tests/hub/live/test_hub_between_users.py."""
from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from autograder.hub import environment, firewall
from autograder.hub.layout import Layout

NOBODY = "nobody"

CONNECT = r"""import json, socket, sys
held, out = [], []
for port in map(int, sys.argv[1:]):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect(("127.0.0.1", port))
        held.append(s)
        out.append("accepted")
    except OSError as e:
        out.append(e.strerror)
print(json.dumps(out))
"""


def test_the_rules_of_each_user_and_the_ports_they_reach():
    layout = Layout(course_id="hubnetrules", port=18700, ip="127.0.0.1")
    made = firewall.rules(layout, [1001, 1002, 1001], per_user=16)
    main, local = made[firewall.chain(layout)], made[firewall.local_chain(layout)]
    assert len(main) == 4 and all("--uid-owner" in rule for rule in main)              # two users, two rules each
    assert ["--connlimit-above", "16"] == main[0][main[0].index("--connlimit-above"):][:2]
    assert local[0][local[0].index("--dports") + 1] == "18700,18781,20700"              # proxy, hub API, exchange
    v6 = firewall.rules(layout, [1001], per_user=16, ipv6=True)[firewall.local_chain(layout)]
    assert "--dports" not in sum(v6, [])                        # the API and the exchange listen on 127.0.0.1 only
    assert len(firewall.rules(layout, [1001], per_user=0)[firewall.chain(layout)]) == 1  # 0: no cap


@pytest.fixture
def listeners():
    """Three listening sockets of root's on 127.0.0.1 (closed at the end)."""
    socks = []
    for _ in range(3):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        socks.append(s)
    yield [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("iptables"), reason="needs root and iptables")
def test_a_user_reaches_only_the_allowed_ports_and_at_most_their_share(listeners):
    """``nobody`` as the made-up hub's one user: the hub's port (here one listener) takes at most ``per_user``
    connections of theirs, another listener none, and root (not in the chain) reaches it; removed, the chains are
    gone and the other listener takes ``nobody``'s connection again (the check can fail)."""
    allowed, other, _ = listeners
    layout = Layout(course_id="hubnettest", port=allowed, ip="127.0.0.1")
    python = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
    as_nobody = ["setpriv", f"--reuid={pwd.getpwnam(NOBODY).pw_uid}", f"--regid={pwd.getpwnam(NOBODY).pw_gid}",
                 "--clear-groups", python, "-c", CONNECT]
    firewall.apply(layout, [pwd.getpwnam(NOBODY).pw_uid], per_user=3)
    try:
        assert set(firewall.installed(layout)) == {"iptables", "ip6tables"}
        got = subprocess.run([*as_nobody, *[str(allowed)] * 5, str(other)], capture_output=True, text=True,
                             timeout=60)
        root = socket.create_connection(("127.0.0.1", other), timeout=2)
        root.close()
    finally:
        firewall.remove(layout)
    import json

    assert json.loads(got.stdout) == ["accepted"] * 3 + ["Connection refused"] * 3, got.stdout + got.stderr
    assert firewall.installed(layout) == {}
    again = subprocess.run([*as_nobody, str(other)], capture_output=True, text=True, timeout=60)
    assert json.loads(again.stdout) == ["accepted"], again.stdout + again.stderr


def test_every_jupyterlab_of_the_hub_closes_a_silent_connection(tmp_path):
    """The environment's jupyter_server_config.py, run as Jupyter runs it, makes tornado's servers close a connection
    that sends nothing after the idle time (tornado's own default: an hour); a request in time is answered."""
    from tornado.httpserver import HTTPServer
    from tornado.ioloop import IOLoop
    from tornado.web import Application, RequestHandler

    layout = Layout(course_id="hubnetidle", env=tmp_path / "env", state=tmp_path / "state")
    path = environment.server_timeouts(layout, 0.5)
    exec(compile(path.read_text(), str(path), "exec"), {"c": None})

    class Hello(RequestHandler):
        def get(self):
            self.write("hello")

    ready, loop = threading.Event(), {}

    def serve():
        import asyncio

        asyncio.set_event_loop(asyncio.new_event_loop())
        server = HTTPServer(Application([(r"/", Hello)]))
        server.listen(0, "127.0.0.1")
        loop["port"] = next(iter(server._sockets.values())).getsockname()[1]
        loop["io"] = IOLoop.current()
        ready.set()
        loop["io"].start()

    threading.Thread(target=serve, daemon=True).start()
    ready.wait(10)
    try:
        silent = socket.create_connection(("127.0.0.1", loop["port"]), timeout=10)
        start = time.monotonic()
        assert silent.recv(1) == b"" and time.monotonic() - start < 5          # closed by the server
        talking = socket.create_connection(("127.0.0.1", loop["port"]), timeout=10)
        talking.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"hello" in talking.recv(4096)
    finally:
        loop["io"].add_callback(loop["io"].stop)
