"""The bundle as files: ``values.yaml`` (the chart's), ``manifests/*.yaml`` (``kubectl apply -f``),
``images/*.Dockerfile`` and a README with the order to apply them in."""
from __future__ import annotations

import os
from pathlib import Path

import yaml

from autograder import settings
from autograder.k8s import exchange, formgrader, gradebook, grading, images, network, values
from autograder.k8s import login as login_module
from autograder.k8s.cluster import Cluster


class _Literal(str):
    """A string written as a YAML block (``|``): the Python of ``hub.extraConfig`` and of the files."""


def _literal(dumper, text):
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|")


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Literal, _literal)


def _blocks(node):
    if isinstance(node, dict):
        return {k: _blocks(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_blocks(v) for v in node]
    if isinstance(node, str) and "\n" in node:
        return _Literal(node)
    return node


def dump(documents: list[dict]) -> str:
    return yaml.dump_all([_blocks(d) for d in documents], Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                         width=120)


def manifests(cluster: Cluster) -> dict[str, list[dict]]:
    """file name under ``manifests/`` -> its Kubernetes objects."""
    return {"exchange.yaml": exchange.manifests(cluster), "formgrader.yaml": formgrader.manifests(cluster),
            "gradebook.yaml": gradebook.manifests(cluster), "network.yaml": network.manifests(cluster),
            **grading.manifests(cluster)}


def readme(cluster: Cluster, out: Path) -> str:
    """The bundle's README: the commands in order, with the names filled in and the paths as they are from where each
    command runs (the images' from the course repository, their build context; the rest from the bundle)."""
    ns, cid = cluster.namespace, cluster.course_id
    repository = settings.ROOT
    bundle = Path(out).resolve()
    inside = bundle == repository or repository in bundle.parents
    images = (Path(os.path.relpath(bundle, repository)) if inside else bundle) / "images"
    jobs = "\n".join(f"       kubectl -n {ns} create -f manifests/grade-{a}.yaml   # after collecting {a}"
                      for a in cluster.assignments)
    login = cluster.login
    who = (f"the roster's {len(login.users)} people, each with their own password:\n   `{login_module.PASSWORDS}` "
           "here (root's file, mode 0600; hand each person theirs, keep it out of any repository; running the\n   "
           "command again keeps them). The values hold only the passwords' salted hashes" if login else
           "nobody yet: run the command with `--roster`")
    return f"""# The course `{cid}` on Kubernetes (Zero to JupyterHub)

Written by `python -m autograder k8s` from `course_config.py`; write it again after changing that file (the
administrator's page: docs/admin/kubernetes.md in the course repository says what was checked and how). The commands
below run in this folder, but for the images'.

1. Images, built from the course repository (the build context; its `.dockerignore` keeps `.venv`, `.git`, `demo/`
   and `build/` out; torch comes from its CPU index) and pushed to `{cluster.registry}`:

       cd {repository}
       docker build -f {images / "students.Dockerfile"} -t {cluster.students_image} .
       docker build -f {images / "grader.Dockerfile"} -t {cluster.grader_image} .
       docker push {cluster.students_image} && docker push {cluster.grader_image}

2. The gradebook's password and URL (the password yours):

       kubectl create namespace {ns}
       kubectl -n {ns} create secret generic {gradebook.secret_name(cluster)} --from-literal=password=PASSWORD \\
         --from-literal=url={gradebook.url_template(cluster)}

3. JupyterHub (chart {values.CHART} {values.CHART_VERSION}). Who logs in: {who}.

       helm repo add jupyterhub {values.CHART_REPOSITORY}
       helm upgrade --install {cluster.release} {values.CHART} --version {values.CHART_VERSION} \\
         --namespace {ns} --values values.yaml

4. The course's pods and policies:

       kubectl apply -f manifests/gradebook.yaml -f manifests/exchange.yaml -f manifests/formgrader.yaml \\
         -f manifests/network.yaml -f manifests/grading-account.yaml

5. Grading a class ({cluster.shards} pods of {cluster.workers} workers each, one shard of the class each). `create`,
   not `apply`: every run is a Job of its own with a generated name (`grade-attention-x7k2q`), so grading again
   after late submissions grades every collected submission again; finished Jobs are deleted after a week.

{jobs}

       kubectl -n {ns} get jobs -l {grading.ASSIGNMENT_LABEL}=ASSIGNMENT   # the runs of an assignment
       kubectl -n {ns} logs -l job-name=JOB --prefix                      # one run's log, every shard
"""


def write(cluster: Cluster, out: Path) -> list[Path]:
    """Every file of the bundle under ``out``; returns them."""
    out = Path(out)
    files = {Path("values.yaml"): (f"# Helm values of {values.CHART} {values.CHART_VERSION} for the course "
                                   f"{cluster.course_id}.\n# Written by `python -m autograder k8s` from "
                                   "course_config.py: see README.md.\n" + dump([values.values(cluster)])),
             Path("images/students.Dockerfile"): images.students(),
             Path("images/grader.Dockerfile"): images.grader(),
             Path("README.md"): readme(cluster, out)}
    for name, documents in manifests(cluster).items():
        files[Path("manifests") / name] = dump(documents)
    written = []
    for rel, text in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
