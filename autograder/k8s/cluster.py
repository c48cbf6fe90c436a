"""What the bundle is made for: the cluster's names and images (the command's options), and what each student's pod
may use, read from ``course_config.py`` through the same code as the one-machine hub's limits."""
from __future__ import annotations

from dataclasses import dataclass, field

from autograder import settings
from autograder.hub.limits import UserLimits

EXCHANGE_NAME = "ngshare"   # the exchange service (ngshare) and its port, as every user's nbgrader reaches it
EXCHANGE_PORT = 8080

GRADER_UID = 1100          # the grading account (formgrader, grading Job), as in the one-machine hub's image
STUDENT_UID = 1000         # jovyan, the students' account in their image (Zero to JupyterHub's default uid)
STUDENT_GID = 100          # users: the students' home volume's group (Zero to JupyterHub's fsGid)
COURSE_DIR = "/home/grader/course"     # the course volume in the formgrader's and the grading pods
REPOSITORY = "/opt/course"             # the course repository with its .venv in the grading image (read-only)
STUDENTS_ENV = "/opt/env"              # the students' environment in their image


@dataclass(frozen=True)
class StudentResources:
    """One student's pod: the one-machine hub's limits (``UserLimits.from_course``) plus what only a cluster has."""

    limits: UserLimits
    mem_guarantee_mb: int
    cpu_guarantee: float
    storage_gb: float

    @classmethod
    def from_course(cls, course: settings.Course | None = None) -> "StudentResources":
        hub = (course or settings.load()).hub
        limits = UserLimits.from_course(hub)
        if not limits.memory_mb or not limits.cpu_limit:
            raise settings.ConfigError(f"{settings.path()}: COURSE['hub'] needs mem_limit_mb and cpu_limit for the "
                                       "cluster's student pods")
        resources = cls(limits, int(hub.mem_guarantee_mb), float(hub.cpu_guarantee), float(hub.storage_gb))
        if resources.mem_guarantee_mb > limits.memory_mb or resources.cpu_guarantee > limits.cpu_limit:
            raise settings.ConfigError(f"{settings.path()}: COURSE['hub']: a guarantee above its limit "
                                       f"(memory {resources.mem_guarantee_mb} > {limits.memory_mb} MiB or cpu "
                                       f"{resources.cpu_guarantee} > {limits.cpu_limit})")
        return resources

    @property
    def mem_limit(self) -> str:
        return f"{self.limits.memory_mb}M"      # JupyterHub's byte specification: M is MiB

    @property
    def mem_guarantee(self) -> str:
        return f"{self.mem_guarantee_mb}M"

    @property
    def storage(self) -> str:
        return f"{self.storage_gb:g}Gi"


@dataclass(frozen=True)
class Cluster:
    """The cluster's side of the bundle (``python -m autograder k8s``'s options)."""

    namespace: str = "course"
    release: str = "course"                        # the Helm release of the jupyterhub chart
    registry: str = "registry.example.org/attention-ko"
    tag: str = "1"
    shards: int = 4                                # pods of one grading Job
    workers: int = 2                               # grading workers (cores) per pod
    instructors: tuple[str, ...] = ()              # the formgrade group
    storage_class: str = ""                        # "" : the cluster's default
    course_storage_class: str = ""                 # ReadWriteMany (the course volume is shared by the grading pods)
    login: object = field(default=None, compare=False, repr=False)   # who logs in (``login.Login``): the roster's
    course: settings.Course = field(default_factory=lambda: settings.load(), compare=False, repr=False)

    @property
    def course_id(self) -> str:
        return self.course.course_id

    @property
    def assignments(self) -> list[str]:
        return list(self.course.assignments)

    @property
    def students_image(self) -> str:
        return f"{self.registry}/students:{self.tag}"

    @property
    def grader_image(self) -> str:
        return f"{self.registry}/grader:{self.tag}"

    @property
    def formgrader(self) -> str:
        return f"{self.course_id}-formgrader"

    @property
    def formgrade_group(self) -> str:
        return f"formgrade-{self.course_id}"

    def service_url(self, name: str, port: int) -> str:
        return f"http://{name}.{self.namespace}.svc.cluster.local:{port}"

    @property
    def exchange_url(self) -> str:
        """ngshare's URL as every user's nbgrader and the formgrader reach it (directly, not through the proxy)."""
        return f"{self.service_url(EXCHANGE_NAME, EXCHANGE_PORT)}/services/{EXCHANGE_NAME}"

    @property
    def hub_api_url(self) -> str:
        return f"{self.service_url('hub', 8081)}/hub/api"

    def resources(self) -> StudentResources:
        return StudentResources.from_course(self.course)
