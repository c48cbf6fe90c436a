"""Unix accounts of the hub: the grading account, the instructors and the students (idempotent, as root).

Instructors and students log in to JupyterHub with a password (PAM), and nowhere else (no login shell); the
passwords are generated once and kept, with mode
0600 in the hub's root-only state folder, in ``passwords.txt`` (``user password`` per line). The grading account
has none: nobody logs in as it; the hub starts the formgrader service under it.

Every account the hub makes is written down (``made``: ``accounts-made.txt`` in the state folder): the roster may
name only those besides new names (``roster.check``), and ``python -m autograder hub --remove`` removes only them.
"""
from __future__ import annotations

import os
import pwd
import secrets
import subprocess
from pathlib import Path


def exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
        return True
    except KeyError:
        return False


# No login shell: the hub's users reach the machine only through JupyterHub (their server in its control groups
# and namespace; its terminals start bash themselves), never through sshd, su or a console, which would start
# their processes outside every limit.
NO_LOGIN = "/usr/sbin/nologin"


MADE = "accounts-made.txt"


def made(state: Path) -> set[str]:
    """The accounts the hub of this state folder made (``record``). A state folder of an earlier version has no
    such list: the accounts of its ``passwords.txt`` whose uid is a person's (not the system's) count as made."""
    path = state / MADE
    if path.exists():
        return {line.strip() for line in path.read_text().splitlines() if line.strip()}
    from autograder.hub.roster import uid_range

    low, high = uid_range()
    return {u for u in read_passwords(state / "passwords.txt") if exists(u) and low <= pwd.getpwnam(u).pw_uid <= high}


def record(state: Path, user: str) -> None:
    """Write ``user`` down as made by this hub (root only, like the state folder)."""
    names = made(state) | {user}
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(state / MADE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.writelines(f"{name}\n" for name in sorted(names))


def ensure_user(user: str, state: Path | None = None) -> pwd.struct_passwd:
    """A Unix user with a private home (0700), a group of its own and no login shell; one it makes is written down
    in ``state`` (``record``)."""
    if not exists(user):
        subprocess.run(["useradd", "--create-home", "--user-group", "--shell", NO_LOGIN, user], check=True)
        if state is not None:
            record(state, user)
    elif pwd.getpwnam(user).pw_shell != NO_LOGIN:
        subprocess.run(["usermod", "--shell", NO_LOGIN, user], check=True)
    entry = pwd.getpwnam(user)
    home = Path(entry.pw_dir)
    home.mkdir(mode=0o700, exist_ok=True)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    os.chmod(home, 0o700)
    return entry


def uid(user: str) -> int:
    return pwd.getpwnam(user).pw_uid


def read_passwords(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    pairs = (line.split(" ", 1) for line in path.read_text().splitlines() if " " in line)
    return {user: password for user, password in pairs}


def ensure_logins(users: list[str], path: Path) -> dict[str, str]:
    """Each user exists and has the password written for it in ``path`` (a new one where none is written); the
    accounts made are written down next to it (``record``)."""
    known = read_passwords(path)
    for user in users:
        ensure_user(user, path.parent)
        known.setdefault(user, secrets.token_urlsafe(12))
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.writelines(f"{user} {known[user]}\n" for user in sorted(known))
    os.chmod(path, 0o600)
    subprocess.run(["chpasswd"], input="".join(f"{u}:{known[u]}\n" for u in users), text=True, check=True)
    return {user: known[user] for user in users}
