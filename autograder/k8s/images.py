"""The two images, as Dockerfiles built from the course repository (``docker build -f OUT/images/X.Dockerfile .`` at
its root, whose ``.dockerignore`` keeps the machine's state out), both on the same pinned Debian 12 and Python 3.11
(the course's interpreter), torch from its CPU index:

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

# Debian 12 (bookworm) with Python 3.11, pinned by tag; pin the digest as well in your registry's mirror (or give
# another with --build-arg BASE=...: the tests build on a local Debian 12 image).
BASE = "python:3.11.14-slim-bookworm"
DEBS = "bubblewrap fonts-nanum git"
# torch's CPU wheels, as the CI workflow and the Gradescope package install them: PyPI's torch is the CUDA build
# (gigabytes of libraries no grading uses). An extra index: pip takes its 2.13.0+cpu over PyPI's 2.13.0, and the
# build fails if a CUDA build came in all the same (the index unreachable: pip would quietly take PyPI's).
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
_CPU_TORCH = """python -c "import sys, torch; sys.exit(torch.version.cuda and 'a CUDA build of torch came in')\""""
# the build context is the course repository; its .dockerignore keeps .venv, .git, demo/ and build/ out
HEADER = f"""ARG BASE={BASE}
"""

_COURSE_STAGE = f"""FROM ${{BASE}} AS course
ARG TORCH_INDEX_URL={TORCH_CPU_INDEX}
RUN apt-get update && apt-get install -y --no-install-recommends {DEBS} \\
 && rm -rf /var/lib/apt/lists/*
WORKDIR {REPOSITORY}
COPY . .
# the course's pinned environment with the autograder package (its nodeps packages as scripts/setup.sh installs them);
# a context that brought a .venv or demo/ along (no .dockerignore) stops here. pip writes the packages' bytecode as
# it installs them (a compileall of the environment fails: torch ships a module only Python 3.12 can compile); the
# package's own build (setuptools builds in the tree: build/, *.egg-info) is not kept
RUN test ! -e .venv && test ! -e demo \\
 && python -m venv .venv \\
 && .venv/bin/pip install --no-cache-dir --extra-index-url "$TORCH_INDEX_URL" -r requirements.txt \\
 && .venv/bin/pip install --no-cache-dir --no-deps -r requirements-nodeps.txt \\
 && .venv/bin/pip install --no-cache-dir --no-deps . && rm -rf build ./*.egg-info \\
 && .venv/bin/{_CPU_TORCH} \\
 && .venv/bin/python -m compileall -q autograder
"""


def students() -> str:
    return f"""# The students' image (`python -m autograder k8s`): the course's environment, no autograder package.
{HEADER}{_COURSE_STAGE}
# The students' environment: the same pins, no autograder; then the course's additions to JupyterLab (Korean
# Validate, nbgrader's patched files, the course kernel), made by the course package from the stage above.
RUN python -m venv {STUDENTS_ENV} \\
 && {STUDENTS_ENV}/bin/pip install --no-cache-dir --extra-index-url "$TORCH_INDEX_URL" -r requirements.txt \\
 && {STUDENTS_ENV}/bin/pip install --no-cache-dir --no-deps -r requirements-nodeps.txt \\
 && {STUDENTS_ENV}/bin/{_CPU_TORCH} \\
 && .venv/bin/python -c "import pathlib, types; from autograder.hub import environment; \\
environment.lab_additions(types.SimpleNamespace(env=pathlib.Path('{STUDENTS_ENV}')), pathlib.Path('{STUDENTS_ENV}'))" \\
 && {STUDENTS_ENV}/bin/python -m ipykernel install --prefix {STUDENTS_ENV} --name {KERNEL} \\
      --display-name "Python 3 (어텐션 과목)" --env KERAS_BACKEND torch \\
 && mkdir -p {STUDENTS_ENV}/etc/jupyter/labconfig \\
 && echo '{{"disabledExtensions": {{"@jupyter/nbgrader:create-assignment": true}}}}' \\
      > {STUDENTS_ENV}/etc/jupyter/labconfig/page_config.json \\
 && ! {STUDENTS_ENV}/bin/python -c "import autograder"

FROM ${{BASE}}
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
{HEADER}{_COURSE_STAGE}
RUN useradd --uid {GRADER_UID} --user-group --create-home grader \\
 && bash scripts/install_kernel.sh --kernel-only
# root's files, read-only to the grading account; its pods' root file system is read-only as well
USER {GRADER_UID}
ENV PATH={REPOSITORY}/.venv/bin:$PATH KERAS_BACKEND=torch
"""
