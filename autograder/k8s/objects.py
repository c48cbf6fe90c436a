"""Small builders of the Kubernetes objects every module of the bundle makes (metadata, volumes, services)."""
from __future__ import annotations

from autograder.k8s.cluster import Cluster

PART_OF = "app.kubernetes.io/part-of"
COMPONENT = "app.kubernetes.io/component"
# The chart's hub NetworkPolicy lets in the pods with this label (a service of the hub that is not in the hub's pod).
HUB_ACCESS = {"hub.jupyter.org/network-access-hub": "true"}


def labels(cluster: Cluster, component: str) -> dict:
    return {PART_OF: cluster.course_id, COMPONENT: component}


def metadata(cluster: Cluster, name: str, component: str) -> dict:
    return {"name": name, "namespace": cluster.namespace, "labels": labels(cluster, component)}


def generated_metadata(cluster: Cluster, prefix: str, component: str) -> dict:
    """Metadata whose name the API server makes (``prefix`` and five random characters): each ``kubectl create``
    of the object is a new one (a Job that can run again)."""
    return {"generateName": prefix, "namespace": cluster.namespace, "labels": labels(cluster, component)}


def claim(cluster: Cluster, name: str, component: str, size: str, modes=("ReadWriteOnce",),
          storage_class: str = "") -> dict:
    spec = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}}
    if storage_class:
        spec["storageClassName"] = storage_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata(cluster, name, component),
            "spec": spec}


def service(cluster: Cluster, name: str, component: str, port: int) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata(cluster, name, component),
            "spec": {"selector": labels(cluster, component), "ports": [{"port": port, "targetPort": port}]}}


def service_account(cluster: Cluster, name: str, component: str) -> dict:
    """A service account of its own, without a token: no pod of the bundle talks to the Kubernetes API."""
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata(cluster, name, component),
            "automountServiceAccountToken": False}


def secret_env(name: str, secret: str, key: str) -> dict:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def hub_service_env(cluster: Cluster, service_name: str, port: int) -> list[dict]:
    """What JupyterHub gives a service it starts itself, for one it does not: who it is, where the hub's API is, its
    token (the chart keeps every ``hub.services`` entry's token in its Secret ``hub``)."""
    prefix = f"/services/{service_name}/"
    return [{"name": "JUPYTERHUB_SERVICE_NAME", "value": service_name},
            {"name": "JUPYTERHUB_SERVICE_PREFIX", "value": prefix},
            {"name": "JUPYTERHUB_SERVICE_URL", "value": f"http://0.0.0.0:{port}"},
            {"name": "JUPYTERHUB_API_URL", "value": cluster.hub_api_url},
            {"name": "JUPYTERHUB_BASE_URL", "value": "/"},
            {"name": "JUPYTERHUB_CLIENT_ID", "value": f"service-{service_name}"},
            {"name": "JUPYTERHUB_OAUTH_CALLBACK_URL", "value": f"{prefix}oauth_callback"},
            secret_env("JUPYTERHUB_API_TOKEN", "hub", f"hub.services.{service_name}.apiToken")]
