"""The sandbox around every process that runs student code: bubblewrap (Debian's ``bubblewrap``).

The student's process sees a minimal read-only file system: the system's libraries, the Python installation and
the course's virtual environment, nothing else. The repository (``autograder/``, the hidden graders and the
stored references), the gradebook, the exchange and every other submission are simply not there. It gets a
private writable scratch directory, a private ``/tmp``, no network (its own empty network namespace), its own pid,
IPC and UTS namespaces. What it gets is declared in ``policy.py`` (``SANDBOX_NAMESPACES``, ``SYSTEM_DIRS``, the
capabilities a fork server keeps). bubblewrap starts the warm processes (``lanes.py``): their fork servers run as
root inside with only those capabilities, and each student process they fork drops to an unprivileged uid of its
lane and gets the resource limits (``policy.Limits``) before any student code runs.

Where bubblewrap cannot run (not installed, no user namespaces), ``sandboxed()`` raises ``SandboxUnavailable`` with a
clear message; grading proceeds unsandboxed only when the instructor allows it explicitly
(``COURSE["sandbox"]["allow_unsandboxed"]`` or ``AUTOGRADER_ALLOW_UNSANDBOXED=1``), and every result then says so.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

from autograder.sandbox.policy import FORK_SERVER_CAPABILITIES, HOSTNAME, SANDBOX_NAMESPACES, SYSTEM_DIRS

INSIDE = Path(__file__).with_name("inside")   # the package that runs inside the sandbox, copied there whole


def copy_inside(folder: Path) -> Path:
    """Copy the ``inside`` package into ``folder`` (its sources only); returns the copy, which ``python -I COPY``
    starts. Whatever an earlier process left under that name (a link, a file, a folder) is removed first, without
    following links, and every file is created anew (``O_EXCL | O_NOFOLLOW``)."""
    target = Path(folder) / INSIDE.name
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        shutil.rmtree(target)
    os.mkdir(target, 0o755)
    where = os.open(target, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for source in sorted(INSIDE.glob("*.py")):
            fd = os.open(source.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=where)
            with open(fd, "wb") as fh:
                fh.write(source.read_bytes())
    finally:
        os.close(where)
    return target


class SandboxUnavailable(RuntimeError):
    """bubblewrap cannot run here; the message says why and what to do."""


@cache
def probe(bwrap: str = "bwrap") -> str:
    """'' when bubblewrap works on this machine, else the reason it does not."""
    exe = shutil.which(bwrap)
    if exe is None:
        return "bubblewrap (bwrap) is not installed: run `apt-get install bubblewrap` (scripts/setup.sh does)"
    try:
        proc = subprocess.run([exe, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "true"],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap failed to start: {exc}"
    if proc.returncode != 0:
        return f"bubblewrap cannot create namespaces here (user namespaces disabled?): {proc.stderr.strip()}"
    return ""


def sandboxed() -> bool:
    """True when student code runs in bubblewrap; False only when unsandboxed grading is allowed explicitly.

    Raises ``SandboxUnavailable`` (with the reason) when bubblewrap cannot run and nothing allows that.
    """
    from autograder.sandbox.policy import Limits

    reason = probe()
    if not reason:
        return True
    if Limits.from_course().allow_unsandboxed:
        return False
    raise SandboxUnavailable(f"{reason}. Grading refuses to run student code without the sandbox; "
                             "set AUTOGRADER_ALLOW_UNSANDBOXED=1 to allow it explicitly (logged on every result).")


def python_roots(python: str = sys.executable) -> list[Path]:
    """Directories the interpreter needs: its installation and the virtual environment (read-only)."""
    roots = {Path(p) for p in prefixes(python)}
    exe = Path(python)
    roots.add(exe.parent.parent)                       # the venv (python is <venv>/bin/python)
    roots.add(exe.resolve().parent.parent)             # the installation the venv's python links to
    return sorted(roots)


def prefixes(python: str) -> list[str]:
    """``sys.base_prefix`` and ``sys.prefix`` of ``python -I`` (what runs in the sandbox).

    For this very interpreter they are this process's own (``-I`` changes them only through ``$PYTHONHOME``, which
    it ignores): asking a new interpreter for them took 0.02-0.04 s before the nursery could start."""
    if python == sys.executable and "PYTHONHOME" not in os.environ:
        return [sys.base_prefix, sys.prefix]
    return subprocess.run([python, "-I", "-c", "import sys; print(sys.base_prefix); print(sys.prefix)"],
                          capture_output=True, text=True, check=True).stdout.split()


@cache
def own_user_namespace() -> bool:
    """Whether this (non-root) grader gives its sandbox a user namespace of its own, whose root still makes each
    submission's mount and IPC namespaces inside it (``Sandbox.wrap``): only in the machine's initial user namespace.
    Inside another one (a container's, a Kubernetes pod's with ``hostUsers: false``: ``/proc/self/uid_map`` is not the
    identity map) the fork server's second level fails and every submission would score 0; the sandbox then runs as
    the grading account without per-submission namespaces."""
    if os.geteuid() == 0 or shutil.which("bwrap") is None:
        return False
    try:
        with open("/proc/self/uid_map", encoding="ascii") as fh:
            return fh.read().split() == ["0", "0", "4294967295"]
    except OSError:
        return False


class Sandbox:
    """Builds the bubblewrap command line around a warm process (the nursery, or a lane on its own).

    Args:
        scratch: the private writable directory (mounted at ``/scratch``, the working directory).
        python: the interpreter that will run inside (its installation and venv are mounted read-only).
    """

    def __init__(self, scratch: Path, python: str = sys.executable):
        self.scratch = Path(scratch)
        self.python = python

    def _mkdirs(self, path: Path, made: set) -> list[str]:
        """Parents of a mount point, created world-readable (bubblewrap would copy 0700 from e.g. /root)."""
        args = []
        for parent in reversed(path.parents[:-1]):
            if str(parent) not in made and not any(str(parent).startswith(d) for d in SYSTEM_DIRS):
                made.add(str(parent))
                args += ["--perms", "0755", "--dir", str(parent)]
        return args

    def wrap(self, command: list[str], env: dict, extra_caps=()) -> list[str]:
        """``command`` as it runs inside the sandbox with exactly ``env`` as its environment.

        When the grader is root the command (a fork server, which drops to a lane uid itself in each child before
        student code runs) stays root inside, keeping only the capabilities to switch user, kill and chown, plus
        ``extra_caps`` (the nursery's ``CAP_SYS_ADMIN``, which each lane gives up once it has made its namespaces).
        """
        args = ["bwrap", "--die-with-parent", "--new-session", *[f"--unshare-{n}" for n in SANDBOX_NAMESPACES],
                "--hostname", HOSTNAME, "--clearenv", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        made: set = set()
        for path in SYSTEM_DIRS:
            if os.path.exists(path):
                args += ["--ro-bind", path, path]
        for root in python_roots(self.python):
            args += self._mkdirs(root, made) + ["--ro-bind", str(root), str(root)]
        args += ["--bind", str(self.scratch), "/scratch", "--chdir", "/scratch"]
        for key, value in env.items():
            args += ["--setenv", key, value]
        caps = (*FORK_SERVER_CAPABILITIES, *extra_caps)
        if own_user_namespace():
            # Not root (the hub's grading account): a user namespace of its own, whose root is this account and holds
            # the same capabilities inside it alone, so that the fork server still gives each submission namespaces,
            # a scratch tmpfs and read-only mounts (``policy.child_mounts(..., shared_uid=True)``); the submission's
            # process then drops every capability (there is no other uid in the namespace to switch to).
            args += ["--unshare-user", "--uid", "0", "--gid", "0"]
        return args + ["--cap-drop", "ALL"] + [a for cap in caps for a in ("--cap-add", cap)] + command
