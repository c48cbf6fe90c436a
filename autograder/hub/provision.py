"""What the hub's users share, set up idempotently as root.

* the Python environment of every user's JupyterLab and kernels: ``autograder/hub/environment.py``.
* ``course_copy``: the repository's files copied into the grading account's private home (0700), owned by it;
  the course's state there (gradebook, submitted/, autograded/, feedback/) is never touched by a re-sync.
* ``generate``, ``exchange_course``, ``release``: the assignments generated into the gradebook; the course, its
  instructors and its roster in the exchange service (ngshare, ``autograder/hub/exchange_service.py``); the
  assignments released there (the last two once the hub runs).
* ``global_config``: the nbgrader config (course id, the exchange service) of every user of the hub, in the
  students' environment (``Layout.nbgrader_config``).
* everything of a namespace's hub (never of the course's own) removed: ``autograder/hub/teardown.py``.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import shutil
import sqlite3
import subprocess
from pathlib import Path

from autograder import settings
from autograder.hub.layout import Layout

# Never copied into the grading account's course copy: at its top, built or machine-local things and the course's
# own state (which the copy keeps); anywhere, caches.
NOT_COPIED = {".git", ".venv", "build", ".pytest_cache", "demo", "gradebook.db", "submitted", "autograded",
              "feedback", ".autograder", "tmp"}
NOT_COPIED_ANYWHERE = {"__pycache__", ".ipynb_checkpoints"}


# ------------------------------------------------------------------------------------------------ the course copy
def _repository_files(root: Path) -> list[Path]:
    """The repository's files: git's list (tracked and untracked, not ignored) where it is a clone, else a walk."""
    if (root / ".git").exists():
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True).stdout
        files = [Path(p) for p in out.decode().split("\0") if p]
    else:
        files = [p.relative_to(root) for p in root.rglob("*") if p.is_file()]
    return [f for f in files
            if f.parts[0] not in NOT_COPIED and not NOT_COPIED_ANYWHERE & set(f.parts) and (root / f).is_file()]


def as_user(user: str, command: list[str], layout: Layout, cwd: Path | None = None, check: bool = True,
            env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``command`` as ``user`` (its uid, gid and supplementary groups, its HOME), in the students' env."""
    import pwd

    entry = pwd.getpwnam(user)
    full_env = {"HOME": entry.pw_dir, "USER": user, "LOGNAME": user, "LANG": "C.UTF-8",
                "PATH": f"{layout.env / 'bin'}:/usr/local/bin:/usr/bin:/bin", **(env or {})}
    proc = subprocess.run(command, cwd=cwd or entry.pw_dir, env=full_env, user=entry.pw_uid, group=entry.pw_gid,
                          extra_groups=os.getgrouplist(user, entry.pw_gid), capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} as {user} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def grader_env(layout: Layout) -> dict:
    """What the grading account's processes add to their environment: ``autograder`` from the course copy and
    the copy's gradebook, whatever their working directory."""
    return {"PYTHONPATH": str(layout.course_dir), "KERAS_BACKEND": "torch", "COURSE_ID": layout.course_id,
            "COURSE_DB_URL": f"sqlite:///{layout.course_dir / 'gradebook.db'}",
            "COURSE_NGSHARE_URL": layout.exchange_url}


def course_copy(layout: Layout, source: Path = settings.ROOT) -> Path:
    """Copy (or refresh) the repository's files into the grading account's course directory, owned by it."""
    import pwd

    entry = pwd.getpwnam(layout.grader)
    target = layout.course_dir
    target.mkdir(mode=0o700, parents=True, exist_ok=True)
    for rel in _repository_files(source):
        dst = target / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / rel, dst)
    katex = source / "build" / "katex"           # the feedback pages' math (autograder/feedback/html.py)
    if katex.is_dir():
        shutil.copytree(katex, target / "build" / "katex", dirs_exist_ok=True)
    for dirpath, dirnames, filenames in os.walk(layout.grader_home):
        for name in [*dirnames, *filenames]:
            os.lchown(os.path.join(dirpath, name), entry.pw_uid, entry.pw_gid)
    os.chown(layout.grader_home, entry.pw_uid, entry.pw_gid)
    os.chmod(layout.grader_home, 0o700)
    os.chmod(target, 0o700)
    # The grading account's nbgrader settings: the course directory is its copy (formgrader starts elsewhere).
    config = layout.grader_home / ".jupyter" / "nbgrader_config.py"
    config.parent.mkdir(exist_ok=True)
    config.write_text(f"c = get_config()  # noqa: F821\nc.CourseDirectory.root = {str(target)!r}\n")
    for path in (config.parent, config):
        os.chown(path, entry.pw_uid, entry.pw_gid)
    return target


def _gradebook_assignments(course_dir: Path) -> set[str]:
    db = course_dir / "gradebook.db"
    if not db.exists():
        return set()
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        try:
            return {row[0] for row in conn.execute("SELECT name FROM assignment")}
        except sqlite3.OperationalError:
            return set()


def generate(layout: Layout, students: list) -> list[str]:
    """As the grading account: every assignment generated (into its gradebook) once, with its due date from
    ``course_config.py`` set in the gradebook (formgrader shows it, late penalties follow it), and every student
    (user names or ``roster.Person``) in the gradebook with their names. Returns what it generated."""
    nbgrader = [str(layout.python), "-m", "nbgrader"]
    env = grader_env(layout)
    done = _gradebook_assignments(layout.course_dir)
    generated = []
    for assignment in settings.load().assignments:
        if assignment not in done:
            as_user(layout.grader, [*nbgrader, "generate_assignment", assignment, "--force"], layout,
                    cwd=layout.course_dir, env=env)
            generated.append(assignment)
    gradebook_students(layout, add=students, due_dates=due_dates_utc(settings.load().due_dates))
    return generated


def formgrader_token(layout: Layout) -> str:
    """The formgrader service's API token, made once and kept (root only) in the state folder."""
    if not layout.formgrader_token.exists():
        fd = os.open(layout.formgrader_token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32))
    return layout.formgrader_token.read_text().strip()


def exchange_request(layout: Layout, method: str, path: str, data: dict | None = None) -> dict:
    """A request to the exchange service as the course's grading service (its token); returns ngshare's JSON."""
    import urllib.error
    import urllib.parse
    import urllib.request

    body = urllib.parse.urlencode(data).encode() if data is not None else None
    request = urllib.request.Request(f"{layout.exchange_url}/{path.lstrip('/')}", data=body, method=method,
                                     headers={"Authorization": f"token {formgrader_token(layout)}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return json.loads(exc.read() or b"{}") | {"status": exc.code}


def exchange_course(layout: Layout, students: list[str], instructors: list[str]) -> None:
    """The course in the exchange (once), its instructors (the grading service, which collects and releases, and
    ``instructors``) and its ``students`` (the roster): only they may submit, and only as themselves."""
    cid = layout.course_id
    if cid in students:
        raise RuntimeError(f"a student may not be named {cid}: the exchange knows the grading service by that name")
    reply = exchange_request(layout, "POST", f"course/{cid}", {"instructors": json.dumps([cid, *instructors])})
    if not reply.get("success") and reply.get("status") != 409:          # 409: the course exists already
        raise RuntimeError(f"the exchange refused to create the course {cid}: {reply}")
    roster = [{"username": s, "first_name": "", "last_name": "", "email": ""} for s in students]
    reply = exchange_request(layout, "POST", f"students/{cid}", {"students": json.dumps(roster)})
    if not reply.get("success") or not all(s["success"] for s in reply["status"]):
        raise RuntimeError(f"the exchange refused the roster of {cid}: {reply}")


def release(layout: Layout) -> list[str]:
    """As the grading account (with its service's token): every assignment not yet in the exchange released
    there. Returns what it released."""
    reply = exchange_request(layout, "GET", f"assignments/{layout.course_id}")
    if not reply.get("success"):
        raise RuntimeError(f"the exchange did not list the assignments of {layout.course_id}: {reply}")
    there = set(reply["assignments"])
    env = {**grader_env(layout), "JUPYTERHUB_API_TOKEN": formgrader_token(layout)}
    released = []
    for assignment in settings.load().assignments:
        if assignment not in there:
            as_user(layout.grader, [str(layout.python), "-m", "nbgrader", "release_assignment", assignment], layout,
                    cwd=layout.course_dir, env=env)
            released.append(assignment)
    return released


def due_dates_utc(due_dates: dict) -> dict[str, str]:
    """``course_config.py``'s due dates ("2026-12-07 23:59:00 +0900") as naive UTC ISO times, the gradebook's form.
    Parsed here: nbgrader's own ``parse_utc`` reads the offset "+0900" as 900 seconds (23:44 UTC instead of
    14:59 UTC) and takes "+09:00" after a space for UTC."""
    out = {}
    for name, text in due_dates.items():
        try:
            when = dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S %z")
        except ValueError:
            when = dt.datetime.fromisoformat(text)
        if when.tzinfo is None:
            raise ValueError(f"due date of {name} ({text!r}) has no time zone: write it as '2026-12-07 23:59:00 +0900'")
        out[name] = when.astimezone(dt.timezone.utc).replace(tzinfo=None).isoformat()
    return out


GRADEBOOK_SYNC = """import datetime, json, sys
from nbgrader.api import Gradebook, MissingEntry
task = json.loads(sys.argv[2])
with Gradebook(sys.argv[1]) as gb:
    for name, due in task["due_dates"].items():
        if name in {a.name for a in gb.assignments}:
            gb.update_or_create_assignment(name, duedate=datetime.datetime.fromisoformat(due))     # UTC
    for student in task["add"]:
        gb.update_or_create_student(student.pop("id"), **student)
    for student in task["remove"]:
        try:
            gb.remove_student(student)        # with the student's submissions and grades
        except MissingEntry:
            pass
"""


def gradebook_students(layout: Layout, add=(), remove=(), due_dates=None) -> None:
    """As the grading account: students (user names or ``roster.Person``) added to the course's gradebook with
    their names, or removed with their grades; the assignments' due dates (``due_dates_utc``) set."""
    from autograder.hub.roster import Person

    env = grader_env(layout)
    task = {"add": [(p if isinstance(p, Person) else Person(p)).gradebook() for p in add], "remove": list(remove),
            "due_dates": dict(due_dates or {})}
    as_user(layout.grader, [str(layout.python), "-c", GRADEBOOK_SYNC, env["COURSE_DB_URL"], json.dumps(task)], layout,
            cwd=layout.course_dir, env=env)


# ------------------------------------------------------------------------------------------------ config
def students_config_dir(layout: Layout) -> Path:
    """Jupyter config of students' servers only (``JUPYTER_CONFIG_PATH`` set by the hub's pre-spawn hook)."""
    return layout.env / "etc" / "jupyter-students"


# nbgrader's lab extension plugins that are an instructor's tool: students' JupyterLab leaves them out.
INSTRUCTOR_PLUGINS = ("@jupyter/nbgrader:create-assignment",)


def students_page_config(layout: Layout) -> Path:
    """``labconfig/page_config.json`` of students' servers: nbgrader's "Create Assignment" disabled."""
    path = students_config_dir(layout) / "labconfig" / "page_config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"disabledExtensions": {p: True for p in INSTRUCTOR_PLUGINS}}, indent=1) + "\n")
    for p in (students_config_dir(layout), path.parent, path):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return path


def global_config(layout: Layout) -> Path:
    """``Layout.nbgrader_config``: every user's nbgrader (students' assignment list, validate, fetch, submit), which
    runs in the students' environment, finds the course and the exchange. Not ``/etc/jupyter``: a second hub on
    the machine (the tests') would rewrite the course's."""
    path = layout.nbgrader_config
    path.parent.mkdir(parents=True, exist_ok=True)
    from autograder.sandbox.policy import Timeouts

    validate, validate_total = Timeouts.from_course().validate, Timeouts.from_course().validate_total
    path.write_text("# Written by `python -m autograder hub`: the course every user of this hub takes part in.\n"
                    "c = get_config()  # noqa: F821\n"
                    f"c.CourseDirectory.course_id = {layout.course_id!r}\n"
                    "# The exchange: the hub's ngshare service (autograder/hub/exchange_service.py); who submits is\n"
                    "# the hub user of the request's token, when is the server's clock.\n"
                    "from ngshare_exchange import configureExchange  # noqa: E402\n"
                    f"configureExchange(c, {layout.exchange_url!r})\n"
                    "# A submission the exchange refuses fails with its reason (autograder/hub/lab_assignments.py).\n"
                    "c.ExchangeFactory.submit = 'attention_course_assignments.CourseSubmit'\n"
                    "# Validate (a student's own check, no grade): a cell may take the course's validate time, and so\n"
                    "# may its output (nbgrader's 30 s and nbclient's 4 s fail the first cell, which imports torch "
                    "and\n"
                    "# keras, while other users' kernels do the same on a busy hub).\n"
                    f"c.Execute.timeout = {validate}\n"
                    f"c.Execute.iopub_timeout = {validate}\n"
                    "# All of Validate, every cell together (autograder/hub/lab_validate.py: read at every Validate;\n"
                    "# past it Validate and its kernel are stopped and the student reads why, in Korean).\n"
                    f"c.KoreanValidateHandler.limit_s = {validate_total}\n"
                    "# Validate's kernels, as the server's: IPC sockets in the user's own runtime folder (0700), by\n"
                    "# an absolute path: a relative one is read from the server's folder by the client and from the\n"
                    "# notebook's folder by the kernel, which then never answers.\n"
                    "import os  # noqa: E402\n"
                    "from jupyter_core.paths import jupyter_runtime_dir  # noqa: E402\n"
                    "os.makedirs(jupyter_runtime_dir(), mode=0o700, exist_ok=True)\n"
                    "c.KernelManager.transport = 'ipc'\n"
                    "c.KernelManager.ip = os.path.join(jupyter_runtime_dir(), 'validate-kernel')\n")
    os.chmod(path, 0o644)
    return path
