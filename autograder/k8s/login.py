"""Who logs in to the cluster's hub, chosen on purpose: the class roster's people (``--roster``, the same file as the
one-machine hub's: ``autograder/hub/roster.py``), each with a password of their own, as on the one-machine hub.

Zero to JupyterHub's default authenticator (``dummy``) lets anyone in under any name with the chart's shared
password, or with none; the bundle never leaves it in place. ``from_roster`` makes (or keeps) every person's
password in ``passwords.csv`` next to the bundle (root's file, mode 0600: hand each person theirs), and the values
get only their salted hashes (``hub.config.RosterAuthenticator.password_hashes``, kept by the chart in its Secret
``hub``) and the allowed users; the authenticator is a few lines of ``hub.extraConfig`` (``EXTRA_CONFIG``), so the
chart's own hub image runs it unchanged.

The passwords are random (12 characters, 72 bits), not chosen by people: PBKDF2 with ``ITERATIONS`` rounds makes
them no easier to guess from the hashes than they are anyway, and keeps the command fast for a class of hundreds.

LTI 1.3 (the institution's LMS as the login, ``jupyterhub-ltiauthenticator``) is the other way this module is to
offer: a ``Login`` made from the platform's settings (its ``hub_config`` the authenticator's, its ``extra_config``
the username mapping from the roster's ids to LTI users) in place of ``from_roster``'s; ``values.values`` takes
whichever ``Login`` the cluster carries.
"""
from __future__ import annotations

import csv
import hashlib
import io
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from autograder.hub import roster as class_roster

ITERATIONS = 10_000
PASSWORDS = "passwords.csv"

# hub.extraConfig's Python: the chart runs it after hub.config is in ``c`` (the hashes are configuration by class
# name, read when the hub makes its authenticator)
EXTRA_CONFIG = '''# Written by `python -m autograder k8s` (autograder/k8s/login.py): the class roster's people, each
# with the password the course gave them (passwords.csv beside the bundle); hub.config holds their salted hashes.
import hashlib as _hashlib
import hmac as _hmac

from jupyterhub.auth import Authenticator as _Authenticator
from traitlets import Dict as _Dict


class RosterAuthenticator(_Authenticator):
    """The roster's people with their own passwords (PBKDF2-SHA256 hashes, ``pbkdf2_sha256$rounds$salt$hash``)."""

    password_hashes = _Dict(config=True, help="username -> the salted hash of their password")

    async def authenticate(self, handler, data):
        username = self.normalize_username((data or {}).get("username", ""))
        stored = self.password_hashes.get(username)
        if not stored:
            return None
        _, rounds, salt, digest = stored.split("$")
        given = _hashlib.pbkdf2_hmac("sha256", (data.get("password") or "").encode(), bytes.fromhex(salt),
                                     int(rounds))
        return username if _hmac.compare_digest(given.hex(), digest) else None


c.JupyterHub.authenticator_class = RosterAuthenticator  # noqa: F821
'''


@dataclass(frozen=True)
class Login:
    """What the hub's values say about logging in: ``hub.config``'s part and ``hub.extraConfig``'s code."""

    kind: str                  # "roster" (LTI 1.3: to come)
    hub_config: dict
    extra_config: str
    users: tuple[str, ...]     # who may log in
    instructors: tuple[str, ...]


def hashed(password: str, salt: bytes | None = None) -> str:
    """``pbkdf2_sha256$rounds$salt$hash`` of ``password`` (what ``RosterAuthenticator`` checks)."""
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, ITERATIONS)
    return f"pbkdf2_sha256${ITERATIONS}${salt.hex()}${digest.hex()}"


def _kept(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    return {row["username"]: row["password"] for row in csv.DictReader(io.StringIO(path.read_text("utf-8")))
            if row.get("username") and row.get("password")}


def from_roster(roster, passwords) -> Login:
    """The roster's people as the hub's users: a password each (kept from ``passwords`` where it has one, new
    otherwise; the file rewritten with exactly the roster's people, mode 0600), their hashes in the values, the
    roster's instructors in the formgrade group."""
    people = class_roster.read(Path(roster))
    if not people:
        raise class_roster.RosterError(f"{roster}: nobody in the roster")
    passwords = Path(passwords)
    known = _kept(passwords)
    chosen = {p.username: known.get(p.username) or secrets.token_urlsafe(9) for p in people}
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["username", "password", "role", "student_id", "name"])
    for p in people:
        writer.writerow([p.username, chosen[p.username], p.role, p.student_id, f"{p.last_name}{p.first_name}"])
    passwords.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(passwords, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
        fh.write(out.getvalue())
    os.chmod(passwords, 0o600)
    users = tuple(p.username for p in people)
    return Login("roster", {"Authenticator": {"allowed_users": list(users), "admin_users": []},
                            "RosterAuthenticator": {"password_hashes": {u: hashed(chosen[u]) for u in users}}},
                 EXTRA_CONFIG, users, tuple(p.username for p in people if p.role == "instructor"))
