"""A namespace's hub removed entirely (``remove``): its accounts' processes, its accounts with their homes, its
firewall chains, state, exchange and environment; never the course's own hub."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from autograder.hub import accounts, firewall, homes
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
    """The Unix accounts of a namespace's hub that exist (its prefixed users and its grading account)."""
    import pwd

    return sorted(e.pw_name for e in pwd.getpwall()
                  if e.pw_name.startswith(layout.user_prefix) or e.pw_name == layout.grader)


def remove(layout: Layout) -> list[str]:
    """Remove a namespace's hub (stopped) entirely: its accounts' processes, the accounts with their homes (the
    grading account's course copy and gradebook), its state, exchange and environment. Refuses the course's own
    hub. Returns what it removed."""
    import pwd
    import signal
    import time

    if layout.namespace is None or not layout.user_prefix:
        raise ValueError("only a namespace's hub is removed, never the course's own")
    try:
        pid = int(layout.pid_file.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        pass
    else:
        raise RuntimeError(f"the hub of {layout.namespace} runs (pid {pid}): stop it first")
    users = namespace_users(layout)
    uids = {pwd.getpwnam(u).pw_uid for u in users}
    deadline = time.monotonic() + 10
    while (pids := processes_of(uids)) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
    for user in users:
        homes.release(user)                      # a home image's mount first (autograder/hub/homes.py)
        subprocess.run(["userdel", "--remove", user], check=False, capture_output=True)
        if accounts.exists(user):
            raise RuntimeError(f"userdel {user} failed")
    removed = list(users)
    if firewall.installed(layout):
        firewall.remove(layout)
        removed.append(f"firewall chain {firewall.chain(layout)}")
    for path in (layout.state, layout.exchange, layout.env):
        if path.exists() or path.is_symlink():
            shutil.rmtree(path)
            removed.append(str(path))
    return removed
