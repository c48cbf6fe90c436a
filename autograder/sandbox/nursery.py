"""The nursery: the one warm sandboxed process of a grading run that every lane's fork server is forked from.

Importing keras costs seconds of CPU; the nursery runs ``inside --nursery`` inside bubblewrap (as root there with
only the capabilities to switch user, kill, chown and make namespaces; nothing of the repository, the gradebook or
other submissions is mounted) and imports numpy/torch/keras once, while the grader does its own imports. Each lane
(``lanes.Lane``) it makes is a fork of it with namespaces of its own (``policy.LANE_NAMESPACES``, ``lane_mounts``).
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder.sandbox import policy, warm


class Nursery:
    """The warm sandboxed process every lane's fork server is forked from: keras is imported once per grading run.

    ``launch()`` returns at once (the import runs while the caller does its own); ``new_lane()`` waits for it.
    Only the process that launched it asks it for lanes (a forked worker that needs a new lane starts one alone).

    Args:
        sandboxed: run inside bubblewrap (False only in the explicitly allowed unsandboxed mode).
        python: the interpreter.
        timeouts: ``imports`` (the nursery's imports), ``lane_request`` (each lane it makes); default:
            ``course_config.py``'s (``policy.Timeouts.from_course``).
    """

    def __init__(self, sandboxed: bool = True, python: str = sys.executable, timeouts: policy.Timeouts | None = None):
        self.sandboxed, self.python = sandboxed, python
        self.timeouts = timeouts or policy.Timeouts.from_course()
        self.owner = os.getpid()
        self.root = Path(tempfile.mkdtemp(prefix="autograder-lanes-"))
        os.chmod(self.root, 0o711)
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.ready = False
        self.failed = ""
        self.load_seconds = 0.0
        self.lanes_made = 0

    def launch(self) -> "Nursery":
        if self.proc is not None or self.failed:
            return self
        self.proc, self.sock = warm.launch(self.root, "nursery", self.sandboxed, self.python,
                                           policy.NAMESPACE_CAPABILITIES)
        return self

    @property
    def usable(self) -> bool:
        return os.getpid() == self.owner and not self.failed and (self.proc is None or self.proc.poll() is None)

    def _wait_ready(self) -> None:
        if self.ready:
            return
        self.launch()
        self.sock.settimeout(self.timeouts.imports)
        try:
            reply = json.loads(self.sock.recv(1 << 16) or b"{}")
        except (TimeoutError, json.JSONDecodeError, OSError):
            reply = {}
        if not reply.get("ready"):
            raise self._fail("the nursery did not start: " + self._log())
        self.ready, self.load_seconds = True, reply.get("seconds", 0.0)
        self.sock.settimeout(self.timeouts.lane_request)

    def _log(self) -> str:
        try:
            return (self.root / "nursery.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def new_lane(self, index: int) -> tuple[socket.socket, Path, int]:
        """Fork lane ``index``'s fork server: (its control socket, its folder here, this side's pid of it)."""
        self._wait_ready()
        self.lanes_made += 1
        root = self.root / f"lane{index}-{self.lanes_made}"
        root.mkdir(mode=0o711)
        os.chmod(root, 0o711)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        inside = f"/scratch/{root.name}" if self.sandboxed else str(root)
        try:
            request = {"op": "lane", "root": inside, "namespaces": list(policy.LANE_NAMESPACES),
                       "mounts": policy.lane_mounts(inside)}
            socket.send_fds(self.sock, [json.dumps(request).encode()], [theirs.fileno()])
            reply = json.loads(self.sock.recv(1 << 16) or b"{}")
        except (OSError, json.JSONDecodeError) as exc:
            ours.close()
            raise self._fail(f"the nursery stopped answering: {exc}") from None
        finally:
            theirs.close()
        if "pid" not in reply:
            ours.close()
            raise self._fail(f"the nursery could not make a lane: {reply.get('error', '?')}")
        ours.settimeout(self.timeouts.lane_request)
        try:
            ready = json.loads(ours.recv(1 << 16) or b"{}")
        except (OSError, json.JSONDecodeError):
            ready = {}
        if not ready.get("ready"):
            ours.close()
            raise self._fail(f"a lane could not set itself up: {ready.get('error') or self._log()}")
        # the lane's fork server is pid 1 of its own namespace; here it is the process whose pid in the nursery's
        # namespace (one level below this one) is the pid the nursery reported
        host = warm.descendant_with(self.proc.pid, 1, reply["pid"]) if self.sandboxed else reply["pid"]
        if host is None:
            ours.close()
            raise warm.LaneError("the lane's fork server could not be found")
        return ours, root, host

    def _fail(self, why: str) -> warm.LaneError:
        """Remember why the nursery is unusable (every later lane starts alone), end it, and return the error."""
        self.failed = why
        self._stop()
        return warm.LaneError(why)

    def _stop(self) -> None:
        """End the nursery's process (its lanes end with it); lanes already handed out are closed by their owners."""
        warm.end(self.proc, self.sock)
        self.proc = self.sock = None

    def close(self) -> None:
        self._stop()
        shutil.rmtree(self.root, ignore_errors=True)


_NURSERIES: dict = {}


def shared(sandboxed: bool = True) -> Nursery | None:
    """This process's nursery, launched on first use (None when ``$AUTOGRADER_NURSERY=0``)."""
    if os.environ.get("AUTOGRADER_NURSERY", "1") == "0":
        return None
    current = _NURSERIES.get(sandboxed)
    if current is None or current.owner != os.getpid():
        import atexit

        current = _NURSERIES[sandboxed] = Nursery(sandboxed).launch()
        atexit.register(current.close)
    return current
