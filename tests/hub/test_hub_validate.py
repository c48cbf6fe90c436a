"""Validate in a student's JupyterLab (autograder/hub/lab_validate.py) on a real Jupyter server, without a hub.

A Jupyter server of the course's environment with the course's Validate extension in place of nbgrader's (as the
hub's environment has it) and a tiny kernel: Validate runs in a process of its own, so the server answers saves and
opens meanwhile (H7: nbgrader's handler ran the notebook on the server's event loop, and a notebook with an endless
loop froze the whole JupyterLab); the whole of it stops at its time limit (``c.KoreanValidateHandler.limit_s`` of
the nbgrader config), or when cancelled, with its kernel, and says so in Korean with the cell that was running;
one Validate at a time; a syntax error in a solution cell is named first, in Korean, with the later failures that
follow from it. The hub test (tests/hub/live/test_hub_course.py) does H7 in Chromium on the hub.
"""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest
import requests

from autograder.hub import lab_validate
from autograder.messages import ValidateText

LIMIT_S = 10            # the Validate process imports nbgrader (2-5 s here) and starts a kernel before cell 2
TOKEN = "validate-test-token"
LOOP = "x = 1\nwhile True:\n    x += 1"


def notebook(path: Path, cells: list) -> None:
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    for cell in cells:
        source, grade_id, grade = cell if isinstance(cell, tuple) else (cell, None, False)
        new = nbformat.v4.new_code_cell(source)
        if grade_id:
            new.metadata["nbgrader"] = {"grade": grade, "solution": not grade, "locked": grade, "points": 1 if grade
                                        else 0, "grade_id": grade_id, "schema_version": 3}
        nb.cells.append(new)
    nbformat.write(nb, str(path))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``jupyter server`` with the course's Validate (nbgrader's own disabled), token auth, the nbgrader config of
    its folder: the limit, nbgrader's cell timeout well above it (the limit must be what stops the loop)."""
    root = tmp_path_factory.mktemp("validate-server")
    (root / "nbgrader_config.py").write_text(f"c = get_config()\nc.KoreanValidateHandler.limit_s = {LIMIT_S}\n"
                                             "c.Execute.timeout = 120\n")
    notebook(root / "loop.ipynb", [LOOP, "z = 3"])
    notebook(root / "other.ipynb", ["print('other')"])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    extensions = {"nbgrader.server_extensions.validate_assignment": False, "jupyterlab": False,
                  "nbgrader.server_extensions.formgrader": False, "autograder.hub.lab_validate": True}
    (root / "jupyter_server_config.json").write_text(json.dumps({"ServerApp": {"jpserver_extensions": extensions}}))
    log = open(root / "server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "jupyter_server", f"--port={port}", "--ip=127.0.0.1",
                             "--no-browser", "--allow-root", f"--IdentityProvider.token={TOKEN}",
                             f"--ServerApp.root_dir={root}", f"--config={root / 'jupyter_server_config.json'}"],
                            cwd=root, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    session = requests.Session()
    session.headers["Authorization"] = f"token {TOKEN}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if session.get(f"{url}/api/status", timeout=2).ok:
                break
        except requests.ConnectionError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, (root / "server.log").read_text()[-3000:]
        time.sleep(0.2)
    yield url, session, root, proc
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


def validate_in_background(url, session, path: str) -> dict:
    """POST /assignments/validate in a thread: ``{"reply", "seconds"}`` once it is answered."""
    done = {}

    def run():
        start = time.perf_counter()
        reply = session.post(f"{url}/assignments/validate", data={"path": path}, timeout=120)
        done["seconds"], done["reply"] = time.perf_counter() - start, reply.json()

    done["thread"] = threading.Thread(target=run)
    done["thread"].start()
    return done


def open_and_save(url, session) -> float:
    """Seconds to open a notebook and save it (the contents API, as JupyterLab does)."""
    start = time.perf_counter()
    model = session.get(f"{url}/api/contents/other.ipynb", timeout=30).json()
    saved = session.put(f"{url}/api/contents/other.ipynb", json={"type": "notebook", "format": "json",
                                                                 "content": model["content"]}, timeout=30)
    assert saved.status_code == 200, saved.text
    return time.perf_counter() - start


def validate_processes(proc) -> list[int]:
    return lab_validate.descendants(proc.pid)


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.1)
    return found


def test_an_endless_loop_leaves_the_lab_usable_and_stops_at_the_limit_in_korean(server):
    """H7: while Validate runs the endless loop, the server opens and saves a notebook in well under a second each;
    Validate ends at its limit (not at nbgrader's 120 s cell timeout) with the Korean message naming the cell that
    ran, and nothing of it (process, kernel) is left."""
    url, session, root, proc = server
    open_and_save(url, session)                                  # the first request of a server warms it up
    pending = validate_in_background(url, session, "loop.ipynb")
    kernel = wait_for(lambda: len(validate_processes(proc)) >= 2 and validate_processes(proc), 30,
                      "Validate process and its kernel")
    times = []
    for _ in range(3):                                          # open and save another notebook meanwhile
        times.append(open_and_save(url, session))
        time.sleep(0.3)
    assert not pending.get("reply"), "Validate ended before the lab was tried"
    pending["thread"].join(timeout=60)
    reply, seconds = pending["reply"], pending["seconds"]
    print(f"\n[validate] open+save during Validate: {', '.join(f'{t * 1000:.0f} ms' for t in times)}; "
          f"Validate answered after {seconds:.1f} s (limit {LIMIT_S} s)")
    assert max(times) < 2.0, times
    assert LIMIT_S <= seconds < LIMIT_S + lab_validate.STOP_GRACE_S + 5, seconds
    running = ValidateText.WAS_RUNNING.korean(where=ValidateText.CODE_CELL.korean(number=1))
    assert reply["success"] is False
    assert reply["summary"]["headline"] == ValidateText.TIME_LIMIT.korean(seconds=LIMIT_S, running=running)
    assert not [p for p in kernel if Path(f"/proc/{p}").exists()], "the Validate process or its kernel is left"


def test_validate_can_be_cancelled_and_runs_one_at_a_time(server):
    """A second Validate while one runs is answered at once (in Korean); cancel ends the first at once, with
    everything it started, and its own request says it was cancelled."""
    url, session, root, proc = server
    pending = validate_in_background(url, session, "loop.ipynb")
    wait_for(lambda: validate_processes(proc), 30, "Validate's process")
    started = time.perf_counter()
    second = session.post(f"{url}/assignments/validate", data={"path": "other.ipynb"}, timeout=10).json()
    assert second["summary"]["headline"] == ValidateText.BUSY.korean(path="loop.ipynb")
    assert time.perf_counter() - started < 1.0
    seen = validate_processes(proc)
    cancelled = session.post(f"{url}/assignments/validate/cancel", data={"path": "loop.ipynb"}, timeout=30).json()
    pending["thread"].join(timeout=30)
    assert cancelled == {"cancelled": True}
    assert pending["reply"]["summary"]["headline"].startswith(ValidateText.CANCELLED.korean(running="").strip())
    assert pending["seconds"] < LIMIT_S, pending["seconds"]              # ended by the cancel, not by the limit
    assert not [p for p in seen if Path(f"/proc/{p}").exists()], "the cancelled Validate left a process"
    assert session.post(f"{url}/assignments/validate/cancel", data={"path": "loop.ipynb"}, timeout=10).json() == \
        {"cancelled": False}


def test_a_syntax_error_is_named_first_in_korean_with_what_follows_from_it(tmp_path):
    """A solution cell that does not parse (an unindent that matches no outer level: Python says "(<tokenize>, line
    3)") leaves its function undefined: the dialog names that cell and line first, in Korean, and says that the
    check and the later demo cell failed only because of it; an exercise that fails on its own keeps its own
    reason. Run by nbgrader's validator in a real kernel (its outputs are IPython's own), in this process."""
    notebook(tmp_path / "syntax.ipynb", [
        "import math",
        ("def softmax(x):\n    e = math.exp(x)\n   return e", "solution_softmax", False),
        ("assert softmax(0) == 1", "test_softmax", True),
        "print(softmax(1))",
        ("def causal_mask(t):\n    return t", "solution_causal_mask", False),
        ("assert causal_mask(2) == 3, '❌ causal_mask: 값이 다릅니다'", "test_causal_mask", True)])
    validator = lab_validate.RecordingValidator()
    summary = lab_validate.summary(validator.validate(str(tmp_path / "syntax.ipynb")), validator.executed)
    words = ValidateText
    where = words.SOLUTION_CELL.korean(name="softmax", number=2) + words.AT_LINE.korean(line=3)
    unindent = words.SYNTAX_UNINDENT.korean(ename="IndentationError")
    follows = words.FOLLOWS.korean(names="`softmax`", count=2, cells=", ".join(
        [words.CHECK_CELL.korean(name="softmax", number=3), words.CODE_CELL.korean(number=4)]))
    assert summary["first"] == words.FIRST_ERROR.korean(error=f"{where}: {unindent}") + " " + follows, summary
    assert [i["text"] for i in summary["items"]] == [
        words.FAILED_EARLIER.korean(name="softmax", where=where, reason=unindent),
        words.FAILED.korean(name="causal_mask", reason="값이 다릅니다")]
    shown = json.dumps(summary, ensure_ascii=False)
    assert "tokenize" not in shown and "line 3" not in shown and "NameError" not in shown, shown

