"""A PostgreSQL server of the tests' own (``scripts/start_postgres.sh`` on a free port, in a folder of its own),
for a ``with`` block: the URL inside, the server stopped and its folder removed after."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "start_postgres.sh"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def postgres_server():
    parent = Path(tempfile.mkdtemp(prefix="autograder-pg-"))   # private (0700, random name), then searchable by the
    os.chmod(parent, 0o711)                                     # server's account, not listable nor writable
    folder = parent / "data"
    env = {**os.environ, "PGTEST_PORT": str(free_port()), "PGTEST_DIR": str(folder)}
    try:
        run = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env)
        assert run.returncode == 0, f"start_postgres.sh failed:\n{run.stdout}\n{run.stderr}"
        yield run.stdout.strip().splitlines()[-1], env
    finally:
        subprocess.run(["bash", str(SCRIPT), "--stop"], capture_output=True, env=env)
        parent.rmdir()
