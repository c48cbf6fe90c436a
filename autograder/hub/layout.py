"""Where the hub's pieces live: one place, read by the set-up, the hub's config and the tests."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from autograder import settings

INSTRUCTORS = ("instructor1", "instructor2")


def student_names(n: int) -> list[str]:
    return [f"student{i}" for i in range(1, n + 1)]


@dataclass(frozen=True)
class Layout:
    course_id: str
    port: int = 8000
    ip: str = ""                                   # all interfaces; the tests use 127.0.0.1
    service_port: int = 9999                       # the formgrader service (on 127.0.0.1 only)
    state: Path = field(default=None)              # root only: hub config, database, secrets, passwords, logs
    env: Path = field(default=None)                # the students' (and the formgrader's) Python environment
    exchange: Path = Path("/srv/nbgrader/exchange")

    def __post_init__(self):
        if self.state is None:
            object.__setattr__(self, "state", Path(os.environ.get("AUTOGRADER_HUB_STATE",
                                                                  f"/srv/jupyterhub-{self.course_id}")))
        if self.env is None:
            object.__setattr__(self, "env", Path(os.environ.get("AUTOGRADER_HUB_ENV", f"/opt/{self.course_id}-env")))

    @classmethod
    def for_course(cls, **kwargs) -> "Layout":
        course = settings.course()
        return cls(course_id=course["course_id"], exchange=Path(course["exchange_root"]), **kwargs)

    # ------------------------------------------------------------------------------------------ accounts
    @property
    def grader(self) -> str:
        return f"grader-{self.course_id}"

    @property
    def formgrade_group(self) -> str:
        return f"formgrade-{self.course_id}"

    @property
    def grader_home(self) -> Path:
        return Path("/home") / self.grader

    @property
    def course_dir(self) -> Path:
        """The grading account's copy of the course repository (the nbgrader course directory)."""
        return self.grader_home / self.course_id

    # ------------------------------------------------------------------------------------------ files
    @property
    def passwords(self) -> Path:
        return self.state / "passwords.txt"

    @property
    def config(self) -> Path:
        return self.state / "jupyterhub_config.py"

    @property
    def pid_file(self) -> Path:
        return self.state / "jupyterhub.pid"

    @property
    def log(self) -> Path:
        return self.state / "jupyterhub.log"

    @property
    def python(self) -> Path:
        return self.env / "bin" / "python"

    @property
    def url(self) -> str:
        return f"http://{self.ip or '127.0.0.1'}:{self.port}"
