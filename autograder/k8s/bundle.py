"""The bundle as files: ``values.yaml`` (the chart's), ``manifests/*.yaml`` (``kubectl apply -f``),
``images/*.Dockerfile`` and a README with the order to apply them in."""
from __future__ import annotations

from pathlib import Path

import yaml

from autograder.k8s import exchange, formgrader, gradebook, grading, images, network, values
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


def readme(cluster: Cluster) -> str:
    ns, cid = cluster.namespace, cluster.course_id
    jobs = "\n".join(f"    kubectl apply -f manifests/grade-{a}.yaml      # after collecting {a}"
                     for a in cluster.assignments)
    return f"""# The course `{cid}` on Kubernetes (Zero to JupyterHub)

Written by `python -m autograder k8s` from `course_config.py`; write it again after changing that file (the
administrator's page: docs/admin/kubernetes.md in the course repository says what was checked and how).

1. Images (at the course repository's root), pushed to `{cluster.registry}`:

       docker build -f images/students.Dockerfile -t {cluster.students_image} .
       docker build -f images/grader.Dockerfile -t {cluster.grader_image} .

2. The gradebook's password and URL (the password yours):

       kubectl create namespace {ns}
       kubectl -n {ns} create secret generic {gradebook.secret_name(cluster)} --from-literal=password=PASSWORD \\
         --from-literal=url={gradebook.url_template(cluster)}

3. JupyterHub (chart {values.CHART} {values.CHART_VERSION}), with your login (`hub.config`: an authenticator of
   your institution, and `Authenticator.allowed_users` or groups) added to `values.yaml` or a second values file:

       helm repo add jupyterhub {values.CHART_REPOSITORY}
       helm upgrade --install {cluster.release} {values.CHART} --version {values.CHART_VERSION} \\
         --namespace {ns} --values values.yaml

4. The course's pods and policies:

       kubectl apply -f manifests/gradebook.yaml -f manifests/exchange.yaml -f manifests/formgrader.yaml \\
         -f manifests/network.yaml -f manifests/grading-account.yaml

5. Grading a class ({cluster.shards} pods of {cluster.workers} workers each, one shard of the class each):

{jobs}
"""


def write(cluster: Cluster, out: Path) -> list[Path]:
    """Every file of the bundle under ``out``; returns them."""
    out = Path(out)
    files = {Path("values.yaml"): (f"# Helm values of {values.CHART} {values.CHART_VERSION} for the course "
                                   f"{cluster.course_id}.\n# Written by `python -m autograder k8s` from "
                                   "course_config.py: see README.md.\n" + dump([values.values(cluster)])),
             Path("images/students.Dockerfile"): images.students(),
             Path("images/grader.Dockerfile"): images.grader(),
             Path("README.md"): readme(cluster)}
    for name, documents in manifests(cluster).items():
        files[Path("manifests") / name] = dump(documents)
    written = []
    for rel, text in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
