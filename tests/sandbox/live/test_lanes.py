"""Lanes forked from one nursery are as separate as lanes with a bubblewrap each (issue 8), and the fallback works.

Two lanes of one nursery run a submission each at the same time; each submission looks for the other (its
processes, its files in /tmp and in its scratch folder, an abstract unix socket, System V IPC, a pseudo-terminal it
opened, made readable by everyone and wrote its mark into) and must find nothing. The fork server of each lane is
pid 1 of a pid namespace of its own, below the nursery's, with its own network namespace and no capabilities left;
and a lane whose nursery cannot make it starts on its own and grades the same.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from autograder.sandbox import bubblewrap
from autograder.sandbox import lanes
from autograder.sandbox.nursery import Nursery
from autograder.sandbox.process import StudentProcess

PLANT = '''
import os, socket, sys, time
LANE_MARK = "{mark}"
with open("/tmp/" + LANE_MARK, "w") if os.access("/tmp", os.W_OK) else open(LANE_MARK, "w") as _f:
    _f.write("x")
_server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
_server.bind("\\0" + LANE_MARK)
_server.listen(1)
_pty, _tty = os.openpty()                      # a pseudo-terminal for anyone: its other end readable by all, the
os.chmod(os.ttyname(_tty), 0o666)              # mark waiting in it (written to the master, read from the slave)
os.write(_pty, (LANE_MARK + "\\n").encode() * 3)   # a read takes one line: one for each look below
'''

LOOK = '''
import glob, os, socket
def look(other):
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    if other.encode() in fh.read():
                        found.append("process " + pid)
            except OSError:
                pass
    for pattern in ("/tmp/*", "/scratch/*", "/scratch/*/*", "/dev/shm/*", "/proc/*/cwd/*"):
        try:
            found += [p for p in glob.glob(pattern) if other in p]
        except OSError:
            pass
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect("\\0" + other)
        found.append("abstract socket")
    except OSError:
        pass
    with open("/proc/sysvipc/shm") as fh:
        found += ["shm " + line for line in fh.read().splitlines()[1:]]
    for tty in glob.glob("/dev/pts/[0-9]*"):
        try:
            fd = os.open(tty, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError:
            continue
        try:
            if other.encode() in os.read(fd, 4096):
                found.append("pty " + tty)
        except OSError:
            pass
        finally:
            os.close(fd)
    return found
def pids():
    return sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
def caps():
    return [line.split()[1] for line in open("/proc/self/status") if line.startswith(("CapEff", "CapPrm"))]
'''


def ns(pid: int, kind: str) -> str:
    return os.readlink(f"/proc/{pid}/ns/{kind}")


def nspid(pid: int) -> list[int]:
    with open(f"/proc/{pid}/status") as fh:
        return [int(n) for n in next(line for line in fh if line.startswith("NSpid:")).split()[1:]]


@pytest.fixture(scope="module")
def two_lanes():
    assert bubblewrap.sandboxed() is True
    nursery = Nursery(True).launch()
    pair = [lanes.Lane(True, index, nursery=nursery) for index in (101, 102)]
    for lane in pair:
        lane.start(alone=False)
    yield nursery, pair
    for lane in pair:
        lane.close()
    nursery.close()


def student(lane, mark: str) -> StudentProcess:
    process = StudentProcess([PLANT.format(mark=mark), LOOK], lane)
    report = process.start()
    assert all(cell.get("ok") for cell in report.cells), report.cells
    return process


def ask(process: StudentProcess, name: str, *args):
    return process.calls.call(name, *args)["value"]


def test_each_lane_is_pid_1_of_its_own_namespaces(two_lanes):
    nursery, (a, b) = two_lanes
    assert not a.fallback and not b.fallback, (a.fallback, b.fallback)
    assert a.proc is None and b.proc is None            # forked from the nursery, not a bubblewrap of their own
    for lane in (a, b):
        assert nspid(lane.root_pid)[-1] == 1 and len(nspid(lane.root_pid)) == 3
    for kind in ("pid", "net", "ipc", "mnt", "uts"):
        assert ns(a.root_pid, kind) != ns(b.root_pid, kind), kind
        assert ns(a.root_pid, kind) != ns(os.getpid(), kind), kind
    assert a.uid != b.uid or os.geteuid() != 0


def test_two_lanes_at_once_cannot_see_each_other(two_lanes):
    _, (a, b) = two_lanes
    first, second = student(a, "LANE-MARK-A"), student(b, "LANE-MARK-B")
    try:
        assert ask(first, "look", "LANE-MARK-B") == []
        assert ask(second, "look", "LANE-MARK-A") == []
        own = ask(first, "look", "LANE-MARK-A")
        assert own != [] and any(f.startswith("pty ") for f in own), own   # control: a lane finds its own things
        assert ask(first, "pids") == [1, first.proc.ns_pid]   # the lane's fork server and this submission only
        assert ask(first, "caps") == ["0000000000000000", "0000000000000000"]
    finally:
        first.cleanup()
        second.cleanup()


def test_the_students_process_runs_with_the_collector_on(two_lanes):
    """The nursery imports with Python's collector off and freezes what it imported (``inside.lane._warm``); the
    student's process, forked from it, collects its own garbage as any Python does."""
    _, (a, _) = two_lanes
    cells = ["import gc\ndef collector():\n    return [gc.isenabled(), gc.get_threshold()[0] > 0]\n"]
    process = StudentProcess(cells, a)
    try:
        report = process.start()
        assert all(cell.get("ok") for cell in report.cells), report.cells
        assert ask(process, "collector") == [True, True]
    finally:
        process.cleanup()


def test_a_lane_the_nursery_cannot_make_starts_on_its_own(monkeypatch):
    def refuse(*args, **kwargs):
        raise lanes.LaneError("no namespaces here")

    nursery = Nursery(True)
    monkeypatch.setattr(nursery, "new_lane", refuse)
    lane = lanes.Lane(True, 103, nursery=nursery)
    try:
        lane.start()
        assert lane.fallback == "no namespaces here" and lane.proc is not None   # its own bubblewrap
        process = student(lane, "LANE-MARK-C")
        try:
            assert ask(process, "look", "LANE-MARK-A") == []
            assert ask(process, "look", "LANE-MARK-C") != []
        finally:
            process.cleanup()
    finally:
        lane.close()
        nursery.close()


@pytest.mark.parametrize("own_namespace", [False, True], ids=["in-a-container", "initial-namespace"])
def test_a_non_root_lane_says_whether_it_keeps_submissions_apart(own_namespace, monkeypatch):
    """A non-root grader's sandboxed lane keeps each submission apart only with a user namespace of its own."""
    monkeypatch.setattr(bubblewrap, "own_user_namespace", lambda: own_namespace)
    with monkeypatch.context() as m:
        m.setattr(lanes.os, "geteuid", lambda: 1000)
        lane = lanes.Lane(True, 104)
    assert (lane.uid, bool(lane.isolation_gap)) == ((0, False) if own_namespace else (None, True)), lane.isolation_gap


def test_every_result_graded_without_that_says_so(monkeypatch):
    """Each result graded in a lane with an isolation gap lists it for the instructor (review), in Korean."""
    import nbformat

    from autograder import settings
    from autograder.grade import grade_notebook

    monkeypatch.setattr(lanes.Lane, "isolation_gap", property(lambda self: "GAP-REASON"))
    path = settings.ROOT / "solutions" / "quiz" / "quiz.ipynb"
    result = grade_notebook(nbformat.read(path, as_version=4), str(path))
    assert [r for r in result.review if r.startswith("격리:") and "GAP-REASON" in r], result.review


def test_what_is_mounted_below_tmp_stays_visible_in_a_lane(monkeypatch):
    """A checkout under /tmp has its virtual environment there: a lane must not hide it (a module the nursery did not
    import yet, e.g. matplotlib's Agg backend, is loaded from it on first use)."""
    tmp_path = Path(tempfile.mkdtemp(prefix="lane-venv-", dir="/tmp"))
    tmp_path.chmod(0o755)   # readable by the lane's uid, like a virtual environment
    (tmp_path / "lane_probe_module.py").write_text("VALUE = 42\n")
    roots = bubblewrap.python_roots
    monkeypatch.setattr(bubblewrap, "python_roots", lambda python: [*roots(python), tmp_path])
    nursery = Nursery(True).launch()
    lane = lanes.Lane(True, 104, nursery=nursery)
    try:
        lane.start(alone=False)
        assert lane.proc is None and not lane.fallback
        process = StudentProcess([f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nimport lane_probe_module\n"
                                  "V = lane_probe_module.VALUE\n"], lane)
        try:
            report = process.start()
            assert report.cells[0].get("ok"), report.cells
            assert process.calls.request({"op": "get", "target": "V"})["value"] == 42
        finally:
            process.cleanup()
    finally:
        lane.close()
        nursery.close()
        shutil.rmtree(tmp_path, ignore_errors=True)
