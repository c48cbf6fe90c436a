"""JupyterHub for the course: its config (written from the layout), start in the foreground, stop.

The hub runs as root (PAM login and the local-process spawner need it) from the course's ``.venv``, with the
pinned configurable-http-proxy that ``scripts/setup.sh`` installs under ``build/node``. Users' servers and the
formgrader service run the students' environment (``provision.students_env``). ``--stop`` (or Ctrl-C) ends the
hub, which stops the proxy, the service and every user's server it started.
"""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from autograder import settings
from autograder.hub import provision
from autograder.hub.layout import Layout

SERVICE_WAIT_S = 15
PROXY = settings.ROOT / "build" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"


def config_text(layout: Layout, students: list[str], formgrader_token: str = "") -> str:
    """jupyterhub_config.py (after nbgrader's demo_one_class_multiple_graders, for JupyterHub 5), with the exchange
    service (ngshare, ``autograder/hub/exchange_service.py``)."""
    cid, group = layout.course_id, layout.formgrade_group
    env_bin = layout.env / "bin"
    path = f"{env_bin}:/usr/local/bin:/usr/bin:/bin"
    service_env = {"PATH": path, "JUPYTERHUB_DEFAULT_URL": "/lab", **provision.grader_env(layout)}
    return f'''# Written by `python -m autograder hub` (autograder/hub/server.py); rewritten at every start.
c = get_config()  # noqa: F821

c.JupyterHub.bind_url = "http://{layout.ip}:{layout.port}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {layout.hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{layout.proxy_api_port}"
c.JupyterHub.db_url = "sqlite:///{layout.state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = "{layout.state / 'jupyterhub_cookie_secret'}"
c.JupyterHub.pid_file = "{layout.pid_file}"
c.ConfigurableHTTPProxy.command = ["{PROXY}"]
c.ConfigurableHTTPProxy.pid_file = "{layout.state / 'proxy.pid'}"
c.JupyterHub.cleanup_servers = True      # stopping the hub stops every user's server
c.JupyterHub.cleanup_proxy = True

# Who may log in: PAM (Unix passwords) for the course's instructors and students.
c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = {set(layout.instructors) | set(students)!r}
c.Authenticator.admin_users = set()

# Everyone's JupyterLab: their own Unix user, the students' environment (no autograder package in it).
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = ["{env_bin / 'jupyterhub-singleuser'}"]
c.Spawner.default_url = "/lab"
c.Spawner.environment = {{"PATH": "{path}"}}
c.Spawner.args = ["--KernelSpecManager.allowed_kernelspecs={provision.KERNEL}",
                  "--MultiKernelManager.default_kernel_name={provision.KERNEL}",
                  "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                  "--LabApp.extension_manager=readonly"]
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120

# The instructors: the formgrade group may reach the course's formgrader service, nobody else.
c.JupyterHub.load_groups = {{"{group}": {{"users": {layout.instructors!r}}}}}
c.JupyterHub.load_roles = [
    {{"name": "{group}", "groups": ["{group}"],
     "scopes": ["access:services!service={cid}", "list:services", "read:services!service={cid}"]}},
    # nbgrader's course list (in every user's Lab) asks the hub which course services the user may reach.
    {{"name": "server", "scopes": ["inherit"]}},
]

# formgrader: a JupyterLab of the grading account on its course copy, started and stopped by the hub.
# JupyterHub 5 gives a managed service 10 s to answer (10 tries of 1 s, fixed in app.py) and exits when it does
# not; JupyterLab with nbgrader's extensions takes longer to start on a busy machine. Only for this service's
# server: each try waits up to {SERVICE_WAIT_S} s.
from jupyterhub.objects import Server as _Server  # noqa: E402

_wait_up = _Server.wait_up


def _patient_wait_up(self, timeout=10, http=False, **kwargs):
    if http and self.port == {layout.service_port}:
        timeout = max(timeout, {SERVICE_WAIT_S})
    return _wait_up(self, timeout=timeout, http=http, **kwargs)


_Server.wait_up = _patient_wait_up

c.JupyterHub.services = [{{
    "name": "{cid}",
    "url": "http://127.0.0.1:{layout.service_port}",
    "command": ["{env_bin / 'jupyterhub-singleuser'}", "--ServerApp.root_dir={layout.course_dir}",
                "--KernelSpecManager.allowed_kernelspecs={provision.KERNEL}",
                "--MultiKernelManager.default_kernel_name={provision.KERNEL}",
                "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                "--LabApp.extension_manager=readonly"],
    "user": "{layout.grader}",
    "oauth_no_confirm": True,
    "cwd": "{layout.course_dir}",
    "environment": {service_env!r},
    "api_token": {formgrader_token!r},
}}, {{
    # The exchange (autograder/hub/exchange_service.py): ngshare, as root (its database and files in this hub's
    # root-only state folder), on 127.0.0.1 only. It asks the hub who sent each request (the request's token).
    "name": "{layout.EXCHANGE_SERVICE}",
    "url": "http://127.0.0.1:{layout.exchange_port}",
    "command": ["{sys.executable}", "-m", "autograder.hub.exchange_service", "--state", "{layout.exchange_state}",
                "--admins", "{cid}"],
    "cwd": "{layout.state}",
}}]
'''


def formgrader_token(layout: Layout) -> str:
    """The formgrader service's API token, made once and kept (root only) in the state folder."""
    if not layout.formgrader_token.exists():
        fd = os.open(layout.formgrader_token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32))
    return layout.formgrader_token.read_text().strip()


def write_config(layout: Layout, students: list[str]) -> Path:
    layout.state.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(layout.state, 0o700)
    layout.config.write_text(config_text(layout, students, formgrader_token(layout)))
    os.chmod(layout.config, 0o600)
    return layout.config


def running_pid(layout: Layout) -> int | None:
    try:
        pid = int(layout.pid_file.read_text().strip())
        os.kill(pid, 0)
        return pid
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return None


def start(layout: Layout) -> subprocess.Popen:
    """jupyterhub in the background (its log in the state folder); returns once the hub answers."""
    if not PROXY.exists():
        raise RuntimeError(f"{PROXY} is missing: run scripts/setup.sh (it installs configurable-http-proxy)")
    log = open(layout.log, "a")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "PYTHONPATH", "COURSE_"))}
    env["PATH"] = f"{Path(sys.executable).parent}:{PROXY.parent}:{env.get('PATH', '/usr/bin:/bin')}"
    proc = subprocess.Popen([str(Path(sys.executable).with_name("jupyterhub")), "-f", str(layout.config)],
                            cwd=layout.state, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    wait_until_up(layout, proc)
    return proc


def wait_until_up(layout: Layout, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyterhub exited ({proc.returncode}); its log: {layout.log}\n{log_tail(layout)}")
        try:
            with urllib.request.urlopen(f"{layout.url}/hub/api/", timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    stop_process(proc)
    raise RuntimeError(f"jupyterhub did not answer within {timeout:.0f} s; its log: {layout.log}\n{log_tail(layout)}")


def log_tail(layout: Layout, n: int = 30) -> str:
    try:
        return "\n".join(layout.log.read_text(errors="replace").splitlines()[-n:])
    except FileNotFoundError:
        return ""


def leftovers(layout: Layout) -> list[int]:
    """Processes of this hub's servers (the formgrader and exchange services, users' JupyterLabs) that outlived it:
    JupyterHub stops them when it stops normally, not when it exits at start-up."""
    markers = (str(layout.env / "bin" / "jupyterhub-singleuser").encode(), str(layout.exchange_state).encode())
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if any(marker in (entry / "cmdline").read_bytes() for marker in markers):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def stop_leftovers(layout: Layout) -> None:
    for pid in leftovers(layout):
        try:
            os.killpg(pid, signal.SIGTERM)     # its kernels are in its process group (a session of its own)
        except (ProcessLookupError, PermissionError):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


def stop_process(proc_or_pid, timeout: float = 60) -> None:
    """SIGTERM the hub (it stops the proxy, the service and the users' servers), SIGKILL its group if it hangs."""
    pid = proc_or_pid if isinstance(proc_or_pid, int) else proc_or_pid.pid
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not isinstance(proc_or_pid, int):
            if proc_or_pid.poll() is not None:
                return
        else:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.3)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
