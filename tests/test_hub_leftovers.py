"""What a hub that died leaves running (its proxy, its servers) is found and ended, so that the next start gets its
ports (no hub needed: stand-ins with the same command lines)."""
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
