"""Limits of each user's server on the hub: memory, CPU, processes, enforced by the kernel's control groups.

Like The Littlest JupyterHub (systemdspawner's ``mem_limit`` and ``cpu_limit``, which become the systemd unit's
``MemoryMax``, ``CPUQuota`` and ``TasksMax``), every user's JupyterLab runs in a control group of its own, and so
do the kernels, terminals and whatever else it starts: a child cannot leave the group (its ``cgroup.procs`` files
are root's). The kernel enforces the limits on the group as a whole:

* memory: ``memory_mb`` for all of a user's processes together, swap included. A student who allocates past it
  meets the kernel's OOM killer *inside their own group*: it ends the largest process there (the kernel that
  allocates; a JupyterLab server holds ~100 MB), never a process of another user;
* CPU: at most ``cpu_limit`` cores (CFS quota), and an equal share (``cpu_weight``) per user, not per process,
  when the machine is busy: a student with ten busy processes gets what a student with one gets;
* processes: at most ``max_processes`` tasks (threads count) in the group: a fork bomb stops there.

Both kernel interfaces are handled, detected from ``/proc/self/mountinfo``:

* cgroup v1 (this development machine; older distributions): one hierarchy per controller (``memory``, ``cpu``,
  ``pids``), the user's group ``<hub's own group>/<name>/<user>`` in each;
* cgroup v2 (a TLJH-like server with systemd): one unified hierarchy. The user's groups are made below the hub's own
  group, which systemd hands to the hub with ``Delegate=yes`` (``jupyterhub.service``, docs/instructors/hub.md); as
  v2 allows no processes in a group that has children with controllers, the hub's own processes move into
  ``<own>/hub`` first.

The groups are made by root (the hub) before a server starts; the server's process joins them between fork and
exec (``join``), before it drops to the user's uid, so that nothing of the user's ever runs outside them.
"""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CONTROLLERS = ("memory", "cpu", "pids")
CFS_PERIOD_US = 100_000


class Unavailable(RuntimeError):
    """The kernel's control groups cannot be used here (the reason says why)."""


@dataclass(frozen=True)
class UserLimits:
    """What one user's server (with its kernels and terminals) may use; None: no limit of that kind."""

    memory_mb: int | None = None
    cpu_limit: float | None = None          # cores (0.5: half of one core)
    cpu_weight: int = 100                   # relative share under contention (cgroup v2's scale: 1..10000)
    max_processes: int | None = None        # tasks (processes and threads)

    @classmethod
    def from_course(cls, hub=None) -> "UserLimits":
        """The limits of ``hub`` (a ``settings.Hub``; default: the course's, ``COURSE["hub"]``)."""
        from autograder import settings

        hub = hub or settings.load().hub
        return cls(memory_mb=hub.mem_limit_mb, cpu_limit=hub.cpu_limit, cpu_weight=hub.cpu_weight,
                   max_processes=hub.max_processes)

    def v1_files(self) -> dict[str, dict[str, str]]:
        """controller -> file -> value, in the order they must be written (cgroup v1)."""
        files: dict[str, dict[str, str]] = {c: {} for c in CONTROLLERS}
        if self.memory_mb:
            limit = str(self.memory_mb * 2**20)
            files["memory"]["memory.limit_in_bytes"] = limit
            files["memory"]["memory.memsw.limit_in_bytes"] = limit      # swap included, where swap accounting is on
        files["cpu"]["cpu.shares"] = str(max(2, round(1024 * self.cpu_weight / 100)))
        if self.cpu_limit:
            files["cpu"]["cpu.cfs_period_us"] = str(CFS_PERIOD_US)
            files["cpu"]["cpu.cfs_quota_us"] = str(max(1000, round(self.cpu_limit * CFS_PERIOD_US)))
        if self.max_processes:
            files["pids"]["pids.max"] = str(self.max_processes)
        return files

    def v2_files(self) -> dict[str, str]:
        """file -> value (cgroup v2)."""
        files = {"cpu.weight": str(self.cpu_weight)}
        if self.memory_mb:
            files["memory.max"] = str(self.memory_mb * 2**20)
            files["memory.swap.max"] = "0"
        if self.cpu_limit:
            files["cpu.max"] = f"{max(1000, round(self.cpu_limit * CFS_PERIOD_US))} {CFS_PERIOD_US}"
        if self.max_processes:
            files["pids.max"] = str(self.max_processes)
        return files


# ------------------------------------------------------------------------------------------------ finding the groups
def mounts(mountinfo: str) -> tuple[dict[str, Path], Path | None]:
    """The cgroup v1 hierarchies (controller -> mount point) and the cgroup v2 mount point in ``mountinfo``."""
    v1, v2 = {}, None
    for line in mountinfo.splitlines():
        before, _, after = line.partition(" - ")
        fields, extra = before.split(), after.split()
        if len(fields) < 5 or len(extra) < 3:
            continue
        point, fstype, options = Path(fields[4]), extra[0], extra[2].split(",")
        if fstype == "cgroup":
            for controller in CONTROLLERS:
                if controller in options:
                    v1.setdefault(controller, point)
        elif fstype == "cgroup2" and v2 is None:
            v2 = point
    return v1, v2


def own_groups(proc_cgroup: str) -> tuple[dict[str, str], str | None]:
    """This process's group per v1 controller, and its v2 group, from ``/proc/self/cgroup``."""
    v1, v2 = {}, None
    for line in proc_cgroup.splitlines():
        number, controllers, path = line.split(":", 2)
        if number == "0" and controllers == "":
            v2 = path
        for controller in controllers.split(","):
            if controller in CONTROLLERS:
                v1[controller] = path
    return v1, v2


def detect(name: str, proc: Path = Path("/proc/self")) -> "Groups":
    """The control groups that every user's server of the hub ``name`` gets, v1 or v2 as the kernel has them."""
    v1_mounts, v2_mount = mounts((proc / "mountinfo").read_text())
    v1_own, v2_own = own_groups((proc / "cgroup").read_text())
    if all(c in v1_mounts for c in CONTROLLERS):
        return GroupsV1({c: v1_mounts[c] / v1_own.get(c, "/").lstrip("/") / name for c in CONTROLLERS})
    if v2_mount is not None:
        available = set((v2_mount / "cgroup.controllers").read_text().split())
        if set(CONTROLLERS) <= available:
            own = (v2_own or "/").lstrip("/")
            return GroupsV2(v2_mount / own, name, at_root=not own)
        missing = sorted(set(CONTROLLERS) - available)
        raise Unavailable(f"cgroup v2 at {v2_mount} lacks the {', '.join(missing)} controller(s)"
                          + (f" (on cgroup v1 here: {', '.join(sorted(v1_mounts))})" if v1_mounts else ""))
    raise Unavailable("no cgroup file system with the memory, cpu and pids controllers is mounted")


def _write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def _pids(procs: Path) -> set[int]:
    try:
        return {int(p) for p in procs.read_text().split()}
    except FileNotFoundError:
        return set()


class Groups:
    """Every user's control group(s) below one parent group per controller (``<own group>/<name>``)."""

    def procs_files(self, user: str) -> list[Path]:
        raise NotImplementedError

    def make(self, user: str, limits: UserLimits) -> list[Path]:
        """Create (or update) ``user``'s group(s) with ``limits``; returns the ``cgroup.procs`` files to join."""
        raise NotImplementedError

    def users(self) -> list[str]:
        """The users who have a group here now."""
        parent = self.procs_files("x")[0].parent.parent
        return sorted(p.name for p in parent.iterdir() if p.is_dir()) if parent.is_dir() else []

    def processes(self, user: str) -> set[int]:
        found: set[int] = set()
        for procs in self.procs_files(user):
            found |= _pids(procs)
        return found

    def stop(self, user: str, timeout: float = 10) -> None:
        """End every process left in ``user``'s group (what a student started in the background outlives their
        server otherwise), then remove the group."""
        deadline = time.monotonic() + timeout
        sig = signal.SIGTERM
        while (left := self.processes(user)) and time.monotonic() < deadline:
            for pid in left:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
            if time.monotonic() > deadline - timeout / 2:
                sig = signal.SIGKILL
        for procs in self.procs_files(user):
            try:
                procs.parent.rmdir()
            except (FileNotFoundError, OSError):
                pass

    def oom_kills(self, user: str) -> int:
        """How many of ``user``'s processes the kernel's OOM killer ended in their group (since it was made)."""
        raise NotImplementedError


def join(procs_files: list[Path]) -> None:
    """Put the calling process into the groups (between fork and exec, as root, before dropping to the user)."""
    pid = str(os.getpid())
    for procs in procs_files:
        _write(procs, pid)


class GroupsV1(Groups):
    """cgroup v1: ``<memory mount>/<own>/<name>/<user>``, the same under ``cpu`` and ``pids``."""

    def __init__(self, parents: dict[str, Path]):
        self.parents = parents
        self.version = 1

    def procs_files(self, user: str) -> list[Path]:
        return [self.parents[c] / user / "cgroup.procs" for c in CONTROLLERS]

    def make(self, user: str, limits: UserLimits) -> list[Path]:
        for controller, files in limits.v1_files().items():
            group = self.parents[controller] / user
            group.mkdir(parents=True, exist_ok=True)
            for name, value in files.items():
                if name == "memory.memsw.limit_in_bytes" and not (group / name).exists():
                    continue                                 # no swap accounting in this kernel: no swap to limit
                if name == "memory.limit_in_bytes" and (group / "memory.memsw.limit_in_bytes").exists():
                    # memsw must stay >= the memory limit: lower it first when the new limit is smaller
                    current = int((group / name).read_text())
                    if int(value) < current:
                        _write(group / name, value)
                        _write(group / "memory.memsw.limit_in_bytes", value)
                        continue
                _write(group / name, value)
        return self.procs_files(user)

    def oom_kills(self, user: str) -> int:
        control = self.parents["memory"] / user / "memory.oom_control"
        for line in control.read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0

    def memory_peak_mb(self, user: str) -> float:
        return int((self.parents["memory"] / user / "memory.max_usage_in_bytes").read_text()) / 2**20


class GroupsV2(Groups):
    """cgroup v2: ``<own>/<name>/<user>``, with the hub's own processes moved into ``<own>/hub`` (a group with
    controllers enabled for its children may hold no process itself)."""

    def __init__(self, own: Path, name: str, at_root: bool = False):
        self.own, self.parent, self.at_root = own, own / name, at_root
        self.version = 2

    def procs_files(self, user: str) -> list[Path]:
        return [self.parent / user / "cgroup.procs"]

    def _delegate(self) -> None:
        enable = " ".join(f"+{c}" for c in CONTROLLERS)
        if not self.at_root and _pids(self.own / "cgroup.procs"):      # the root group may hold processes
            leaf = self.own / "hub"
            leaf.mkdir(exist_ok=True)
            for pid in _pids(self.own / "cgroup.procs"):
                try:
                    _write(leaf / "cgroup.procs", str(pid))
                except ProcessLookupError:
                    pass
        _write(self.own / "cgroup.subtree_control", enable)
        self.parent.mkdir(exist_ok=True)
        _write(self.parent / "cgroup.subtree_control", enable)

    def make(self, user: str, limits: UserLimits) -> list[Path]:
        self._delegate()
        group = self.parent / user
        group.mkdir(exist_ok=True)
        for name, value in limits.v2_files().items():
            if name == "memory.swap.max" and not (group / name).exists():
                continue
            _write(group / name, value)
        return self.procs_files(user)

    def oom_kills(self, user: str) -> int:
        for line in (self.parent / user / "memory.events").read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0

    def memory_peak_mb(self, user: str) -> float:
        peak = self.parent / user / "memory.peak"
        return int(peak.read_text()) / 2**20 if peak.exists() else float("nan")
