"""NetworkPolicies: what each pod of the course may reach.

* a student's pod: the hub's API and the exchange, and the cluster's DNS to find them; nothing else (not the
  formgrader, the gradebook, another student's pod, the cloud's metadata server or the internet). It replaces the
  chart's own ``singleuser.networkPolicy`` (switched off in the values), which allows the internet by default.
  Ingress: only from the pods the chart marks as allowed to reach user servers (the proxy and the hub);
* the exchange: from students, the formgrader and the proxy; out to the hub's API;
* the gradebook: from the formgrader and the grading pods only;
* the grading pods (formgrader, grading Job): the gradebook, the hub, the exchange; the formgrader from the proxy.

NetworkPolicies only act where the cluster's network plugin enforces them (Calico, Cilium, ...)."""
from __future__ import annotations

from autograder.k8s import exchange, formgrader, gradebook, objects
from autograder.k8s.cluster import Cluster

DNS = {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
               "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
       "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
STUDENT_PORT = 8888
GRADING = "grading"       # the grading Job's pods' component


def chart_pods(cluster: Cluster, component: str) -> dict:
    """The chart's pods of ``component`` (hub, proxy, singleuser-server) of this release."""
    return {"matchLabels": {"component": component, "release": cluster.release}}


def ours(cluster: Cluster, component: str) -> dict:
    return {"matchLabels": objects.labels(cluster, component)}


def policy(cluster: Cluster, name: str, selector: dict, ingress: list | None, egress: list | None) -> dict:
    spec = {"podSelector": selector, "policyTypes": []}
    for kind, rules in (("Ingress", ingress), ("Egress", egress)):
        if rules is not None:
            spec["policyTypes"].append(kind)
            spec[kind.lower()] = rules
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": objects.metadata(cluster, name, "network"), "spec": spec}


def to(selector: dict, port: int) -> dict:
    return {"to": [{"podSelector": selector}], "ports": [{"protocol": "TCP", "port": port}]}


def source(selectors: list[dict], port: int) -> dict:
    return {"from": [{"podSelector": s} for s in selectors], "ports": [{"protocol": "TCP", "port": port}]}


def manifests(cluster: Cluster) -> list[dict]:
    hub, proxy = chart_pods(cluster, "hub"), chart_pods(cluster, "proxy")
    students = chart_pods(cluster, "singleuser-server")
    graders = [ours(cluster, formgrader.COMPONENT), ours(cluster, GRADING)]
    exchange_pods, gradebook_pods = ours(cluster, exchange.COMPONENT), ours(cluster, gradebook.COMPONENT)
    return [
        policy(cluster, "students", students,
               ingress=[source([{"matchLabels": {"hub.jupyter.org/network-access-singleuser": "true"}}],
                               STUDENT_PORT)],
               egress=[to(hub, 8081), to(exchange_pods, exchange.PORT), DNS]),
        policy(cluster, "exchange", exchange_pods,
               ingress=[source([students, ours(cluster, formgrader.COMPONENT), proxy], exchange.PORT)],
               egress=[to(hub, 8081), DNS]),
        policy(cluster, "gradebook", gradebook_pods, ingress=[source(graders, gradebook.PORT)], egress=[]),
        policy(cluster, "formgrader", ours(cluster, formgrader.COMPONENT),
               ingress=[source([proxy, hub], formgrader.PORT)],
               egress=[to(gradebook_pods, gradebook.PORT), to(hub, 8081), to(exchange_pods, exchange.PORT), DNS]),
        policy(cluster, GRADING, ours(cluster, GRADING), ingress=[],
               egress=[to(gradebook_pods, gradebook.PORT), DNS]),
    ]
