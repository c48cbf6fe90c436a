"""``python -m autograder hub [--students N | --roster CSV] [--port 8000] [--ip IP] [--ssl-cert PEM --ssl-key PEM]
[--domain NAME] [--namespace NAME] [--stop | --remove]``: set up (idempotently) and run the course's JupyterHub in
the foreground until Ctrl-C, stop the one that runs (``--stop``: its processes, then its home images unmounted), or
remove everything the hub command made (``--remove``: ``autograder/hub/teardown.py``). ``--namespace`` (or
``$AUTOGRADER_HUB_NAMESPACE``) runs a separate hub that shares nothing with the course's
(``autograder/hub/layout.py``), as the tests do."""
from __future__ import annotations

import os
import signal
import ssl
import stat
import sys
import time
from pathlib import Path

from autograder import settings
from autograder.hub import accounts, environment, firewall, homes, limits, provision, roster, server, teardown
from autograder.hub.layout import Layout
from autograder.lti import hub as lti_hub


def setup(layout: Layout, n_students: int, people: list[roster.Person] | None = None) -> dict[str, str]:
    """Everything the hub needs, as root; returns the logins (user -> password). ``people``: the roster's class,
    else ``n_students`` made-up students and the two instructors of the layout."""
    people = people or roster.generated(layout.students(n_students), layout.instructors)
    students = [p for p in people if p.role == "student"]
    instructors = [p.username for p in people if p.role == "instructor"]
    steps = []

    def step(what, fn, *args):
        start = time.perf_counter()
        result = fn(*args)
        steps.append(f"{what} {time.perf_counter() - start:.1f} s")
        return result

    logins = step("accounts", accounts.ensure_logins, [p.username for p in people], layout.passwords)
    step("grading account", accounts.ensure_user, layout.grader, layout.state)
    step("firewall", firewall.apply, layout, [accounts.uid(u) for u in (*(p.username for p in people), layout.grader)],
         settings.load().hub.connections_per_user)          # no TCP between them (autograder/hub/firewall.py)
    home_mb = settings.load().hub.home_mb
    if home_mb:                              # each person's home a file system of its own (autograder/hub/homes.py)
        step("homes", lambda: [homes.ensure(layout, p.username, home_mb) for p in people])
    step("students' environment", environment.students_env, layout)
    step("Korean Validate, patches", environment.lab_additions, layout)
    step("connection timeouts", environment.server_timeouts, layout, settings.load().hub.connection_idle_s)
    step("global nbgrader config", provision.global_config, layout)
    step("students' page config", provision.students_page_config, layout)
    step("course copy", provision.course_copy, layout)
    generated = step("generate", provision.generate, layout, students)
    server.write_start(layout, [p.username for p in students], instructors, people)
    print(f"hub: set up ({', '.join(steps)}); generated: {', '.join(generated) or 'nothing new'}", flush=True)
    return logins


def setup_exchange(layout: Layout, students: list[str], instructors: list[str]) -> list[str]:
    """Once the hub (and its exchange service) runs: the course, its instructors and its students in the exchange,
    the assignments released there. Returns what it released."""
    provision.exchange_course(layout, students, instructors)
    return provision.release(layout)


# What must stay unreadable to students in the checkout the hub starts from (the rest is released anyway).
PRIVATE = ("autograder", "source", "solutions", "tests", ".git", "course_config.py", "gradebook.db", "submitted",
           "autograded", "feedback", "demo")


def readable_by_others(root: Path) -> Path | None:
    """A file of the checkout's graders, answers or grades that every local user (students included) can read, or
    None. A user who may search (``o+x``) every folder from ``/`` down to a file that others may read, reads it,
    even where a folder is not listable; a checkout whose own folder or one above it is closed (``o-x``) is
    private."""
    if not all(p.stat().st_mode & stat.S_IXOTH for p in (root, *root.parents)):
        return None
    for name in PRIVATE:
        top = root / name
        if not top.exists() or top.is_symlink():
            continue
        if top.is_file():
            if top.stat().st_mode & stat.S_IROTH:
                return top
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            if not os.stat(dirpath).st_mode & stat.S_IXOTH:
                dirnames[:] = []
                continue
            for name_ in filenames:
                path = Path(dirpath) / name_
                if not path.is_symlink() and path.stat().st_mode & stat.S_IROTH:
                    return path
    return None


def refuse_if_readable(root: Path, layout: Layout) -> str | None:
    """Why the hub must not start from ``root`` (its answer key readable by students), or None."""
    exposed = readable_by_others(root)
    if exposed is None:
        return None
    return (f"{exposed} (graders, solutions) is readable by every local user, students included: "
            f"run `chmod o-rwx {root}` and start again (the hub runs from its own private copy, "
            f"{layout.course_dir}; the checkout only has to be readable by root)")


def tls_problem(layout: Layout) -> str | None:
    """Why the hub cannot serve TLS with ``layout``'s certificate and key, or None. The key must be a plain file of
    root's that no other user may read or write (a student who reads it can impersonate the hub to the class)."""
    if not layout.ssl_cert:
        return None
    for what, path in (("certificate", layout.ssl_cert), ("key", layout.ssl_key)):
        if not path.is_file():
            return f"the TLS {what} {path} is not a file"
    st = layout.ssl_key.stat()
    if st.st_uid != 0 or st.st_mode & 0o077:
        return (f"the TLS key {layout.ssl_key} is not root's alone: other users may read or change it (mode "
                f"{stat.S_IMODE(st.st_mode):04o}, owner uid {st.st_uid}): run `chown root {layout.ssl_key}; "
                f"chmod 600 {layout.ssl_key}`")
    try:
        ssl.create_default_context().load_cert_chain(layout.ssl_cert, layout.ssl_key)
    except (ssl.SSLError, OSError) as exc:
        return f"the TLS certificate {layout.ssl_cert} and key {layout.ssl_key} do not load together: {exc}"
    return None


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def domain_of(domain: str | None, ip: str) -> str:
    """The hub's name: ``domain`` (checked), or on a loopback address ``hub.localhost``; raises ``ValueError`` for a
    hub that others reach without a name (each user's origin is a name below the hub's: ``layout.py``)."""
    from autograder.hub.layout import DOMAIN_RE

    if domain:
        domain = domain.strip().lower().rstrip(".")
        if not DOMAIN_RE.match(domain) or "." not in domain:
            raise ValueError(f"--domain {domain!r} is not a DNS name (hub.example.edu)")
        return domain
    if ip in LOOPBACK:
        return ""
    raise ValueError("a hub that others reach needs a name: give --domain hub.example.edu, whose DNS resolves it "
                     "and every name below it (*.hub.example.edu: each user's server and formgrader have their own) "
                     "to this machine; with --ssl-cert, a certificate for both (docs/instructors/hub.md)")
def class_list(layout: Layout, args) -> list[roster.Person] | None:
    """The roster's people (``--roster``) or the made-up class, each name checked (``roster.check``: no account of
    the system's or of someone else's, no name the hub uses); None, with the reasons printed, where refused."""
    source = getattr(args, "roster", None)
    try:
        people = roster.read(Path(source)) if source else \
            roster.generated(layout.students(args.students), layout.instructors)
        roster.check(people, layout, accounts.made(layout.state), source=source or "the made-up class")
    except roster.RosterError as exc:
        print(f"hub: {exc}", file=sys.stderr)
        return None
    return people


def main(args) -> int:
    cert, key = getattr(args, "ssl_cert", None), getattr(args, "ssl_key", None)
    if bool(cert) != bool(key):
        print("hub: TLS needs both --ssl-cert and --ssl-key", file=sys.stderr)
        return 2
    try:
        layout = Layout.for_course(namespace=args.namespace, port=args.port, ip=args.ip,
                                   ssl_cert=Path(cert).resolve() if cert else None,
                                   ssl_key=Path(key).resolve() if key else None,
                                   domain="" if args.stop or getattr(args, "remove", False)
                                   else domain_of(getattr(args, "domain", None), args.ip))
    except ValueError as exc:
        print(f"hub: {exc}", file=sys.stderr)
        return 2
    if args.stop or getattr(args, "remove", False):
        pid = server.running_pid(layout)
        if pid is not None:
            server.stop_process(pid)
        server.stop_leftovers(layout)
        firewall.remove(layout)
        released = homes.release_all(layout)
        print(f"hub: stopped (pid {pid}); home images unmounted: {len(released)}" if pid or released else
              "hub: not running")
        if not getattr(args, "remove", False):
            return 0
        if os.geteuid() != 0:
            print("hub: --remove must run as root (it removes Unix users)", file=sys.stderr)
            return 2
        try:
            removed = teardown.remove(layout)
        except RuntimeError as exc:
            print(f"hub: {exc}", file=sys.stderr)
            return 1
        print("hub: removed " + ("; ".join(removed) if removed else "nothing (nothing of this hub is left)"))
        return 0
    if os.geteuid() != 0:
        print("hub: must run as root (it creates Unix users and runs JupyterHub with PAM)", file=sys.stderr)
        return 2
    people = class_list(layout, args)                # a roster refused before anything else is looked at
    if people is None:
        return 2
    if server.running_pid(layout):
        print(f"hub: already running (pid {server.running_pid(layout)}); stop it with --stop", file=sys.stderr)
        return 1
    if server.leftovers(layout):                 # a hub that died left its proxy or servers: they hold its ports
        print(f"hub: stopping what a hub that died left running (pids {server.leftovers(layout)})", flush=True)
        server.stop_leftovers(layout)
    try:
        limits.detect(server.cgroup_name(layout))
    except limits.Unavailable as exc:
        print(f"hub: refusing to start: the per-user limits (COURSE['hub']) need the kernel's control groups: {exc}",
              file=sys.stderr)
        return 2
    try:
        firewall.check()
    except firewall.Unavailable as exc:
        print(f"hub: refusing to start: no TCP between the hub's users needs the firewall: {exc}", file=sys.stderr)
        return 2
    reason = refuse_if_readable(settings.ROOT, layout) or tls_problem(layout)
    if reason:
        print(f"hub: refusing to start: {reason}", file=sys.stderr)
        return 2
    reason = lti_hub.refusal(settings.load().lti, people)     # login through the LMS (COURSE['lti']) that cannot work
    if reason:
        print(f"hub: refusing to start: LTI login: {reason}", file=sys.stderr)
        return 2
    try:
        setup(layout, args.students, people)
    except firewall.Unavailable as exc:
        firewall.remove(layout)
        print(f"hub: refusing to start: the firewall could not be set up: {exc}", file=sys.stderr)
        return 2
    try:
        proc = server.start(layout)
    except RuntimeError as exc:
        server.stop_leftovers(layout)
        firewall.remove(layout)
        print(f"hub: {exc}", file=sys.stderr)
        return 1
    try:
        released = setup_exchange(layout, [p.username for p in people if p.role == "student"],
                                  [p.username for p in people if p.role == "instructor"])
    except (RuntimeError, OSError) as exc:
        server.stop_process(proc)
        server.stop_leftovers(layout)
        firewall.remove(layout)
        print(f"hub: the exchange could not be set up: {exc}\n{server.log_tail(layout)}", file=sys.stderr)
        return 1
    print(f"hub: exchange {layout.exchange_url} (ngshare); released: {', '.join(released) or 'nothing new'}",
          flush=True)
    print(f"hub: JupyterHub at {layout.url} (pid {proc.pid}, log {layout.log}); logins in {layout.passwords} "
          f"(root only); formgrader: {layout.formgrader_url} for {layout.formgrade_group}; "
          "Ctrl-C or `python -m autograder hub --stop` stops it", flush=True)

    def stop(signum, frame):
        raise KeyboardInterrupt

    # Both, explicitly: a command started in the background of a script (`cmd &`, CI) inherits SIGINT ignored, and
    # Python then raises no KeyboardInterrupt for Ctrl-C: the hub would run on after its command was told to stop.
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop_process(proc)
        server.stop_leftovers(layout)
        firewall.remove(layout)
        homes.release_all(layout)
