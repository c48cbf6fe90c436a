"""The two images, as Dockerfiles built from the course repository (``docker build -f images/X.Dockerfile .`` at
its root), both on the same pinned Debian 12 and Python 3.11 (the course's interpreter):

* the students' image: the course's pinned environment (``requirements.txt``) WITHOUT the ``autograder`` package,
  with the course's kernel (``KERAS_BACKEND=torch``), the Korean Validate and nbgrader's instructor tool switched
  off (what ``python -m autograder hub`` gives its students: ``autograder/hub/environment.py``). The additions are
  made by the course package in a build stage; only the environment is copied into the image;
* the grading image: the course repository with its ``.venv`` (``autograder`` included) and bubblewrap, owned by
  root and read-only to the grading account (uid 1100), which runs formgrader, the exchange and the grading Job.
"""
from __future__ import annotations

from autograder.k8s.cluster import GRADER_UID, REPOSITORY, STUDENT_GID, STUDENT_UID, STUDENTS_ENV
from autograder.k8s.values import KERNEL

# Debian 12 (bookworm) with Python 3.11, pinned by tag; pin the digest as well in your registry's mirror.
BASE = "python:3.11.14-slim-bookworm"
DEBS = "bubblewrap fonts-nanum git"

_COURSE_STAGE = f"""FROM {BASE} AS course
RUN apt-get update && apt-get install -y --no-install-recommends {DEBS} \\
 && rm -rf /var/lib/apt/lists/*
WORKDIR {REPOSITORY}
COPY . .
# the course's pinned environment with the autograder package (its nodeps packages as scripts/setup.sh installs them)
RUN python -m venv .venv \\
 && .venv/bin/pip install --no-cache-dir -r requirements.txt \\
 && .venv/bin/pip install --no-cache-dir --no-deps -r requirements-nodeps.txt \\
 && .venv/bin/pip install --no-cache-dir --no-deps . \\
 && .venv/bin/python -m compileall -q .venv autograder
"""


def students() -> str:
    return f"""# The students' image (`python -m autograder k8s`): the course's environment, no autograder package.
{_COURSE_STAGE}
# The students' environment: the same pins, no autograder; then the course's additions to JupyterLab (Korean
# Validate, nbgrader's patched files, the course kernel), made by the course package from the stage above.
RUN python -m venv {STUDENTS_ENV} \\
 && {STUDENTS_ENV}/bin/pip install --no-cache-dir -r requirements.txt \\
 && {STUDENTS_ENV}/bin/pip install --no-cache-dir --no-deps -r requirements-nodeps.txt \\
 && .venv/bin/python -c "import pathlib, types; from autograder.hub import environment; \\
environment.lab_additions(types.SimpleNamespace(env=pathlib.Path('{STUDENTS_ENV}')), pathlib.Path('{STUDENTS_ENV}'))" \\
 && {STUDENTS_ENV}/bin/python -m ipykernel install --prefix {STUDENTS_ENV} --name {KERNEL} \\
      --display-name "Python 3 (어텐션 과목)" --env KERAS_BACKEND torch \\
 && mkdir -p {STUDENTS_ENV}/etc/jupyter/labconfig \\
 && echo '{{"disabledExtensions": {{"@jupyter/nbgrader:create-assignment": true}}}}' \\
      > {STUDENTS_ENV}/etc/jupyter/labconfig/page_config.json \\
 && {STUDENTS_ENV}/bin/python -m compileall -q {STUDENTS_ENV} \\
 && ! {STUDENTS_ENV}/bin/python -c "import autograder"

FROM {BASE}
RUN apt-get update && apt-get install -y --no-install-recommends fonts-nanum \\
 && rm -rf /var/lib/apt/lists/* \\
 && groupadd --force --gid {STUDENT_GID} users \\
 && useradd --uid {STUDENT_UID} --gid {STUDENT_GID} --create-home --home-dir /home/jovyan jovyan
COPY --from=course {STUDENTS_ENV} {STUDENTS_ENV}
ENV PATH={STUDENTS_ENV}/bin:$PATH KERAS_BACKEND=torch
USER {STUDENT_UID}
WORKDIR /home/jovyan
CMD ["jupyterhub-singleuser"]
"""


def grader() -> str:
    return f"""# The grading image (`python -m autograder k8s`): the course repository with autograder, and bubblewrap.
{_COURSE_STAGE}
RUN useradd --uid {GRADER_UID} --user-group --create-home grader \\
 && bash scripts/install_kernel.sh --kernel-only
# root's files, read-only to the grading account; its pods' root file system is read-only as well
USER {GRADER_UID}
ENV PATH={REPOSITORY}/.venv/bin:$PATH KERAS_BACKEND=torch
"""
