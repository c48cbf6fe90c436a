"""The Python environment of every user of the hub (students', instructors' and the formgrader's JupyterLab and
kernels), set up idempotently as root.

* ``students_env``: the course's ``.venv`` (the pinned ``requirements.txt``) without the ``autograder`` package,
  cloned with hard links (seconds, no second download; same files, same versions), with its own interpreter
  links, console scripts and the course kernel (``KERNEL``).
* ``lab_additions``: what the course changes in every user's JupyterLab (the Korean Validate, nbgrader's files that
  only a patch changes).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from autograder import settings
from autograder.hub.layout import Layout

# What a clone of the course's .venv leaves out: the autograder package (its editable install points into the
# repository). Byte-code caches come along: users cannot write them there, and would compile torch at every import.
NOT_CLONED = ("__editable__", "attention_course_autograder")
KERNEL = "attention-course"


def _site_packages(prefix: Path) -> Path:
    return prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def _fingerprint(source: Path) -> str:
    names = sorted(p.name for p in _site_packages(source).iterdir() if p.name.endswith(".dist-info"))
    return hashlib.sha256("\n".join(names).encode()).hexdigest()


def _link_tree(src: Path, dst: Path) -> None:
    """Hard-link every file of ``src`` under ``dst`` (directories made anew), leaving out NOT_CLONED."""
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = [d for d in dirnames if not d.startswith(NOT_CLONED)]
        rel = Path(dirpath).relative_to(src)
        (dst / rel).mkdir(parents=True, exist_ok=True)
        os.chmod(dst / rel, 0o755)
        for name in filenames:
            if name.startswith(NOT_CLONED):
                continue
            source, target = Path(dirpath) / name, dst / rel / name
            if source.is_symlink():
                target.symlink_to(os.readlink(source))
            else:
                os.link(source, target)


def _open_to_all(path: Path) -> bool:
    """Whether every user may run ``path`` (its folders all searchable by others, the file executable by them)."""
    path = path.resolve()
    return bool(path.stat().st_mode & stat.S_IXOTH) and all(p.stat().st_mode & stat.S_IXOTH for p in path.parents)


def shared_interpreter() -> Path:
    """A Python of this version that every user may run: this one's base interpreter where others may run it
    (not a pyenv build under /root, say), else the system's ``/usr/bin/pythonX.Y`` (same ABI: the cloned
    packages' compiled parts load in it)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (Path(sys.base_prefix) / "bin" / version, Path("/usr/bin") / version):
        if candidate.exists() and _open_to_all(candidate):
            return candidate
    raise RuntimeError(f"no {version} that every user may run: install Debian's {version} (apt-get install "
                       f"{version}) or make {sys.base_prefix} readable")


def students_env(layout: Layout, source: Path = Path(sys.prefix)) -> Path:
    """The environment at ``layout.env``: rebuilt when the source's installed distributions changed."""
    stamp = layout.env / ".cloned-from"
    this = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()     # a change of this set-up rebuilds it too
    want = f"{source}\n{shared_interpreter()}\n{_fingerprint(source)}\n{this}\n"
    if stamp.exists() and stamp.read_text() == want:
        return layout.env
    if layout.env.exists():
        shutil.rmtree(layout.env)
    subprocess.run([str(shared_interpreter()), "-m", "venv", "--without-pip", str(layout.env)], check=True)
    _link_tree(_site_packages(source), _site_packages(layout.env))
    # Jupyter's data (lab extensions; the kernel is installed below) and config (server extensions enabled):
    # data linked, config copied (it is small, and Jupyter writes there).
    _link_tree(source / "share" / "jupyter", layout.env / "share" / "jupyter")
    shutil.rmtree(layout.env / "share" / "jupyter" / "kernels", ignore_errors=True)
    if (source / "etc").exists():
        shutil.copytree(source / "etc", layout.env / "etc", dirs_exist_ok=True)
    # Console scripts: the same files with this environment's interpreter in their #! line.
    old, new = f"#!{source}/bin/", f"#!{layout.env}/bin/"
    for script in (source / "bin").iterdir():
        target = layout.env / "bin" / script.name
        if script.is_symlink() or target.exists() or not script.is_file():
            continue
        with open(script, "rb") as fh:
            if fh.read(len(old)) != old.encode():
                continue
        target.write_text(new + script.read_text()[len(old):])
        target.chmod(0o755)
    # Every user's JupyterLab: no news and no update checks (no requests to the internet, no pop-up).
    overrides = layout.env / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    overrides.parent.mkdir(parents=True, exist_ok=True)
    fresh = overrides.with_suffix(".new")              # a new file: the one there may be a link into the source
    fresh.write_text(json.dumps({"@jupyterlab/apputils-extension:notification":
                                 {"fetchNews": "false", "checkForUpdates": False}}))
    os.replace(fresh, overrides)
    subprocess.run(["bash", str(settings.ROOT / "scripts" / "install_kernel.sh"), "--prefix", str(layout.env),
                    "--kernel-only"], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYTHON_VENV": str(layout.python)})
    probe = subprocess.run([str(layout.python), "-c", "import autograder"], capture_output=True, cwd="/")
    if probe.returncode == 0:
        raise RuntimeError(f"{layout.env} can import autograder: it must not")
    stamp.write_text(want)
    return layout.env


LAB_MODULE = "attention_course_lab"          # autograder/hub/lab_validate.py, as the hub's environment imports it
ASSIGNMENTS_MODULE = "attention_course_assignments"      # autograder/hub/lab_assignments.py, likewise


def assignments_data() -> dict:
    """What the Assignment List's module needs of the course (written next to it): the assignments in teaching
    order, their due dates (UTC, ISO), the time zone, the words (``autograder.messages.ListText``)."""
    from autograder.hub.provision import due_dates_utc
    from autograder.messages import ListText

    course = settings.load()
    words = {"due": ListText.DUE, "download": ListText.DOWNLOAD_SUBMISSION, "not_submitted": ListText.NOT_SUBMITTED,
             "submit_refused": ListText.SUBMIT_REFUSED, "download_refused": ListText.DOWNLOAD_REFUSED}
    return {"assignments": list(course.assignments), "timezone": course.timezone,
            "due_dates": {name: f"{when}+00:00" for name, when in due_dates_utc(course.due_dates).items()},
            "words": {key: label._korean for key, label in words.items()}}


def lab_additions(layout: Layout, source: Path = Path(sys.prefix)) -> list[str]:
    """What the course changes in every user's JupyterLab of the hub (idempotent, at every start): the start-up hook of
    the course's ``.venv`` (``patches.startup``: no grammar built at every JupyterLab's start); Validate answers
    with a Korean summary per exercise (``autograder/hub/lab_validate.py``, copied into the environment as
    ``attention_course_lab`` with its texts from the catalogue, enabled in place of nbgrader's
    ``validate_assignment`` server extension); the Assignment List in the course's order and time zone
    (``autograder/hub/lab_assignments.py``, as ``attention_course_assignments`` with the course's data, in place of
    nbgrader's ``assignment_list``); and nbgrader's files that only a patch changes (``autograder/patches``: the
    Validate dialog, the Assignment List, formgrader's score precision). Returns what it changed."""
    from autograder.hub import lab_validate
    from autograder.messages import ValidateText
    from autograder.patches import startup
    from autograder.patches.environment import apply_file_patches

    site = _site_packages(layout.env)
    wanted = {site / f"{LAB_MODULE}.py": Path(lab_validate.__file__).read_text(encoding="utf-8"),
              site / f"{LAB_MODULE}.json": json.dumps(ValidateText.templates(), ensure_ascii=False, indent=1),
              site / f"{ASSIGNMENTS_MODULE}.py": (Path(__file__).with_name("lab_assignments.py")
                                                  .read_text(encoding="utf-8")),
              site / f"{ASSIGNMENTS_MODULE}.json": json.dumps(assignments_data(), ensure_ascii=False, indent=1),
              layout.env / "etc" / "jupyter" / "jupyter_server_config.json": json.dumps(
                  {"ServerApp": {"jpserver_extensions": {"nbgrader.server_extensions.validate_assignment": False,
                                                         "nbgrader.server_extensions.assignment_list": False,
                                                         LAB_MODULE: True, ASSIGNMENTS_MODULE: True}}}, indent=1),
              # every interpreter of the environment: rfc3987_syntax imported at its first use (JupyterLab's start)
              site / f"{startup.INSTALLED_AS}.py": Path(startup.__file__).read_text(encoding="utf-8"),
              site / f"{startup.INSTALLED_AS}.pth": startup.PTH}
    changed = []
    for path, text in wanted.items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            fresh = path.with_name(path.name + ".new")
            fresh.write_text(text, encoding="utf-8")
            os.chmod(fresh, 0o644)
            os.replace(fresh, path)
            changed.append(path.name)
    return changed + apply_file_patches(layout.env, source)


def server_timeouts(layout: Layout, idle_s: float) -> Path:
    """``etc/jupyter/jupyter_server_config.py`` of the environment, read by every JupyterLab of the hub (users'
    servers and formgrader; a user's own config is not read): its HTTP server closes a connection that brings no
    complete request within ``idle_s`` (``connections.py``)."""
    from autograder.hub import connections

    path = layout.env / "etc" / "jupyter" / "jupyter_server_config.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = path.with_name(path.name + ".new")
    fresh.write_text("# Written by `python -m autograder hub` (autograder/hub/connections.py): every JupyterLab of "
                     "this hub closes\n# a connection that brings no complete request in time.\n"
                     + connections.SERVER_CONFIG.format(idle_s=float(idle_s), body_s=float(connections.BODY_S)),
                     encoding="utf-8")
    os.chmod(fresh, 0o644)
    os.replace(fresh, path)
    return path
