"""Each hub user's home as a file system of its own: a disk image of ``home_mb`` (``course_config.py``'s ``hub``)
mounted on their home folder, so that what one user writes is bounded by their image, not by the machine's disk.

The images are sparse files in the hub's root-only state folder (``<state>/homes/<user>.img``, ext4, no blocks
reserved for root), loop-mounted ``nosuid,nodev`` on ``/home/<user>`` by the hub command (root) before the hub
starts, and unmounted when it stops (``release_all``: Ctrl-C or ``--stop``); what the home held before is copied
into the image the first time. A user past their size gets "No space left on device" in their own home, and nobody
else notices. Their other writable places are bounded too: ``/tmp``, ``/var/tmp`` and ``/dev/shm`` of their server
are tmpfs counted in their memory limit (``private.py``), and the exchange keeps at most ``max_submissions``
submissions of ``max_submission_mb`` per assignment. Quotas of the
file system that holds ``/home`` (ext4/XFS, ``setquota``) do the same where an administrator has them; the images
need nothing of the machine's file systems but loop devices.
"""
from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from autograder.hub.layout import Layout


def image(layout: Layout, user: str) -> Path:
    return layout.state / "homes" / f"{user}.img"


def mounted(path: Path) -> str | None:
    """The source of the file system mounted exactly on ``path`` (None: not a mount point)."""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[1] == str(path):
            return fields[0]
    return None


def ensure(layout: Layout, user: str, size_mb: int) -> Path:
    """``user``'s home mounted from their image of ``size_mb`` (made, and filled with the home's files, the first
    time); returns the image."""
    entry = pwd.getpwnam(user)
    home, img = Path(entry.pw_dir), image(layout, user)
    img.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if mounted(home):
        return img
    if not img.exists():
        with open(img, "wb") as fh:
            fh.truncate(int(size_mb) * 2**20)
        os.chmod(img, 0o600)
        subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", f"root_owner={entry.pw_uid}:{entry.pw_gid}",
                        str(img)], check=True, capture_output=True)
        with tempfile.TemporaryDirectory() as staging:
            subprocess.run(["mount", "-o", "loop,nosuid,nodev", str(img), staging], check=True, capture_output=True)
            try:
                shutil.rmtree(Path(staging) / "lost+found", ignore_errors=True)
                if home.is_dir():
                    subprocess.run(["cp", "-a", f"{home}/.", staging], check=True, capture_output=True)
            finally:
                subprocess.run(["umount", staging], check=True, capture_output=True)
    home.mkdir(mode=0o700, exist_ok=True)
    subprocess.run(["mount", "-o", "loop,nosuid,nodev", str(img), str(home)], check=True, capture_output=True)
    os.chown(home, entry.pw_uid, entry.pw_gid)
    os.chmod(home, 0o700)
    return img


def release(user: str) -> None:
    """Unmount ``user``'s home image, if it is mounted (before the account and its home are removed)."""
    try:
        home = Path(pwd.getpwnam(user).pw_dir)
    except KeyError:
        return
    if mounted(home):
        subprocess.run(["umount", "--lazy", str(home)], check=False, capture_output=True)


def loop_backing(source: str) -> Path | None:
    """The file behind a loop device (``/dev/loop3``), or None."""
    name = Path(source).name
    if not name.startswith("loop"):
        return None
    try:
        return Path((Path("/sys/block") / name / "loop" / "backing_file").read_text().strip())
    except OSError:
        return None


def mounted_images(layout: Layout) -> list[Path]:
    """Where this hub's home images are mounted now (each loop mount of an image in its state folder)."""
    images = (layout.state / "homes").resolve()
    found = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) > 2 and (backing := loop_backing(fields[0])) is not None and backing.parent == images:
            found.append(Path(fields[1].replace("\\040", " ")))
    return found


def release_all(layout: Layout) -> list[Path]:
    """Unmount every home image of this hub (when it stops: its users' processes are gone; a mount still in use is
    detached lazily and freed when its last user goes). Returns the homes it unmounted."""
    released = []
    for home in mounted_images(layout):
        if subprocess.run(["umount", str(home)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "--lazy", str(home)], check=False, capture_output=True)
        released.append(home)
    return released
