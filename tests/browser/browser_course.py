"""The course, the server and the constants shared by the browser tests (no Selenium needed to import this).

* ``student_copy``: a student's copy of a released notebook under the server root.
* ``quiz_answer_key`` / ``quiz_submission``: quiz submissions built from the source notebook's answers.
* ``start_lab`` / ``stop_lab``: ``jupyter lab`` on 127.0.0.1 with a free port and a fresh token, the course
  directory as its root, the course kernel as its only kernel, folders of its own for everything Jupyter reads.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]

CHROMIUM = Path(os.environ.get("BROWSER_TESTS_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("BROWSER_TESTS_CHROMEDRIVER", "/usr/bin/chromedriver"))
SCREENSHOTS = ROOT / "build" / "screenshots"
LOGS = ROOT / "build" / "browser-logs"
ASSIGNMENTS = ("attention", "kv_cache", "decoder", "quiz")
KERNEL_NAME = "attention-course"
KERNEL_DISPLAY_NAME = "Python 3 (어텐션 과목)"

# The small class of the formgrader test: (student id, last name, first name).
STUDENTS = (("kim", "김", "민준"), ("lee", "이", "서연"), ("park", "박", "지훈"))


def missing_browser() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is not installed (apt-get install chromium chromium-driver fonts-nanum)"
    if not CHROMEDRIVER.exists():
        return f"{CHROMEDRIVER} is not installed (apt-get install chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -r requirements-browser.txt)"
    return None


def notebook_path(course_dir: Path, folder: str, assignment: str) -> Path:
    return course_dir / folder / assignment / f"{assignment}.ipynb"


def student_copy(course: Path, assignment: str, student: str) -> str:
    """A student's copy of the released assignment, under the server root (students/<who>/<a>/: the notebook and the
    files released with it, such as the decoder's poems, as if fetched); returns the notebook's path relative to the
    root."""
    folder = course / "students" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    for path in notebook_path(course, "release", assignment).parent.iterdir():
        if path.is_file():
            shutil.copy(path, folder / path.name)
    return str((folder / f"{assignment}.ipynb").relative_to(course))


def quiz_answer_key() -> dict[str, str]:
    """grade_id -> the source notebook's solution of each auto-graded quiz question (e.g. 'q2 = \\'B\\'')."""
    nb = nbformat.read(str(ROOT / "source" / "quiz" / "quiz.ipynb"), as_version=4)
    key = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("solution"):
            lines = cell.source.splitlines()
            body = lines[lines.index("### BEGIN SOLUTION") + 1:lines.index("### END SOLUTION")]
            key[meta["grade_id"]] = "\n".join(body)
    return key


WRITTEN_ANSWERS = {
    "written_1": "KV 캐시는 층마다 이전 토큰의 K와 V를 저장해 두고 새 토큰 하나의 Q, K, V만 계산합니다. "
                 "인과 마스크 때문에 이전 토큰의 K, V는 바뀌지 않으므로 다시 계산하지 않아도 됩니다. "
                 "대가는 메모리로, 층 × KV 헤드 × 헤드 차원 × 토큰 수에 비례합니다 (Qwen3-8B, 4,096 토큰: 576 MiB).",
    "written_2": "캐시 크기는 질의 헤드가 아니라 KV 헤드 수(8)로 정해집니다. "
                 "2 × 36 × 8 × 128 × 4096 × 2 바이트 = 576 MiB.",
}


def quiz_submission(course_dir: Path, answers: dict[str, str], written: dict[str, str]) -> nbformat.NotebookNode:
    """The released quiz with some solution cells and written-answer cells filled in."""
    nb = nbformat.read(str(notebook_path(course_dir, "release", "quiz")), as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
        elif grade_id in written:
            cell.source = written[grade_id]
    return nb


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    def __init__(self, url: str, token: str, root: Path, process: subprocess.Popen, log: Path, output):
        self.url, self.token, self.root, self.process, self.log = url, token, root, process, log
        self.output = output          # the log file the server writes to

    def api(self, method: str, path: str):
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """End every kernel (each open notebook holds one with torch and keras loaded)."""
        for session in self.api("GET", "/api/sessions"):
            self.api("DELETE", f"/api/sessions/{session['id']}")
        for kernel in self.api("GET", "/api/kernels"):
            self.api("DELETE", f"/api/kernels/{kernel['id']}")

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:]) if self.log.exists() else ""


def font_cache_dir(home: Path) -> Path:
    """matplotlib's folder (MPLCONFIGDIR: its font list) of the server's kernels, under ``home``."""
    return home / "matplotlib"


def jupyter_env(course: Path, kernel_dir: Path, home: Path) -> dict:
    """The environment of the server (and so of its kernels): the course's gradebook and exchange, the course
    kernel, and Jupyter/JupyterLab/matplotlib folders of their own (nothing read from ~/.jupyter or ~/.cache)."""
    from autograder import course as course_tools

    settings = home / "lab-settings"
    notification = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True, exist_ok=True)
    notification.write_text('{"fetchNews": "false", "checkForUpdates": false}')   # no news toast, no request
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER") and k != "KERAS_BACKEND"}
    env.update(course_tools.course_env(course))
    env.update({
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "JUPYTER_PATH": str(kernel_dir),                  # the course kernel; no KERAS_BACKEND in the server's env
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        # A student's first start: matplotlib's font list built afresh (a cache written before fonts-nanum was
        # installed lists no Korean font, and every Korean label of a figure would be drawn as boxes).
        "MPLCONFIGDIR": str(font_cache_dir(home)),
        "PYTHONUNBUFFERED": "1",
    })
    return env


def start_lab(course: Path, kernel_dir: Path, home: Path, log: Path) -> LabServer:
    port, token = free_port(), uuid.uuid4().hex
    env = jupyter_env(course, kernel_dir, home)
    command = [
        sys.executable, "-m", "jupyter", "lab",
        "--ServerApp.open_browser=False", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={course}",
        f"--KernelSpecManager.allowed_kernelspecs={KERNEL_NAME}",
        f"--MultiKernelManager.default_kernel_name={KERNEL_NAME}",
        "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",             # no package index queries from the extension manager
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    log.parent.mkdir(parents=True, exist_ok=True)
    out = open(log, "w")
    process = subprocess.Popen(command, cwd=course, env=env, stdout=out, stderr=subprocess.STDOUT)
    server = LabServer(f"http://127.0.0.1:{port}", token, course, process, log, out)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            out.close()
            raise RuntimeError(f"jupyter lab exited ({process.returncode}):\n{server.log_tail()}")
        try:
            server.api("GET", "/api/status")
            specs = server.api("GET", "/api/kernelspecs")
            assert set(specs["kernelspecs"]) == {KERNEL_NAME}, specs
            return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.3)
    stop_lab(server)
    raise RuntimeError(f"jupyter lab did not answer within 90 s:\n{server.log_tail()}")


def stop_lab(server: LabServer) -> None:
    """Shut the kernels down, then SIGTERM the server (SIGKILL if it has not exited after 20 s). Kernels run in
    sessions of their own; one that outlived the server ends by itself (ipykernel watches its parent process)."""
    if server.process.poll() is None:
        try:
            server.shutdown_kernels()
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        server.process.terminate()
        try:
            server.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(timeout=10)
    server.output.close()
