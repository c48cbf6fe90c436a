"""The pod and container security settings, stated once for every pod of the bundle.

Students' pods (KubeSpawner) and the exchange's and gradebook's pods run like any restricted pod: a non-root uid, no
capabilities, no privilege escalation, the runtime's default seccomp profile, no service-account token (nothing in
them may talk to the Kubernetes API).

The grading pods (the formgrader and the grading Job) run student code in bubblewrap, which makes a user namespace and,
inside it, mount, PID and network namespaces and a fresh ``/proc``. A pod's defaults refuse each of those steps:

* seccomp: the runtime's default profile (``RuntimeDefault``, Docker's and containerd's) lets ``unshare``/``clone``
  make namespaces only with ``CAP_SYS_ADMIN``: ``Unconfined`` here (or a ``Localhost`` profile that allows
  ``unshare``, ``clone``/``clone3`` with namespace flags, ``mount``, ``umount2``, ``pivot_root`` and ``setns``);
* AppArmor: the runtime's default profile (``cri-containerd.apparmor.d``, ``docker-default``) denies ``mount``:
  ``Unconfined`` here (or a ``Localhost`` profile with ``userns,`` and ``mount,``). On nodes with
  ``kernel.apparmor_restrict_unprivileged_userns=1`` (Ubuntu 23.10 and later) an unconfined process gets no
  capabilities in a user namespace it makes: set that to 0 on the grading nodes, or use such a Localhost profile;
* ``/proc``: the runtime masks parts of the container's ``/proc`` (``/proc/kcore``, ``/proc/sys``, ...) and the kernel
  refuses a new ``/proc`` in a user namespace while the only one it can see is masked: ``procMount: Unmasked``, which
  Kubernetes allows only in a pod with a user namespace of its own (``hostUsers: false``): the grading account's uid
  1100 is then an unprivileged uid of the node, and root in the pod's namespace is nobody outside it.

Nothing is privileged: no ``privileged: true``, no added capability, ``allowPrivilegeEscalation: false`` (bubblewrap is
not setuid in the image), a read-only root file system, and no service-account token.
"""
from __future__ import annotations

from autograder.k8s.cluster import GRADER_UID, STUDENT_GID, STUDENT_UID

NO_CAPABILITIES = {"drop": ["ALL"]}


def restricted_container(uid: int) -> dict:
    """A container of the Pod Security Standards' ``restricted`` level, as ``uid``."""
    return {"runAsUser": uid, "runAsGroup": uid, "runAsNonRoot": True, "allowPrivilegeEscalation": False,
            "capabilities": NO_CAPABILITIES, "seccompProfile": {"type": "RuntimeDefault"},
            "readOnlyRootFilesystem": True}


def student_pod() -> dict:
    """The students' pod's securityContext (KubeSpawner's ``pod_security_context``)."""
    return {"runAsUser": STUDENT_UID, "runAsGroup": STUDENT_GID, "runAsNonRoot": True, "fsGroup": STUDENT_GID,
            "seccompProfile": {"type": "RuntimeDefault"}}


def student_container() -> dict:
    """The students' container's securityContext (KubeSpawner's ``container_security_context``). Not read-only:
    JupyterLab and pip write under the home volume and /tmp, which the image leaves writable to the student only in
    their own pod."""
    return {"runAsUser": STUDENT_UID, "runAsGroup": STUDENT_GID, "runAsNonRoot": True,
            "allowPrivilegeEscalation": False, "capabilities": NO_CAPABILITIES,
            "seccompProfile": {"type": "RuntimeDefault"}}


def grading_pod() -> dict:
    """The grading pods' securityContext (formgrader, grading Job): the grading account, a user namespace of the
    pod's own (``hostUsers`` is a field of the pod spec, set by ``grading_pod_spec``)."""
    return {"runAsUser": GRADER_UID, "runAsGroup": GRADER_UID, "runAsNonRoot": True, "fsGroup": GRADER_UID,
            "seccompProfile": {"type": "Unconfined"}, "appArmorProfile": {"type": "Unconfined"}}


def grading_container() -> dict:
    """The grading container's securityContext: no capability, nothing privileged, a read-only root, an unmasked
    ``/proc`` (bubblewrap mounts a fresh one for each student process)."""
    return {"runAsUser": GRADER_UID, "runAsGroup": GRADER_UID, "runAsNonRoot": True, "privileged": False,
            "allowPrivilegeEscalation": False, "capabilities": NO_CAPABILITIES, "readOnlyRootFilesystem": True,
            "procMount": "Unmasked", "seccompProfile": {"type": "Unconfined"},
            "appArmorProfile": {"type": "Unconfined"}}


def grading_pod_spec(spec: dict) -> dict:
    """``spec`` with what every grading pod needs: its own user namespace, no service-account token."""
    return {"hostUsers": False, "automountServiceAccountToken": False, "enableServiceLinks": False,
            "securityContext": grading_pod(), **spec}
