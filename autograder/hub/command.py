"""``python -m autograder hub [--students N] [--port 8000] [--ip IP] [--namespace NAME] [--stop]``: set up
(idempotently) and run the course's JupyterHub in the foreground until Ctrl-C, or stop the one that runs
(``--stop``). ``--namespace`` (or ``$AUTOGRADER_HUB_NAMESPACE``) runs a separate hub that shares nothing with the
course's (``autograder/hub/layout.py``), as the tests do."""
from __future__ import annotations

import os
import signal
import stat
import sys
import time

from autograder import settings
from autograder.hub import accounts, provision, server
from autograder.hub.layout import Layout


def setup(layout: Layout, n_students: int) -> dict[str, str]:
    """Everything the hub needs, as root; returns the logins (user -> password)."""
    students = layout.students(n_students)
    steps = []

    def step(what, fn, *args):
        start = time.perf_counter()
        result = fn(*args)
        steps.append(f"{what} {time.perf_counter() - start:.1f} s")
        return result

    logins = step("accounts", accounts.ensure_logins, [*layout.instructors, *students], layout.passwords)
    step("grading account", accounts.ensure_user, layout.grader)
    step("students' environment", provision.students_env, layout)
    step("global nbgrader config", provision.global_config, layout)
    step("course copy", provision.course_copy, layout)
    generated = step("generate", provision.generate, layout, students)
    server.write_config(layout, students)
    print(f"hub: set up ({', '.join(steps)}); generated: {', '.join(generated) or 'nothing new'}", flush=True)
    return logins


def setup_exchange(layout: Layout, students: list[str], instructors: list[str]) -> list[str]:
    """Once the hub (and its exchange service) runs: the course, its instructors and its students in the exchange,
    the assignments released there. Returns what it released."""
    provision.exchange_course(layout, students, instructors)
    return provision.release(layout)


def warn_if_readable(root, layout: Layout) -> None:
    """The checkout this runs from holds the graders: students must not read it (the course copy is private)."""
    for path in (root, *root.parents):
        mode = path.stat().st_mode
        if not mode & stat.S_IXOTH:
            return
    if root.stat().st_mode & stat.S_IROTH:
        print(f"hub: WARNING: {root} (graders, solutions) is readable by every local user, students included; "
              f"`chmod o-rwx {root}` (the hub uses its own copy, {layout.course_dir})", file=sys.stderr)


def main(args) -> int:
    try:
        layout = Layout.for_course(namespace=args.namespace, port=args.port, ip=args.ip)
    except ValueError as exc:
        print(f"hub: {exc}", file=sys.stderr)
        return 2
    if args.stop:
        pid = server.running_pid(layout)
        if pid is None:
            print("hub: not running")
            return 0
        server.stop_process(pid)
        server.stop_leftovers(layout)
        print(f"hub: stopped (pid {pid})")
        return 0
    if os.geteuid() != 0:
        print("hub: must run as root (it creates Unix users and runs JupyterHub with PAM)", file=sys.stderr)
        return 2
    if server.running_pid(layout):
        print(f"hub: already running (pid {server.running_pid(layout)}); stop it with --stop", file=sys.stderr)
        return 1
    warn_if_readable(settings.ROOT, layout)
    setup(layout, args.students)
    try:
        proc = server.start(layout)
    except RuntimeError as exc:
        server.stop_leftovers(layout)
        print(f"hub: {exc}", file=sys.stderr)
        return 1
    try:
        released = setup_exchange(layout, layout.students(args.students), layout.instructors)
    except (RuntimeError, OSError) as exc:
        server.stop_process(proc)
        server.stop_leftovers(layout)
        print(f"hub: the exchange could not be set up: {exc}\n{server.log_tail(layout)}", file=sys.stderr)
        return 1
    print(f"hub: exchange {layout.exchange_url} (ngshare); released: {', '.join(released) or 'nothing new'}",
          flush=True)
    print(f"hub: JupyterHub at {layout.url} (pid {proc.pid}, log {layout.log}); logins in {layout.passwords} "
          f"(root only); formgrader: {layout.url}/services/{layout.course_id}/ for {layout.formgrade_group}; "
          "Ctrl-C or `python -m autograder hub --stop` stops it", flush=True)

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop_process(proc)
        server.stop_leftovers(layout)
