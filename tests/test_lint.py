"""The code base stays clean under the project's ruff configuration (pyproject.toml, [tool.ruff])."""
import subprocess
import sys
from pathlib import Path


def test_ruff_is_clean(root):
    ruff = Path(sys.executable).with_name("ruff")
    assert ruff.exists(), "ruff is missing from the virtual environment: run scripts/setup.sh (requirements.txt)"
    run = subprocess.run([str(ruff), "check", "--no-cache", "--output-format", "concise", "."], cwd=root,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
