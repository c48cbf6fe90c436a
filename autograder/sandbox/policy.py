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
grading is ``COURSE["timeouts"]`` (``Timeouts``). Each record is built from its section by ``from_course``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

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


# ----------------------------------------------------------------------------------------------- resource limits
@dataclass(frozen=True)
class Limits:
    """Resource limits of the student's process and of what it sends back (``course_config.COURSE["sandbox"]``,
    where each value's reason is written)."""

    allow_unsandboxed: bool   # grade without bubblewrap where it cannot run (not a limit: ``bubblewrap.sandboxed``)
    memory_mb: int            # address space (RLIMIT_AS)
    cpu_seconds: int          # CPU time of the process (RLIMIT_CPU)
    max_processes: int        # processes and threads of the lane's uid (RLIMIT_NPROC)
    file_size_mb: int         # the largest file it may write (RLIMIT_FSIZE)
    output_kb: int            # what one cell's stdout, and its stderr, keep of its output (KiB each)
    notebook_output_kb: int   # what all cells' outputs together keep (KiB); later outputs are elided
    total_restarts: int       # fresh processes for one submission in all
    scratch_mb: int           # the scratch folder's tmpfs (MiB)
    scratch_files: int        # files and folders in it (inodes)
    reply_mb: int             # the largest reply accepted (its arrays as float64, MiB)
    answer_mb: int            # the most memory the grader spends on one proxy answer (``graders.isolation``)

    @classmethod
    def from_course(cls) -> Limits:
        from autograder import settings

        return settings.section("sandbox", cls)

    @property
    def reply_bytes(self) -> int:
        """The longest frame accepted from the student's process (its arrays plus 1 MiB of header)."""
        return (self.reply_mb + 1) << 20

    @property
    def reply_elements(self) -> int:
        """Array elements accepted in one reply: ``reply_mb`` MiB once converted to float64."""
        return (self.reply_mb << 20) // 8

    def rlimits(self) -> dict:
        """``setrlimit`` names and (soft, hard) values of the student's process: soft = hard, but for the CPU time,
        whose hard limit is a second later (the kernel sends SIGKILL at the hard limit and checks it first: at an
        equal soft limit the process never saw SIGXCPU, and its end read as an unexplained kill, not as CPU time)."""
        mb = 1 << 20
        return {"RLIMIT_AS": (self.memory_mb * mb,) * 2, "RLIMIT_CPU": (self.cpu_seconds, self.cpu_seconds + 1),
                "RLIMIT_FSIZE": (self.file_size_mb * mb,) * 2, "RLIMIT_NPROC": (self.max_processes,) * 2,
                "RLIMIT_CORE": (0, 0)}


# ----------------------------------------------------------------------------------------------- time limits
@dataclass(frozen=True)
class Timeouts:
    """Every time limit of grading, in seconds (``course_config.COURSE["timeouts"]``, where each value's reason is
    written). A limit on the student's code ends what ran past it with a Korean message (``Reason.*_TIMEOUT``); the
    others bound how long the grader waits for its own helpers."""

    # the student's code
    cell: float               # one code cell of the notebook
    notebook: float           # all the notebook's cells together (and a restarted process's replay of them)
    call: float               # one call of a student's function by a grader (a call with big inputs)
    call_floor: float         # one call whose inputs hold at most ``call_small`` numbers
    call_small: int           # (a count of numbers, not seconds) the inputs of a call that gets ``call_floor``
    exercise: float           # all calls of one function with small inputs together
    calls: float              # all calls of one submission together
    submission: float         # everything of one submission once its notebook ran (``StudentProcess.grade_within``)
    interrupt_grace: float    # a call past its limit that its own alarm did not stop is killed this much later
    names: float              # the student's process answers what names the notebook defined
    # a class run (``python -m autograder autograde``)
    grace: float              # a submission is graded as blank after ``notebook + submission + grace``
    kill_grace: float         # and its worker, still at it this much later, is killed and replaced
    # the sandbox's warm processes
    imports: float            # the nursery (or a lane on its own) imports numpy, torch and keras and says it is ready
    lane_request: float       # a warm process answers one request (make a lane, fork a submission's process)
    # nbgrader's own execution of notebooks, outside the sandbox (never of a submission being graded)
    validate: float           # a cell of Validate in a student's JupyterLab on the hub (``hub/provision.py``)
    execute: float            # a cell of ``generate_solution`` and of Validate elsewhere (``c.Execute.timeout``)

    @classmethod
    def from_course(cls) -> Timeouts:
        from autograder import settings

        return settings.section("timeouts", cls)

    @property
    def class_run(self) -> float:
        """Seconds one submission may take in a class run before it is graded as blank instead."""
        return float(self.notebook + self.submission + self.grace)


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
# owned by the lane's uid, and a /dev/shm that is a small empty tmpfs nobody can write.
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
    ]
