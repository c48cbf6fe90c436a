"""Every step that parses something of a submission is bounded before it starts (docs/security/bounds.md).

Cheap, in this process: a frame's header is refused by its length before it is read, a notebook's JSON by a pass
over its bytes before it is parsed, a code cell by its length before ``ast.parse``; a value posing as a tensor is
not converted (none of its methods is called). The catalogue (tests/sandbox/live) grades the same attacks end to end.
"""
from __future__ import annotations

import json
import os
import struct
import threading
import time

import nbformat
import pytest

from autograder.graders import syntax
from autograder.messages import Reason
from autograder.sandbox.inside import values, wire
from autograder.submission import notebook
from autograder.submission.files import NotGradable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOLUTION = os.path.join(ROOT, "solutions", "attention", "attention.ipynb")


class Peak:
    """How much this process's peak resident memory grew inside ``with``, in MiB (the peak reset first)."""

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


# ----------------------------------------------------------------------------------------------- a frame's header
def test_a_long_header_is_refused_unread():
    """A frame whose JSON header is over ``wire.MAX_HEADER`` is refused from its length: the header is neither read
    nor parsed (8 MiB of ``{}`` would be ~200 MiB of dicts), and a header within the bound is read as before."""
    r, w = os.pipe()
    head = b'{"ok": true, "flood": [' + b"{}," * (8 << 20) + b"{}]}"
    frame = struct.pack(">Q", 4 + len(head)) + struct.pack(">I", len(head)) + head
    writer = threading.Thread(target=_write_all, args=(w, frame), daemon=True)
    writer.start()
    try:
        with pytest.raises(wire.FrameError, match="over the limit"):
            wire.read_frame(r, deadline=time.monotonic() + 10, max_bytes=65 << 20)
    finally:
        os.close(r)
        writer.join(5)
    r, w = os.pipe()
    wire.write_frame(w, {"ok": True, "value": "x" * 1000})
    assert wire.read_frame(r)[0]["value"] == "x" * 1000
    os.close(r)
    os.close(w)


def _write_all(fd, data):
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError:   # the reader closed its end: the rest was never read
        pass
    finally:
        os.close(fd)


# ----------------------------------------------------------------------------------------------- the notebook's JSON
def _solution_with_metadata(extra: str) -> bytes:
    text = open(SOLUTION, encoding="utf-8").read()
    at = text.rindex('"metadata": {') + len('"metadata": {')
    return (text[:at] + extra + text[at:]).encode("utf-8")


@pytest.mark.parametrize("extra, what", [
    ('"flood": [' + "[]," * 2_000_000 + "[]],", "JSON 객체와 배열"),
    ('"flood": [' + "0," * 1_200_000 + "0],", "JSON 값"),
    ('"deep": ' + "[" * 100 + "]" * 100 + ",", "JSON 중첩 깊이"),
    ('"big": "' + "x" * (2 << 20) + '",', "메타데이터 바이트"),
], ids=["containers", "values", "depth", "metadata"])
def test_a_notebook_over_its_bounds_is_refused_before_it_is_parsed(extra, what):
    """A notebook over a bound is refused (``NotGradable``, a Korean reason naming the bound) in well under a second
    and a few MiB above the bytes themselves, before ``nbformat`` builds anything of it."""
    data = _solution_with_metadata(extra)
    start = time.perf_counter()
    with Peak() as peak, pytest.raises(NotGradable) as refused:
        notebook.parse_notebook(data, "attention.ipynb")
    seconds = time.perf_counter() - start
    assert refused.value.message.code is Reason.NOTEBOOK_TOO_COMPLEX and what in refused.value.message.korean
    assert seconds < 2.0 and peak.mb < 3 * len(data) / (1 << 20) + 16, (seconds, peak.mb)


def test_strings_are_not_structure():
    """Brackets, commas and escaped quotes inside strings count for nothing: a notebook whose outputs print many of
    them is read as before."""
    nb = nbformat.read(SOLUTION, as_version=4)
    nb.cells[0].source = 'x = "[{\\\\"' + "[[,]]{}" * 100_000 + '"\n'
    nb.cells[-1].metadata["tricky"] = '\\\\"[' * 1000
    data = nbformat.writes(nb).encode("utf-8")
    notebook.check_json(data)
    assert notebook.parse_notebook(data, "attention.ipynb").cells[-1].metadata["tricky"] == '\\\\"[' * 1000


def test_too_many_cells_are_refused():
    raw = json.loads(open(SOLUTION, encoding="utf-8").read())
    raw["cells"] = raw["cells"] * (notebook.MAX_CELLS // len(raw["cells"]) + 1)
    with pytest.raises(NotGradable) as refused:
        notebook.check_structure(raw, "attention.ipynb")
    assert "셀" in refused.value.message.korean


def test_the_course_notebooks_are_well_within_the_bounds():
    """The answer keys and releases pass every check, and collect every code cell unchanged."""
    for folder in ("solutions", "release"):
        for assignment in ("attention", "kv_cache", "decoder", "modern", "quiz"):
            path = os.path.join(ROOT, folder, assignment, f"{assignment}.ipynb")
            with open(path, "rb") as fh:
                nb = notebook.parse_notebook(fh.read(), path)
            cells = notebook.collect(nb, path, assignment).code_cells
            assert not any(c.startswith("raise RuntimeError(") for c in cells), path


# ----------------------------------------------------------------------------------------------- a cell's source
def test_a_cell_over_its_bound_is_not_run_nor_parsed():
    """A code cell longer than ``MAX_CELL_SOURCE`` is replaced by one that fails with the Korean reason (so the cell
    is that cell's error and defines nothing); the other cells are collected as they are; cells past ``MAX_CODE`` in
    all are not run either; and the grader's static checks never parse a longer source."""
    nb = nbformat.read(SOLUTION, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and not c.metadata.get("nbgrader", {}).get("grade")]
    code[1].source = "1\n" * 750_000
    submission = notebook.collect(nb, "attention.ipynb", "attention")
    assert Reason.CELL_TOO_BIG.found_in(submission.code_cells[1])
    assert len(submission.code_cells[1]) < 500 and submission.code_cells[2] == notebook.strip_magics(code[2].source)
    with Peak() as peak:
        assert syntax.tree("1\n" * 750_000) is None
    assert peak.mb < 32
    for cell in code[2:]:
        cell.source = "x = 1\n" * (notebook.MAX_CELL_SOURCE // 6 - 1)
    cells = notebook.collect(nb, "attention.ipynb", "attention").code_cells
    stopped = [i for i, c in enumerate(cells) if Reason.CODE_TOO_BIG.found_in(c)]
    assert stopped and stopped == list(range(stopped[0], len(cells)))
    assert sum(len(c) for c in cells[:stopped[0]]) <= notebook.MAX_CODE


# ----------------------------------------------------------------------------------------------- a value's conversion
def test_a_value_posing_as_a_tensor_is_not_converted():
    """Only exact types are converted: an object whose module says torch (its ``detach`` would run) and an ndarray
    subclass's own methods are never called; numpy arrays, subclasses and scalars convert as before."""
    import numpy as np

    called = []

    class Impostor:
        __module__ = "torch"

        def detach(self):
            called.append("detach")
            return self

    class Loud(np.ndarray):
        def __array__(self, *a, **k):
            called.append("__array__")
            return np.zeros(1)

        def view(self, *a, **k):
            called.append("view")
            return np.zeros(1)

    assert values.to_numpy(Impostor()) is None
    loud = np.arange(3.0).view(Loud)
    assert type(values.to_numpy(loud)) is np.ndarray and values.to_numpy(loud).tolist() == [0.0, 1.0, 2.0]
    assert values.to_numpy(np.float32(2)).dtype == np.float32
    assert called == []
