"""A student in JupyterLab: opens each release notebook, runs it, reads the Korean verdicts, solves an exercise.

Every notebook is the student's own copy of ``release/<a>/<a>.ipynb`` (as nbgrader generated it in the fixture's
course), opened in headless Chromium; cells run through the Run menu or Shift+Enter; code is typed into the
cell's editor. Screenshots of each step: ``build/screenshots/``.
"""
import os
import re

import nbformat
import pytest

pytest.importorskip("selenium", reason="selenium is not installed (pip install -r requirements-browser.txt)")

from tests.browser.browser_course import ASSIGNMENTS, KERNEL_DISPLAY_NAME, ROOT, student_copy  # noqa: E402

pytestmark = pytest.mark.browser

# What a grade cell says while its exercise is still the stub (the quiz asks for answers, not implementations).
NOT_DONE = {"attention": "아직 구현하지 않았습니다", "kv_cache": "아직 구현하지 않았습니다",
            "decoder": "아직 구현하지 않았습니다", "quiz": "아직 답하지 않았습니다"}
PASSED = "보이는 확인을 모두 통과했습니다"

SOFTMAX = '''def softmax(x, axis=-1):
    x = np.asarray(x)
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
'''
# A classic mistake: normalising over the first axis instead of the key axis.
SOFTMAX_AXIS_0 = '''def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
'''
CAUSAL_MASK = '''def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    return np.tril(np.ones((t_q, t_k), dtype=bool), k=t_k - t_q)
'''
KV_CACHE_BYTES = '''def kv_cache_bytes(num_layers, num_kv_heads, head_dim, seq_len, batch_size=1, bytes_per_element=2):
    return int(2 * num_layers * num_kv_heads * head_dim * seq_len * batch_size * bytes_per_element)
'''


def grade_id(nb, index: int) -> str:
    return nb.cells[index].metadata.get("nbgrader", {}).get("grade_id", "")


def exercise(nb, index: int) -> str:
    return grade_id(nb, index).removeprefix("test_")


def describe(outputs) -> str:
    return "; ".join(f"{o.output_type}:{o.get('ename', o.get('name', ''))}" for o in outputs) or "no output"


def stopped_at(nb, stops) -> str:
    return ", ".join(grade_id(nb, i) or f"cell {i}" for i in stops)


# The blank releases are run by the course kernel without a browser (nbclient, the server's environment) and read
# with ``check_blank_run``; what JupyterLab adds, Run All and the page's rendering of the verdicts, is read in Lab by
# test_softmax_wrong_then_right_then_heatmaps on attention's release with two exercises done (ten verdicts shown).


def check_blank_run(assignment: str, cells, saved, stops) -> None:
    """Every grade cell of the blank release ran and says, in Korean, that its exercise is not done yet; a solution
    stub raises only NotImplementedError; no other cell shows an error or stderr; the first cell printed Keras's
    backend; nothing stopped Run All (``stops``: the cells that raised without the "raises-exception" tag)."""
    verdict = NOT_DONE[assignment]
    nb = nbformat.v4.new_notebook(cells=cells)
    grade_cells = [i for i, c in enumerate(cells) if c.cell_type == "code" and c.metadata.get("nbgrader", {})
                   .get("grade")]
    code_cells = [i for i, c in enumerate(cells) if c.cell_type == "code"]
    assert grade_cells, f"{assignment} has no grade cells"
    for i in code_cells:
        meta = cells[i].metadata.get("nbgrader", {})
        errors = [o for o in saved[i].outputs if o.output_type == "error"]
        stderr = [o for o in saved[i].outputs if o.output_type == "stream" and o.name == "stderr"]
        if i in grade_cells:
            name = exercise(nb, i)
            assert len(errors) == 1 and errors[0].ename in ("AssertionError", "CheckFailed"), \
                f"{grade_id(nb, i)}: expected the visible check's AssertionError, got {describe(saved[i].outputs)}"
            assert f"❌ {name}: {verdict}" in errors[0].evalue, f"{grade_id(nb, i)}: {errors[0].evalue}"
        elif meta.get("solution"):
            # The stub itself raises only where it runs at the top level (the quiz's `qN = ...` cells).
            assert all(e.ename == "NotImplementedError" for e in errors), f"{grade_id(nb, i)}: {describe(errors)}"
        else:
            assert not errors and not stderr, f"cell {i} (not a grade cell) shows {describe(errors + stderr)}"
    if assignment != "quiz":                       # the first cell prints keras' backend
        printed = "".join(o.get("text", "") for o in saved[code_cells[0]].outputs)
        assert re.search(r"(백엔드|backend): torch", printed), printed
    # Lab sends every cell without the tag with stop_on_error: Run All stops at the first such cell that raises, and
    # a student who runs all cells of the blank release sees one verdict, not one per exercise.
    assert not stops, (f"Run All Cells stopped {len(stops)} times (at {stopped_at(nb, stops)}); everything else "
                       "checked passed. Fix: tag those cells \"raises-exception\" in source/ and rebuild.")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_blank_release_run_by_the_course_kernel_shows_the_korean_verdict_in_every_grade_cell(
        course, kernel_dir, jupyter_home, monkeypatch, assignment):
    """Each blank release, run top to bottom by the course kernel with the server's environment (nbclient; every
    cell runs, and the cells that raised without the "raises-exception" tag are where Lab's Run All would have
    stopped): each grade cell says, in Korean, that its exercise is not done yet; no other cell shows an error."""
    from nbclient import NotebookClient

    from tests.browser.browser_course import KERNEL_NAME, jupyter_env

    path = course / student_copy(course, assignment, "blank")
    env = jupyter_env(course, kernel_dir, jupyter_home)
    for key in [k for k in os.environ if k not in env]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    nb = nbformat.read(str(path), as_version=4)
    cells = [nbformat.from_dict(dict(c)) for c in nb.cells]     # as released, before the run adds outputs
    NotebookClient(nb, kernel_name=KERNEL_NAME, timeout=120, allow_errors=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    stops = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"
             and any(o.output_type == "error" for o in c.outputs)
             and "raises-exception" not in c.metadata.get("tags", [])]
    check_blank_run(assignment, cells, nb.cells, stops)


def test_softmax_wrong_then_right_then_heatmaps(lab, course):
    """Type a softmax over the wrong axis: the visible check shows the Korean mismatch message and hint. Type a right
    one (and causal_mask), Run All: it goes through to the last cell; the checks pass with ✅, every other grade cell
    shows its Korean "not done" verdict on the page, and the heatmaps that need them appear. Validate then lists
    exactly the exercises still to do."""
    nb = lab.open_notebook(student_copy(course, "attention", "softmax"))
    assert lab.state()["kernel"] == KERNEL_DISPLAY_NAME
    solution, check = nb.index("solution_softmax"), nb.index("test_softmax")

    lab.type_into_cell(solution, SOFTMAX_AXIS_0)
    lab.run_all()
    text = lab.outputs()[check]["text"]
    assert "❌ softmax(x, axis=-1), x: (2, 3, 5): 값이 다릅니다" in text, text[-600:]
    assert "softmax 축(키 축 = 마지막 축)" in text, text[-600:]            # the hint
    assert PASSED not in text and NOT_DONE["attention"] not in text
    lab.show_output(check)
    lab.screenshot("softmax-axis0-mismatch")

    lab.type_into_cell(solution, SOFTMAX)
    lab.type_into_cell(nb.index("solution_causal_mask"), CAUSAL_MASK)
    stops = lab.run_through(nb)
    lab.save()
    seen, saved = lab.outputs(), lab.saved(nb).cells
    for i in nb.grade_cells():
        if exercise(nb, i) in ("softmax", "causal_mask"):
            assert f"✅ {exercise(nb, i)}: {PASSED}" in seen[i]["text"], seen[i]["text"][-600:]
            assert not [o for o in saved[i].outputs if o.output_type == "error"]
        else:
            assert f"❌ {exercise(nb, i)}: {NOT_DONE['attention']}" in seen[i]["text"]
    assert re.search(r"밥을\s+점수 5\.65\s+->\s+가중치 0\.757", seen[nb.index("test_softmax") + 1]["text"])
    # Run All went through the ten verdicts (every cell that raises on purpose is tagged "raises-exception")
    assert not stops, f"Run All Cells stopped {len(stops)} times (at {stopped_at(nb, stops)})"
    lab.show_output(nb.grade_cells()[-1])
    lab.screenshot("verdict-not-done")

    # Every heatmap of the notebook (cells that call show_attention) needs only softmax and causal_mask, but the
    # RoPE one, which needs apply_rope too (it prints a Korean note until then).
    heatmaps = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "show_attention(" in c.source
                and "def show_attention" not in c.source and "apply_rope(" not in c.source]
    assert len(heatmaps) >= 2, heatmaps
    for i in heatmaps:
        pngs = [o for o in saved[i].outputs if "image/png" in o.get("data", {})]
        assert pngs, f"cell {i}: no figure in the saved notebook ({describe(saved[i].outputs)})"
        assert seen[i]["images"] == len(pngs), f"cell {i}: {seen[i]['images']} images shown, {len(pngs)} saved"
        assert not [o for o in saved[i].outputs if o.output_type == "error" or o.get("name") == "stderr"]
        lab.show_figure(i)
        lab.screenshot(f"heatmap-cell{i}")

    # nbgrader's Validate on this half-done notebook: exactly the exercises still to do fail, each in Korean.
    kind, text = lab.validate()
    todo = [exercise(nb, i) for i in nb.grade_cells() if exercise(nb, i) not in ("softmax", "causal_mask")]
    assert kind == "error" and text.count("The following cell failed:") == len(todo), text[:1000]
    for name in todo:
        assert f"❌ {name}: {NOT_DONE['attention']}" in text, f"{name} not in the validation report"
    assert "❌ softmax" not in text and "❌ causal_mask" not in text
    lab.screenshot("validate-half-done")
    lab.close_dialog()


def test_kv_cache_table_and_plot_appear_once_kv_cache_bytes_works(lab, course):
    """kv_cache: implement kv_cache_bytes, run the notebook; its check passes, the model table and the memory plot
    (which depend on it) appear instead of the Korean notes."""
    nb = lab.open_notebook(student_copy(course, "kv_cache", "kv"))
    lab.type_into_cell(nb.index("solution_kv_cache_bytes"), KV_CACHE_BYTES)
    lab.run_through(nb)
    lab.save()
    seen, saved = lab.outputs(), lab.saved(nb).cells
    check = nb.index("test_kv_cache_bytes")
    assert f"✅ kv_cache_bytes: {PASSED}" in seen[check]["text"]
    plots = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "plt.show()" in c.source]
    tables = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "display(Markdown" in c.source]
    assert plots and tables
    for i in plots:
        assert seen[i]["images"] >= 1, f"cell {i}: no plot shown ({describe(saved[i].outputs)})"
        assert any("image/png" in o.get("data", {}) for o in saved[i].outputs)
        lab.show_figure(i)
        lab.screenshot(f"plot-cell{i}")
    for i in tables:
        assert "text/markdown" in " ".join(seen[i]["mimes"]), f"cell {i}: {seen[i]['mimes']}"
        assert "구현하지 않았습니다" not in seen[i]["text"]
    assert "Qwen3-8B" in seen[tables[0]]["text"] and "576 MiB" in seen[tables[0]]["text"]
    lab.show_output(tables[0])
    lab.screenshot("model-table")


def solutions_of(assignment: str) -> dict:
    """grade_id -> the source notebook's whole solution cell, markers removed (what a student who solved it types)."""
    nb = nbformat.read(str(ROOT / "source" / assignment / f"{assignment}.ipynb"), as_version=4)
    found = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("solution"):
            lines = [line for line in cell.source.splitlines() if line.strip() not in ("### BEGIN SOLUTION",
                                                                                       "### END SOLUTION")]
            found[meta["grade_id"]] = "\n".join(lines)
    return found


def test_decoder_trains_on_the_poems_and_writes_them_with_the_students_cache(lab, course):
    """decoder: type the three solutions and run the notebook as a student does (demo cells included): every check
    passes with ✅, the count of tokens per step shows one token for each cached step, the demo cell trains the
    character model on the released Kim Sowol poems and writes them with the student's generate and KVCache (the
    same text as without the cache), and the learned head's attention heatmap appears."""
    nb = lab.open_notebook(student_copy(course, "decoder", "complete"))
    for grade_id, code in solutions_of("decoder").items():
        lab.type_into_cell(nb.index(grade_id), code)
    stops = lab.run_through(nb)
    lab.save()
    seen, saved = lab.outputs(), lab.saved(nb).cells
    assert not stops, stopped_at(nb, stops)
    for i in nb.grade_cells():
        assert f"✅ {exercise(nb, i)}: {PASSED}" in seen[i]["text"], seen[i]["text"][-600:]
    for i in nb.code_cells():
        errors = [o for o in saved[i].outputs if o.output_type == "error"]
        assert not errors, f"cell {i}: {describe(errors)}"
    count = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "block_flops(" in c.source
                 and "def block_flops" in c.source)
    assert re.search(r"\n\s+12\s+12\s+1\s+[\d,]+\s+12\s+[\d,]+", seen[count]["text"]), seen[count]["text"][-800:]
    demo = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "train_char_model(poems)" in c.source)
    text = seen[demo]["text"]
    assert "학습 400단계" in text and text.count("캐시 없이 만든 글과 같음: True") == 3, text[-1500:]
    assert "엄마야 누나야 강변 살자" in text, text[-1500:]
    lab.show_output(demo)
    lab.screenshot("decoder-poems")
    heatmap = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "show_attention(ax, w" in c.source)
    assert seen[heatmap]["images"] == 1, describe(saved[heatmap].outputs)
    lab.show_figure(heatmap)
    lab.screenshot("decoder-learned-head")
