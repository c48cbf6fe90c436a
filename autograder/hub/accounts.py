"""Unix accounts of the hub: the grading account, the instructors and the students (idempotent, as root).

Instructors and students log in to JupyterHub with a password (PAM), and nowhere else (no login shell); the
passwords are generated once and kept, with mode
0600 in the hub's root-only state folder, in ``passwords.txt`` (``user password`` per line). The grading account
has none: nobody logs in as it; the hub starts the formgrader service under it.
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


def ensure_user(user: str) -> pwd.struct_passwd:
    """A Unix user with a private home (0700), a group of its own and no login shell."""
    if not exists(user):
        subprocess.run(["useradd", "--create-home", "--user-group", "--shell", NO_LOGIN, user], check=True)
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
    """Each user exists and has the password written for it in ``path`` (a new one where none is written)."""
    known = read_passwords(path)
    for user in users:
        ensure_user(user)
        known.setdefault(user, secrets.token_urlsafe(12))
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.writelines(f"{user} {known[user]}\n" for user in sorted(known))
    os.chmod(path, 0o600)
    subprocess.run(["chpasswd"], input="".join(f"{u}:{known[u]}\n" for u in users), text=True, check=True)
    return {user: known[user] for user in users}
