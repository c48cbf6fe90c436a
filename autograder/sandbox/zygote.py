"""A warm, sandboxed process that forks one student process per submission (the trusted side's handle).

Importing keras costs seconds of CPU; paying it once per grading lane instead of once per submission is what
makes a class grade fast. The zygote runs ``worker.py --zygote`` inside bubblewrap (as root there with only the
capabilities to switch user, kill and chown; nothing of the repository, the gradebook or other submissions is
mounted), imports numpy/torch/keras once, and forks a child per submission. Each child gets its own session,
a fresh scratch directory, the resource limits, and an unprivileged uid of its lane before any student code
runs. Before every fork the zygote kills every other process of its sandbox, so no two submissions ever run
side by side in one lane, and nothing a submission leaves behind survives into the next. Lanes are separate
sandboxes (own pid, network and IPC namespaces, own uid), so parallel lanes cannot see each other either.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.sandbox.bubblewrap import Sandbox

WORKER = Path(__file__).with_name("worker.py")
LANE_UIDS = range(61000, 62000)  # each running lane on this machine has one of these to itself (grading as root)
LOCKS = Path(tempfile.gettempdir()) / "autograder-lane-uids"


def claim_uid() -> tuple[int, object]:
    """A lane uid no other running lane on this machine holds (a lock file per uid, held while the lane lives)."""
    import fcntl

    LOCKS.mkdir(mode=0o700, exist_ok=True)
    for uid in LANE_UIDS:
        handle = open(LOCKS / str(uid), "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        return uid, handle
    raise ZygoteError("no free lane uid: too many grading lanes on this machine")


class ZygoteError(RuntimeError):
    pass


class Zygote:
    """One grading lane's warm process.

    Args:
        sandboxed: run inside bubblewrap (False only in the explicitly allowed unsandboxed mode).
        lane: the lane number (names its folder; the uid of its student processes is claimed per machine).
        python: the interpreter.
    """

    def __init__(self, sandboxed: bool = True, lane: int = 0, python: str = sys.executable,
                 startup_timeout: float = 180):
        self.sandboxed = sandboxed
        self.lane = lane
        self.uid, self._uid_lock = claim_uid() if os.geteuid() == 0 else (None, None)
        self.python = python
        self.startup_timeout = startup_timeout
        self.root = Path(tempfile.mkdtemp(prefix=f"autograder-lane{lane}-"))
        os.chmod(self.root, 0o711)  # children may enter their own scratch below, not list the others
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.count = 0
        self.load_seconds = 0.0

    # ------------------------------------------------------------------ life cycle
    def start(self) -> None:
        shutil.copyfile(WORKER, self.root / "worker.py")
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {"PATH": "/usr/bin:/bin", "KERAS_BACKEND": "torch", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1", "LANG": "C.UTF-8", "HOME": "/scratch" if self.sandboxed else str(self.root),
               "TMPDIR": "/tmp" if self.sandboxed else str(self.root), "PYTHONDONTWRITEBYTECODE": "1"}
        for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
            if key in os.environ:
                env[key] = os.environ[key]
        worker = "/scratch/worker.py" if self.sandboxed else str(self.root / "worker.py")
        command = [self.python, "-I", worker, "--zygote", str(child.fileno())]
        if self.sandboxed:
            command.append("--contained")
            sandbox = Sandbox(self.root, self.python)
            command = sandbox.wrap(command, env, keep_root=True)
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        self.proc = subprocess.Popen(command, pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=open(self.root / "zygote.log", "ab"),
                                     env=env, cwd=self.root, start_new_session=True)
        child.close()
        self.sock = parent
        self.sock.settimeout(self.startup_timeout)
        try:
            ready = json.loads(self.sock.recv(1 << 16) or b"{}")
        except (TimeoutError, json.JSONDecodeError):
            ready = {}
        if not ready.get("ready"):
            log = (self.root / "zygote.log").read_text(errors="replace")[-2000:]
            self.close()
            raise ZygoteError(f"the grading lane's warm process did not start:\n{log}")
        self.load_seconds = ready.get("seconds", 0.0)
        self.sock.settimeout(30)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
            self.proc = None
        shutil.rmtree(self.root, ignore_errors=True)
        if self._uid_lock is not None:
            self._uid_lock.close()
            self._uid_lock = None

    # ------------------------------------------------------------------ requests
    def _ask(self, header: dict, fds=()) -> dict:
        if not self.alive:
            raise ZygoteError("the grading lane's warm process is not running")
        try:
            socket.send_fds(self.sock, [json.dumps(header).encode()], list(fds))
            reply = self.sock.recv(1 << 16)
        except OSError as exc:
            raise ZygoteError(f"the grading lane's warm process stopped answering: {exc}") from None
        if not reply:
            raise ZygoteError("the grading lane's warm process ended")
        return json.loads(reply)

    def new_scratch(self) -> tuple[Path, str]:
        """A fresh scratch directory for the next child: (path here, path inside the sandbox)."""
        self.count += 1
        for old in self.root.glob("s*"):
            if old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
        path = self.root / f"s{self.count}"
        path.mkdir()
        if self.uid is not None:
            os.chown(path, self.uid, self.uid)
        inside = f"/scratch/{path.name}" if self.sandboxed else str(path)
        return path, inside

    def fork(self, request_r: int, response_w: int, limits) -> "Child":
        """Start a submission's process, serving the worker protocol on the two pipe ends."""
        path, inside = self.new_scratch()
        header = {"op": "fork", "scratch": inside, "uid": self.uid,
                  "limits": {"memory_mb": limits.memory_mb, "cpu_seconds": limits.cpu_seconds,
                             "file_size_mb": limits.file_size_mb, "max_processes": limits.max_processes}}
        reply = self._ask(header, (request_r, response_w))
        return Child(self, reply["pid"], path)

    def status(self, pid: int):
        return self._ask({"op": "status", "pid": pid}).get("code")

    def reap(self) -> None:
        if self.alive:
            self._ask({"op": "reap"})


class Child:
    """A forked student process, with just the part of ``subprocess.Popen`` the runner uses."""

    def __init__(self, zygote: Zygote, ns_pid: int, scratch: Path):
        self.zygote, self.ns_pid, self.scratch = zygote, ns_pid, scratch
        self.pid = _host_pid(zygote.proc.pid, ns_pid) if zygote.sandboxed else ns_pid
        self.returncode = None

    def poll(self):
        if self.returncode is None and self.pid is not None and _running(self.pid):
            return None
        if self.returncode is None:
            try:
                self.returncode = self.zygote.status(self.ns_pid)
            except ZygoteError:
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


def _running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def _host_pid(root_pid: int, ns_pid: int) -> int | None:
    """This side's pid of the process that has ``ns_pid`` inside the sandbox started as ``root_pid``."""
    pending = [root_pid]
    while pending:
        pid = pending.pop()
        try:
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("NSpid:"):
                        numbers = [int(n) for n in line.split()[1:]]
                        if len(numbers) > 1 and numbers[-1] == ns_pid:
                            return pid
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as fh:
                    pending += [int(n) for n in fh.read().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return None


_SHARED: dict = {}


def shared(sandboxed: bool = True, lane: int | None = None) -> Zygote:
    """This process's warm lane (started on first use; closed when the process exits).

    The lane number comes from ``lane`` or ``$AUTOGRADER_LANE`` (parallel graders give each worker its own).
    """
    lane = int(os.environ.get("AUTOGRADER_LANE", "0")) if lane is None else lane
    key = (sandboxed, lane)
    if key not in _SHARED:
        import atexit

        _SHARED[key] = Zygote(sandboxed=sandboxed, lane=lane)
        atexit.register(_SHARED[key].close)
    return _SHARED[key]
