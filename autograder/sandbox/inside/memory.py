"""A process's memory as the kernel counts it, and its address-space limit lowered to an allowance.

A graded call may map at most a number of bytes more than its process holds when it starts: the soft ``RLIMIT_AS``
is lowered to the address space mapped now (``VmSize``) plus that allowance, never above the hard limit (the
course's ``memory_mb``, ``policy.Limits.rlimits``), so that an allocation past it raises ``MemoryError``. Used on
both sides: in the student's process (``serve``: a call's ``memory_mb``) and in the grader's bounded children that
compute a proxy's answer (``autograder.graders.bounded``). Imports nothing from ``autograder`` (see the package).

Example::

    saved = allow_more(100 << 20)      # this process may now map 100 MiB more than it does
    try:
        ...
    finally:
        resource.setrlimit(resource.RLIMIT_AS, saved)
"""
import resource


def status(field: str, pid="self") -> int:
    """A size from ``/proc/PID/status`` (``VmSize``, ``VmRSS``, ``VmHWM``) of this process or of ``pid``, in bytes;
    0 if absent."""
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def allow_more(extra: int) -> tuple[int, int]:
    """Lower this process's soft address-space limit to what it maps now plus ``extra`` bytes (at most its hard
    limit). Returns the (soft, hard) limits it replaced."""
    saved = resource.getrlimit(resource.RLIMIT_AS)
    hard = saved[1]
    wanted = status("VmSize") + int(extra)
    resource.setrlimit(resource.RLIMIT_AS, (wanted if hard < 0 else min(wanted, hard), hard))
    return saved
