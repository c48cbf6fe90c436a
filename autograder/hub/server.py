"""JupyterHub for the course: its config (written from the layout), start in the foreground, stop.

The hub runs as root (PAM login and the local-process spawner need it) from the course's ``.venv``, with the
pinned configurable-http-proxy that ``scripts/setup.sh`` installs under ``build/node``. Users' servers and the
formgrader service run the students' environment (``environment.students_env``). ``--stop`` (or Ctrl-C) ends the
hub, which stops the proxy, the service and every user's server it started.
"""
from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from autograder import settings
from autograder.hub import environment, limits, provision
from autograder.hub.layout import Layout
from autograder.lti import hub as lti_hub
from autograder.messages import Label

SERVICE_WAIT_S = 15
TEMPLATES = Path(__file__).resolve().parent / "templates"
PROXY = settings.ROOT / "build" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"


def cgroup_name(layout: Layout) -> str:
    """The parent control group of this hub's users' groups (below the hub's own group)."""
    return f"autograder-{layout.course_id}"


# The formgrader service's Content-Security-Policy: its own origin only (inline styles and scripts as JupyterLab
# needs them; data: and blob: for rendered outputs), nothing from elsewhere; framed only by the hub's own pages.
FORMGRADER_CSP = ("default-src 'self' 'unsafe-inline' 'unsafe-eval' data: blob:; img-src 'self' data: blob:; "
                  "connect-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'self'")


def config_text(layout: Layout, students: list[str], instructors: list[str] | None = None,
                formgrader_token: str = "", people=None) -> str:
    """jupyterhub_config.py (after nbgrader's demo_one_class_multiple_graders, for JupyterHub 5), with the exchange
    service (ngshare, ``autograder/hub/exchange_service.py``); where ``COURSE["lti"]`` is on, the login through the
    LMS of ``people`` (the roster) at its end (``autograder/lti/hub.py``)."""
    cid, group = layout.course_id, layout.formgrade_group
    instructors = list(layout.instructors if instructors is None else instructors)
    env_bin = layout.env / "bin"
    path = f"{env_bin}:/usr/local/bin:/usr/bin:/bin"
    service_env = {"PATH": path, "JUPYTERHUB_DEFAULT_URL": "/lab", "JUPYTERHUB_DISABLE_USER_CONFIG": "1",
                   **provision.grader_env(layout)}
    hub = settings.load().hub
    limits = "\n".join(line for line in (
        f"c.LimitedSpawner.mem_limit = {hub.mem_limit_mb * 2**20}" if hub.mem_limit_mb else "",
        f"c.LimitedSpawner.cpu_limit = {float(hub.cpu_limit)!r}" if hub.cpu_limit else "",
        f"c.LimitedSpawner.cpu_weight = {int(hub.cpu_weight)}",
        f"c.LimitedSpawner.max_processes = {int(hub.max_processes or 0)}",
        f"c.LimitedSpawner.file_size_limit = {float(hub.file_size_mb or 0)!r}") if line)
    tls = ""
    if layout.ssl_cert:                 # the proxy serves HTTPS with them (JupyterHub passes them to it)
        tls = (f"c.JupyterHub.ssl_cert = {str(layout.ssl_cert)!r}\n"
               f"c.JupyterHub.ssl_key = {str(layout.ssl_key)!r}\n")
    server_log = (f'c.LimitedSpawner.server_log_dir = "{layout.server_logs}"\n'
                  f"c.LimitedSpawner.server_log_bytes = {int(hub.server_log_kb) * 1024}\n"
                  f"c.LimitedSpawner.open_files = {int(hub.open_files)}\n")
    culler = ""
    if hub.idle_timeout_s:
        command = [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={int(hub.idle_timeout_s)}",
                   f"--cull-every={int(hub.cull_every_s or 300)}"]
        culler = f'{{"name": "idle-culler", "command": {command!r}}}, '
    text = f'''# Written by `python -m autograder hub` (autograder/hub/server.py); rewritten at every start.
c = get_config()  # noqa: F821

# Stopping, JupyterHub sends each managed service SIGINT, then SIGTERM 10 s later. A hub started with SIGINT ignored
# (a script's background job `cmd &`, nohup, CI) passes that on to the services, which it starts before it sets its
# own handlers: each waited out the 10 s. Python's handler here is reset to the default action in what it starts.
import signal  # noqa: E402

signal.signal(signal.SIGINT, signal.default_int_handler)

c.JupyterHub.bind_url = "{layout.bind_url}"
# One origin per user and per service (JupyterHub's subdomains): the hub at {layout.hub_domain}, each user's server
# at <user>.{layout.hub_domain}, formgrader at {cid}--service.{layout.hub_domain}. A page that one user's server
# serves can reach no other user's server, formgrader or the hub with the visitor's cookies (autograder/hub/layout.py).
c.JupyterHub.subdomain_host = "{layout.url}"
# /services/<name>/... on the hub's or a user's name (nbgrader's course list links there): to the service's own name.
from autograder.hub.connections import bound_connections  # noqa: E402
from autograder.hub.origins import ServiceRedirect  # noqa: E402

c.JupyterHub.extra_handlers = [(r"/services/([^/]+)(/.*)?", ServiceRedirect)]
# The hub's API (a user's processes reach it: autograder/hub/firewall.py) closes a connection that brings no
# complete request within {int(hub.connection_idle_s)} s (tornado's default: an hour).
bound_connections({int(hub.connection_idle_s)})
{tls}c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {layout.hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{layout.proxy_api_port}"
c.JupyterHub.db_url = "sqlite:///{layout.state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = "{layout.state / 'jupyterhub_cookie_secret'}"
c.JupyterHub.pid_file = "{layout.pid_file}"
c.ConfigurableHTTPProxy.command = ["{PROXY}"]
c.ConfigurableHTTPProxy.pid_file = "{layout.state / 'proxy.pid'}"
c.JupyterHub.cleanup_servers = True      # stopping the hub stops every user's server
c.JupyterHub.cleanup_proxy = True

# The login page in Korean (autograder/hub/templates; its words from autograder/messages.py).
c.JupyterHub.template_paths = ["{TEMPLATES}"]
c.JupyterHub.template_vars = {{"ko": {Label.korean_all()!r}}}

# Who may log in: PAM (Unix passwords) for the course's instructors and students.
c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = {set(instructors) | set(students)!r}
c.Authenticator.admin_users = set()

# Everyone's JupyterLab: their own Unix user, the students' environment (no autograder package in it), in control
# groups of their own with the course's limits (memory, CPU, processes: autograder/hub/limits.py).
c.JupyterHub.spawner_class = "autograder.hub.spawner.LimitedSpawner"
c.LimitedSpawner.cgroup_name = "{cgroup_name(layout)}"
{limits}
# What a user's server prints goes into a log of that user's own (autograder/hub/server_log.py), not this hub's log.
{server_log}c.Spawner.cmd = ["{env_bin / 'jupyterhub-singleuser'}"]
# A user's server reads no configuration, extension or path from the user's home (~/.jupyter, ~/.local/share/jupyter):
# what it serves is the hub's (a student's own config could serve pages of their own under the server's name).
c.Spawner.disable_user_config = True
c.Spawner.default_url = "/lab"
c.Spawner.environment = {{"PATH": "{path}"}}
# Kernels on IPC sockets in the user's own runtime folder (~/.local/share/jupyter/runtime, 0700 in a 0700 home), not
# TCP ports on 127.0.0.1 that every user of the machine can connect to: a kernel's IOPub (a PUB socket) needs no key
# to subscribe to, and would show anyone what another user runs and prints.
# The accounts have no login shell (nologin, autograder/hub/accounts.py): JupyterLab's terminals start bash.
TERMINAL = '--ServerApp.terminado_settings=shell_command=["/bin/bash", "-l"]'
c.Spawner.args = ["--KernelManager.transport=ipc",
                  "--KernelSpecManager.allowed_kernelspecs={environment.KERNEL}",
                  "--MultiKernelManager.default_kernel_name={environment.KERNEL}",
                  "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                  "--LabApp.extension_manager=readonly", TERMINAL]
# Students' JupyterLab leaves out nbgrader's instructor tool "Create Assignment" (a page_config of their own,
# provision.global_config); instructors and the formgrader service keep it.
_INSTRUCTORS = {set(instructors)!r}
_STUDENTS_CONFIG = "{provision.students_config_dir(layout)}"


def _students_page_config(spawner):
    if spawner.user.name not in _INSTRUCTORS:
        spawner.environment = {{**spawner.environment, "JUPYTER_CONFIG_PATH": _STUDENTS_CONFIG}}


c.Spawner.pre_spawn_hook = _students_page_config
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120

# The instructors: the formgrade group may reach the course's formgrader service, nobody else.
c.JupyterHub.load_groups = {{"{group}": {{"users": {instructors!r}}}}}
c.JupyterHub.load_roles = [
    {{"name": "{group}", "groups": ["{group}"],
     "scopes": ["access:services!service={cid}", "list:services", "read:services!service={cid}"]}},
    # nbgrader's course list (in every user's Lab) asks the hub which course services the user may reach.
    {{"name": "server", "scopes": ["inherit"]}},
    # jupyterhub-idle-culler: sees the users' activity, stops idle servers (never removes users).
    {{"name": "idle-culler", "services": ["idle-culler"],
     "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]}},
]

# formgrader: a JupyterLab of the grading account on its course copy, started and stopped by the hub.
# What an instructor opens there (a student's raw submission) is the student's: its pages load nothing from
# another origin (no image, style, font or script of a student's server that would learn who opened it, and when).
FORMGRADER_CSP = {"--ServerApp.tornado_settings="
                  + json.dumps({"headers": {"Content-Security-Policy": FORMGRADER_CSP}})!r}
# JupyterHub 5 gives a managed service 10 s to answer (10 tries of 1 s, fixed in app.py) and exits when it does
# not; JupyterLab with nbgrader's extensions takes longer to start on a busy machine. Only for this service's
# server: each try waits up to {SERVICE_WAIT_S} s (a patch of JupyterHub's Server.wait_up: autograder/patches).
from autograder.patches.hub import patient_service_wait_up  # noqa: E402

patient_service_wait_up({layout.service_port}, {SERVICE_WAIT_S})

# Started as root by autograder/hub/formgrader_server.py: into a control group of its own
# ({int(hub.formgrader_mem_limit_mb)} MiB), then as the grading account; no kernel, no terminal a page could start
# (formgrader grades with its own server code).
c.JupyterHub.services = [{culler}{{
    "name": "{cid}",
    "url": "http://127.0.0.1:{layout.service_port}",
    "command": ["{sys.executable}", "-I", "-m", "autograder.hub.formgrader_server", "--cgroup", "{cgroup_name(layout)}",
                "--memory-mb", "{int(hub.formgrader_mem_limit_mb)}", "--user", "{layout.grader}", "--",
                "{env_bin / 'jupyterhub-singleuser'}", "--ServerApp.root_dir={layout.course_dir}", FORMGRADER_CSP,
                "--ServerApp.kernel_manager_class=autograder.hub.formgrader_server.NoKernels",
                "--ServerApp.kernel_spec_manager_class=autograder.hub.formgrader_server.NoKernelSpecs",
                "--ServerApp.terminals_enabled=False",
                "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                "--LabApp.extension_manager=readonly"],
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
                "--admins", "{cid}", "--cgroup", "{cgroup_name(layout)}"],
    "cwd": "{layout.state}",
}}]
'''
    return text + lti_hub.hub_config(settings.load().lti, people, group, cid)


def write_config(layout: Layout, students: list[str], instructors: list[str] | None = None, people=None) -> Path:
    layout.state.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(layout.state, 0o700)
    layout.config.write_text(config_text(layout, students, instructors, provision.formgrader_token(layout), people))
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
                            cwd=layout.state, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    log.close()
    wait_until_up(layout, proc)
    return proc


def wait_until_up(layout: Layout, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyterhub exited ({proc.returncode}); its log: {layout.log}\n{log_tail(layout)}")
        try:
            # by the hub's address, with its name: the name need not resolve on this machine (a class's DNS)
            check = urllib.request.Request(f"{layout.local_url}/hub/api/",
                                           headers={"Host": layout.url.split("://", 1)[1]})
            with urllib.request.urlopen(check, timeout=5, context=tls_context(layout)) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.5)
    stop_process(proc)
    raise RuntimeError(f"jupyterhub did not answer within {timeout:.0f} s; its log: {layout.log}\n{log_tail(layout)}")


def tls_context(layout: Layout) -> ssl.SSLContext | None:
    """How the start-up check speaks to the hub it started: over TLS where the hub serves it, trusting the system's
    CAs and the hub's own certificate (a self-signed one too: partial chains accepted). The host name is not
    checked: the check connects to the hub's address (127.0.0.1 where it binds every interface), not its name."""
    if not layout.ssl_cert:
        return None
    context = ssl.create_default_context()
    context.load_verify_locations(cafile=str(layout.ssl_cert))
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    context.check_hostname = False
    return context


def log_tail(layout: Layout, n: int = 30) -> str:
    try:
        return "\n".join(layout.log.read_text(errors="replace").splitlines()[-n:])
    except FileNotFoundError:
        return ""


def leftovers(layout: Layout) -> list[int]:
    """Processes of this hub's servers (the formgrader and exchange services, users' JupyterLabs) and of its proxy
    that outlived it: JupyterHub stops them when it stops normally, not when it exits at start-up or is killed (a
    proxy left behind keeps the hub's port, and the next start fails with EADDRINUSE)."""
    markers = (str(layout.env / "bin" / "jupyterhub-singleuser").encode(), str(layout.exchange_state).encode())
    proxy = f"--api-port\0{layout.proxy_api_port}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if any(m in cmdline for m in markers) or (b"configurable-http-proxy" in cmdline and proxy in cmdline):
                found.append(int(entry.name))
    return found


def stop_leftovers(layout: Layout, timeout: float = 10) -> None:
    """End what a hub left running (its users' groups, servers, proxy): SIGTERM, SIGKILL after ``timeout``, and
    return once they are gone."""
    try:                       # whatever is left in the users' control groups (a hub that died leaves them)
        groups = limits.detect(cgroup_name(layout))
        for user in groups.users():
            groups.stop(user)
    except (limits.Unavailable, OSError):
        pass
    deadline, sig = time.monotonic() + timeout, signal.SIGTERM
    while left := leftovers(layout):
        if time.monotonic() > deadline:
            if sig == signal.SIGKILL:
                return
            deadline, sig = time.monotonic() + timeout, signal.SIGKILL
        for pid in left:
            try:
                os.killpg(pid, sig)            # its kernels are in its process group (a session of its own)
            except (ProcessLookupError, PermissionError):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        time.sleep(0.2)


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
