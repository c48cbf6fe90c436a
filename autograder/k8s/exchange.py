"""The exchange: ngshare as an external hub service (``autograder/hub/exchange_service.py``, the one-machine hub's
exchange with its checks on arrival), one pod with its database and files on a volume of its own.

Who submitted is the hub user of the request's token (ngshare asks the hub), when is the exchange's clock; students
reach it directly (``http://ngshare.<namespace>.svc...:8080/services/ngshare``), which the NetworkPolicy allows."""
from __future__ import annotations

from autograder.k8s import objects, security
from autograder.k8s.cluster import EXCHANGE_NAME, EXCHANGE_PORT, GRADER_UID, REPOSITORY, Cluster

NAME = EXCHANGE_NAME
PORT = EXCHANGE_PORT
COMPONENT = "exchange"
STATE = "/srv/ngshare"


def manifests(cluster: Cluster) -> list[dict]:
    container = {
        "name": NAME, "image": cluster.grader_image, "workingDir": STATE,
        "command": [f"{REPOSITORY}/.venv/bin/python", "-m", "autograder.hub.exchange_service", "--state",
                    f"{STATE}/state", "--admins", cluster.course_id, "--ip", "0.0.0.0"],
        "env": [*objects.hub_service_env(cluster, NAME, PORT), {"name": "HOME", "value": "/tmp"}],
        "ports": [{"containerPort": PORT}],
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
        "securityContext": security.restricted_container(GRADER_UID),
        "volumeMounts": [{"name": "state", "mountPath": STATE}, {"name": "tmp", "mountPath": "/tmp"}],
    }
    pod = {"serviceAccountName": NAME, "automountServiceAccountToken": False, "enableServiceLinks": False,
           "securityContext": {"runAsNonRoot": True, "fsGroup": GRADER_UID,
                               "seccompProfile": {"type": "RuntimeDefault"}},
           "containers": [container],
           "volumes": [{"name": "state", "persistentVolumeClaim": {"claimName": NAME}},
                       {"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}}]}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": objects.metadata(cluster, NAME, COMPONENT),
                  "spec": {"replicas": 1, "strategy": {"type": "Recreate"},   # one writer of its SQLite database
                           "selector": {"matchLabels": objects.labels(cluster, COMPONENT)},
                           "template": {"metadata": {"labels": {**objects.labels(cluster, COMPONENT),
                                                                   **objects.HUB_ACCESS}}, "spec": pod}}}
    return [objects.service_account(cluster, NAME, COMPONENT),
            objects.claim(cluster, NAME, COMPONENT, "10Gi", storage_class=cluster.storage_class),
            deployment, objects.service(cluster, NAME, COMPONENT, PORT)]
