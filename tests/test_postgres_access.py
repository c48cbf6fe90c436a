"""The tests' PostgreSQL server (scripts/start_postgres.sh) is closed to other local users and stopped after.

A local user (a student on a shared grading machine) must not reach the gradebook: over TCP on 127.0.0.1 every
role needs its (random) password, and the server's socket lies in its 0700 data folder, which only the server's
account opens (peer authentication there)."""
import glob
import os
import pwd
import socket
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.helpers.postgres import postgres_server

psycopg2 = pytest.importorskip("psycopg2")
pytestmark = pytest.mark.skipif(not glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                                reason="PostgreSQL is not installed (scripts/setup.sh installs it)")


def connect(**kwargs):
    return psycopg2.connect(connect_timeout=5, **kwargs)


def test_password_needed_over_tcp_and_the_socket_is_private_and_the_server_stops():
    with postgres_server() as (url, env):
        parts = urlsplit(url.replace("+psycopg2", ""))
        port, folder = int(env["PGTEST_PORT"]), Path(env["PGTEST_DIR"])
        # The URL the script printed works.
        with connect(dsn=url.replace("+psycopg2", "")) as conn:
            assert conn.cursor().execute("select 1") is None
        # Without the password, or with a guessed one (the old script's fixed one), over TCP: refused.
        for user, password in (("autograder", None), ("postgres", None), ("autograder", "autograder"),
                               ("postgres", "postgres")):
            kwargs = {"host": "127.0.0.1", "port": port, "user": user, "dbname": "autograder"}
            if password:
                kwargs["password"] = password
            with pytest.raises(psycopg2.OperationalError, match="password"):
                connect(**kwargs)
        assert len(parts.password) >= 32
        # The socket: in a folder only the server's account may enter.
        mode = folder.stat().st_mode & 0o777
        assert mode == 0o700, oct(mode)
        if os.geteuid() == 0:
            owner = pwd.getpwuid(folder.stat().st_uid).pw_name
            assert owner == "postgres"
            psql = glob.glob("/usr/lib/postgresql/*/bin/psql")[0]
            nobody = subprocess.run(["runuser", "-u", "nobody", "--", psql, "-h", str(folder), "-p", str(port),
                                     "-U", "postgres", "-d", "postgres", "-c", "select 1"],
                                    capture_output=True, text=True, timeout=30)
            assert nobody.returncode != 0, nobody.stdout
            assert "Permission denied" in nobody.stderr or "No such file" in nobody.stderr, nobody.stderr
            owner_run = subprocess.run(["runuser", "-u", "postgres", "--", psql, "-h", str(folder), "-p", str(port),
                                        "-d", "postgres", "-tAc", "select 1"], capture_output=True, text=True,
                                       timeout=30)
            assert owner_run.stdout.strip() == "1", owner_run.stderr
    # Stopped: nothing listens on its port any more, and its folder is gone.
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
    assert not folder.exists()


def test_a_data_folder_where_other_users_write_is_refused():
    """The script's data folder was the fixed ``/tmp/autograder-pg``: a name any local user can make first (and plant
    a URL and a pid file in, which the script reuses). A data folder in a world-writable place (a 1777 folder, like
    /tmp) is refused before anything is made or started; the default is root's /var/lib/autograder/postgres."""
    import shutil
    import tempfile

    from tests.helpers.postgres import SCRIPT, free_port

    shared = Path(tempfile.mkdtemp(prefix="agtest-tmp-"))
    os.chmod(shared, 0o1777)
    env = {**os.environ, "PGTEST_PORT": str(free_port()), "PGTEST_DIR": str(shared / "autograder-pg")}
    try:
        run = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, timeout=120)
        assert run.returncode == 2 and "refusing" in run.stderr, (run.returncode, run.stdout, run.stderr)
        assert not (shared / "autograder-pg").exists()
    finally:
        subprocess.run(["bash", str(SCRIPT), "--stop"], capture_output=True, env=env)
        shutil.rmtree(shared, ignore_errors=True)
    assert "/tmp" not in SCRIPT.read_text().split("DEFAULT_DIR=", 1)[1].split("\n")[0]
