"""The student's process, declared once: who it runs as, what it sees, what it may use.

Read like nsjail's config: the environment, the resource limits, the namespaces and the mounts of the process
that runs a submission's code are data here, and the launchers apply them as they are:

* the warm processes in bubblewrap (the nursery, or a lane on its own: ``lanes.py``): ``bubblewrap.Sandbox.wrap``
  makes ``SANDBOX_NAMESPACES``, mounts ``SYSTEM_DIRS`` read-only and keeps ``FORK_SERVER_CAPABILITIES``; the
  process gets ``environment()``;
* a lane forked from the nursery: ``LANE_NAMESPACES`` and ``lane_mounts()``;
* a child of a lane's fork server, the submission's process (``lanes.Lane.fork``): ``CHILD_NAMESPACES``,
  ``child_mounts()``, ``child_environment()`` and ``Limits.rlimits()``, sent with the fork request and applied by
  ``inside.lane`` before any student code runs.

The numbers are ``course_config.py``'s, the one place they are set: the resource limits (memory, CPU seconds,
processes, file sizes, scratch size, reply size, output) are ``COURSE["sandbox"]`` (``Limits``), every time limit of
grading is ``COURSE["timeouts"]`` (``Timeouts``): records of ``autograder.settings``, read once with the course's
settings (``settings.load()``).
"""
from __future__ import annotations

import os

from autograder import settings

# ----------------------------------------------------------------------------------------------- users
LANE_UIDS = range(61000, 62000)     # a lane's children's uid: each running lane on this machine has one to itself

# ----------------------------------------------------------------------------------------------- environment
ENVIRONMENT = {   # the whole environment of the student's process: nothing else of the grader's is passed
    "PATH": "/usr/bin:/bin",
    "KERAS_BACKEND": "torch",
    "MPLBACKEND": "Agg",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "LANG": "C.UTF-8",
}
PASSED_THROUGH = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")   # the machine's OpenBLAS tuning, where it is set
# No PYTHON* variable: the interpreter runs as ``python -I``, which ignores them all.


def environment(home: str, tmp: str) -> dict:
    """The environment every launcher starts the process with (``home``, ``tmp``: where HOME and TMPDIR point)."""
    env = {**ENVIRONMENT, "HOME": home, "TMPDIR": tmp}
    env.update({key: os.environ[key] for key in PASSED_THROUGH if key in os.environ})
    return env


def child_environment(scratch: str) -> dict:
    """What a lane's child changes in the lane's environment: its own scratch folder is its home and its TMPDIR."""
    return {"HOME": scratch, "TMPDIR": scratch}


# ----------------------------------------------------------------------------------------------- limits
# The resource limits (``Limits``: ``COURSE["sandbox"]``) and every time limit of grading (``Timeouts``:
# ``COURSE["timeouts"]``) are sections of the course's settings, read and checked with the rest of them
# (``autograder.settings.load()``); the launchers here apply them as they are.
Limits = settings.Limits
Timeouts = settings.Timeouts


# ----------------------------------------------------------------------------------------------- namespaces, mounts
# bubblewrap, around the nursery (every lane lives inside it) or a lane on its own: new pid, network, IPC,
# UTS (and cgroup where the kernel allows) namespaces; a /proc and /dev of its own, a private /tmp; read-only, only
# the system's libraries and the Python installation and virtual environment (``bubblewrap.python_roots``).
SANDBOX_NAMESPACES = ("pid", "net", "ipc", "uts", "cgroup-try")
HOSTNAME = "sandbox"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/alternatives",
               "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/fonts",
               "/etc/ssl/certs", "/etc/matplotlibrc")
# The nursery and a lane on its own stay root inside (grading as root) with these capabilities only: to switch each
# child to the lane's uid, kill, chown; and CAP_SYS_ADMIN, which a lane keeps in its permitted set only (each child
# raises it for its own namespaces, then loses every capability with the uid).
FORK_SERVER_CAPABILITIES = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_CHOWN")
NAMESPACE_CAPABILITIES = ("CAP_SYS_ADMIN",)

# A lane forked from the nursery: namespaces of its own (its fork server is pid 1 of the new pid namespace), only
# its folder at /scratch, its own /dev/shm and a /proc of its own processes. /tmp stays bubblewrap's (root's, 0755:
# no student process can write there), because the course's virtual environment may be mounted below it (a checkout
# under /tmp) and a new /tmp would hide it.
LANE_NAMESPACES = ("mount", "pid", "net", "ipc", "uts")


def lane_mounts(root: str) -> list[dict]:
    return [
        {"type": "bind", "source": root, "target": "/scratch", "flags": ["rec"]},
        {"type": "tmpfs", "target": "/dev/shm", "flags": ["nosuid", "nodev"], "options": "mode=0755,size=64m",
         "if_exists": True},
        {"type": "proc", "target": "/proc", "flags": ["nosuid", "nodev", "noexec"]},
    ]


# Each child of a lane (one submission's process): own mount and IPC namespaces (its System V IPC and POSIX message
# queues end with it), a scratch folder that is a tmpfs of its own with a total size and a number of files (inodes),
# owned by the lane's uid, a /dev/shm that is a small empty tmpfs nobody can write, and pseudo-terminals of its own
# (a new devpts instance at /dev/pts, which bubblewrap's /dev/ptmx points into): the lanes of one nursery share its
# /dev, and a terminal one submission opened and made readable by all was another's to read.
CHILD_NAMESPACES = ("mount", "ipc")


# Where the submission's process has the sandbox's own uid (grading as a non-root account: the user namespace's root,
# which owns the sandbox's root, /tmp, /dev and /scratch), each of them is made read-only in the child's own mount
# namespace: it writes only its scratch tmpfs, as a lane uid does under root.
SHARED_UID_READ_ONLY = ("/", "/tmp", "/dev", "/scratch")


def child_mounts(scratch: str, limits: Limits, uid: int | None, shared_uid: bool = False) -> list[dict]:
    read_only = [{"type": "remount", "target": path, "flags": ["rdonly"], "if_exists": True}
                 for path in SHARED_UID_READ_ONLY] if shared_uid else []
    return [*read_only,
        {"type": "tmpfs", "target": scratch, "flags": ["nosuid", "nodev"],
         "options": f"size={int(limits.scratch_mb)}m,nr_inodes={int(limits.scratch_files)},mode=0700,"
                    f"uid={uid},gid={uid}"},
        {"type": "tmpfs", "target": "/dev/shm", "flags": ["nosuid", "nodev", "noexec", "rdonly"],
         "options": "mode=0755,size=4k,nr_inodes=2", "if_exists": True},
        {"type": "devpts", "target": "/dev/pts", "flags": ["nosuid", "noexec"],
         "options": "newinstance,ptmxmode=0666,mode=0620", "if_exists": True},
    ]
