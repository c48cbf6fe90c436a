"""A lane's warm process (its fork server): forks one child per submission and makes it the submission's process.

The child gets its own session, mount and IPC namespaces, a scratch tmpfs, a session keyring, the resource limits and
the lane's uid before it serves; before every fork the fork server kills and reaps everything else of its lane.
"""
import json
import os
import time
import traceback

import numpy as np

from .linux import (KEY_SPEC_PROCESS_KEYRING, KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING, KEYCTL_CLEAR,
                    KEYCTL_GET_PERSISTENT, KEYCTL_JOIN_SESSION_KEYRING, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS,
                    drop_all_capabilities, keyctl, libc_call, mount_all, set_admin, unshare)
from .serve import serve
from .watched import import_watched


def _reap(children, block=False):
    """Collect exit statuses of finished children (``children`` maps pid -> status or None)."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children[pid] = os.waitstatus_to_exitcode(status)


def _kill_all(children, contained):
    """Kill every process of this sandbox but the fork server (and pid 1), then reap, then empty what the lane's uid
    holds.

    Only inside the sandbox's own pid namespace (``contained``, and this process has a small pid there) is that
    ``kill(-1)``; outside it would reach the whole machine, so there only the children's process groups are killed.
    """
    import signal

    if contained and os.getpid() < 16:
        targets = [-1]
    else:
        targets = [-pid for pid, code in children.items() if code is None]
    for target in targets:
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if any(code is None for code in children.values()) or targets == [-1]:
        _reap(children, block=True)
    if contained and _LANE_UID:
        pid = os.fork()  # IPC_RMID and the keyrings need the owner: a short-lived child with the lane's uid
        if pid == 0:
            try:
                if os.getuid() != _LANE_UID[0]:
                    os.setgroups([])
                    os.setgid(_LANE_UID[0])
                    os.setuid(_LANE_UID[0])
                _remove_sysv_ipc()
                _clear_keyrings()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)


_LANE_UID: list = []  # the uid the fork server's children run as (set at the first fork)


def _remove_sysv_ipc():
    """Remove the System V shared memory, semaphores and message queues left in this sandbox's IPC namespace.

    (Each submission's process has an IPC namespace of its own, which ends with it; this covers a child that could
    not make one.)"""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    IPC_RMID = 0
    for kind, remove in (("shm", lambda i: libc.shmctl(i, IPC_RMID, None)),
                         ("sem", lambda i: libc.semctl(i, 0, IPC_RMID)),
                         ("msg", lambda i: libc.msgctl(i, IPC_RMID, None))):
        try:
            with open(f"/proc/sysvipc/{kind}") as fh:
                rows = fh.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 1:
                remove(int(fields[1]))


def _clear_keyrings():
    """Unlink every key of this uid's user, user session and persistent keyrings (run as the lane's uid)."""
    rings = [KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING]
    persistent = keyctl(KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_PROCESS_KEYRING)
    if persistent > 0:
        rings.append(persistent)
    for ring in rings:
        keyctl(KEYCTL_CLEAR, ring)


def _isolate(header):
    """As root in the fresh child, before student code: the policy's namespaces and mounts for one submission
    (``policy.CHILD_NAMESPACES``, ``policy.child_mounts``: own mount and IPC namespaces, a scratch tmpfs of the
    lane's uid, an empty read-only /dev/shm), with CAP_SYS_ADMIN raised for them."""
    set_admin(True)
    unshare(header["namespaces"])
    mount_all(header["mounts"])


def _child(header, request_fd, response_fd, event_fd, log_fd):
    """In the forked child: become the submission's process (own session, namespaces, scratch, limits, uid), then
    serve (routine events go to ``event_fd``). Its output goes to ``log_fd``, a file the grader opened and reads by
    that descriptor alone."""
    import random
    import resource

    os.setsid()
    uid = header.get("uid")
    if uid is not None and os.getuid() == 0:
        _isolate(header)
    os.environ.update(header["environment"])
    for name, (soft, hard) in header["rlimits"].items():   # the policy's limits (``policy.Limits.rlimits``)
        resource.setrlimit(getattr(resource, name), (soft, hard))
    if uid is not None and os.getuid() == 0 and uid != 0:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    elif uid == 0:                # the sandbox's own uid (a user namespace's root): no uid to switch to
        drop_all_capabilities()
    os.chdir(header["scratch"])   # after the switch: the scratch tmpfs is the lane uid's alone (0700)
    keyctl(KEYCTL_JOIN_SESSION_KEYRING, None)  # a session keyring of its own, not the fork server's (shared) one
    libc_call("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # nothing this process executes gains privileges
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    for fd in (null, log_fd):
        os.close(fd)
    random.seed()
    np.random.seed()
    serve(request_fd, response_fd, event_fd)


WARM_MODULES = ("numpy", "torch", "keras", "matplotlib.pyplot")


def _warm(modules=WARM_MODULES):
    """Import what every submission needs (numpy, torch, keras, matplotlib) once; returns the seconds it took.

    The collector is off while they import, as Python's documentation of ``gc.freeze`` advises for a process that
    forks without exec: its automatic collections walked the imported objects six times (0.55-0.7 s of the 3 s that
    importing keras took), while all of them are frozen at the end anyway, so that the children's collections skip
    them and do not copy their pages on every fork. What the imports left unreachable (about 11,000 objects, 8 MB)
    is frozen with them. The collector is on again before any child is forked."""
    import gc

    start = time.perf_counter()
    gc.disable()
    try:
        for module in modules:
            try:
                __import__(module)
            except Exception:  # noqa: BLE001 - a missing optional module only costs the child time
                pass
        import_watched()   # the library modules whose routines the forbidden-routine watch knows by their code
    finally:
        gc.freeze()
        gc.enable()
    return time.perf_counter() - start


def warm_and_ready(control_fd):
    """Import, become not dumpable (no child can read or trace this process), say ready: the control socket."""
    import socket

    seconds = _warm()
    libc_call("prctl", PR_SET_DUMPABLE, 0, 0, 0, 0)
    sock = socket.socket(fileno=control_fd)
    sock.send(json.dumps({"ready": True, "seconds": seconds}).encode())
    return sock


def serve_lane_alone(control_fd, contained=False):
    """A lane's warm process started on its own (one bubblewrap per lane): import, say ready, serve the lane."""
    serve_lane(warm_and_ready(control_fd), contained)


def serve_lane(sock, contained=False):
    """A warm process (numpy, torch, keras imported once) that forks one child per submission.

    Control messages arrive on a SOCK_SEQPACKET unix socket, with the child's three pipe ends and its output log
    attached (SCM_RIGHTS): ``fork`` (reply: the child's pid), ``status`` (a child's exit code once it ended),
    ``reap`` (kill every process but this one). Children never run while another submission's child is alive:
    ``fork`` kills and
    reaps everything first. The fork server is not dumpable, so a child cannot read or trace it.
    """
    import socket

    children = {}
    while True:
        message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 4)
        if not message:
            return
        header = json.loads(message)
        if header["op"] == "fork" and len(fds) != 4:
            for fd in fds:
                os.close(fd)
            reply = {"error": "a fork needs the request, response and event pipes and the log"}
        elif header["op"] == "fork":
            if header.get("uid") is not None and not _LANE_UID:
                _LANE_UID.append(header["uid"])
            _kill_all(children, contained)
            pid = os.fork()
            if pid == 0:
                try:
                    sock.close()
                    _child(header, *fds)
                except BaseException:  # noqa: BLE001 - the setup failed: say so in the lane's and the child's log
                    traceback.print_exc()
                    try:
                        os.write(fds[3], traceback.format_exc().encode())
                    except OSError:
                        pass
                finally:
                    os._exit(0)
            for fd in fds:
                os.close(fd)
            children[pid] = None
            reply = {"pid": pid}
        elif header["op"] == "status":
            _reap(children)
            reply = {"code": children.get(header["pid"])}
        elif header["op"] == "reap":
            _kill_all(children, contained)
            reply = {"ok": True}
        else:
            reply = {"error": "unknown op"}
        sock.send(json.dumps(reply).encode())

