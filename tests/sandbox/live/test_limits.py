"""Every limit of ``course_config.py`` is set here and seen enforced (issue 24): each field of ``policy.Timeouts``
(``COURSE["timeouts"]``) and of ``policy.Limits`` (``COURSE["sandbox"]``) has a test in ``ENFORCED`` that gives it a
small value and watches grading stop at it; a field without one fails ``test_every_limit_has_a_test``.

Cheap on purpose: one lane of this test process (its nursery imports keras once), tiny cells, limits of a second or
less. The class run's ``kill_grace`` is the one limit seen in a class run (``test_faults.py``, which sets it).
"""
from __future__ import annotations

import os
import signal
import time
import types
from dataclasses import fields, replace
from types import SimpleNamespace

import nbformat
import numpy as np
import pytest

from autograder import settings
from autograder.graders import isolation
from autograder.graders.compare import GradingFailure
from autograder.graders.plugin import Student
from autograder.messages import Reason
from autograder.sandbox import bubblewrap, lanes
from autograder.sandbox.errors import Failure, StudentCodeError
from autograder.sandbox.nursery import Nursery
from autograder.sandbox.policy import Limits, Timeouts
from autograder.sandbox.process import StudentProcess
from autograder.sandbox.warm import LaneError

TIMEOUTS, LIMITS = Timeouts.from_course(), Limits.from_course()

# Each limit -> the test that sets it and sees it enforced (``module::test`` when it is not in this module).
ENFORCED = {
    "cell": "test_cell", "notebook": "test_notebook", "call": "test_call", "interrupt_grace": "test_interrupt_grace",
    "call_floor": "test_call_floor_and_call_small", "call_small": "test_call_floor_and_call_small",
    "exercise": "test_exercise", "calls": "test_calls", "submission": "test_submission", "names": "test_names",
    "grace": "test_grace", "kill_grace": "test_faults.py::test_a_stalled_grader_never_stalls_the_class",
    "imports": "test_imports", "lane_request": "test_lane_request", "validate": "test_validate",
    "execute": "test_execute", "validate_total": "test_validate",
    "allow_unsandboxed": "test_allow_unsandboxed", "memory_mb": "test_memory_mb", "cpu_seconds": "test_cpu_seconds",
    "max_processes": "test_max_processes", "file_size_mb": "test_file_size_mb", "output_kb": "test_output_kb",
    "notebook_output_kb": "test_notebook_output_kb", "total_restarts": "test_total_restarts",
    "scratch_mb": "test_scratch_mb", "scratch_files": "test_scratch_files", "reply_mb": "test_reply_mb",
    "answer_mb": "test_answer_mb",
}


def test_every_limit_has_a_test():
    """Every field of both records is in ``ENFORCED``, and each test named there exists."""
    assert set(ENFORCED) == {f.name for record in (Timeouts, Limits) for f in fields(record)}
    here = os.path.dirname(__file__)
    for name in set(ENFORCED.values()):
        module, _, test = name.rpartition("::")
        source = open(os.path.join(here, module)).read() if module else open(__file__).read()
        assert f"def {test}(" in source, name


@pytest.fixture(scope="module")
def lane():
    """This process's lane, started (its start, the nursery's imports, is no test's time)."""
    shared = lanes.shared()
    if not shared.alive:
        shared.start()
    return shared


def run(lane, cells, limits=LIMITS, capture=False, **timeouts):
    """The cells' statuses, run in a process of ``lane`` with ``limits`` and ``timeouts`` (over the course's)."""
    with StudentProcess(cells, lane, limits, replace(TIMEOUTS, **timeouts), capture=capture) as process:
        return process.start().cells


# ----------------------------------------------------------------------------------------------- time limits
def test_cell(lane):
    start = time.monotonic()
    cells = run(lane, ["import time\ntime.sleep(5)", "x = 1"], cell=0.5)
    assert [c["ok"] for c in cells] == [False, True] and cells[0]["error"] == "timeout", cells
    assert time.monotonic() - start < 5


def test_notebook(lane):
    start = time.monotonic()
    cells = run(lane, ["import time\ntime.sleep(5)", "x = 1"], cell=5, notebook=1)
    assert [c["ok"] for c in cells] == [False, False], cells
    assert cells[1]["message"] == Reason.NOTEBOOK_TIMEOUT.korean(seconds=1)
    assert time.monotonic() - start < 5


def test_names(lane):
    """Listing the names the notebook defined calls none of the student's code (a global named by a ``str`` subclass
    whose ``startswith`` and comparisons hang is left out at once), and has its own limit (a thread that holds the
    interpreter for seconds at a time holds it up)."""
    slow = ("import time\nclass Slow(str):\n    def __lt__(self, other):\n        time.sleep(10)\n        return True\n"
            "    startswith = __lt__\nglobals()[Slow('b')] = globals()[Slow('a')] = 1\nx = 1")
    start = time.monotonic()
    with StudentProcess([slow], lane, timeouts=replace(TIMEOUTS, names=0.5)) as process:
        names = process.start().names
    assert "x" in names and "Slow" in names and not {"a", "b"} & set(names), names
    assert time.monotonic() - start < 5
    # a process that does not answer (stopped by this test as the names are asked) holds the step up to its limit
    exchange = StudentProcess.exchange

    def stopped_first(self, header, *args, **kwargs):
        if header.get("op") == "names":
            os.kill(self.connection.proc.pid, signal.SIGSTOP)
        return exchange(self, header, *args, **kwargs)

    start = time.monotonic()
    with StudentProcess(["x = 1"], lane, timeouts=replace(TIMEOUTS, names=0.5)) as process:
        process.exchange = types.MethodType(stopped_first, process)
        with pytest.raises(StudentCodeError) as stopped:
            process.start()
    grace = TIMEOUTS.interrupt_grace
    assert stopped.value.kind is Failure.TIMEOUT and stopped.value.message == Reason.WAIT_TIMEOUT.korean(
        seconds=0.5 + grace, what="names")
    assert time.monotonic() - start < 8


# exercises of the registry (a grader may call only those), written to spin, to block their alarm, to sleep, to
# return at once
SLOW = ["import time, signal", "def softmax(x=None):\n    while True:\n        pass",
        "def layer_norm(x=None):\n    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})\n"
        "    while True:\n        pass",
        "def apply_rope(x=None):\n    time.sleep(0.5)\n    return 1", "def causal_mask(x=None):\n    return 2"]


def test_call(lane):
    with StudentProcess(SLOW, lane, timeouts=replace(TIMEOUTS, call=0.5)) as process:
        process.start()
        start = time.monotonic()
        with pytest.raises(StudentCodeError) as stopped:
            process.calls.call("softmax")
        assert stopped.value.message == Reason.CALL_TIMEOUT.korean(seconds=0.5)
        assert time.monotonic() - start < 0.5 + TIMEOUTS.interrupt_grace + 2 and process.calls.interrupted == 1


def test_interrupt_grace(lane):
    """A call that blocks its alarm is killed ``interrupt_grace`` after its limit (not before)."""
    with StudentProcess(SLOW, lane, timeouts=replace(TIMEOUTS, call=0.3, interrupt_grace=1.5)) as process:
        process.start()
        start = time.monotonic()
        with pytest.raises(StudentCodeError):
            process.calls.call("layer_norm")
        waited = time.monotonic() - start
        assert 0.3 + 1.5 <= waited < 0.3 + 1.5 + 2, waited
        assert process.calls.interrupted == 0 and process.proc is None   # killed, not stopped by its alarm


def graded(lane, **timeouts):
    process = StudentProcess(SLOW, lane, timeouts=replace(TIMEOUTS, **timeouts))
    process.start()
    return process, Student(process, SLOW)


def failure(call) -> str:
    with pytest.raises(GradingFailure) as failed:
        call()
    return failed.value.message


def test_call_floor_and_call_small(lane):
    """A call with at most ``call_small`` numbers gets ``call_floor``, a bigger one ``call``."""
    process, student = graded(lane, call=1.5, call_floor=0.3, call_small=100)
    with process:
        assert failure(lambda: student.softmax(np.ones(10))) == "`softmax`: " + Reason.CALL_TIMEOUT.korean(seconds=0.3)
        assert failure(lambda: student.layer_norm(np.ones(1000))) == (
            "`layer_norm`: " + Reason.CALL_TIMEOUT.korean(seconds=1.5))


def test_exercise(lane):
    """All small calls of one function share ``exercise`` seconds; other functions keep theirs."""
    process, student = graded(lane, exercise=0.3, calls=30, call_floor=2)
    with process:
        # cut to what was left of its budget
        assert failure(student.apply_rope).startswith("`apply_rope`: 제한 시간 0.")
        assert student.causal_mask() == 2
        assert failure(student.apply_rope) == Reason.EXERCISE_TIME_SPENT.korean(name="apply_rope", budget=0.3)


def test_calls(lane):
    """All calls of one submission share ``calls`` seconds."""
    process, student = graded(lane, exercise=30, calls=0.3, call_floor=2)
    with process:
        assert failure(student.apply_rope).startswith("`apply_rope`: 제한 시간 0.")
        assert failure(student.causal_mask) == Reason.CALLS_TIME_SPENT.korean(name="causal_mask", budget=0.3)


def test_submission(lane):
    """After ``submission`` seconds of grading no call starts (``grade_submission``: ``grade_within``)."""
    process, student = graded(lane, submission=0.5)
    with process:
        process.grade_within(process.timeouts.submission)
        assert student.causal_mask() == 2
        time.sleep(0.6)
        assert failure(student.causal_mask) == "`causal_mask`: " + Reason.SUBMISSION_TIMEOUT.korean()


def test_grace(monkeypatch, course_setting):
    """A class run grades a submission as blank after ``notebook + submission + grace`` (its worker's alarm)."""
    from autograder.gradebook import worker

    course_setting("timeouts", notebook=0.2, submission=0.2, grace=0.4)
    monkeypatch.setattr(worker, "_API", SimpleNamespace(autograde=lambda *a, **k: time.sleep(30)))
    start = time.monotonic()
    ok, _, over = worker._autograde_within("attention", "student", worker.submission_limit())
    assert worker.submission_limit() == pytest.approx(0.8) and over and not ok
    assert time.monotonic() - start < 5


def test_imports():
    """The nursery that has not imported keras within ``imports`` seconds is given up (lanes start on their own)."""
    nursery = Nursery(bubblewrap.sandboxed(), timeouts=replace(TIMEOUTS, imports=0.05)).launch()
    try:
        start = time.monotonic()
        with pytest.raises(LaneError, match="did not start"):
            nursery.new_lane(0)
        assert time.monotonic() - start < 5 and not nursery.usable
    finally:
        nursery.close()


def test_lane_request(lane):
    """A lane whose fork server does not answer within ``lane_request`` seconds is a ``LaneError``."""
    stalled = lanes.Lane(lane.sandboxed, 90, timeouts=replace(TIMEOUTS, lane_request=0.5), nursery=lane.nursery)
    try:
        stalled.start()
        os.kill(stalled.root_pid, signal.SIGSTOP)
        start = time.monotonic()
        with pytest.raises(LaneError, match="stopped answering"):
            stalled.reap()
        assert time.monotonic() - start < 5
    finally:
        if stalled.root_pid is not None:
            os.kill(stalled.root_pid, signal.SIGCONT)
        stalled.close()


def sleeping_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import time\ntime.sleep(30)")])
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def executed_within(config, tmp_path) -> float:
    """Run nbgrader's Execute (``config``) on a notebook whose cell sleeps 30 s: seconds until it was stopped."""
    from nbgrader.preprocessors import Execute

    start = time.monotonic()
    nb, _ = Execute(config=config).preprocess(sleeping_notebook(), {"metadata": {"path": str(tmp_path)}})
    assert any(o.get("ename") == "CellTimeoutError" for o in nb.cells[0].outputs), nb.cells[0].outputs
    return time.monotonic() - start


def test_execute(tmp_path):
    """``execute`` is nbgrader's Execute's limit (generate_solution, Validate) in the course's nbgrader config."""
    from traitlets.config.loader import PyFileConfigLoader

    for name in ("course_config.py", "nbgrader_config.py"):
        text = (settings.ROOT / name).read_text()
        (tmp_path / name).write_text(text.replace('"execute": 120,', '"execute": 1,'))
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    assert config.Execute.timeout == 1
    assert executed_within(config, tmp_path) < 20


def test_validate(tmp_path, monkeypatch, course_setting):
    """``validate`` is Execute's limit in the nbgrader config the hub writes for every user (Validate on the hub);
    ``validate_total`` is Validate's limit in all there, which its process reads at every Validate
    (tests/hub/test_hub_validate.py: it is what stops an endless loop)."""
    from traitlets.config.loader import PyFileConfigLoader

    from autograder.hub import lab_validate, provision

    course_setting("timeouts", validate=1, validate_total=7)
    monkeypatch.setenv("USER", os.environ.get("USER", "root"))   # ngshare_exchange reads it when imported
    layout = SimpleNamespace(nbgrader_config=tmp_path / "nbgrader_config.py", course_id="limits",
                             exchange_url="http://127.0.0.1:9/services/ngshare")
    provision.global_config(layout)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    assert config.Execute.timeout == 1
    assert lab_validate.limit_of(config) == 7
    assert lab_validate.limit_of(type(config)()) == lab_validate.DEFAULT_LIMIT_S       # a config without it
    assert executed_within(config, tmp_path) < 20


# ----------------------------------------------------------------------------------------------- resource limits
def test_allow_unsandboxed(monkeypatch, course_setting):
    monkeypatch.setattr(bubblewrap, "probe", lambda: "no bubblewrap here")
    course_setting("sandbox", allow_unsandboxed=False)
    with pytest.raises(bubblewrap.SandboxUnavailable, match="no bubblewrap here"):
        bubblewrap.sandboxed()
    course_setting("sandbox", allow_unsandboxed=True)
    assert bubblewrap.sandboxed() is False


def test_memory_mb(lane):
    """The process already holds about 0.8 GiB of address space (numpy, torch and keras, forked from the lane)."""
    cells = run(lane, ["small = bytearray(64 << 20)", "big = bytearray(1 << 30)"], replace(LIMITS, memory_mb=1536))
    assert [c["ok"] for c in cells] == [True, False] and cells[1]["error"] == "MemoryError", cells


def test_cpu_seconds(lane):
    """Past its CPU time the process ends with SIGXCPU, which the student reads as such (not as an unexplained
    SIGKILL: the hard limit is a second later)."""
    start = time.monotonic()
    cells = run(lane, ["while True:\n    pass", "x = 1"], replace(LIMITS, cpu_seconds=1), cell=10)
    assert cells[0]["error"] == "crashed" and cells[0]["message"] == Reason.CPU_TIME.korean(), cells
    assert cells[1]["ok"], cells
    assert time.monotonic() - start < 9


def test_max_processes(lane):
    threads = ("import threading\nfailed = 0\nfor _ in range(4):\n    try:\n"
               "        threading.Thread(target=lambda: None).start()\n    except RuntimeError:\n        failed += 1\n"
               "assert failed, 'every thread started'")
    if os.geteuid() != 0:
        pytest.skip("RLIMIT_NPROC counts every process of the grading account's uid when it grades without root")
    assert [c["ok"] for c in run(lane, [threads], replace(LIMITS, max_processes=1))] == [True]


def test_file_size_mb(lane):
    cells = run(lane, ["open('f', 'wb').write(bytes(512 << 10))", "open('g', 'wb').write(bytes(2 << 20))"],
                replace(LIMITS, file_size_mb=1))
    assert [c["ok"] for c in cells] == [True, False] and "File too large" in cells[1]["message"], cells


def test_output_kb(lane):
    cells = run(lane, ["print('x' * 5000)"], replace(LIMITS, output_kb=1), capture=True)
    text = cells[0]["outputs"][0]["text"]
    assert text.startswith("x" * 1024) and "x" * 1025 not in text and "자 생략" in text, text[-200:]


def test_notebook_output_kb(lane):
    cells = run(lane, ["print('a' * 900)", "print('b' * 900)", "print('c' * 900)"],
                replace(LIMITS, output_kb=1, notebook_output_kb=2), capture=True)
    assert [c["outputs"][0]["text"][0] for c in cells] == ["a", "b", Reason.OUTPUT_ELIDED.korean()[0]], cells


def test_total_restarts(lane):
    with StudentProcess(["import os", "def die():\n    os._exit(3)"], lane, replace(LIMITS, total_restarts=2)) as p:
        p.start()
        for _ in range(3):
            with pytest.raises(StudentCodeError):
                p.calls.call("die")
            p.calls.broken.clear()   # called again, as another grader would after its own call
        with pytest.raises(StudentCodeError) as used_up:
            p.calls.call("die")
        assert p.restarts == 2 and used_up.value.message == Reason.RESTART_LIMIT.korean(restarts=2)


def test_scratch_mb(lane):
    cells = run(lane, ["open('a', 'wb').write(bytes(512 << 10))", "open('b', 'wb').write(bytes(1 << 20))"],
                replace(LIMITS, scratch_mb=1))
    assert [c["ok"] for c in cells] == [True, False] and "No space left" in cells[1]["message"], cells


def test_scratch_files(lane):
    cells = run(lane, ["for i in range(4):\n    open(f'f{i}', 'w').close()",
                       "for i in range(40):\n    open(f'g{i}', 'w').close()"], replace(LIMITS, scratch_files=16))
    assert [c["ok"] for c in cells] == [True, False] and "No space left" in cells[1]["message"], cells


def test_reply_mb(lane):
    cells = ["import numpy as np", "def big():\n    return np.zeros(300_000)",
             "def small():\n    return np.zeros(1000)"]
    with StudentProcess(cells, lane, replace(LIMITS, reply_mb=1)) as process:
        process.start()
        assert process.calls.call("small")["value"].shape == (1000,)
        with pytest.raises(StudentCodeError) as refused:
            process.calls.call("big")
        assert refused.value.kind is Failure.PROTOCOL and refused.value.code is Reason.REPLY_TOO_BIG


def test_answer_mb(lane, course_setting):
    """A proxy's question whose answer needs more than ``answer_mb`` is refused before it is computed."""
    course_setting("sandbox", answer_mb=1)
    cells = ["import numpy as np", "def softmax(x, axis=-1):\n    return x",
             "def asks(n):\n    return softmax(np.ones((n, n)))"]
    with StudentProcess(cells, lane) as process:
        process.start()
        answers = isolation.Answers(["softmax"])
        process.calls.graded_call("asks", (100,), {}, isolate=["softmax"], answer=answers)
        assert not answers.refused
        with pytest.raises(StudentCodeError):
            process.calls.graded_call("asks", (1000,), {}, isolate=["softmax"], answer=answers)
        assert answers.refused and "1 MiB" in answers.refused[-1], answers.refused
