"""Grading a class as a Kubernetes Indexed Job: pod ``i`` (``JOB_COMPLETION_INDEX``, 0-based) grades shard ``i+1``
of ``n`` with ``python -m autograder autograde ASSIGNMENT --shard i+1/n`` (students split by a stable hash: the
shards never overlap), every pod into the one PostgreSQL gradebook. Collect first (formgrader, or ``nbgrader
collect`` in the formgrader's pod), then create the assignment's Job (``kubectl create -f``: a new Job each time,
its name generated, so that grading again after late submissions runs again and grades every collected one); its
pods run as the grading account with the security settings bubblewrap needs (``autograder/k8s/security.py``)."""
from __future__ import annotations

from autograder.k8s import formgrader, objects, security
from autograder.k8s.cluster import COURSE_DIR, REPOSITORY, Cluster
from autograder.k8s.network import GRADING

# One pod's shard: JOB_COMPLETION_INDEX is Kubernetes' (0-based), SHARDS and ASSIGNMENT the Job's own variables.
SCRIPT = ('exec "$AUTOGRADER_PYTHON" -m autograder autograde "$ASSIGNMENT" --course-dir "$COURSE_DIR" '
          '--workers "$WORKERS" --shard "$((JOB_COMPLETION_INDEX + 1))/$SHARDS"')
# Per pod: the workers' memory (a worker with keras and torch, its lane and the student's process, measured in
# benchmarks/results: under 1.5 GiB each) and the sandbox's memory limit for one student process on top.
MEMORY_PER_WORKER_GIB = 2
ASSIGNMENT_LABEL = "autograder/assignment"   # the Jobs of one assignment: kubectl get jobs -l autograder/assignment=X


def job_name(assignment: str) -> str:
    """The prefix of the assignment's Jobs' names (the API server adds five characters: ``grade-attention-x7k2q``)."""
    return f"grade-{assignment.replace('_', '-')}-"


def environment(cluster: Cluster, assignment: str) -> list[dict]:
    """The grading container's environment (besides ``JOB_COMPLETION_INDEX``, which Kubernetes sets)."""
    return [{"name": "ASSIGNMENT", "value": assignment}, {"name": "SHARDS", "value": str(cluster.shards)},
            {"name": "WORKERS", "value": str(cluster.workers)}, {"name": "COURSE_DIR", "value": COURSE_DIR},
            {"name": "AUTOGRADER_PYTHON", "value": f"{REPOSITORY}/.venv/bin/python"},
            *formgrader.gradebook_env(cluster)]


def job(cluster: Cluster, assignment: str) -> dict:
    volumes, mounts = formgrader.grading_volumes(cluster)
    memory = f"{MEMORY_PER_WORKER_GIB * cluster.workers + 2}Gi"
    container = {"name": "grade", "image": cluster.grader_image, "workingDir": COURSE_DIR,
                 "command": ["sh", "-c", SCRIPT], "env": environment(cluster, assignment),
                 "resources": {"requests": {"cpu": str(cluster.workers), "memory": memory},
                               "limits": {"memory": memory}},
                 "securityContext": security.grading_container(), "volumeMounts": mounts}
    pod = security.grading_pod_spec({"restartPolicy": "Never", "serviceAccountName": GRADING,
                                     "containers": [container], "volumes": volumes})
    return {"apiVersion": "batch/v1", "kind": "Job",
            # a name of its own each time (`kubectl create`): grading again after late submissions is a new Job,
            # never a re-apply of one that finished (which changes nothing); finished Jobs go after a week
            "metadata": {**objects.generated_metadata(cluster, job_name(assignment), GRADING),
                         "labels": {**objects.labels(cluster, GRADING), ASSIGNMENT_LABEL: assignment}},
            "spec": {"completionMode": "Indexed", "completions": cluster.shards, "parallelism": cluster.shards,
                     # a failed pod is one shard's students: retried once, the others' results stay in the gradebook
                     "backoffLimitPerIndex": 1, "maxFailedIndexes": cluster.shards,
                     "ttlSecondsAfterFinished": 7 * 24 * 3600,
                     "template": {"metadata": {"labels": objects.labels(cluster, GRADING)}, "spec": pod}}}


def manifests(cluster: Cluster) -> dict[str, list[dict]]:
    """file name -> objects: the grading account's service account, and one Job per assignment."""
    files = {"grading-account.yaml": [objects.service_account(cluster, GRADING, GRADING)]}
    for assignment in cluster.assignments:
        files[f"grade-{assignment}.yaml"] = [job(cluster, assignment)]
    return files
