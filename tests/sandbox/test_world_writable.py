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
