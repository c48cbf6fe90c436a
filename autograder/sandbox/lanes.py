"""Grading lanes: warm, sandboxed processes that fork one student process per submission (the grader's handles).

Importing keras costs seconds of CPU; paying it once per grading run instead of once per submission (or once per
lane) is what makes a class grade fast. The **nursery** (``nursery.py``) runs ``inside --nursery`` inside bubblewrap
(as root there with only the capabilities to switch user, kill, chown and make namespaces; nothing of the repository,
the gradebook or other submissions is mounted) and imports numpy/torch/keras once. Each grading **lane** is a fork
of it, its **fork server**: it enters new mount, pid, network, IPC and UTS namespaces, sees only its own folder at
``/scratch``, its own ``/dev/shm`` and a ``/proc`` of its own processes, takes ``CAP_SYS_ADMIN`` out of its
effective set and sets no-new-privileges, and then forks a child per submission. Each child gets its own session,
its own mount and IPC namespaces (its System V IPC and POSIX message queues end with it), a scratch folder that is a
tmpfs of its own (a total size and a number of files, ``COURSE["sandbox"]["scratch_mb"/"scratch_files"]``), a
session keyring of its own, the resource limits, and an unprivileged uid of its lane before any student code runs
(it raises the lane's one kept capability, ``CAP_SYS_ADMIN``, for the namespaces and loses every capability with
the uid). The uid's keyrings (user, user session, persistent), which outlive its processes, are emptied before every
fork. Before every fork the lane's fork server (pid 1 of its lane) kills every other process of the lane, so no two
submissions ever run side by side in one lane, and nothing a submission leaves behind survives into the next. Lanes
cannot see each other: own namespaces, own uid, own folder.

Where the nursery cannot make namespaces (a machine where grading does not run as root and nested namespaces are
refused), each lane falls back to a bubblewrap of its own and imports keras itself (``$AUTOGRADER_NURSERY=0``
forces that). How a warm process is started and found from this side: ``warm.py``.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.sandbox import bubblewrap, policy, warm
from autograder.sandbox.nursery import Nursery
from autograder.sandbox.nursery import shared as shared_nursery
from autograder.sandbox.policy import LANE_UIDS, Timeouts
from autograder.sandbox.warm import LaneError

# Root's lane-uid locks: a folder of root's under /run (root-owned, 0755 on every Linux), never /tmp, where any user
# could make the fixed name a folder of links first.
LOCKS = Path("/run/autograder/lane-uids")


def claim_uid() -> tuple[int, object]:
    """A lane uid no other running lane on this machine holds (a lock file per uid, held while the lane lives)."""
    import fcntl

    folder = _private_folder(LOCKS)
    for uid in LANE_UIDS:
        # Never through a link, never truncating: a lock file is only flocked.
        fd = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        handle = os.fdopen(fd, "r+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        return uid, handle
    raise LaneError("no free lane uid: too many grading lanes on this machine")


def _private_folder(folder: Path) -> Path:
    """``folder`` (and its parent) made if missing, and checked: a real folder of this user that nobody else may
    write. A link, another owner or a group/other-writable folder is refused (``LaneError``), never used."""
    for path in (folder.parent, folder):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        info = os.lstat(path)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
            raise LaneError(f"{path} is not a private folder of uid {os.geteuid()} (a link, another owner, or "
                            "writable by others): refusing to keep the lane locks there")
    return folder


class Lane:
    """One grading lane: its warm process (the fork server), its folder and its uid, seen from the grader.

    Args:
        sandboxed: run inside bubblewrap (False only in the explicitly allowed unsandboxed mode).
        index: the lane's number (names its folder; the uid of its student processes is claimed per machine).
        python: the interpreter.
        timeouts: ``imports`` (a lane on its own imports keras), ``lane_request`` (each request to its fork server);
            default: ``course_config.py``'s (``policy.Timeouts.from_course``).
        nursery: the nursery to fork the lane from (None: the lane starts on its own).
    """

    def __init__(self, sandboxed: bool = True, index: int = 0, python: str = sys.executable,
                 timeouts: Timeouts | None = None, nursery: Nursery | None = None):
        self.sandboxed = sandboxed
        self.index = index
        # root: a lane uid of its own; otherwise (sandboxed) the user namespace's root, uid 0 inside (bubblewrap.py)
        self.uid, self._uid_lock = claim_uid() if os.geteuid() == 0 else \
            (0 if sandboxed and bubblewrap.own_user_namespace() else None, None)
        self.python = python
        self.timeouts = timeouts or Timeouts.from_course()
        self.nursery = nursery
        self.root: Path | None = None
        self.proc: subprocess.Popen | None = None   # the lane's own bubblewrap (no nursery)
        self.root_pid: int | None = None            # this side's pid of the process the children descend from
        self.sock: socket.socket | None = None
        self.count = 0
        self.load_seconds = 0.0
        self.fallback = ""                          # why the nursery could not make this lane, if it could not

    # ------------------------------------------------------------------ life cycle
    def start(self, alone: bool = True) -> None:
        """Start the lane: forked from the nursery when there is one this process may use, else on its own
        (unless ``alone`` is False: then it stays unstarted)."""
        self._release()   # what is left of an earlier start (a lane whose fork server died)
        if self.nursery is not None and self.nursery.usable:
            try:
                self.sock, self.root, self.root_pid = self.nursery.new_lane(self.index)
                self.load_seconds = self.nursery.load_seconds
                self.sock.settimeout(self.timeouts.lane_request)
                return
            except LaneError as exc:
                self.fallback = str(exc)
        elif self.nursery is None:
            self.fallback = "no nursery ($AUTOGRADER_NURSERY=0)"
        if alone:
            self._start_alone()

    def _start_alone(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"autograder-lane{self.index}-"))
        os.chmod(self.root, 0o711)  # children may enter their own scratch below, not list the others
        self.proc, self.sock = warm.launch(self.root, "lane", self.sandboxed, self.python,
                                           policy.NAMESPACE_CAPABILITIES)
        self.sock.settimeout(self.timeouts.imports)
        try:
            ready = json.loads(self.sock.recv(1 << 16) or b"{}")
        except (TimeoutError, json.JSONDecodeError):
            ready = {}
        if not ready.get("ready"):
            log = (self.root / "lane.log").read_text(errors="replace")[-2000:]
            self.close()
            raise LaneError(f"the grading lane's warm process did not start:\n{log}")
        self.load_seconds = ready.get("seconds", 0.0)
        self.root_pid = self.proc.pid
        self.sock.settimeout(self.timeouts.lane_request)

    @property
    def isolation_gap(self) -> str:
        """Why submissions graded in this lane are not kept apart from each other as under root ('' when they are):
        a sandboxed lane of a non-root grader with no user namespace of its own (``bubblewrap.own_user_namespace``)
        runs each submission without its own mount and IPC namespaces and scratch tmpfs."""
        if self.sandboxed and self.uid is None:
            return ("the grading account gets no user namespace of its own here (inside a container's or a pod's): "
                    "no mount and IPC namespaces, scratch tmpfs or empty /dev/shm of each submission's own")
        return ""

    @property
    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        return self.sock is not None and self.root_pid is not None and warm.running(self.root_pid)

    def _release(self) -> None:
        """End the lane's processes and remove its folder (the uid stays claimed)."""
        forked = self.proc is None
        warm.end(self.proc, self.sock)
        self.proc = self.sock = None
        if forked and self.root_pid is not None:
            try:
                os.kill(self.root_pid, signal.SIGKILL)  # pid 1 of the lane: the whole lane ends with it
            except (ProcessLookupError, PermissionError):
                pass
        self.root_pid = None
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def close(self) -> None:
        self._release()
        if self._uid_lock is not None:
            self._uid_lock.close()
            self._uid_lock = None

    # ------------------------------------------------------------------ requests
    def _ask(self, header: dict, fds=()) -> dict:
        if not self.alive:
            raise LaneError("the grading lane's warm process is not running")
        try:
            socket.send_fds(self.sock, [json.dumps(header).encode()], list(fds))
            reply = self.sock.recv(1 << 16)
        except OSError as exc:
            raise LaneError(f"the grading lane's warm process stopped answering: {exc}") from None
        if not reply:
            raise LaneError("the grading lane's warm process ended")
        return json.loads(reply)

    def new_scratch(self) -> tuple[Path, str]:
        """A fresh scratch directory for the next child: (path here, path inside the sandbox)."""
        self.count += 1
        for old in self.root.glob("s*"):
            if old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
        path = self.root / f"s{self.count}"
        path.mkdir()
        if self.uid is not None and os.geteuid() == 0:
            os.chown(path, self.uid, self.uid)
        inside = f"/scratch/{path.name}" if self.sandboxed else str(path)
        return path, inside

    def fork(self, request_r: int, response_w: int, event_w: int, limits, log_fd: int) -> "Child":
        """Start a submission's process, serving the wire protocol on the pipe ends (events: ``inside.monitor.guard``),
        its output to ``log_fd`` (a file the caller opened and reads by that descriptor; nothing in scratch is read by
        path)."""
        path, inside = self.new_scratch()
        header = {"op": "fork", "scratch": inside, "uid": self.uid, "rlimits": limits.rlimits(),
                  "environment": policy.child_environment(inside), "namespaces": list(policy.CHILD_NAMESPACES),
                  "mounts": policy.child_mounts(inside, limits, self.uid, shared_uid=self.uid == 0)}
        reply = self._ask(header, (request_r, response_w, event_w, log_fd))
        if "pid" not in reply:
            raise LaneError(f"the grading lane could not start a submission's process: {reply.get('error')}")
        return Child(self, reply["pid"], path, inside if self.sandboxed and self.uid is not None else None)

    def status(self, pid: int):
        return self._ask({"op": "status", "pid": pid}).get("code")

    def reap(self) -> None:
        if self.alive:
            self._ask({"op": "reap"})


class Child:
    """A forked student process, with just the part of ``subprocess.Popen`` that ``process.StudentProcess`` uses.

    ``tmpfs``: where its scratch tmpfs is mounted in its own mount namespace (``policy.child_mounts``), None where it
    has none (a lane without namespaces: its scratch is a folder of the lane's)."""

    def __init__(self, lane: Lane, ns_pid: int, scratch: Path, tmpfs: str | None = None):
        self.lane, self.ns_pid, self.scratch, self.tmpfs = lane, ns_pid, scratch, tmpfs
        self.pid = warm.host_pid(lane.root_pid, ns_pid) if lane.sandboxed else ns_pid
        self.returncode = None

    def open_tmpfs(self) -> int | None:
        """A descriptor of its scratch tmpfs, seen from here through ``/proc/PID/root`` (``O_PATH``: nothing in it
        is opened or read, only the file system's usage, ``os.fstatvfs``), or None where it has none or it cannot be
        reached."""
        if self.tmpfs is None or self.pid is None:
            return None
        try:
            return os.open(f"/proc/{self.pid}/root{self.tmpfs}", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None

    def poll(self):
        if self.returncode is None and self.pid is not None and warm.running(self.pid):
            return None
        if self.returncode is None:
            try:
                self.returncode = self.lane.status(self.ns_pid)
            except LaneError:
                self.returncode = -signal.SIGKILL
        return self.returncode

    def wait(self, timeout: float = 10):
        deadline = time.monotonic() + timeout
        while self.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.returncode

    def kill(self):
        if self.pid is not None:
            for kill in (os.killpg, os.kill):
                try:
                    kill(self.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


_SHARED: dict = {}
def adopt(lane: Lane) -> None:
    """Make ``lane`` (started by the parent of this forked worker) this process's shared lane."""
    os.environ["AUTOGRADER_LANE"] = str(lane.index)
    _SHARED[(lane.sandboxed, lane.index)] = lane


def _lane_key(sandboxed: bool, index: int | None = None) -> tuple[bool, int]:
    """The key of this process's lane in ``_SHARED``: ``index``, else ``$AUTOGRADER_LANE`` (0 when unset)."""
    return sandboxed, int(os.environ.get("AUTOGRADER_LANE", "0")) if index is None else index


def has_lane(sandboxed: bool = True) -> bool:
    """Whether this process holds a warm lane already (adopted from a batch's parent, or started earlier)."""
    lane = _SHARED.get(_lane_key(sandboxed))
    return lane is not None and lane.alive


def shared(sandboxed: bool = True, index: int | None = None) -> Lane:
    """This process's warm lane (started on first use; closed when the process exits).

    The lane's number comes from ``index`` or ``$AUTOGRADER_LANE`` (parallel graders give each worker its own).
    """
    key = _lane_key(sandboxed, index)
    if key not in _SHARED:
        import atexit

        _SHARED[key] = Lane(sandboxed=sandboxed, index=key[1], nursery=shared_nursery(sandboxed))
        atexit.register(_SHARED[key].close)
    return _SHARED[key]
