"""A hub removed entirely (``python -m autograder hub --remove``, and the tests' namespaces): everything the hub
command made, and nothing else.

``plan`` lists it, ``remove`` does it, in this order:

* the processes of the hub's accounts (their servers, kernels, what they left running), and what the hub ran as
  root that outlived it (the exchange service, the idle culler, the proxy);
* the home images' mounts (``homes.py``): each loop mount of an image in the hub's state folder;
* the hub's control groups (``autograder-<course id>`` and every group below it, in each controller);
* its firewall chains (``firewall.py``);
* the accounts the hub made (``accounts.made``: never one of the system's, never one the hub did not make) with their
  homes, and the grading account with its home (the course copy, its gradebook and every grade in it: export the
  grades first, ``python -m autograder report`` as the grading account);
* its folders: the state folder (the hub's database, passwords, logs, the exchange's database and files, the home
  images), the students' environment, and a namespace's own exchange folder.

A running hub is not removed (``--remove`` stops it first). A namespace's hub (the tests') also loses every account
named with its prefix, whatever its state folder says.
"""
from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from autograder.hub import accounts, firewall, homes, limits
from autograder.hub.layout import Layout


def processes_of(uids: set[int]) -> list[int]:
    """Processes whose real uid is one of ``uids``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid in uids:
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def namespace_users(layout: Layout) -> list[str]:
    """The Unix accounts of a namespace's hub that exist (its prefixed users and its grading account); none for the
    course's own hub, whose accounts have no prefix."""
    if not layout.user_prefix:
        return []
    return sorted(e.pw_name for e in pwd.getpwall()
                  if e.pw_name.startswith(layout.user_prefix) or e.pw_name == layout.grader)


def services_of(layout: Layout) -> list[int]:
    """Processes the hub ran as a service that outlived it and that ``server.leftovers`` does not name (the idle
    culler: its command line names no hub; its environment names this hub's API port)."""
    found, api = [], f":{layout.hub_port}/hub/api".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if b"JUPYTERHUB_SERVICE_NAME=" in environ and api in environ:
                found.append(int(entry.name))
    return found


def group_folders(layout: Layout) -> list[Path]:
    """The hub's own control group in each controller (its users' and its exchange's groups below it)."""
    from autograder.hub.server import cgroup_name

    try:
        groups = limits.detect(cgroup_name(layout))
    except (limits.Unavailable, OSError):
        return []
    parents = list(groups.parents.values()) if hasattr(groups, "parents") else [groups.parent]
    return [p for p in parents if p.is_dir()]


@dataclass
class Plan:
    accounts: list[str] = field(default_factory=list)
    mounts: list[Path] = field(default_factory=list)
    groups: list[Path] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)

    def lines(self) -> list[str]:
        return ([f"account {a}" for a in self.accounts] + [f"mount {m}" for m in self.mounts]
                + [f"control group {g}" for g in self.groups] + [f"folder {f}" for f in self.folders])


def plan(layout: Layout) -> Plan:
    """What ``remove`` removes of this hub (only what exists)."""
    from autograder.hub.roster import uid_range

    low, high = uid_range()
    made = accounts.made(layout.state) | ({layout.grader} if accounts.exists(layout.grader) else set())
    users = sorted(u for u in made | set(namespace_users(layout))
                   if accounts.exists(u) and low <= pwd.getpwnam(u).pw_uid <= high)
    folders = [layout.state, layout.env] + ([layout.exchange] if layout.namespace else [])
    return Plan(accounts=users, mounts=homes.mounted_images(layout), groups=group_folders(layout),
                folders=[f for f in folders if f.exists() or f.is_symlink()])


def remove(layout: Layout) -> list[str]:
    """Remove the hub of ``layout`` (stopped) entirely (``plan``). Returns what it removed, one line each."""
    from autograder.hub import server

    try:
        pid = int(layout.pid_file.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        pass
    else:
        raise RuntimeError(f"the hub of {layout.course_id} runs (pid {pid}): stop it first")
    todo = plan(layout)
    uids = {pwd.getpwnam(u).pw_uid for u in todo.accounts}
    server.stop_leftovers(layout)
    deadline = time.monotonic() + 10
    while (pids := processes_of(uids) + services_of(layout)) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
    homes.release_all(layout)
    for user in todo.accounts:
        homes.release(user)                      # a home image's mount, wherever its image is
    for parent in todo.groups:
        for child in sorted((p for p in parent.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            try:
                child.rmdir()
            except OSError:
                pass
        try:
            parent.rmdir()
        except OSError:
            pass
    for user in todo.accounts:
        subprocess.run(["userdel", "--remove", user], check=False, capture_output=True)
        if accounts.exists(user):
            raise RuntimeError(f"userdel {user} failed")
    removed = todo.lines()
    if firewall.installed(layout):
        firewall.remove(layout)
        removed.append(f"firewall chain {firewall.chain(layout)}")
    for path in todo.folders:
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.exists():
            shutil.rmtree(path)
    return removed
