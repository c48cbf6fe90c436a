"""Nothing root or the grading account runs uses a fixed path in a world-writable place (issue 20, R1).

A student who gets to a machine's ``/tmp`` before root grades anything there can make any fixed name in it a
folder of their own, full of symbolic links. ``lanes.claim_uid`` (root's lane-uid locks) kept its lock files at
``$TMPDIR/autograder-lane-uids/<uid>`` and opened them with ``open(path, "w")``: through a planted link, root emptied
the link's target. The attack is made from a student's own Unix account (never as root); the grading that follows
runs as root, as ``python -m autograder grade`` does.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder import settings
from autograder.sandbox.policy import LANE_UIDS

ATTACKER = "agtest-r1"


@pytest.fixture()
def attacker():
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("needs root and useradd: the attack is made from a student's own Unix account")
    subprocess.run(["userdel", "--remove", ATTACKER], capture_output=True)
    subprocess.run(["useradd", "--create-home", "--user-group", "--shell", "/bin/bash", ATTACKER], check=True)
    yield ATTACKER
    subprocess.run(["userdel", "--remove", ATTACKER], capture_output=True)


def as_user(user: str, command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["su", "-s", "/bin/bash", user, "-c", command], capture_output=True, text=True)


def test_planted_lane_lock_links_never_followed_by_root(attacker, tmp_path):
    """R1: the student fills ``<tmp>/autograder-lane-uids`` with links to a file of root's; root's lanes claim a
    uid; the file keeps its content (and no lock is ever opened through a link)."""
    shared_tmp = Path(tempfile.mkdtemp(prefix="agtest-tmp-"))      # a /tmp of its own: 1777, like /tmp
    os.chmod(shared_tmp, 0o1777)
    target = tmp_path / "precious.txt"
    target.write_text("root's data\n")
    os.chmod(tmp_path, 0o755)
    try:
        plant = (f"mkdir -m777 {shared_tmp}/autograder-lane-uids && cd {shared_tmp}/autograder-lane-uids && "
                 f"for u in $(seq {LANE_UIDS.start} {LANE_UIDS.stop - 1}); do ln -s {target} $u; done")
        planted = as_user(attacker, plant)
        assert planted.returncode == 0, planted.stderr
        claim = ("from autograder.sandbox import lanes\n"
                 "uid, lock = lanes.claim_uid()\n"
                 "print(uid)\n")
        env = {**os.environ, "TMPDIR": str(shared_tmp)}
        result = subprocess.run([sys.executable, "-c", claim], cwd=settings.ROOT, env=env, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert int(result.stdout) in LANE_UIDS
        assert target.read_text() == "root's data\n", "root's lane lock was opened through the student's link"
    finally:
        shutil.rmtree(shared_tmp, ignore_errors=True)


def test_lane_lock_folder_refused_when_not_private(tmp_path, monkeypatch):
    """A lock folder that another user could have made (a link, wrong owner, group/other-writable) is refused
    with a reason instead of used."""
    if os.geteuid() != 0:
        pytest.skip("lane uids are claimed only by root")
    from autograder.sandbox import lanes

    hostile = tmp_path / "locks"
    hostile.mkdir()
    os.chmod(hostile, 0o777)
    monkeypatch.setattr(lanes, "LOCKS", hostile)
    with pytest.raises(lanes.LaneError, match="private"):
        lanes.claim_uid()
    os.chmod(hostile, 0o700)
    linked = tmp_path / "linked"
    linked.symlink_to(hostile)
    monkeypatch.setattr(lanes, "LOCKS", linked)
    with pytest.raises(lanes.LaneError, match="private"):
        lanes.claim_uid()


GRADER = "agtest-r2g"


@pytest.fixture()
def grading_account(attacker):
    subprocess.run(["userdel", "--remove", GRADER], capture_output=True)
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/bash", GRADER], check=True)
    yield GRADER
    subprocess.run(["userdel", GRADER], capture_output=True)


def test_planted_keras_settings_in_tmp_never_read_by_the_grading_account(attacker, grading_account):
    """Keras falls back to the fixed ``/tmp/.keras`` where the home folder is not writable (a system account).
    The student plants ``/tmp/.keras/keras.json`` (epsilon 0.5, float64: every Keras reference of the graders would
    change); the grading account, home ``/nonexistent``, imports autograder and keras: Keras keeps its defaults."""
    planted = Path("/tmp/.keras")
    if planted.exists() or planted.is_symlink():
        pytest.skip("/tmp/.keras exists already on this machine (made by someone else): not touched")
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    python = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if not python.exists() or not os.access(settings.ROOT, os.R_OK | os.X_OK):
        pytest.skip(f"{python} is missing")
    if any(not p.stat().st_mode & 0o001 for p in (settings.ROOT, *settings.ROOT.parents)):
        pytest.skip(f"{settings.ROOT} is closed to other users (the grading account could not import it)")
    try:
        planted_ok = as_user(attacker, "mkdir -m 755 /tmp/.keras && echo '{\"epsilon\": 0.5, \"floatx\": "
                                       "\"float64\", \"backend\": \"torch\"}' > /tmp/.keras/keras.json")
        assert planted_ok.returncode == 0, planted_ok.stderr
        probe = ("import autograder.grade, keras; print(keras.config.epsilon(), keras.config.floatx())")
        result = subprocess.run(["runuser", "-u", grading_account, "--", "env", "HOME=/nonexistent",
                                 f"PYTHONPATH={site}:{settings.ROOT}", "KERAS_BACKEND=torch", str(python), "-c",
                                 probe], capture_output=True, text=True, timeout=120, cwd="/")
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout.split() == ["1e-07", "float32"], f"Keras read the student's settings: {result.stdout}"
    finally:
        shutil.rmtree(planted, ignore_errors=True)
