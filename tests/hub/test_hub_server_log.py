"""Each user's server log (autograder/hub/server_log.py), without a hub: the pipe a server writes into, read by the
hub's thread into a capped file, with repeated and rapid lines dropped and counted."""
from __future__ import annotations

import os

from autograder.hub import server_log
from autograder.hub.server_log import ServerLog


def written(log: ServerLog, *chunks: bytes) -> str:
    """``chunks`` written into the log's pipe as a server would, the pipe closed; what the log file holds."""
    fd = os.dup(log.fd)
    log.started()
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view):]
    os.close(fd)
    log.thread.join(30)
    assert not log.thread.is_alive()
    return log.path.read_text()


def test_a_flood_of_repeated_lines_is_counted_not_kept(tmp_path):
    """50 MiB of one repeated line after a forged line, all within one instant (the clock stands still): the forged
    line is in the log (it is the student's own log), the repeats are counted up to the burst, the rest counted as
    dropped, every line accounted for; the file stays a few hundred bytes."""
    log = ServerLog(tmp_path / "student1.log", 1 << 20, clock=lambda: 0.0)
    flood = (b"x" * 99 + b"\n") * 10_000
    text = written(log, b"POST /hub/api/users/instructor1/server\n", *[flood] * 53)
    lines = text.splitlines()
    assert lines[0] == "POST /hub/api/users/instructor1/server" and lines[1] == "x" * 99, lines[:3]
    repeats = sum(int(line.split()[5]) for line in lines if "the line above" in line)
    dropped = sum(int(line.split()[2]) for line in lines if "lines dropped" in line)
    assert (repeats, dropped) == (server_log.BURST - 2, 530_000 - server_log.BURST + 1), text
    assert len(text) < 1000, text


def test_the_log_keeps_at_most_twice_its_size(tmp_path):
    """Distinct lines at the rate allowed: past ``max_bytes`` the file becomes ``.1`` and a new one starts; the last
    lines are in the new file, the oldest are gone."""
    clock = [0.0]
    log = ServerLog(tmp_path / "student1.log", 1000, clock=lambda: clock[0])
    fd = os.dup(log.fd)
    log.started()
    for i in range(100):
        clock[0] += 1.0                                   # a line a second: never over the rate
        os.write(fd, f"line {i:03d} {'y' * 40}\n".encode())
    os.close(fd)
    log.thread.join(30)
    current, previous = log.path, log.path.with_name("student1.log.1")
    assert current.stat().st_size <= 1000 and previous.stat().st_size <= 1000
    assert "line 099" in current.read_text() and "line 000" not in current.read_text() + previous.read_text()


def test_a_long_line_is_cut(tmp_path):
    log = ServerLog(tmp_path / "student1.log", 1 << 20)
    text = written(log, b"a" * 100_000, b"b" * 100_000 + b"\nshort\n")
    first, second = text.splitlines()
    assert first == "a" * server_log.LINE_BYTES + " [...]" and second == "short"
