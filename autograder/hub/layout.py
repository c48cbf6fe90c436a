"""Where the hub's pieces live: one place, read by the set-up, the hub's config and the tests.

By default the hub is the course's own: course id and exchange from ``course_config.py``, accounts ``student1``..,
``instructor1``/``instructor2`` and ``grader-<course id>``, state in ``/srv/jupyterhub-<course id>``, the students'
environment in ``/opt/<course id>-env``, ports 8000 (the hub), 8001 (the proxy's API), 8081 (the hub's own API),
9999 (the formgrader service) and 10000 (the exchange service, ngshare).

A **namespace** (``python -m autograder hub --namespace NAME`` or ``AUTOGRADER_HUB_NAMESPACE=NAME``) is a second,
separate hub on the same machine, as the package's tests start one: everything that names the course moves with
it at once, so that nothing of the real course (its accounts, exchange, state, gradebook) is read or written.
The course id becomes ``NAME``, every account gets the prefix ``NAME-`` (``NAME-student1``, ``NAME-instructor1``;
the grading account is ``grader-NAME``), the state folder ``/srv/jupyterhub-NAME`` (with the exchange service's
database), the students' environment ``/opt/NAME-env`` (and ``exchange``, the filesystem exchange's root that the
hub does not use, ``/srv/NAME-exchange``). The internal ports follow ``--port``
(proxy API ``port+1``, hub API ``port+81``, formgrader ``port+1999``, exchange ``port+2000``: 8001, 8081, 9999 and
10000 for the default 8000).

**One origin per user and for the grading service** (JupyterHub's ``subdomain_host``): the hub answers at
``DOMAIN`` (``--domain``), each user's server at ``<user>.DOMAIN`` and each service at ``<name>--service.DOMAIN``
(JupyterHub's names), all on the hub's port: a page of one user's server is another origin than the hub's, another
user's and formgrader's, so the browser keeps their cookies, pages and API answers apart. The name needs a
wildcard DNS record (``*.DOMAIN``, and with TLS a wildcard certificate). Without ``--domain`` the hub is
``hub.localhost``, which browsers resolve to this machine (``*.localhost``): for a hub on 127.0.0.1 (the tests, a
trial on one's own machine), not for a class.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from autograder import settings

NAMESPACE_ENV = "AUTOGRADER_HUB_NAMESPACE"
NAMESPACE_RE = re.compile(r"^[a-z][a-z0-9]{1,15}$")      # a course id, a Unix name's prefix and a path component
LOCAL_DOMAIN = "hub.localhost"          # *.localhost: this machine, in browsers (and glibc with nss-myhostname)
DOMAIN_RE = re.compile(r"^(?=.{1,200}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class Layout:
    course_id: str
    port: int = 8000
    ip: str = ""                                   # all interfaces; the tests use 127.0.0.1
    state: Path = field(default=None)              # root only: hub config, database, secrets, passwords, logs
    env: Path = field(default=None)                # the students' (and the formgrader's) Python environment
    exchange: Path = Path("/srv/nbgrader/exchange")
    user_prefix: str = ""                          # before every account's name but the grading account's
    namespace: str | None = None                   # None: the course's real hub
    ssl_cert: Path | None = None                   # TLS: the certificate (chain) the hub serves, and its key
    ssl_key: Path | None = None
    domain: str = ""                               # the hub's DNS name ("": LOCAL_DOMAIN); users at <user>.<domain>

    def __post_init__(self):
        if self.state is None:
            object.__setattr__(self, "state", Path(os.environ.get("AUTOGRADER_HUB_STATE",
                                                                  f"/srv/jupyterhub-{self.course_id}")))
        if self.env is None:
            object.__setattr__(self, "env", Path(os.environ.get("AUTOGRADER_HUB_ENV", f"/opt/{self.course_id}-env")))

    @classmethod
    def for_course(cls, namespace: str | None = None, **kwargs) -> "Layout":
        """The course's hub, or (``namespace``, else ``$AUTOGRADER_HUB_NAMESPACE``) a separate one of that name."""
        namespace = namespace or os.environ.get(NAMESPACE_ENV) or None
        if namespace is None:
            course = settings.load()
            return cls(course_id=course.course_id, exchange=Path(course.exchange_root), **kwargs)
        if not NAMESPACE_RE.match(namespace):
            raise ValueError(f"hub namespace {namespace!r}: 2-16 lower-case letters and digits, a letter first")
        if namespace == settings.load().course_id:
            raise ValueError(f"hub namespace {namespace!r} is the course's own id")
        return cls(course_id=namespace, exchange=Path(f"/srv/{namespace}-exchange"), user_prefix=f"{namespace}-",
                   state=Path(f"/srv/jupyterhub-{namespace}"), env=Path(f"/opt/{namespace}-env"),
                   namespace=namespace, **kwargs)

    # ------------------------------------------------------------------------------------------ accounts
    @property
    def instructors(self) -> list[str]:
        return [f"{self.user_prefix}instructor{i}" for i in (1, 2)]

    def students(self, n: int) -> list[str]:
        return [f"{self.user_prefix}student{i}" for i in range(1, n + 1)]

    @property
    def grader(self) -> str:
        return f"grader-{self.course_id}"

    @property
    def formgrade_group(self) -> str:
        return f"formgrade-{self.course_id}"

    @property
    def grader_home(self) -> Path:
        return Path("/home") / self.grader

    @property
    def course_dir(self) -> Path:
        """The grading account's copy of the course repository (the nbgrader course directory)."""
        return self.grader_home / self.course_id

    # ------------------------------------------------------------------------------------------ ports
    @property
    def proxy_api_port(self) -> int:
        return self.port + 1

    @property
    def hub_port(self) -> int:
        return self.port + 81

    @property
    def service_port(self) -> int:
        """The formgrader service (on 127.0.0.1 only)."""
        return self.port + 1999

    @property
    def exchange_port(self) -> int:
        """The exchange service, ngshare (on 127.0.0.1 only)."""
        return self.port + 2000

    # ------------------------------------------------------------------------------------------ the exchange
    EXCHANGE_SERVICE = "ngshare"

    @property
    def exchange_url(self) -> str:
        """Where every user's nbgrader reaches the exchange service: straight, not through the public proxy."""
        return f"http://127.0.0.1:{self.exchange_port}/services/{self.EXCHANGE_SERVICE}"

    @property
    def exchange_state(self) -> Path:
        """ngshare's database and stored files: in the hub's root-only state folder (not ngshare's default
        /srv/ngshare, which two hubs would share)."""
        return self.state / "exchange"

    @property
    def formgrader_token(self) -> Path:
        """The formgrader service's hub API token (root only): the hub command uses it to set up the course in the
        exchange (course, instructors, roster, released assignments) as the course's grading service."""
        return self.state / "formgrader-token"

    # ------------------------------------------------------------------------------------------ files
    @property
    def passwords(self) -> Path:
        return self.state / "passwords.txt"

    @property
    def start_file(self) -> Path:
        """What the hub command wrote for this start, read by the hub's config (``server.Start``; root only)."""
        return self.state / "hub-start.json"

    @property
    def server_logs(self) -> Path:
        """Each user's server log (``<user>.log``, root's: ``autograder/hub/server_log.py``)."""
        return self.state / "servers"

    @property
    def pid_file(self) -> Path:
        return self.state / "jupyterhub.pid"

    @property
    def log(self) -> Path:
        return self.state / "jupyterhub.log"

    @property
    def python(self) -> Path:
        return self.env / "bin" / "python"

    @property
    def nbgrader_config(self) -> Path:
        """The nbgrader config of every user of this hub (course id, exchange): in the students' environment
        (``sys.prefix/etc/jupyter``, read by every nbgrader that runs there), so that two hubs never share one."""
        return self.env / "etc" / "jupyter" / "nbgrader_config.py"

    @property
    def scheme(self) -> str:
        return "https" if self.ssl_cert else "http"

    # ------------------------------------------------------------------------------------------ addresses
    @property
    def hub_domain(self) -> str:
        return self.domain or LOCAL_DOMAIN

    def _origin(self, host: str) -> str:
        default = {"http": 80, "https": 443}[self.scheme]
        return f"{self.scheme}://{host}" + ("" if self.port == default else f":{self.port}")

    @property
    def url(self) -> str:
        """The hub's public address (its login page, its API): ``DOMAIN`` on the hub's port."""
        return self._origin(self.hub_domain)

    @property
    def bind_url(self) -> str:
        """Where the proxy listens (every interface where ``ip`` is empty)."""
        return f"{self.scheme}://{self.ip}:{self.port}"

    @property
    def local_url(self) -> str:
        """The hub's port on this machine by address (the command's own check; the hub's name in a Host header)."""
        return f"{self.scheme}://{self.ip or '127.0.0.1'}:{self.port}"

    def user_url(self, user: str) -> str:
        """``user``'s server, on its own origin: ``<user>.DOMAIN/user/<user>`` (JupyterHub's subdomain hook)."""
        from jupyterhub.utils import subdomain_hook_idna

        return self._origin(subdomain_hook_idna(user, self.hub_domain, "user")) + f"/user/{user}"

    def service_url(self, name: str) -> str:
        """A hub service, on its own origin: ``<name>--service.DOMAIN/services/<name>``."""
        from jupyterhub.utils import subdomain_hook_idna

        return self._origin(subdomain_hook_idna(name, self.hub_domain, "service")) + f"/services/{name}"

    @property
    def formgrader_url(self) -> str:
        return f"{self.service_url(self.course_id)}/formgrader"
