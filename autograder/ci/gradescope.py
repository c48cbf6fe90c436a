"""The course on Gradescope: an autograder package (``python -m autograder gradescope build ASSIGNMENT``) and what
it runs for every submission (``python -m autograder gradescope run``).

Gradescope's layout (its "Autograder Specifications"): the uploaded zip's contents are ``/autograder/source``;
``setup.sh`` there runs once, as root, when Gradescope builds the autograder's image (Ubuntu); ``run_autograder`` is
copied to ``/autograder/run_autograder`` and runs for each submission, whose files are in
``/autograder/submission`` (with ``/autograder/submission_metadata.json`` beside it); the result must be written
to ``/autograder/results/results.json``.

The package holds the course package (``autograder/``: the hidden graders and their references), ``release/``
(the notebooks' grade ids, which tell a notebook's assignment), ``course_config.py``, the pinned requirements and
``gradescope.json`` (the assignment and the tests' visibility): never ``solutions/`` or ``source/``. Each submission
is graded as in CI: ``python -m autograder grade`` in the course's sandbox (bubblewrap), its late penalty against
Gradescope's due date for the student (extensions included) or else the course's, the submission's time being
Gradescope's ``created_at``. Where the sandbox cannot run (a container without user namespaces) nothing is graded
and no results.json is written: Gradescope shows the autograder as failed, with the reason in its output, instead
of running student code beside the graders (which could then write their own results.json).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from autograder import settings
from autograder.k8s.images import TORCH_CPU_INDEX  # torch's CPU wheels, as the images and CI

ROOT = Path("/autograder")
CONFIG = "gradescope.json"
# What the package holds of the course repository (nothing else: no answer key, no tests, no environment)
FILES = ("autograder", "release", "course_config.py", "pyproject.toml", "requirements.txt",
         "requirements-nodeps.txt")
LEFT_OUT = ("__pycache__", "*.pyc", "*.egg-info", ".ipynb_checkpoints", "demo")

SETUP = f"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (choose its Ubuntu 22.04 base image:
# Python 3.11 comes from its archive). Written by `python -m autograder gradescope build`.
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
apt-get update
# bubblewrap: the sandbox every submission's code runs in; fonts-nanum: Korean in the feedback's figures
apt-get install -y --no-install-recommends bubblewrap fonts-nanum python3.11 python3.11-venv
python3.11 -m venv .venv
# torch from its CPU index (a CUDA build is gigabytes, and nothing here has a GPU); checked below
.venv/bin/pip install --no-cache-dir --extra-index-url "${{TORCH_INDEX_URL:-{TORCH_CPU_INDEX}}}" -r requirements.txt
.venv/bin/pip install --no-cache-dir --no-deps -r requirements-nodeps.txt
.venv/bin/pip install --no-cache-dir --no-deps .
.venv/bin/python -c "import torch, sys; sys.exit(torch.version.cuda and 'a CUDA build of torch was installed')"
.venv/bin/python -m compileall -q autograder   # pip compiled the packages (torch has a module only 3.12 compiles)
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission (as /autograder/run_autograder). Written by
# `python -m autograder gradescope build`: it grades /autograder/submission into /autograder/results/results.json.
ROOT="${AUTOGRADER_ROOT:-/autograder}"
cd "$ROOT/source" || exit 2
exec "$ROOT/source/.venv/bin/python" -m autograder gradescope run --root "$ROOT"
"""


def build(assignment: str, out, visibility: str = "visible", zip_path=None) -> list[Path]:
    """The package of ``assignment`` in the folder ``out`` (its contents are the zip's root), and as a zip at
    ``zip_path`` (``run_autograder`` and ``setup.sh`` executable in it). Returns the files written."""
    from autograder.feedback.exports import VISIBILITIES

    course = settings.load()
    if assignment not in course.assignments:
        raise settings.ConfigError(f"unknown assignment {assignment!r} (the course's: {', '.join(course.assignments)})")
    if visibility not in VISIBILITIES:
        raise settings.ConfigError(f"visibility {visibility!r}: one of {', '.join(VISIBILITIES)}")
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty: the package is written into a folder of its own")
    out.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        source = settings.ROOT / name
        if source.is_dir():
            shutil.copytree(source, out / name, ignore=shutil.ignore_patterns(*LEFT_OUT))
        else:
            shutil.copy2(source, out / name)
    (out / CONFIG).write_text(json.dumps({"assignment": assignment, "visibility": visibility}, indent=1) + "\n",
                              encoding="utf-8")
    for name, text in (("setup.sh", SETUP), ("run_autograder", RUN)):
        (out / name).write_text(text, encoding="utf-8")
        (out / name).chmod(0o755)
    written = sorted(p for p in out.rglob("*") if p.is_file())
    if zip_path:
        with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in written:
                info = zipfile.ZipInfo.from_file(path, path.relative_to(out).as_posix())
                info.compress_type = zipfile.ZIP_DEFLATED
                with open(path, "rb") as fh:
                    archive.writestr(info, fh.read())
    return written


def find_notebook(submission: Path, assignment: str) -> Path:
    """The submitted notebook: ``ASSIGNMENT.ipynb`` (the shallowest), else the only notebook there is (a renamed
    download), else ``ASSIGNMENT.ipynb`` at the top (missing: graded as an explicit 0 with the reason). Links are
    not followed here (the grading refuses them)."""
    notebooks = []
    for folder, folders, files in os.walk(submission):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f != "__MACOSX")
        notebooks += [Path(folder) / f for f in sorted(files) if f.endswith(".ipynb")]
    named = sorted((p for p in notebooks if p.name == f"{assignment}.ipynb"), key=lambda p: len(p.parts))
    if named:
        return named[0]
    return notebooks[0] if len(notebooks) == 1 else submission / f"{assignment}.ipynb"


def _times(root: Path) -> tuple[str | None, str | None]:
    """Gradescope's submission time and this student's due date (extensions included), from its metadata."""
    try:
        metadata = json.loads((root / "submission_metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, None
    users = metadata.get("users") or [{}]
    due = (users[0].get("assignment") or {}).get("due_date") or (metadata.get("assignment") or {}).get("due_date")
    return metadata.get("created_at"), due


def run(root=ROOT) -> int:
    """Grade the submission under ``root`` (Gradescope's ``/autograder``) into ``root/results/results.json``, with
    ``python -m autograder grade`` (a process of its own, as CI runs it). Exit status 0 when results.json was
    written (a notebook that could not be graded is an explicit 0 in it), else the grading's."""
    root = Path(root)
    config = json.loads((root / "source" / CONFIG).read_text(encoding="utf-8"))
    assignment, visibility = config["assignment"], config.get("visibility", "visible")
    results = root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.unlink(missing_ok=True)
    notebook = find_notebook(root / "submission", assignment)
    command = [sys.executable, "-m", "autograder", "grade", str(notebook), "--assignment", assignment,
               "--gradescope", str(results), "--visibility", visibility]
    submitted, due = _times(root)
    if submitted:
        command += ["--submitted-at", submitted, *(["--due-date", due] if due else [])]
    print(f"gradescope: grading {notebook.relative_to(root)} as {assignment}"
          + (f", submitted {submitted}" if submitted else ""), flush=True)
    status = subprocess.run(command, cwd=root / "source").returncode
    if results.is_file():
        return 0
    print(f"gradescope: no results.json (grading exited {status}): see the lines above", flush=True)
    return status or 2
