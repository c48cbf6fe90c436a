"""Each user's server in a mount namespace of its own: its own ``/tmp`` and ``/dev/shm``, and a ``/proc`` that shows
no other user's processes.

The hub (root) makes it between fork and exec, after the server's process joined the user's control groups and before
it drops to the user's uid (``spawner.LimitedSpawner``), so that every process of the server (JupyterLab, kernels,
terminals, what they start) lives in it:

* ``/tmp``, ``/var/tmp`` and ``/dev/shm``: a tmpfs each, of ``size_mb`` (the user's memory limit). A tmpfs's pages
  are charged to the memory control group of the process that writes them: what a student keeps there counts
  against their own memory limit (and never the machine's disk). Nobody else sees the files, and they end with
  the namespace: when the server stops (or the culler stops it), the hub ends every process of the user's group,
  the last reference to the namespace goes, and the kernel frees the file systems;
* ``/run/lock`` (``/var/lock``), the other folder every user may write on Debian: a small tmpfs (4 MiB);
* ``/proc``: a proc of its own with ``hidepid=invisible`` (per mount since Linux 5.8): the user's processes see
  their own processes only, not other students', the instructors' or root's (their command lines, environments,
  open files). What stays visible: the machine's totals (``/proc/meminfo``, ``/proc/loadavg``), and in
  ``/proc/net`` the sockets of the machine's one network namespace, with their owners' uids (the users' servers
  listen on TCP 127.0.0.1 behind the hub's authentication; kernels use IPC sockets in the user's own runtime folder
  and appear in no socket table).

Every other mount is the machine's, made private in the namespace (nothing mounted here propagates out).
"""
from __future__ import annotations

import os

from autograder.sandbox.inside import linux

PROC_PER_MOUNT = (5, 8)         # since Linux 5.8 each proc mount has its own options; before, hidepid was global


def kernel_version(release: str | None = None) -> tuple[int, int]:
    major, minor, *_ = ((release or os.uname().release).split("-")[0] + ".0").split(".")
    return int(major), int(minor)


def mounts(size_mb: int) -> list[dict]:
    """What the user's server's namespace mounts over the machine's (``linux.mount_all``'s form)."""
    tmpfs = f"size={int(size_mb)}m,mode=1777"
    found = [{"type": "tmpfs", "target": "/tmp", "flags": ["nosuid", "nodev"], "options": tmpfs},
             {"type": "tmpfs", "target": "/var/tmp", "flags": ["nosuid", "nodev"], "options": tmpfs,
              "if_exists": True},
             {"type": "tmpfs", "target": "/dev/shm", "flags": ["nosuid", "nodev"], "options": tmpfs,
              "if_exists": True},
             {"type": "tmpfs", "target": "/run/lock", "flags": ["nosuid", "nodev", "noexec"],
              "options": "size=4m,mode=1777", "if_exists": True}]
    if kernel_version() >= PROC_PER_MOUNT:
        found.append({"type": "proc", "target": "/proc", "flags": ["nosuid", "nodev", "noexec"],
                      "options": "hidepid=invisible"})
    return found


def enter(planned: list[dict]) -> None:
    """A new mount namespace for the calling process (root, between fork and exec) with ``planned`` mounted."""
    linux.unshare(["mount"])
    linux.mount_all(planned)
