"""Helpers of the sandbox catalogue tests: hashes, lane processes, the test's servers, verdicts, nbgrader helpers."""
from __future__ import annotations

import hashlib
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import nbformat

from tests.sandbox.live import catalogue
from autograder import settings
from tests.helpers.course import change_setting
from autograder.sandbox import policy

ROOT = settings.ROOT
SEED = int(os.environ.get("SANDBOX_TEST_SEED", "20250505"))
ASSIGNMENT = catalogue.ASSIGNMENT
LANE_UIDS = range(61000, 61064)
# Shorter limits for the in-process gradings (the class under load uses the course's own timeouts).
SHORT_TIMEOUTS = {"cell": 5, "call": 2.5, "notebook": 90}
# What grading one catalogue entry may cost the grader, unless the entry states less (``Entry.max_seconds``,
# ``Entry.grader_mb``): the "at most a minute per submission" promise of the class run, and 1 GiB of the grading
# process's own memory above what it held before (the growth of its peak resident size, ``GraderPeak``; every entry
# of the catalogues on the old code but the two of issue 21 grew it by at most 8 MiB).
MAX_SECONDS = 60.0
GRADER_CEILING_MB = 1024.0


def bounds(entry) -> tuple[float, float]:
    """(seconds, MiB of grader memory) that grading ``entry`` may take: its own bounds, at most the catalogue's."""
    seconds = MAX_SECONDS if entry.max_seconds is None else min(entry.max_seconds, MAX_SECONDS)
    mb = GRADER_CEILING_MB if entry.grader_mb is None else min(entry.grader_mb, GRADER_CEILING_MB)
    return seconds, mb


# ----------------------------------------------------------------------------------------------- processes
def descendants(root: int | None = None) -> list[int]:
    """Every process below ``root`` (default: this one), found through /proc/<pid>/task/<tid>/children."""
    found, pending = [], [os.getpid() if root is None else root]
    while pending:
        pid = pending.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children") as fh:
                    children = [int(n) for n in fh.read().split()]
            except OSError:
                continue
            found += children
            pending += children
    return found


def lane_processes() -> list[int]:
    """Live (not zombie) processes below this one running as a lane's uid: student code still running.

    Only this process's own descendants count (other test runs on the same machine have lanes of their own)."""
    found = []
    for pid in descendants():
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        uid = int(fields.get("Uid", "0").split()[0])
        if uid in LANE_UIDS and not fields.get("State", "").strip().startswith("Z"):
            found.append(pid)
    return found


def wait_lane_quiet(seconds: float = 3.0) -> list[int]:
    """The lane processes still alive after up to ``seconds`` (a SIGKILL takes a moment to land)."""
    deadline = time.monotonic() + seconds
    while True:
        left = lane_processes()
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)



class CourseTimeouts:
    """The course's timeouts as the package reads them (``settings.load().timeouts``), changed for one test:
    ``timeouts["cell"] = 5`` or ``timeouts.update({...})`` replaces what ``settings.load()`` returns until the test
    ends (``monkeypatch``). Editing the raw ``COURSE`` dict would change nothing: the typed course is read once."""

    def __init__(self, monkeypatch):
        self.monkeypatch = monkeypatch

    def __getitem__(self, key: str):
        return getattr(settings.load().timeouts, key)

    def get(self, key: str, default=None):
        return getattr(settings.load().timeouts, key, default)

    def __setitem__(self, key: str, value) -> None:
        self.update({key: value})

    def update(self, values) -> None:
        change_setting(self.monkeypatch, "timeouts", **dict(values))


def entry_timeouts(entry, monkeypatch) -> None:
    """The entry's own timeouts (over the short ones), undone after the test."""
    CourseTimeouts(monkeypatch).update(dict(entry.timeouts))


class GraderPeak:
    """How much the peak resident memory of this process (the grader) grew inside ``with``, in MiB
    (``/proc/self/clear_refs`` resets the peak to the current size first)."""

    def __enter__(self):
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        self.before = _vm("VmRSS")
        return self

    def __exit__(self, *exc):
        self.mb = (_vm("VmHWM") - self.before) / 1024


def _vm(field: str) -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(field + ":"))


# ----------------------------------------------------------------------------------------------- hashes
def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tree_hashes(*roots) -> dict:
    """sha256 of every file under ``roots`` (bytecode caches excluded: Python rewrites them at will)."""
    out = {}
    for root in roots:
        root = Path(root)
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            if "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            out[str(path)] = sha256(path)
    return out



# ----------------------------------------------------------------------------------------------- servers
def _below_ephemeral_ports() -> tuple[socket.socket, int]:
    """A listening TCP socket on 127.0.0.1 at a port below the kernel's ephemeral range, and its port. Not port 0:
    the kernel would hand out a port another test's process just closed, which a client still reconnecting to it
    (a ZeroMQ socket of a finished Jupyter kernel's client retries every second) would then reach, and count."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(max(1024, low - 12000), low)
        try:
            return socket.create_server(("127.0.0.1", port)), port
        except OSError:
            continue
    raise RuntimeError("no free port below the ephemeral range")


def _socket_owner(inode: int) -> int | None:
    """The pid of a process holding the socket ``inode`` open, or None when none is found (gone, or not ours to see)."""
    needle = f"socket:[{inode}]"
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == needle:
                    return int(pid)
            except OSError:
                continue
    return None


def _tcp_client_inode(peer: tuple[str, int], port: int) -> int | None:
    """The inode of the client socket 127.0.0.1:peer-port -> 127.0.0.1:``port`` in /proc/net/tcp, or None."""
    want_local = f"0100007F:{peer[1]:04X}"
    want_remote = f"0100007F:{port:04X}"
    try:
        rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return None
    for row in rows:
        f = row.split()
        if f[1] == want_local and f[2] == want_remote and f[9] != "0":
            return int(f[9])
    return None


def _descends_from(pid: int, ancestor: int) -> bool:
    """Whether ``pid`` is ``ancestor`` or one of its descendants (the parent chain in /proc)."""
    for _ in range(256):
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False


class Servers:
    """A TCP and a UDP server on 127.0.0.1 and an abstract unix socket that answer with the token and count clients.

    ``connections`` counts the clients that may come from this test: a TCP or unix client held by a process outside
    this test process's tree and not running as a lane's account (another test running beside it, such as the
    hub's student scanning every listening port as an attacker would) is listed in ``outsiders`` instead. A client
    whose process cannot be named (already gone, or a UDP datagram) counts: the count errs towards "reached"."""

    def __init__(self, token: str):
        self.token = token
        self.connections = 0
        self.outsiders: list[str] = []
        self.tcp, self.port = _below_ephemeral_ports()
        self.unix_name = f"autograder-sandbox-test-{uuid.uuid4().hex[:8]}"
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind("\0" + self.unix_name)
        self.unix.listen()
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        self.stop = False
        self.threads = [threading.Thread(target=self._serve, args=(s,), daemon=True) for s in (self.tcp, self.unix)]
        self.threads.append(threading.Thread(target=self._serve_udp, daemon=True))
        for t in self.threads:
            t.start()

    def _client_pid(self, conn: socket.socket, peer) -> int | None:
        if conn.family == socket.AF_UNIX:
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            return struct.unpack("3i", creds)[0] or None
        inode = _tcp_client_inode(peer, self.port)
        return None if inode is None else _socket_owner(inode)

    def _serve(self, server):
        server.settimeout(0.2)
        while not self.stop:
            try:
                conn, peer = server.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            pid = self._client_pid(conn, peer)
            if pid is not None and not _descends_from(pid, os.getpid()) and _uid(pid) not in policy.LANE_UIDS:
                self.outsiders.append(f"pid {pid} ({_command(pid)})")
            else:
                self.connections += 1
            with conn:
                try:
                    conn.sendall(self.token.encode())
                except OSError:
                    pass

    def _serve_udp(self):
        self.udp.settimeout(0.2)
        while not self.stop:
            try:
                self.udp.recvfrom(512)
                self.connections += 1
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return

    def close(self):
        self.stop = True
        for s in (self.tcp, self.unix, self.udp):
            s.close()


def _uid(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return "?"


def own_connection_works(servers) -> bool:
    """The server really answers (from outside the sandbox): a refused attack means the sandbox refused it."""
    with socket.create_connection(("127.0.0.1", servers.port), timeout=2) as s:
        ok = servers.token.encode() in s.recv(256)
    servers.connections -= 1
    return ok


# ----------------------------------------------------------------------------------------------- verdicts
def judge(entry: catalogue.Entry, scores: dict, honest_scores: dict) -> dict:
    """Exercises whose score is not what it must be: 0 on the attacked ones, the honest score elsewhere."""
    wrong = {}
    spared = catalogue.spared(entry)
    for name, expected in honest_scores.items():
        got = scores.get(name)
        if name in entry.attacked:
            if got != 0:
                wrong[name] = (got, 0)
        elif name not in spared and got != expected:
            wrong[name] = (got, expected)
    return wrong


def describe(entry: catalogue.Entry, scores: dict, honest_scores: dict, wrong: dict) -> str:
    attacked = ", ".join(f"{n} {scores.get(n)}" for n in entry.attacked) or "nothing attacked"
    kept = [n for n in honest_scores if n not in entry.attacked and n not in wrong]
    text = f"{attacked}; {len(kept)}/{len(honest_scores) - len(entry.attacked)} others kept their score"
    if wrong:
        text += "; WRONG: " + ", ".join(f"{n} got {g} (must be {e})" for n, (g, e) in wrong.items())
    return text


# ----------------------------------------------------------------------------------------------- grading
def write_submission(nb, folder: Path) -> Path:
    """The submission as the student's file (graded from there, hashed before and after)."""
    path = Path(folder) / f"{ASSIGNMENT}.ipynb"
    nbformat.write(nb, str(path))
    return path


def grade_file(path: Path):
    """Grade a submitted file in this process, as `python -m autograder grade` does (no gradebook)."""
    from autograder.submission.notebook import collect_file
    from autograder.grade import grade_submission

    return grade_submission(collect_file(path, ASSIGNMENT), SEED)


# ----------------------------------------------------------------------------------------------- nbgrader path
def new_course(generated: Path, where: Path) -> Path:
    """A copy of the generated course with its own gradebook, pinned in its config (workers read no env)."""
    shutil.copytree(generated, where)
    with open(where / "nbgrader_config.py", "a") as fh:
        fh.write(f"\nc.CourseDirectory.db_url = 'sqlite:///{where / 'gradebook.db'}'\n"
                 f"c.HiddenGraders.seed = {SEED}\n")
    return where


def submit(course_dir: Path, student: str, content) -> Path:
    """Put a notebook node or raw bytes at submitted/<student>/attention/attention.ipynb."""
    folder = course_dir / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{ASSIGNMENT}.ipynb"
    if isinstance(content, (bytes, bytearray)):
        path.write_bytes(content)
    else:
        nbformat.write(content, str(path))
    return path


def cell_scores(course_dir: Path, student: str) -> dict:
    """``{exercise: score}`` of the grade cells of a student's autograded notebook in the gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        try:
            nb = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student)
        except MissingEntry:
            return {}
        return {g.name.removeprefix("test_"): g.score for g in nb.grades}


def gradebook_shape(course_dir: Path) -> dict:
    """What an attack on the gradebook's structure would change: grade cells, points, students."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        assignment = gb.find_assignment(ASSIGNMENT)
        cells = {c.name: c.max_score for n in assignment.notebooks for c in n.grade_cells}
        return {"max_score": assignment.max_score, "grade_cells": cells}


def expected_cell_scores(result) -> dict:
    """What nbgrader's gradebook holds for a result graded alone: each exercise's score, which WriteGradeCells
    writes into its cell."""
    return {e.name: e.score for e in result.exercises}


def feedback_pages(course_dir: Path, students) -> dict:
    """The students' feedback HTML that a class run with ``feedback=True`` made (nbgrader's ``GenerateFeedback`` in
    the workers), unescaped; "" where none was made."""
    import html

    out = {}
    for s in students:
        path = course_dir / "feedback" / s / ASSIGNMENT / f"{ASSIGNMENT}.html"
        out[s] = html.unescape(path.read_text(encoding="utf-8")) if path.exists() else ""
    return out


# ----------------------------------------------------------------------------------------------- the class under load
def first_mistake(exercise: str):
    from autograder.graders import registry

    return next(m for m in registry.mistakes_of(ASSIGNMENT) if m.exercise == exercise)


def honest_kinds(ctx) -> dict:
    """8 kinds of honest notebook: the solution, the blank release, three alternative implementations, two notebooks
    of known mistakes, a half-done notebook."""
    from tests.helpers import notebooks

    solution, release = ctx.solution, ctx.release
    partial = notebooks.with_code(release, {e: notebooks.solution_cells(solution)[e].source
                                            for e in ("softmax", "causal_mask", "split_heads", "merge_heads")})
    mistakes_a = [first_mistake("dot_product_attention"), first_mistake("causal_mask")]
    mistakes_b = [first_mistake("scaled_dot_product_attention"), first_mistake("split_heads")]
    return {
        "solution": solution,
        "blank": release,
        "torch": notebooks.with_all_code(solution, notebooks.implementation("attention_torch")),
        "kerasops": notebooks.with_all_code(solution, notebooks.implementation("attention_kerasops")),
        "numpy": notebooks.with_all_code(solution, notebooks.implementation("attention_numpy")),
        "mistakes_a": notebooks.with_code(solution, {m.exercise: m.source for m in mistakes_a}),
        "mistakes_b": notebooks.with_code(solution, {m.exercise: m.source for m in mistakes_b}),
        "partial": partial,
    }


class Probe(threading.Thread):
    """Starts `python -c pass` every second and records how long each took."""

    def __init__(self):
        super().__init__(daemon=True)
        self.times, self.stop = [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            start = time.perf_counter()
            try:
                subprocess.run([sys.executable, "-c", "pass"], timeout=120, check=True)
            except (subprocess.SubprocessError, OSError):
                pass
            self.times.append(time.perf_counter() - start)
            self.stop.wait(1.0)
