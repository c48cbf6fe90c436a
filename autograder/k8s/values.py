"""The Helm values of the Zero to JupyterHub chart (``jupyterhub/jupyterhub``) for the course.

The chart version is pinned (``CHART_VERSION``): 4.3.3 is the chart's security release of JupyterHub 5.4.4, the
JupyterHub 5 line that nbgrader 0.9.6's formgrader service and course list are written for and that the students'
image's ``jupyterhub`` 5 (``requirements.txt``) speaks to; a later 4.x changes the hub image and its defaults (the
network policies, the cloud metadata block) under the same values, so it is a choice to make, not an upgrade that
happens. Every per-student value comes from ``course_config.py`` (``COURSE["hub"]``) through
``cluster.StudentResources``, which reads the one-machine hub's limits with the same ``UserLimits.from_course``.

The chart maps ``singleuser.*`` onto KubeSpawner's settings in its ``jupyterhub_config.py``; what it has no key for
(the security contexts, the service-account token, the formgrade group) is ``hub.extraConfig``'s Python, which the
chart runs after its own config."""
from __future__ import annotations

from autograder.k8s import exchange, formgrader, security
from autograder.k8s.cluster import STUDENT_GID, STUDENT_UID, Cluster

CHART = "jupyterhub/jupyterhub"
CHART_REPOSITORY = "https://hub.jupyter.org/helm-chart/"
CHART_VERSION = "4.3.3"
KERNEL = "attention-course"


def nbgrader_config(cluster: Cluster) -> str:
    """Every student's nbgrader (assignment list, validate, fetch, submit): the course and its exchange."""
    from autograder.sandbox.policy import Timeouts

    validate = Timeouts.from_course().validate
    return ("# Written by `python -m autograder k8s`: the course and its exchange (ngshare, a hub service).\n"
            "c = get_config()  # noqa: F821\n"
            f"c.CourseDirectory.course_id = {cluster.course_id!r}\n"
            "from ngshare_exchange import configureExchange  # noqa: E402\n"
            f"configureExchange(c, {cluster.exchange_url!r})\n"
            "# Validate: a cold kernel imports torch and keras in its first cell (course_config.py: timeouts).\n"
            f"c.Execute.timeout = {validate}\n"
            f"c.Execute.iopub_timeout = {validate}\n")


def extra_config(cluster: Cluster) -> str:
    """``hub.extraConfig``'s Python: what the chart has no value for."""
    pod, container = security.student_pod(), security.student_container()
    return f'''# Written by `python -m autograder k8s` (autograder/k8s/values.py).
# Students' pods: no token of a Kubernetes service account, non-root, no capabilities, the runtime's seccomp profile.
c.KubeSpawner.automount_service_account_token = False
c.KubeSpawner.service_account = None
c.KubeSpawner.pod_security_context = {pod!r}
c.KubeSpawner.container_security_context = {container!r}
c.KubeSpawner.extra_pod_config = {{"enableServiceLinks": False}}
# Only the course's kernel (its environment, KERAS_BACKEND=torch), no update checks, no extension manager.
c.KubeSpawner.args = ["--KernelSpecManager.allowed_kernelspecs={KERNEL}",
                      "--MultiKernelManager.default_kernel_name={KERNEL}",
                      "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                      "--LabApp.extension_manager=readonly"]
# The instructors: the formgrade group may reach the course's formgrader service, nobody else.
c.JupyterHub.load_groups = {{{cluster.formgrade_group!r}: {{"users": {list(cluster.instructors)!r}}}}}
'''


def values(cluster: Cluster) -> dict:
    resources = cluster.resources()
    hub = cluster.course.hub
    registry, students_tag = cluster.students_image.rsplit(":", 1)
    services = {
        cluster.course_id: {"url": cluster.service_url(cluster.formgrader, formgrader.PORT), "oauth_no_confirm": True},
        exchange.NAME: {"url": cluster.service_url(exchange.NAME, exchange.PORT)},
    }
    login = cluster.login
    return {
        "hub": {
            # login: the roster's people with their own passwords (``login.py``), never the chart's ``dummy``
            "config": {"JupyterHub": {"admin_access": False}, **(login.hub_config if login else {})},
            "services": services,
            "loadRoles": {
                cluster.formgrade_group: {"groups": [cluster.formgrade_group],
                                          "scopes": [f"access:services!service={cluster.course_id}", "list:services",
                                                     f"read:services!service={cluster.course_id}"]},
                # nbgrader's course list (in every user's Lab) asks the hub which course services the user may reach
                "server": {"scopes": ["inherit"]},
            },
            "extraConfig": {"course": extra_config(cluster), **({"login": login.extra_config} if login else {})},
        },
        "proxy": {"chp": {"networkPolicy": {"egress": [
            {"to": [{"podSelector": {"matchLabels": {"app.kubernetes.io/part-of": cluster.course_id,
                                                     "app.kubernetes.io/component": component}}}],
             "ports": [{"port": port, "protocol": "TCP"}]}
            for component, port in ((formgrader.COMPONENT, formgrader.PORT), (exchange.COMPONENT, exchange.PORT))]}}},
        "singleuser": {
            "image": {"name": registry, "tag": students_tag},
            "uid": STUDENT_UID,
            "fsGid": STUDENT_GID,
            "memory": {"limit": resources.mem_limit, "guarantee": resources.mem_guarantee},
            "cpu": {"limit": resources.limits.cpu_limit, "guarantee": resources.cpu_guarantee},
            "storage": {"type": "dynamic", "capacity": resources.storage, "homeMountPath": "/home/jovyan",
                        **({"dynamic": {"storageClass": cluster.storage_class}} if cluster.storage_class else {})},
            "defaultUrl": "/lab",
            # explicit: KubeSpawner passes its arguments (the course's kernel only) to an explicit command only
            "cmd": "jupyterhub-singleuser",
            "extraEnv": {"KERAS_BACKEND": "torch"},
            "serviceAccountName": None,
            "allowPrivilegeEscalation": False,
            # the course's NetworkPolicy (manifests/network.yaml) allows a student's pod the hub and the exchange
            # only; the chart's own would allow the internet
            "networkPolicy": {"enabled": False},
            # the chart blocks the cloud's metadata server with a privileged init container (iptables) when this
            # is on; the NetworkPolicy above blocks it without one
            "cloudMetadata": {"blockWithIptables": False},
            "extraFiles": {"nbgrader_config": {"mountPath": "/etc/jupyter/nbgrader_config.py",
                                               "stringData": nbgrader_config(cluster)}},
        },
        "cull": {"enabled": bool(hub.idle_timeout_s), "timeout": int(hub.idle_timeout_s or 3600),
                 "every": int(hub.cull_every_s or 300)},
    }
