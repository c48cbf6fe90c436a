# The course hub's JupyterHub config (after nbgrader's demo_one_class_multiple_graders, for JupyterHub 5), with the
# exchange service (ngshare, autograder/hub/exchange_service.py): `jupyterhub -f` this file, as
# `python -m autograder hub` starts the hub (autograder/hub/server.py). Like the course's nbgrader_config.py it is
# not written per course: it reads, at the hub's start, the course's settings (settings.load(): COURSE["hub"],
# COURSE["lti"] of course_config.py) and what the hub command wrote for this start (server.Start: the hub's layout,
# the roster's accounts, formgrader's API token), from the root-only file that $AUTOGRADER_HUB_START names.
c = get_config()  # noqa: F821

# Stopping, JupyterHub sends each managed service SIGINT, then SIGTERM 10 s later. A hub started with SIGINT ignored
# (a script's background job `cmd &`, nohup, CI) passes that on to the services, which it starts before it sets its
# own handlers: each waited out the 10 s. Python's handler here is reset to the default action in what it starts.
import signal  # noqa: E402

signal.signal(signal.SIGINT, signal.default_int_handler)

import json  # noqa: E402
import sys  # noqa: E402

from autograder import settings  # noqa: E402
from autograder.hub import environment, provision, server  # noqa: E402
from autograder.hub.connections import bound_connections  # noqa: E402
from autograder.hub.origins import ServiceRedirect  # noqa: E402
from autograder.lti import hub as lti_hub  # noqa: E402
from autograder.messages import Label  # noqa: E402
from autograder.patches.hub import patient_service_wait_up  # noqa: E402

start = server.Start.read()
course = settings.load()             # the course's settings, read once: COURSE["hub"] and COURSE["lti"]
layout, hub = start.layout, course.hub
cid, group = layout.course_id, layout.formgrade_group
env_bin = layout.env / "bin"
path = f"{env_bin}:/usr/local/bin:/usr/bin:/bin"

c.JupyterHub.bind_url = layout.bind_url
# One origin per user and per service (JupyterHub's subdomains): the hub at the layout's domain, each user's server
# at <user>.<domain>, formgrader at <course>--service.<domain>. A page that one user's server serves can reach no
# other user's server, formgrader or the hub with the visitor's cookies (autograder/hub/layout.py).
c.JupyterHub.subdomain_host = layout.url
# /services/<name>/... on the hub's or a user's name (nbgrader's course list links there): to the service's own name.
c.JupyterHub.extra_handlers = [(r"/services/([^/]+)(/.*)?", ServiceRedirect)]
# The hub's API (a user's processes reach it: autograder/hub/firewall.py) closes a connection that brings no
# complete request within COURSE["hub"]["connection_idle_s"] (tornado's default: an hour).
bound_connections(int(hub.connection_idle_s))
if layout.ssl_cert:                     # the proxy serves HTTPS with them (JupyterHub passes them to it)
    c.JupyterHub.ssl_cert = str(layout.ssl_cert)
    c.JupyterHub.ssl_key = str(layout.ssl_key)
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = layout.hub_port
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{layout.proxy_api_port}"
c.JupyterHub.db_url = f"sqlite:///{layout.state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(layout.state / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(layout.pid_file)
c.ConfigurableHTTPProxy.command = [str(server.PROXY)]
c.ConfigurableHTTPProxy.pid_file = str(layout.state / "proxy.pid")
c.JupyterHub.cleanup_servers = True      # stopping the hub stops every user's server
c.JupyterHub.cleanup_proxy = True

# The login page in Korean (autograder/hub/templates; its words from autograder/messages.py).
c.JupyterHub.template_paths = [str(server.TEMPLATES)]
c.JupyterHub.template_vars = {"ko": Label.korean_all()}

# Who may log in: PAM (Unix passwords) for the course's instructors and students.
c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = set(start.instructors) | set(start.students)
c.Authenticator.admin_users = set()

# Everyone's JupyterLab: their own Unix user, the students' environment (no autograder package in it), in control
# groups of their own with the course's limits (memory, CPU, processes: autograder/hub/limits.py).
c.JupyterHub.spawner_class = "autograder.hub.spawner.LimitedSpawner"
c.LimitedSpawner.cgroup_name = server.cgroup_name(layout)
if hub.mem_limit_mb:
    c.LimitedSpawner.mem_limit = hub.mem_limit_mb * 2**20
if hub.cpu_limit:
    c.LimitedSpawner.cpu_limit = float(hub.cpu_limit)
c.LimitedSpawner.cpu_weight = int(hub.cpu_weight)
c.LimitedSpawner.max_processes = int(hub.max_processes or 0)
c.LimitedSpawner.file_size_limit = float(hub.file_size_mb or 0)
# What a user's server prints goes into a log of that user's own (autograder/hub/server_log.py), not this hub's log.
c.LimitedSpawner.server_log_dir = str(layout.server_logs)
c.LimitedSpawner.server_log_bytes = int(hub.server_log_kb) * 1024
c.LimitedSpawner.open_files = int(hub.open_files)
c.Spawner.cmd = [str(env_bin / "jupyterhub-singleuser")]
# A user's server reads no configuration, extension or path from the user's home (~/.jupyter, ~/.local/share/jupyter):
# what it serves is the hub's (a student's own config could serve pages of their own under the server's name).
c.Spawner.disable_user_config = True
c.Spawner.default_url = "/lab"
c.Spawner.environment = {"PATH": path}
# Kernels on IPC sockets in the user's own runtime folder (~/.local/share/jupyter/runtime, 0700 in a 0700 home), not
# TCP ports on 127.0.0.1 that every user of the machine can connect to: a kernel's IOPub (a PUB socket) needs no key
# to subscribe to, and would show anyone what another user runs and prints.
# The accounts have no login shell (nologin, autograder/hub/accounts.py): JupyterLab's terminals start bash.
TERMINAL = '--ServerApp.terminado_settings=shell_command=["/bin/bash", "-l"]'
c.Spawner.args = ["--KernelManager.transport=ipc",
                  f"--KernelSpecManager.allowed_kernelspecs={environment.KERNEL}",
                  f"--MultiKernelManager.default_kernel_name={environment.KERNEL}",
                  "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                  "--LabApp.extension_manager=readonly", TERMINAL]
# Students' JupyterLab leaves out nbgrader's instructor tool "Create Assignment" (a page_config of their own,
# provision.global_config); instructors and the formgrader service keep it.
_INSTRUCTORS = set(start.instructors)
_STUDENTS_CONFIG = str(provision.students_config_dir(layout))


def _students_page_config(spawner):
    if spawner.user.name not in _INSTRUCTORS:
        spawner.environment = {**spawner.environment, "JUPYTER_CONFIG_PATH": _STUDENTS_CONFIG}


c.Spawner.pre_spawn_hook = _students_page_config
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120

# The instructors: the formgrade group may reach the course's formgrader service, nobody else.
c.JupyterHub.load_groups = {group: {"users": list(start.instructors)}}
c.JupyterHub.load_roles = [
    {"name": group, "groups": [group],
     "scopes": [f"access:services!service={cid}", "list:services", f"read:services!service={cid}"]},
    # nbgrader's course list (in every user's Lab) asks the hub which course services the user may reach.
    {"name": "server", "scopes": ["inherit"]},
    # jupyterhub-idle-culler: sees the users' activity, stops idle servers (never removes users).
    {"name": "idle-culler", "services": ["idle-culler"],
     "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]},
]

# formgrader: a JupyterLab of the grading account on its course copy, started and stopped by the hub.
# What an instructor opens there (a student's raw submission) is the student's: its pages load nothing from
# another origin (no image, style, font or script of a student's server that would learn who opened it, and when).
FORMGRADER_CSP = "--ServerApp.tornado_settings=" + json.dumps({"headers": {"Content-Security-Policy":
                                                                          server.FORMGRADER_CSP}})
# JupyterHub 5 gives a managed service 10 s to answer (10 tries of 1 s, fixed in app.py) and exits when it does
# not; JupyterLab with nbgrader's extensions takes longer to start on a busy machine. Only for this service's
# server: each try waits up to server.SERVICE_WAIT_S (a patch of JupyterHub's Server.wait_up: autograder/patches).
patient_service_wait_up(layout.service_port, server.SERVICE_WAIT_S)

# jupyterhub-idle-culler, where COURSE["hub"]["idle_timeout_s"] is set.
culler = [{"name": "idle-culler",
           "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={int(hub.idle_timeout_s)}",
                       f"--cull-every={int(hub.cull_every_s or 300)}"]}] if hub.idle_timeout_s else []
service_env = {"PATH": path, "JUPYTERHUB_DEFAULT_URL": "/lab", "JUPYTERHUB_DISABLE_USER_CONFIG": "1",
               **provision.grader_env(layout)}
# Started as root by autograder/hub/formgrader_server.py: into a control group of its own
# (COURSE["hub"]["formgrader_mem_limit_mb"]), then as the grading account; no kernel, no terminal a page could start
# (formgrader grades with its own server code).
c.JupyterHub.services = [*culler, {
    "name": cid,
    "url": f"http://127.0.0.1:{layout.service_port}",
    "command": [sys.executable, "-I", "-m", "autograder.hub.formgrader_server", "--cgroup", server.cgroup_name(layout),
                "--memory-mb", str(int(hub.formgrader_mem_limit_mb)), "--user", layout.grader, "--",
                str(env_bin / "jupyterhub-singleuser"), f"--ServerApp.root_dir={layout.course_dir}", FORMGRADER_CSP,
                "--ServerApp.kernel_manager_class=autograder.hub.formgrader_server.NoKernels",
                "--ServerApp.kernel_spec_manager_class=autograder.hub.formgrader_server.NoKernelSpecs",
                "--ServerApp.terminals_enabled=False",
                "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                "--LabApp.extension_manager=readonly"],
    "oauth_no_confirm": True,
    "cwd": str(layout.course_dir),
    "environment": service_env,
    "api_token": start.formgrader_token,
}, {
    # The exchange (autograder/hub/exchange_service.py): ngshare, as root (its database and files in this hub's
    # root-only state folder), on 127.0.0.1 only. It asks the hub who sent each request (the request's token).
    "name": layout.EXCHANGE_SERVICE,
    "url": f"http://127.0.0.1:{layout.exchange_port}",
    "command": [sys.executable, "-m", "autograder.hub.exchange_service", "--state", str(layout.exchange_state),
                "--admins", cid, "--cgroup", server.cgroup_name(layout)],
    "cwd": str(layout.state),
}]

# Where COURSE["lti"] is on: the login through the LMS of the roster (autograder/lti/hub.py) instead of PAM.
lti_hub.configure(c, course.lti, start.lti_roster, group, cid)
