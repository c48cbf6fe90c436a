"""The grading core on a minimal notebook: sandboxed process, CLI contract, tampering from the trust boundary."""
import json
import subprocess
import sys

import numpy as np
import pytest

import minimal
from autograder.grade import grade_notebook
from autograder.sandbox.runner import StudentCodeError, StudentProcess


def grade(nb, seed=7):
    return grade_notebook(nb, "attention.ipynb", "attention", seed=seed)


def scores(result):
    return {e.name: e.score for e in result.exercises}


# ------------------------------------------------------------------------------------------- the student process
def test_values_only_cross_the_boundary():
    cells = ["import numpy as np",
             "class Liar:\n    def __eq__(self, other):\n        return True\n    __array_priority__ = 1000",
             "def liar():\n    return Liar()",
             "def objects():\n    return np.array([Liar()], dtype=object)",
             "def fine(x):\n    return x * 2"]
    with StudentProcess(cells, call_timeout=10) as proc:
        proc.start()
        assert np.array_equal(proc.call("fine", np.arange(3))["value"], [0, 2, 4])
        remote = proc.call("liar")["value"]
        assert type(remote).__name__ == "Remote" and remote.type_name == "Liar"
        assert (remote == 1) is False
        with pytest.raises(StudentCodeError, match="숫자 배열"):
            proc.call("objects")


def test_crash_timeout_and_restart():
    cells = ["import os, time", "def die():\n    os._exit(3)", "def spin():\n    while True:\n        pass",
             "def ok():\n    return 1", "def leave():\n    raise SystemExit(0)"]
    with StudentProcess(cells, call_timeout=1) as proc:
        proc.start()
        with pytest.raises(StudentCodeError) as crash:
            proc.call("die")
        assert crash.value.kind == "crashed"
        with pytest.raises(StudentCodeError) as slow:
            proc.call("spin")
        assert slow.value.kind == "timeout"
        with pytest.raises(StudentCodeError) as leave:
            proc.call("leave")
        assert leave.value.kind == "exception"
        assert proc.call("ok")["value"] == 1
        assert proc.restarts == 1 and proc.interrupted == 1   # the hung call was stopped, its process lived on


def test_cell_errors_do_not_stop_later_cells():
    cells = ["import numpy as np", "raise ValueError('boom')", "def f():\n    return 3", "syntax error here("]
    with StudentProcess(cells) as proc:
        report = proc.start()
        assert [c["ok"] for c in report.cells] == [True, False, True, False]
        assert proc.call("f")["value"] == 3


# ------------------------------------------------------------------------------------------- CLI contract
def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "autograder", *args], capture_output=True, text=True)


def test_cli_json_and_exit_codes(tmp_path):
    path = minimal.write(minimal.notebook(), tmp_path / "attention.ipynb")
    proc = run_cli("grade", str(path), "--json", "-", "--seed", "5", "--fail-under", "4")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["seed"] == 5 and data["assignment"] == "attention" and data["notebook"] == "attention.ipynb"
    assert data["score"] == 5 and data["max_score"] == 25  # the minimal notebook has 2 of the 11 exercises
    sdpa = next(e for e in data["exercises"] if e["name"] == "scaled_dot_product_attention")
    assert sdpa["score"] == 3 and all(set(t) == {"name", "passed", "points", "message"} for t in sdpa["tests"])
    assert "softmax" in proc.stderr  # the table goes to stderr when JSON goes to stdout

    out = tmp_path / "result.json"
    proc = run_cli("grade", str(path), "--json", str(out), "--seed", "5", "--fail-under", "6")
    assert proc.returncode == 1 and json.loads(out.read_text())["score"] == 5

    (tmp_path / "bad.ipynb").write_text("{ not json")
    proc = run_cli("grade", str(tmp_path / "bad.ipynb"))
    assert proc.returncode == 2 and "not a Jupyter notebook" in proc.stderr


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
    "patched_allclose": "np.allclose = lambda *a, **k: True\nnp.isclose = lambda a, b, **k: np.ones(np.shape(a), bool)\n"
                        "import numpy.testing\nnumpy.testing.assert_allclose = lambda *a, **k: None\n" + ZEROS,
    "always_equal": "class Equal:\n    def __eq__(self, other):\n        return True\n    def __array__(self, *a, **k):\n"
                    "        raise TypeError('no')\n"
                    "def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):\n"
                    "    return Equal()\n",
    "input_transformer": "ip = get_ipython()\nip.input_transformers_cleanup.append(lambda lines: ['pass\\n'])\n" + ZEROS,
    "prints_score": "print(3.0)\nfrom IPython.display import display\ndisplay(3.0)\n" + ZEROS,
    "fake_autograder": "import sys, types\nfake = types.ModuleType('autograder')\nfake.grade = lambda *a, **k: 100\n"
                       "sys.modules['autograder'] = fake\nsys.modules['autograder.graders'] = fake\n" + ZEROS,
}


@pytest.mark.parametrize("attack", list(TAMPERING))
def test_tampering_gives_no_points(attack):
    result = grade(minimal.notebook(sdpa=TAMPERING[attack]))
    got = scores(result)
    assert (got["scaled_dot_product_attention"], got["softmax"]) == (0, 2), attack
