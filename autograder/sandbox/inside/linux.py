"""Linux calls the sandbox's own processes make through libc: namespaces, mounts, capabilities, keyrings."""
import os

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
CAP_SYS_ADMIN = 21
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 4, 38

MS_RDONLY, MS_REMOUNT = 1, 32

# keyctl(2): a uid's keyrings outlive its processes (the user keyring, the user session keyring and the persistent
# keyring stay with the uid, even into the next grading run), so they are emptied before and after every submission.
SYS_KEYCTL = 250
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_CLEAR, KEYCTL_GET_PERSISTENT = 1, 7, 22
KEY_SPEC_PROCESS_KEYRING, KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -2, -4, -5


NAMESPACES = {"mount": CLONE_NEWNS, "pid": CLONE_NEWPID, "net": CLONE_NEWNET, "ipc": CLONE_NEWIPC,
              "uts": CLONE_NEWUTS}
MOUNT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "rdonly": MS_RDONLY, "rec": MS_REC}


def libc_call(name, *args):
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{name}{tuple(a.decode() if isinstance(a, bytes) else a for a in args)}: "
                             f"{os.strerror(errno)}")


def unshare(namespaces):
    """Enter new namespaces, named as in the grader's policy (``autograder/sandbox/policy.py``)."""
    flags = 0
    for name in namespaces:
        flags |= NAMESPACES[name]
    libc_call("unshare", flags)


def mount_all(mounts):
    """Make this mount namespace's mounts private, then mount the policy's mounts in order: each a dict of
    ``type`` (``bind``, ``tmpfs``, ``proc``, ``devpts``), ``source`` (a bind's), ``target``, ``flags``, ``options`` and
    ``if_exists`` (skipped where the target is not a folder)."""
    libc_call("mount", None, b"/", None, MS_REC | MS_PRIVATE, None)
    for mount in mounts:
        if mount.get("if_exists") and not os.path.isdir(mount["target"]):
            continue
        bind = mount["type"] == "bind"
        flags = MS_BIND if bind else 0
        for flag in mount.get("flags", ()):
            flags |= MOUNT_FLAGS[flag]
        if mount["type"] == "remount":              # an existing mount's flags (read-only), this namespace only
            libc_call("mount", None, mount["target"].encode(), None, MS_REMOUNT | MS_BIND | flags, None)
            continue
        options = mount.get("options")
        libc_call("mount", (mount["source"] if bind else mount["type"]).encode(), mount["target"].encode(),
                  None if bind else mount["type"].encode(), flags, options.encode() if options else None)


def keyctl(*args):
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(SYS_KEYCTL, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])


def set_admin(effective):
    """Put CAP_SYS_ADMIN into the effective set (where it is permitted) or take it out of it."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    libc_call("capget", ctypes.byref(header), data)
    bit = 1 << CAP_SYS_ADMIN
    for word in data:
        word.effective = (word.effective | (word.permitted & bit)) if effective else (word.effective & ~bit)
        word.inheritable = 0
    libc_call("capset", ctypes.byref(header), data)



def drop_all_capabilities():
    """Empty this process's effective, permitted and inheritable capability sets (the ambient set goes with them):
    nothing it runs afterwards has a capability, in any namespace."""
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    libc_call("capset", ctypes.byref(Header(0x20080522, 0)), (Data * 2)())
