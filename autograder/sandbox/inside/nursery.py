"""The nursery: one warm process for all the lanes of a grading run, and each lane's namespaces and mounts."""
import json
import os

from .lane import serve_lane, warm_and_ready
from .linux import PR_SET_NO_NEW_PRIVS, libc_call, mount_all, set_admin, unshare

# One warm process for all the lanes of a grading run: numpy, torch and keras are imported once, and each lane's
# fork server is a fork of it that enters namespaces of its own (mount, pid, network, IPC, UTS) before it serves, so
# lanes stay as separate as when each had its own bubblewrap.




def _drop_admin():
    """Take CAP_SYS_ADMIN out of the lane's effective set; no new privileges on exec.

    It stays permitted, for one use: each submission's fresh child raises it to make its own mount and IPC
    namespaces and its scratch tmpfs (``_isolate``), before any student code runs, and then loses every
    capability when it switches to the lane's uid."""
    set_admin(False)
    libc_call("prctl", PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def _start_lane(header, lane_fd, report_fd, contained):
    """In a child of the nursery: new namespaces, then fork the lane's fork server (pid 1 there) and report its pid."""
    import socket

    if contained:
        unshare(header["namespaces"])   # the policy's LANE_NAMESPACES: the next child is pid 1 of the new pid one
    pid = os.fork()
    if pid:
        os.write(report_fd, json.dumps({"pid": pid}).encode())
        return
    os.close(report_fd)
    sock = socket.socket(fileno=lane_fd)
    try:
        if contained:   # as pid 1 of the lane: the policy's lane_mounts (its folder at /scratch, /dev/shm, /proc)
            mount_all(header["mounts"])
            os.chdir("/scratch")
            _drop_admin()
        else:
            os.chdir(header["root"])
    except OSError as exc:
        sock.send(json.dumps({"ready": False, "error": str(exc)}).encode())
        os._exit(1)
    sock.send(json.dumps({"ready": True}).encode())
    try:
        serve_lane(sock, contained)
    finally:
        os._exit(0)


def nursery(control_fd, contained=False):
    """Import once, then fork a lane's fork server per ``lane`` request (the lane's control socket attached)."""
    import socket

    sock = warm_and_ready(control_fd)
    while True:
        message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 1)
        if not message:
            return
        header = json.loads(message)
        if header.get("op") != "lane" or len(fds) != 1:
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"error": "expected a lane request with its socket"}).encode())
            continue
        read_fd, report_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                os.close(read_fd)
                _start_lane(header, fds[0], report_fd, contained)
            except BaseException as exc:  # noqa: BLE001 - reported to the grader, which falls back
                os.write(report_fd, json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
            finally:
                os._exit(0)
        os.close(report_fd)
        os.close(fds[0])
        reply = os.read(read_fd, 4096)
        os.close(read_fd)
        os.waitpid(pid, 0)
        sock.send(reply or json.dumps({"error": "the lane did not start"}).encode())

