"""The warm processes of the sandbox (the nursery, a lane's fork server) seen from this side: how one is started in
bubblewrap and ended, and how its processes are found in this side's pid namespace.

``LaneError`` is what goes wrong with one: it did not start, stopped answering, or could not make what was asked.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path

from autograder.sandbox import policy
from autograder.sandbox.bubblewrap import Sandbox, copy_inside


class LaneError(RuntimeError):
    """A warm process of the sandbox did not start, stopped answering, or could not do what was asked."""


def launch(root: Path, mode: str, sandboxed: bool, python: str, extra_caps=()):
    """Start ``inside --<mode>`` (``lane`` or ``nursery``) in bubblewrap around ``root``: (process, socket)."""
    inside = copy_inside(root)
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    home = "/scratch" if sandboxed else str(root)
    env = policy.environment(home=home, tmp="/tmp" if sandboxed else home)
    command = [python, "-I", f"/scratch/{inside.name}" if sandboxed else str(inside), f"--{mode}", str(child.fileno())]
    if sandboxed:
        command.append("--contained")
        command = Sandbox(root, python).wrap(command, env, extra_caps=extra_caps)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    proc = subprocess.Popen(command, pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=open(root / f"{mode}.log", "ab"),
                            env=env, cwd=root, start_new_session=True)
    child.close()
    return proc, parent


def end(proc: subprocess.Popen | None, sock: socket.socket | None) -> None:
    """Close the control socket, kill a launched sandbox (its whole process group) and wait for it."""
    if sock is not None:
        sock.close()
    if proc is not None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()


def running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def host_pid(root_pid: int, ns_pid: int) -> int | None:
    """This side's pid of the process that has ``ns_pid`` inside the sandbox started as ``root_pid``."""
    return descendant(root_pid, lambda numbers: len(numbers) > 1 and numbers[-1] == ns_pid)


def descendant_with(root_pid: int, level: int, pid_there: int) -> int | None:
    """This side's pid of the descendant of ``root_pid`` whose pid in the namespace ``level`` deep is ``pid_there``."""
    return descendant(root_pid, lambda numbers: len(numbers) > level and numbers[level] == pid_there)


def descendant(root_pid: int, match) -> int | None:
    """The first of ``root_pid`` and its descendants whose ``NSpid`` list (its pid in each namespace) matches."""
    pending = [root_pid]
    while pending:
        pid = pending.pop()
        try:
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("NSpid:") and match([int(n) for n in line.split()[1:]]):
                        return pid
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as fh:
                    pending += [int(n) for n in fh.read().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return None
