"""Notebook code run as a student's fresh kernel runs it, many times, without paying a fresh process's imports each
time.

``Kernels()`` starts one Python process that imports what every notebook imports (numpy, torch, keras, matplotlib:
``autograder.sandbox.inside.lane.WARM_MODULES``, as the sandbox's warm lanes do) and nothing else; ``run(sources)``
forks a child of it that runs the sources in order in one fresh namespace and says how they ended (``Outcome``).
Each child is a kernel that ran only the notebook: it holds no other test's threads, caches or garbage (in a process
that ran other tests, the growth of the resident memory that a notebook's memory check reads is not the kernel's),
and it inherits no torch thread (the server never runs a torch operation, so forking it is safe, as forking the
sandbox's warm lanes is; forking the test process itself hung). A fresh ``python`` per run gave the same verdicts and
spent about 7 s more CPU per run, importing torch, keras, matplotlib and the tests' own modules (the kv_cache graders'
test's nine runs: 100 s, here 37 s).

    with Kernels() as kernels:
        outcome = kernels.run([("<student 0>", "import numpy as np\\nx = np.ones(3)"),
                               ("<check>", "assert x.sum() == 3")])
        assert outcome.raised is None
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass
class Outcome:
    raised: str | None     # the exception's type name, None when every source ran to its end
    assertion: bool        # the exception is an AssertionError (a check that failed, not code that broke)
    message: str           # str() of the exception; a traceback for any other exception


class Kernels:
    """One warm server; ``run`` forks a fresh kernel of it per call. ``close`` (or the ``with`` block) stops it."""

    def __init__(self, timeout: float = 300):
        from autograder.sandbox.inside.lane import WARM_MODULES

        self.timeout = timeout
        self.log = tempfile.TemporaryFile(mode="w+")   # what the kernels print (the checks' ✅ lines, warnings)
        self.server = subprocess.Popen([sys.executable, "-m", "tests.helpers.kernels", *WARM_MODULES], cwd=ROOT,
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                       env={**os.environ, "KERAS_BACKEND": os.environ.get("KERAS_BACKEND", "torch")})

    def run(self, sources: list[tuple[str, str]]) -> Outcome:
        """Run ``sources`` ((file name, code) pairs) in order in one fresh namespace of a newly forked kernel."""
        self.server.stdin.write(json.dumps({"sources": sources, "timeout": self.timeout}) + "\n")
        self.server.stdin.flush()
        line = self.server.stdout.readline()   # the server answers every request; an empty line: it died
        assert line, f"the kernels' server ended (exit {self.server.poll()}): {self.output()[-4000:]}"
        reply = json.loads(line)
        assert "error" not in reply, f"{reply['error']}: {self.output()[-4000:]}"
        return Outcome(reply["raised"], reply["assertion"], reply["message"])

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def close(self) -> None:
        if self.server.poll() is None:
            self.server.stdin.close()
            try:
                self.server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()
        self.log.close()

    def __enter__(self) -> Kernels:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ----------------------------------------------------------------------------------------------- the server
def _kernel(sources, write_fd: int, timeout: float) -> None:
    """In the forked child: run the sources (killed by SIGALRM after ``timeout`` seconds), write how they ended to
    ``write_fd``."""
    import signal
    import traceback

    signal.alarm(max(1, int(timeout)))

    namespace: dict = {"__name__": "__student__"}
    try:
        for name, source in sources:
            exec(compile(source, name, "exec"), namespace)
        reply = {"raised": None, "assertion": False, "message": ""}
    except BaseException as exc:  # noqa: BLE001 - reported to the test, which judges it
        assertion = isinstance(exc, AssertionError)
        reply = {"raised": type(exc).__name__, "assertion": assertion,
                 "message": str(exc) if assertion else "".join(traceback.format_exception(exc))}
    data = json.dumps(reply).encode()
    while data:
        data = data[os.write(write_fd, data):]
    os.close(write_fd)


def _fork_and_run(sources, timeout: float) -> dict:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        code = 1
        try:
            _kernel(sources, write_fd, timeout)
            code = 0
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 1 << 16):
        chunks.append(chunk)
    os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    if not chunks:
        return {"error": f"the kernel ended without an answer (wait status {status})"}
    return json.loads(b"".join(chunks))


def serve(modules) -> None:
    """Import ``modules`` (the collector off meanwhile, then frozen, as the sandbox's lanes do), then answer one JSON
    request per line of stdin with one JSON line. The replies go to the real stdout; what kernels print goes to
    stderr."""
    import gc

    os.environ.setdefault("KERAS_BACKEND", "torch")
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)                                  # a kernel's print() must not reach the replies
    sys.stdout = os.fdopen(1, "w", buffering=1)
    gc.disable()
    try:
        for module in modules:
            __import__(module)
    finally:
        gc.freeze()
        gc.enable()
    for line in sys.stdin:
        request = json.loads(line)
        replies.write(json.dumps(_fork_and_run(request["sources"], request["timeout"])) + "\n")
        replies.flush()


if __name__ == "__main__":
    serve(sys.argv[1:])
