"""The set-up the browser tests stand on: the course kernel, nbgrader's extensions, the Launcher."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("selenium", reason="selenium is not installed (pip install -r requirements-browser.txt)")

from tests.browser.browser_course import KERNEL_DISPLAY_NAME, KERNEL_NAME, ROOT, jupyter_env  # noqa: E402
from tests.browser.labpage import wait_for  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

pytestmark = pytest.mark.browser

KOREAN_FONTS = ("NanumGothic", "NanumBarunGothic", "Noto Sans CJK KR", "Noto Sans KR")


def test_install_kernel_script(tmp_path):
    """scripts/install_kernel.sh writes the kernelspec (this venv's python, KERAS_BACKEND=torch, the Korean display
    name) and finds nbgrader's four server extensions and its lab extension enabled."""
    run = subprocess.run(["bash", str(ROOT / "scripts" / "install_kernel.sh"), "--prefix", str(tmp_path)],
                         capture_output=True, text=True, env={**os.environ, "PYTHON_VENV": sys.executable})
    assert run.returncode == 0, run.stdout + run.stderr
    spec = json.loads((tmp_path / "share/jupyter/kernels" / KERNEL_NAME / "kernel.json").read_text())
    assert spec["display_name"] == KERNEL_DISPLAY_NAME
    assert spec["env"] == {"KERAS_BACKEND": "torch"}
    assert os.path.samefile(spec["argv"][0], sys.executable) and "ipykernel_launcher" in spec["argv"]
    for ext in ("formgrader", "assignment_list", "course_list", "validate_assignment"):
        assert f"server extension nbgrader.server_extensions.{ext} enabled OK" in run.stdout, run.stdout
    assert "lab extension @jupyter/nbgrader enabled OK (all plugins)" in run.stdout, run.stdout


def test_course_kernel_has_keras_on_torch_and_a_korean_font(course, kernel_dir, jupyter_home):
    """The course kernel, started the way the server starts it (no KERAS_BACKEND in the environment): keras runs on
    torch, and matplotlib finds a Korean font (fonts-nanum) for the heatmaps' labels."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    specs = KernelSpecManager(kernel_dirs=[str(kernel_dir / "kernels")])
    manager = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)
    manager.start_kernel(env=jupyter_env(course, kernel_dir, jupyter_home), cwd=str(course))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        code = ("import os, keras\nfrom matplotlib import font_manager\n"
                "print(os.environ.get('KERAS_BACKEND'), keras.backend.backend())\n"
                "print(sorted({f.name for f in font_manager.fontManager.ttflist}))")
        lines = []
        reply = client.execute_interactive(code, timeout=120, output_hook=lambda m: lines.append(
            m["content"].get("text", "")) if m["msg_type"] == "stream" else None)
        assert reply["content"]["status"] == "ok", reply["content"]
        first, fonts = "".join(lines).splitlines()[:2]
        assert first == "torch torch"
        assert any(f"'{name}'" in fonts for name in KOREAN_FONTS), \
            f"matplotlib sees no Korean font (apt-get install fonts-nanum): {fonts}"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_launcher_offers_the_course_kernel(lab, lab_server):
    """The Launcher shows one Python kernel, "Python 3 (어텐션 과목)"; a notebook started from it has
    KERAS_BACKEND=torch although the server was started without it."""
    lab.goto()
    lab.menu("File", "launcher:create")
    # Only the Launcher on show: JupyterLab may have opened one of its own at start, behind the new one's tab (its
    # cards are in the page, hidden, with no text).
    cards = wait_for(lambda: [c for c in lab.driver.find_elements(By.CSS_SELECTOR, ".jp-Launcher .jp-LauncherCard")
                              if c.is_displayed()], 20, "the Launcher")
    labels = [c.text for c in cards if c.get_attribute("data-category") in ("Notebook", "Console")]
    assert labels == [KERNEL_DISPLAY_NAME, KERNEL_DISPLAY_NAME], labels
    lab.screenshot("launcher")
    notebook_card = [c for c in cards if c.get_attribute("data-category") == "Notebook"][0]
    notebook_card.click()
    wait_for(lambda: (s := lab.state()) and s["cells"] == 1 and s["status"] == "idle"
             and s["kernel"] == KERNEL_DISPLAY_NAME, 60, "a new notebook with the course kernel, idle")
    lab.type_into_cell(0, "import os, sys\nprint(os.environ['KERAS_BACKEND'], sys.executable)")
    lab.run_cell(0)
    text = lab.outputs()[0]["text"]
    assert text.split() == ["torch", sys.executable], text
    lab.screenshot("new-notebook-keras-backend")
