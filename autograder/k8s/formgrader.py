"""formgrader as an external hub service named after the course (as ``python -m autograder hub`` runs it): the grading
account's JupyterLab on the course volume, reached by the ``formgrade-<course>`` group only.

The course volume (``<course>-course``) is the nbgrader course directory: an init container copies the course's files
from the grading image into it at every start (``nbgrader_config.py``, ``course_config.py``, ``source/``); formgrader
writes ``release/``, ``submitted/``, ``autograded/`` and ``feedback/`` there. The grading Job's pods mount the same
volume, so it must be ReadWriteMany (NFS, CephFS, a cloud file store) when they may run on other nodes."""
from __future__ import annotations

from autograder.k8s import objects, security
from autograder.k8s.cluster import COURSE_DIR, REPOSITORY, Cluster

PORT = 9999
COMPONENT = "formgrader"
COURSE_FILES = ("nbgrader_config.py", "course_config.py", "source")


def course_claim_name(cluster: Cluster) -> str:
    return f"{cluster.course_id}-course"


def gradebook_env(cluster: Cluster) -> list[dict]:
    """What every grading process needs in its environment: the gradebook (PostgreSQL, its URL in a Secret) and the
    Keras backend the course's kernel uses."""
    from autograder.k8s import gradebook

    return [objects.secret_env("COURSE_DB_URL", gradebook.secret_name(cluster), "url"),
            {"name": "COURSE_ID", "value": cluster.course_id},
            {"name": "KERAS_BACKEND", "value": "torch"},
            # a read-only root: no byte code written next to the sources, caches and HOME on the pod's /tmp
            {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
            {"name": "HOME", "value": "/tmp"},
            {"name": "TMPDIR", "value": "/tmp"},
            {"name": "MPLCONFIGDIR", "value": "/tmp/matplotlib"}]


def grading_volumes(cluster: Cluster) -> tuple[list[dict], list[dict]]:
    """The course volume and the pod's own writable /tmp (the root file system is read-only)."""
    volumes = [{"name": "course", "persistentVolumeClaim": {"claimName": course_claim_name(cluster)}},
               {"name": "tmp", "emptyDir": {"sizeLimit": "4Gi"}}]
    mounts = [{"name": "course", "mountPath": COURSE_DIR}, {"name": "tmp", "mountPath": "/tmp"}]
    return volumes, mounts


def manifests(cluster: Cluster) -> list[dict]:
    name = cluster.formgrader
    volumes, mounts = grading_volumes(cluster)
    copy = {"name": "course-files", "image": cluster.grader_image,
            "command": ["sh", "-c", f"cd {REPOSITORY} && cp -R {' '.join(COURSE_FILES)} {COURSE_DIR}/"],
            "securityContext": security.restricted_container(security.GRADER_UID),
            "volumeMounts": mounts}
    lab = {
        "name": "formgrader", "image": cluster.grader_image, "workingDir": COURSE_DIR,
        "command": [f"{REPOSITORY}/.venv/bin/jupyterhub-singleuser", f"--ServerApp.root_dir={COURSE_DIR}",
                    "--ServerApp.ip=0.0.0.0", f"--port={PORT}", "--LabApp.news_url=None",
                    "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                    "--LabApp.extension_manager=readonly"],
        "env": [*objects.hub_service_env(cluster, cluster.course_id, PORT), *gradebook_env(cluster),
                {"name": "COURSE_NGSHARE_URL", "value": cluster.exchange_url},
                {"name": "JUPYTERHUB_DEFAULT_URL", "value": "/lab"}],
        "ports": [{"containerPort": PORT}],
        "resources": {"requests": {"cpu": str(cluster.workers), "memory": "4Gi"}, "limits": {"memory": "8Gi"}},
        "securityContext": security.grading_container(),
        "volumeMounts": mounts,
    }
    pod = security.grading_pod_spec({"serviceAccountName": name, "initContainers": [copy], "containers": [lab],
                                     "volumes": volumes})
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": objects.metadata(cluster, name, COMPONENT),
                  "spec": {"replicas": 1, "strategy": {"type": "Recreate"},
                           "selector": {"matchLabels": objects.labels(cluster, COMPONENT)},
                           "template": {"metadata": {"labels": {**objects.labels(cluster, COMPONENT),
                                                                   **objects.HUB_ACCESS}}, "spec": pod}}}
    return [objects.service_account(cluster, name, COMPONENT),
            objects.claim(cluster, course_claim_name(cluster), COMPONENT, "50Gi", modes=("ReadWriteMany",),
                          storage_class=cluster.course_storage_class),
            deployment, objects.service(cluster, name, COMPONENT, PORT)]

