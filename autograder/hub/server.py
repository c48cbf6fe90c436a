"""JupyterHub for the course: its config (``jupyterhub_config.py``, read at start with this start's ``Start``), start
in the foreground, stop.

The hub runs as root (PAM login and the local-process spawner need it) from the course's ``.venv``, with the
pinned configurable-http-proxy that ``scripts/setup.sh`` installs under ``build/node``. Users' servers and the
formgrader service run the students' environment (``environment.students_env``). ``--stop`` (or Ctrl-C) ends the
hub, which stops the proxy, the service and every user's server it started.
"""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from autograder import settings
from autograder.hub import limits, provision
from autograder.hub.layout import Layout
from autograder.lti import hub as lti_hub

if TYPE_CHECKING:
    from traitlets.config import Config

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


CONFIG = Path(__file__).resolve().parent / "jupyterhub_config.py"   # the hub's config: ``jupyterhub -f`` it
START_ENV = "AUTOGRADER_HUB_START"    # where the hub's config reads this start's ``Start``


@dataclass(frozen=True)
class Start:
    """What the hub's config (``jupyterhub_config.py``) reads besides the course's settings, for one start of the
    hub: its layout, the roster's accounts (who may log in, who grades), formgrader's API token and, where LTI login
    is on, the roster's LMS ids (``lti.hub.roster_ids``). Written by ``python -m autograder hub`` into the hub's
    root-only state folder (``Layout.start_file``, 0600: the token)."""

    layout: Layout
    students: list[str]
    instructors: list[str]
    formgrader_token: str = ""
    lti_roster: dict = field(default_factory=dict)

    @classmethod
    def of(cls, layout: Layout, students: list[str], instructors: list[str] | None = None, people=None,
           formgrader_token: str = "") -> Start:
        """The start of ``layout``'s hub for the roster's ``students`` and ``instructors`` (default: the layout's);
        ``people`` (the roster) gives the LMS ids where LTI login is on (``COURSE["lti"]``)."""
        lti = settings.load().lti
        return cls(layout, list(students), list(layout.instructors if instructors is None else instructors),
                   formgrader_token, lti_hub.roster_ids(people or []) if lti.enabled else {})

    def write(self, path: Path) -> Path:
        fields = {f.name: getattr(self.layout, f.name) for f in dataclasses.fields(Layout)}
        record = {"layout": {k: str(v) if isinstance(v, Path) else v for k, v in fields.items()},
                  "students": list(self.students), "instructors": list(self.instructors),
                  "formgrader_token": self.formgrader_token, "lti_roster": self.lti_roster}
        path.unlink(missing_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(record, fh, ensure_ascii=False, indent=1)
        return path

    @classmethod
    def read(cls, path: Path | None = None) -> Start:
        """The start ``path`` (default: the file ``$AUTOGRADER_HUB_START`` names) holds."""
        if path is None:
            if START_ENV not in os.environ:
                raise RuntimeError(f"{CONFIG.name} is the hub's config for `python -m autograder hub`, which names "
                                   f"the start it reads in ${START_ENV}")
            path = Path(os.environ[START_ENV])
        record = json.loads(Path(path).read_text(encoding="utf-8"))
        paths = {f.name for f in dataclasses.fields(Layout) if "Path" in str(f.type)}
        layout = Layout(**{k: Path(v) if k in paths and v is not None else v for k, v in record["layout"].items()})
        return cls(layout, record["students"], record["instructors"], record["formgrader_token"],
                   record["lti_roster"])


def write_start(layout: Layout, students: list[str], instructors: list[str] | None = None, people=None) -> Path:
    """This start of the hub, for its config: the roster's students, the instructors (default: the layout's),
    formgrader's token; with LTI login on, the roster's LMS ids (``people``: the roster)."""
    layout.state.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(layout.state, 0o700)
    (layout.state / "jupyterhub_config.py").unlink(missing_ok=True)   # where a start wrote the config before
    start = Start.of(layout, students, instructors, people, provision.formgrader_token(layout))
    return start.write(layout.start_file)


def load_config(start: Start, where: Path) -> Config:
    """The config the hub would start with for ``start`` (its record written into the folder ``where``): what
    the hub's tests read instead of starting a hub."""
    from traitlets.config.loader import PyFileConfigLoader

    path = start.write(where / start.layout.start_file.name)
    old = os.environ.get(START_ENV)
    os.environ[START_ENV] = str(path)
    try:
        return PyFileConfigLoader(CONFIG.name, str(CONFIG.parent)).load_config()
    finally:
        if old is None:
            os.environ.pop(START_ENV)
        else:
            os.environ[START_ENV] = old


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
    env[START_ENV] = str(layout.start_file)
    env["COURSE_CONFIG"] = str(settings.path())   # its config reads the course's settings this command read
    proc = subprocess.Popen([str(Path(sys.executable).with_name("jupyterhub")), "-f", str(CONFIG)],
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
