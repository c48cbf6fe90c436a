"""``python -m autograder k8s --out DIR --registry R --instructor NAME [--instructor NAME ...] --roster CSV
[--namespace NS] [--tag T] [--shards N] [--workers W]``: write the course's Kubernetes bundle
(``autograder/k8s/bundle.py``) into DIR."""
from __future__ import annotations

import sys
from pathlib import Path

from autograder.k8s import bundle, values
from autograder.hub.roster import RosterError
from autograder.k8s.cluster import Cluster
from autograder.k8s.login import PASSWORDS, from_roster


def main(args) -> int:
    missing = ["--registry: where the cluster pulls the course's two images from, which you push there (e.g. "
               "ghcr.io/ORG/attention-ko or harbor.example.ac.kr/course)"] if not args.registry else []
    missing += ["--instructor: the hub user(s) who grade, put in the formgrade group (repeat it for each; without "
                "one nobody reaches formgrader)"] if not args.instructors else []
    # who logs in, chosen on purpose: the roster's people (LTI 1.3 will be the other way: autograder/k8s/login.py)
    missing += ["--roster CSV is required: who may log in to the hub (the class roster, as for `python -m autograder "
                "hub --roster`); the chart's own `dummy` login would let anyone in"] if not args.roster else []
    if missing:
        print("k8s: the bundle cannot guess these; give them:\n" + "\n".join(f"  {m}" for m in missing),
              file=sys.stderr)
        return 2
    if args.shards < 1 or args.workers < 1:
        print("k8s: --shards and --workers must be at least 1", file=sys.stderr)
        return 2
    try:
        login = from_roster(args.roster, Path(args.out) / PASSWORDS)
    except RosterError as exc:
        print(f"k8s: {exc}", file=sys.stderr)
        return 2
    instructors = tuple(dict.fromkeys([*(args.instructors or ()), *login.instructors]))
    cluster = Cluster(namespace=args.namespace, release=args.release, registry=args.registry.rstrip("/"),
                      tag=args.tag, shards=args.shards, workers=args.workers,
                      instructors=instructors, storage_class=args.storage_class or "",
                      course_storage_class=args.course_storage_class or "", login=login)
    written = bundle.write(cluster, Path(args.out))
    resources = cluster.resources()
    print(f"k8s: {len(written)} files in {args.out} (chart {values.CHART} {values.CHART_VERSION}); each student: "
          f"memory {resources.mem_guarantee}-{resources.mem_limit}, cpu {resources.cpu_guarantee:g}-"
          f"{resources.limits.cpu_limit:g}, home {resources.storage}; grading: {cluster.shards} pods x "
          f"{cluster.workers} workers; next: {Path(args.out) / 'README.md'}")
    return 0
