"""The gradebook on PostgreSQL: one server (a StatefulSet with its volume) that the formgrader and every grading pod
write to (``COURSE_DB_URL``, from the Secret ``<course>-gradebook``, which the administrator makes: README).
A managed database (a cloud's PostgreSQL) does as well: put its URL in the Secret and leave this file out."""
from __future__ import annotations

from autograder.k8s import objects, security
from autograder.k8s.cluster import Cluster

NAME = "gradebook"
PORT = 5432
COMPONENT = "gradebook"
# Debian's PostgreSQL 17 on bookworm, the line scripts/start_postgres.sh's Debian server belongs to; pinned by tag.
IMAGE = "postgres:17.6-bookworm"
POSTGRES_UID = 999     # the image's postgres account


def secret_name(cluster: Cluster) -> str:
    return f"{cluster.course_id}-gradebook"


def manifests(cluster: Cluster) -> list[dict]:
    container = {
        "name": "postgres", "image": IMAGE,
        "env": [{"name": "POSTGRES_USER", "value": "autograder"}, {"name": "POSTGRES_DB", "value": "autograder"},
                objects.secret_env("POSTGRES_PASSWORD", secret_name(cluster), "password"),
                {"name": "PGDATA", "value": "/var/lib/postgresql/data/pgdata"}],
        "ports": [{"containerPort": PORT}],
        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
        "securityContext": {**security.restricted_container(POSTGRES_UID), "readOnlyRootFilesystem": False},
        "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql/data"},
                         {"name": "run", "mountPath": "/var/run/postgresql"}],
    }
    pod = {"serviceAccountName": NAME, "automountServiceAccountToken": False, "enableServiceLinks": False,
           "securityContext": {"runAsNonRoot": True, "fsGroup": POSTGRES_UID,
                               "seccompProfile": {"type": "RuntimeDefault"}},
           "containers": [container], "volumes": [{"name": "run", "emptyDir": {}}]}
    statefulset = {"apiVersion": "apps/v1", "kind": "StatefulSet",
                   "metadata": objects.metadata(cluster, NAME, COMPONENT),
                   "spec": {"serviceName": NAME, "replicas": 1,
                            "selector": {"matchLabels": objects.labels(cluster, COMPONENT)},
                            "template": {"metadata": {"labels": objects.labels(cluster, COMPONENT)}, "spec": pod},
                            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}},
                                **({"storageClassName": cluster.storage_class} if cluster.storage_class else {})}}]}}
    return [objects.service_account(cluster, NAME, COMPONENT), statefulset,
            objects.service(cluster, NAME, COMPONENT, PORT)]


def url_template(cluster: Cluster) -> str:
    """The URL to put into the Secret (the password is the administrator's)."""
    return (f"postgresql+psycopg2://autograder:PASSWORD@{NAME}.{cluster.namespace}.svc.cluster.local:{PORT}/"
            "autograder")
