"""The grading core on a minimal notebook: sandboxed process, CLI contract, tampering from the trust boundary."""
import json
from dataclasses import replace

import numpy as np
import pytest

from tests.helpers import minimal
from autograder.grade import grade_notebook
from autograder.sandbox.errors import Failure, StudentCodeError
from autograder.sandbox import lanes
from autograder.messages import Reason
from autograder.sandbox.policy import Limits, Timeouts
from autograder.sandbox.process import StudentProcess


TIMEOUTS = Timeouts.from_course()


@pytest.fixture(scope="module")
def lane():
    """The lane every grading of this process uses (its nursery imports keras once)."""
    return lanes.shared()


def grade(nb, seed=7):
    return grade_notebook(nb, "attention.ipynb", "attention", seed=seed)


def scores(result):
    return {e.name: e.score for e in result.exercises}


# ------------------------------------------------------------------------------------------- the student process
def test_values_only_cross_the_boundary(lane):
    cells = ["import numpy as np",
             "class Liar:\n    def __eq__(self, other):\n        return True\n    __array_priority__ = 1000",
             "def liar():\n    return Liar()",
             "def objects():\n    return np.array([Liar()], dtype=object)",
             "def fine(x):\n    return x * 2"]
    with StudentProcess(cells, lane, timeouts=replace(TIMEOUTS, call=10)) as proc:
        proc.start()
        assert np.array_equal(proc.calls.call("fine", np.arange(3))["value"], [0, 2, 4])
        remote = proc.calls.call("liar")["value"]
        assert type(remote).__name__ == "Remote" and remote.type_name == "Liar"
        assert (remote == 1) is False
        with pytest.raises(StudentCodeError, match="숫자 배열"):
            proc.calls.call("objects")


def test_crash_timeout_and_restart(lane):
    cells = ["import os, time", "def die():\n    os._exit(3)", "def spin():\n    while True:\n        pass",
             "def ok():\n    return 1", "def leave():\n    raise SystemExit(0)"]
    with StudentProcess(cells, lane, timeouts=replace(TIMEOUTS, call=1)) as proc:
        proc.start()
        with pytest.raises(StudentCodeError) as crash:
            proc.calls.call("die")
        assert crash.value.kind is Failure.CRASHED
        with pytest.raises(StudentCodeError) as slow:
            proc.calls.call("spin")
        assert slow.value.kind is Failure.TIMEOUT
        with pytest.raises(StudentCodeError) as leave:
            proc.calls.call("leave")
        assert leave.value.kind is Failure.EXCEPTION
        assert proc.calls.call("ok")["value"] == 1
        assert proc.restarts == 1 and proc.calls.interrupted == 1   # the hung call was stopped, its process lived on


def test_cell_errors_do_not_stop_later_cells(lane):
    cells = ["import numpy as np", "raise ValueError('boom')", "def f():\n    return 3", "syntax error here("]
    with StudentProcess(cells, lane) as proc:
        report = proc.start()
        assert [c["ok"] for c in report.cells] == [True, False, True, False]
        assert proc.calls.call("f")["value"] == 3


def test_the_type_a_students_code_raised_is_data_not_text(lane):
    """A graded call that failed because the student's code raised carries the exception's type as data
    (``GradingFailure.raised``, from ``StudentCodeError.exception``): an AssertionError whose message reads
    "— ValueError: ..." is no ValueError (the kv_cache graders read the type out of the Korean message, which holds
    the student's own text, until issue 24)."""
    from autograder.graders.compare import GradingFailure
    from autograder.graders.kv_cache import raised
    from autograder.graders.plugin import Student

    cells = ["def softmax(x):\n    raise AssertionError('— ValueError: Hq % Hkv != 0')",    # forged
             "def layer_norm(x):\n    raise ValueError('Hq % Hkv != 0')"]                      # honest
    with StudentProcess(cells, lane) as proc:
        proc.start()
        student = Student(proc, cells)
        cases = (("softmax", "AssertionError", "ValueError"), ("layer_norm", "ValueError", "TypeError"))
        for name, error, other in cases:
            with pytest.raises(GradingFailure) as failed:
                getattr(student, name)(np.ones(3))
            assert raised(failed.value, error) and not raised(failed.value, other), failed.value.message


def test_cells_not_run_say_why_as_failed_cells_do(lane):
    """A cell the notebook's run never reached says why in the words of a cell that failed: ``timeout`` when the
    notebook's time ran out, ``crashed`` when the submission's restarts were used up (both said "Timeout")."""
    timeouts = replace(TIMEOUTS, cell=5, notebook=1)
    with StudentProcess(["import time\ntime.sleep(3)", "x = 1"], lane, timeouts=timeouts) as proc:
        cells = proc.start().cells
    assert [c["error"] for c in cells] == ["timeout", "timeout"], cells
    assert cells[1]["message"] == Reason.NOTEBOOK_TIMEOUT.korean(seconds=1)
    limits = replace(Limits.from_course(), total_restarts=0)
    with StudentProcess(["import os\nos._exit(3)", "x = 1"], lane, limits) as proc:
        cells = proc.start().cells
    assert [c["error"] for c in cells] == ["crashed", "crashed"], cells
    assert cells[1]["message"] == Reason.RESTART_LIMIT.korean(restarts=0)


# ------------------------------------------------------------------------------------------- the event pipe
# The forbidden-routine rule's run-time half (issue 13): the student's process reports each watched library routine
# on a pipe as it runs (inside.monitor.guard); the trusted side gives each request the routines that ran while it was in
# flight. These use the process alone, without graders.
EVENT_CELLS = [
    "import os, stat, threading\nimport numpy as np\nimport torch",
    "def uses_softmax(x):\n    return torch.softmax(torch.as_tensor(x), -1)",
    "def own_softmax(x):\n    e = np.exp(x - x.max(-1, keepdims=True))\n    return e / e.sum(-1, keepdims=True)",
    "def in_a_thread(x):\n    box = {}\n    t = threading.Thread(target=lambda: box.update(y=uses_softmax(x)))\n"
    "    t.start()\n    t.join()\n    return box['y']",
    # the event pipe is the last write-only pipe this process holds (request, response, events arrive in order)
    "def _write_pipe(fd):\n    try:\n        mode = os.fstat(fd).st_mode\n    except OSError:\n        return False\n"
    "    return stat.S_ISFIFO(mode) and open(f'/proc/self/fdinfo/{fd}').read().split()[3][-1] == '1'",
    "def _event_fd():\n    return max(fd for fd in map(int, os.listdir('/proc/self/fd')) if _write_pipe(fd))",
    "def close_pipe(x):\n    os.close(_event_fd())\n    return uses_softmax(x)",
    "def swap_pipe(x):\n    fd = _event_fd()\n    keep = os.dup(fd)\n"
    "    os.dup2(os.open('/dev/null', os.O_WRONLY), fd)\n"
    "    return uses_softmax(x)",
]


def test_events_belong_to_the_call_in_flight(lane):
    with StudentProcess(EVENT_CELLS, lane, timeouts=replace(TIMEOUTS, call=20)) as proc:
        proc.start()
        x = np.arange(6.0).reshape(2, 3)
        assert proc.calls.call("uses_softmax", x)["events"] == ["torch:softmax"]
        assert proc.calls.call("own_softmax", x)["events"] == []
        assert proc.calls.call("in_a_thread", x)["events"] == ["torch:softmax"]


def test_closing_the_event_pipe_is_tampering(lane):
    with StudentProcess(EVENT_CELLS, lane, timeouts=replace(TIMEOUTS, call=20)) as proc:
        proc.start()
        with pytest.raises(StudentCodeError) as closed:
            proc.calls.call("close_pipe", np.ones(3))
        assert closed.value.kind is Failure.TAMPERED, closed.value.message
        with pytest.raises(StudentCodeError) as later:   # the rest of the submission is lost with it
            proc.calls.call("own_softmax", np.ones(3))
        assert later.value.kind is Failure.TAMPERED


def test_a_replaced_event_pipe_stops_the_kernels(lane):
    with StudentProcess(EVENT_CELLS, lane, timeouts=replace(TIMEOUTS, call=20)) as proc:
        proc.start()
        with pytest.raises(StudentCodeError, match="채점 기록 통로"):
            proc.calls.call("swap_pipe", np.ones(3))


# ------------------------------------------------------------------------------------------- CLI contract
def test_cli_json_and_exit_codes(tmp_path, capsys):
    """The grade command's contract, in this process (``cli.main``: what ``python -m autograder grade`` runs;
    tests/test_cli.py runs the command itself): JSON on stdout with the table on stderr, a JSON file, --fail-under's
    exit status 1, a file that is no notebook exit status 2."""
    from autograder import cli

    path = minimal.write(minimal.notebook(), tmp_path / "attention.ipynb")
    code = cli.main(["grade", str(path), "--json", "-", "--seed", "5", "--fail-under", "4"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["seed"] == 5 and data["assignment"] == "attention" and data["notebook"] == "attention.ipynb"
    assert data["score"] == 5 and data["max_score"] == 27  # the minimal notebook has 2 of the 12 exercises
    sdpa = next(e for e in data["exercises"] if e["name"] == "scaled_dot_product_attention")
    # the contract's four fields, and the test's seconds (JUnit's and Gradescope's per-test time)
    assert sdpa["score"] == 3 and all(set(t) == {"name", "passed", "points", "message", "seconds"}
                                      for t in sdpa["tests"])
    assert "softmax" in err  # the table goes to stderr when JSON goes to stdout

    result = tmp_path / "result.json"
    code = cli.main(["grade", str(path), "--json", str(result), "--seed", "5", "--fail-under", "6"])
    assert code == 1 and json.loads(result.read_text())["score"] == 5
    assert "below --fail-under 6: exit status 1" in capsys.readouterr().err

    (tmp_path / "bad.ipynb").write_text("{ not json")
    assert cli.main(["grade", str(tmp_path / "bad.ipynb")]) == 2
    assert "not a Jupyter notebook" in capsys.readouterr().err


def test_seed_reproduces_inputs():
    wrong = minimal.SDPA.replace("/ np.sqrt(query.shape[-1])", "/ query.shape[-1]")
    first = grade(minimal.notebook(sdpa=wrong), seed=11)
    again = grade(minimal.notebook(sdpa=wrong), seed=11)
    messages = lambda r: [t.message for e in r.exercises for t in e.tests]  # noqa: E731
    assert first.seed == again.seed == 11 and messages(first) == messages(again)


# ------------------------------------------------------------------------------------------- tampering (issue 2)
ZEROS = '''def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    return np.zeros(query.shape[:-1] + (value.shape[-1],))
'''

TAMPERING = {
    "patched_allclose": "np.allclose = lambda *a, **k: True\n"
                        "np.isclose = lambda a, b, **k: np.ones(np.shape(a), bool)\n"
                        "import numpy.testing\nnumpy.testing.assert_allclose = lambda *a, **k: None\n" + ZEROS,
    "always_equal": "class Equal:\n    def __eq__(self, other):\n        return True\n"
                    "    def __array__(self, *a, **k):\n"
                    "        raise TypeError('no')\n"
                    "def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):\n"
                    "    return Equal()\n",
    "input_transformer": "ip = get_ipython()\n"
                         "ip.input_transformers_cleanup.append(lambda lines: ['pass\\n'])\n" + ZEROS,
    "prints_score": "print(3.0)\nfrom IPython.display import display\ndisplay(3.0)\n" + ZEROS,
    "fake_autograder": "import sys, types\nfake = types.ModuleType('autograder')\nfake.grade = lambda *a, **k: 100\n"
                       "sys.modules['autograder'] = fake\nsys.modules['autograder.graders'] = fake\n" + ZEROS,
}


@pytest.mark.parametrize("attack", list(TAMPERING))
def test_tampering_gives_no_points(attack):
    result = grade(minimal.notebook(sdpa=TAMPERING[attack]))
    got = scores(result)
    assert (got["scaled_dot_product_attention"], got["softmax"]) == (0, 2), attack


def test_demo_only_cells_are_not_run_by_grading():
    """A cell tagged demo-only (e.g. training a model) is skipped; the tag on an nbgrader cell changes nothing."""
    from nbformat.v4 import new_code_cell, new_notebook

    from autograder.submission.notebook import collect

    demo = new_code_cell("train()", metadata={"tags": ["demo-only"]})
    solution = new_code_cell("def softmax(x, axis=-1): pass", metadata={
        "tags": ["demo-only"], "nbgrader": {"solution": True, "grade": False, "grade_id": "solution_softmax"}})
    plain = new_code_cell("x = 1")
    submission = collect(new_notebook(cells=[demo, solution, plain]), "attention.ipynb", "attention")
    assert submission.code_cells == ["def softmax(x, axis=-1): pass", "x = 1"]
    assert submission.code_indices == [1, 2]


# ------------------------------------------------------------------------------------------- review list
def test_review_lists_escape_hatches_and_not_honest_code():
    """The instructor's review list names what the sandbox cannot block (signal handlers, copied library source,
    kernels registered over the guard's), wherever in the notebook it is; honest notebooks have none."""
    from tests.helpers import notebooks
    from autograder.submission.notebook import collect
    from autograder.graders.review import review_items

    for assignment in ("attention", "kv_cache", "decoder", "modern", "quiz"):
        assert review_items(collect(notebooks.solution_notebook(assignment), "x.ipynb", assignment).code_cells) == []
    cells = ["import signal\nsignal.signal(signal.SIGALRM, lambda sig, frame: frame.f_back)",
             "import inspect, keras\nexec(inspect.getsource(keras.layers.Attention._calculate_scores))",
             "import torch\nlib = torch.library.Library('aten', 'IMPL')"]
    cells.append("import types\nf = types.FunctionType(g.__code__.replace(co_firstlineno=9), {})\n"
                 "m = types.MethodType(f, object())")
    cells.append("import torch\nf = torch.jit.trace(layer, (x,))")   # TorchScript runs no Python frame
    items = review_items(cells)
    for cell, name in [(1, "signal"), (1, "f_back"), (2, "getsource"), (2, "_calculate_scores"), (3, "Library"),
                       (4, "FunctionType"), (4, "code.replace"), (4, "MethodType"), (4, "__code__"), (5, "jit")]:
        assert any(item.startswith(f"{cell}번째 코드 셀: `{name}`") for item in items), (cell, name, items)
    assert review_items(["text = 'a'.replace('a', 'b')"]) == []          # str.replace is not code.replace


def test_review_lists_the_students_cells_that_ran_a_library_routine():
    """A student's cell (not one of the release's given cells) that ran a watched routine outside any graded call is
    listed with the routines; given cells and cells that ran none are not."""
    from autograder.graders.review import notebook_time_items

    items = notebook_time_items({0: {"torch:causal_mask"}, 1: {"torch:softmax"}, 2: set(), 7: {"torch:softmax"}},
                                ["table = masks()", "given()", "x = 1"], given={"given()"})
    assert len(items) == 1 and items[0].startswith("1번째 코드 셀:") and "torch:causal_mask" in items[0]


def test_review_lists_what_the_students_process_reported():
    """What the monitor's audit hook reported while the code ran (names built from strings are seen there) is in
    the review list, in Korean, once each; an unknown report is listed as it came."""
    from autograder.graders.review import runtime_review_items

    items = runtime_review_items({"function.__new__", "code.__new__", "function.__code__"})
    assert [item.split("`")[1] for item in items] == ["types.CodeType / code.replace", "__code__ =",
                                                      "types.FunctionType"]
    assert all(item.startswith("실행 중: ") for item in items)
    assert runtime_review_items(set()) == [] and "odd.thing" in runtime_review_items({"odd.thing"})[0]
