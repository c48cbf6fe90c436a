"""The attack catalogue (issue 5, requirement 2): every attack is a submitted notebook.

Each must score 0 on the exercises it attacks, leave the honest exercises of the same notebook with the score the
instructor's solution gets, and leave the graders, the stored references, the gradebook and the other
submissions byte for byte as they were (sha256 before and after). Cell-level attacks are graded in this process
from the submitted file as ``python -m autograder grade`` does (``collect_file`` + ``grade_submission``: the
lane's warm fork server, no gradebook), with shortened timeouts, built on the solution without its demonstration
cells (``lean_ctx``: figures, worked examples, training, which every entry ran alike); edits of the notebook's
structure go through the real nbgrader path (``autograde_class`` on a scratch course, fixture ``nb_class``).
"""
from __future__ import annotations

import shlex
import subprocess
import sys
import time
import uuid

import pytest

from tests.sandbox.live import catalogue
from tests.sandbox.live.harness import (SEED, GraderPeak, Servers, bounds, describe, entry_timeouts, grade_file, judge,
                                        own_connection_works, wait_lane_quiet, write_submission)
from autograder.sandbox import bubblewrap
from autograder.report import exercise_report
from autograder.grade import grade_notebook

pytestmark = pytest.mark.slow

ASSIGNMENT = catalogue.ASSIGNMENT


def params(entries):
    return [pytest.param(e, id=e.id, marks=[pytest.mark.xfail(strict=True, reason=e.known_bug)] if e.known_bug
                         else []) for e in entries]


def grade(nb):
    return grade_notebook(nb, f"{ASSIGNMENT}.ipynb", ASSIGNMENT, seed=SEED)


def feedback(result, names) -> str:
    return "\n".join(exercise_report(e, result.notebook_errors) for e in result.exercises if e.name in names)


# ----------------------------------------------------------------------------------------------- catalogue shape
def test_catalogue_covers_the_issue():
    """Every attack family of the issue has at least one entry, ids are unique, descriptions are bilingual."""
    ids = {e.id for e in catalogue.ALL}
    families = {
        "monkeypatching numpy/keras/torch, builtins, sys.modules": {"patch_numpy", "patch_torch_keras",
                                                                  "patch_builtins", "patch_sys_modules"},
        "objects equal to anything": {"always_equal_object", "always_equal_ndarray", "fake_tensor"},
        "IPython transformers, display hooks, showtraceback/set_custom_exc": {"ipython_input_transformers",
                                                                            "display_and_traceback_hooks"},
        "printing or displaying numbers": {"prints_numbers", "nb_prints_numbers"},
        "reading graders, references, gradebook, other submissions": {"read_graders", "read_gpu_refs",
                                                                     "read_gradebook", "read_other_submission",
                                                                     "walk_filesystem"},
        "writing to them": {"write_secrets", "network_gradebook"},
        "network": {"network_tcp", "network_gradebook"},
        "grade cells, metadata, points, cells, ids, kernel spec": {
            "nb_edit_grade_cell", "nb_inflate_points", "nb_delete_grade_cell", "nb_duplicate_cells", "nb_cell_ids",
            "nb_kernelspec", "nb_rename_grade_id", "nb_extra_grade_cell"},
        "forbidden routine under an alias": {"forbidden_alias_import", "forbidden_getattr_string"},
        "the reference through Keras": {"keras_reference_direct", "keras_reference_alias"},
        "signal handlers ignoring the timeout": {"signal_ignore_at_import", "signal_ignore_in_call"},
        "the forbidden routine by another road (issue 13)": {
            "forbidden_in_thread", "forbidden_pop_function_modes", "forbidden_disable_in_helper",
            "forbidden_stack_helper_swap", "forbidden_clear_record", "forbidden_jit_script", "forbidden_lazy_result",
            "forbidden_redispatch_below", "forbidden_other_assignment_name", "forbidden_forked_child",
            "keras_attention_internals", "keras_additive_internals", "keras_mha_internals"},
        "roads closed before issue 13, kept closed": {
            "forbidden_aten_softmax", "forbidden_c_nn", "forbidden_math_kernel", "forbidden_exec_string",
            "forbidden_torch_compile", "forbidden_jit_trace", "forbidden_keras_ops_dpa"},
        "what the student process writes to the grader (issue 13)": {"malformed_frame_at_import",
                                                                     "forged_reply_frame", "oversized_reply",
                                                                     "stuck_request_pipe", "fifo_output_log"},
        "kernel objects and disk that outlive a submission (issue 13)": {"cross_submission_kernel_objects",
                                                                         "scratch_flood"},
        "a proxy's question that makes the grader compute something huge (issue 21)": {"proxy_long_sequence",
                                                                                      "proxy_broadcast_batch"},
        "a library routine cloned as an object or pasted as source (issue 21)": {
            "keras_attention_clone", "torch_decomp_softmax_clone", "keras_attention_source_pasted"},
        "the monitor's own state reached through the serve loop's frame (issue 21)": {"monitor_emit_silenced",
                                                                                     "monitor_globals_cleared",
                                                                                     "event_pipe_flood"},
        "a step that parses or runs the submission, unbounded (issue 42)": {
            "frame_header_flood", "huge_cell_source", "metadata_flood", "names_step_stalled"},
        "the library's attention wherever it lives (issue 42)": {"flex_attention_sdpa", "quantizable_mha",
                                                                 "library_source_executed", "library_module_patched",
                                                                 "dispatcher_kernels_replaced"},
        "the guard's frames reached from a signal handler (issue 42)": {"signal_handler_walks_to_kernel"},
        "markdown the sanitizer renders, student text in the grade cell's report": {"markdown_bombs",
                                                                                   "forged_report_lines"},
        "library code seen whenever it runs: generated code, causal bias, distributions": {
            "traced_decomposition_softmax", "causal_bias_materialized", "categorical_softmax"},
    }
    for family, needed in families.items():
        assert needed <= ids, (family, needed - ids)
    for e in catalogue.ALL:
        assert e.ko and e.en and e.kind in ("attack", "fault") and e.level in ("cells", "notebook", "file"), e.id
        assert any("\uac00" <= ch <= "\ud7a3" for ch in e.ko), f"{e.id}: the description must be Korean"
        assert set(e.attacked) <= set(catalogue.notebooks.exercises(catalogue.notebooks.solution_notebook(ASSIGNMENT)))


def test_catalogue_notebooks_are_well_formed(ctx):
    """Every entry builds; every code cell of the cell- and notebook-level entries compiles (but the syntax error's),
    so that a 0 means the attack failed in the sandbox, not that its code was broken."""
    from autograder.submission.notebook import MAX_CELL_SOURCE, strip_magics

    compiles: dict[str, bool] = {}   # source -> it compiles: most cells are the solution's, the same in every entry

    def compiled(source: str) -> bool:
        if source not in compiles:
            try:
                compile(strip_magics(source), "<cell>", "exec")
                compiles[source] = True
            except SyntaxError:
                compiles[source] = False
        return compiles[source]

    broken = []
    for entry in catalogue.ALL + catalogue.QUIZ_ATTACKS + [catalogue.CONTROL]:
        built = entry.build(ctx)
        if entry.level == "file":
            assert isinstance(built, bytes), entry.id
            continue
        for cell in built.cells:
            if cell.cell_type == "code" and len(cell.source) <= MAX_CELL_SOURCE:   # a bigger one is never run
                if not compiled(cell.source):
                    broken.append(entry.id)
    assert broken == ["syntax_error"], broken


# ----------------------------------------------------------------------------------------------- control
def test_control_a_working_attack_would_pay(lean_ctx, honest, short_timeouts):
    """The cheating function of the secret-reading attacks gets full marks when its attack works: so a 0 below
    means the attack did not work, not that the cheat was wrong."""
    result = grade(catalogue.CONTROL.build(lean_ctx))
    assert result.exercise(catalogue.TARGET).score == honest.exercise(catalogue.TARGET).score > 0


# ----------------------------------------------------------------------------------------------- cell-level attacks
@pytest.mark.parametrize("entry", params(catalogue.ATTACKS))
def test_attack(entry, lean_ctx, honest, fingerprint, servers, short_timeouts, tmp_path, monkeypatch):
    """The solution without its demonstration cells (``lean_ctx``) with the attack in it: 0 on what it attacks, the
    honest score (the whole solution's) on the rest, nothing changed or reached, within its bounds."""
    assert bubblewrap.sandboxed() is True
    entry_timeouts(entry, monkeypatch)
    honest_scores = {e.name: e.score for e in honest.exercises}
    path = write_submission(entry.build(lean_ctx), tmp_path)
    before = fingerprint(path)
    connections = servers.connections
    if entry.before is not None:   # the accomplice, graded just before in the same lane
        grade(entry.before(lean_ctx))
    try:
        with GraderPeak() as peak:
            result = grade_file(path)
    except Exception as exc:  # noqa: BLE001 - grading itself broke: the submission is lost
        catalogue.REPORT.record(entry, f"grading raised {type(exc).__name__}: {exc}", lost=True)
        raise
    scores = {e.name: e.score for e in result.exercises}
    wrong = judge(entry, scores, honest_scores)
    max_seconds, max_mb = bounds(entry)
    too_big = peak.mb > max_mb
    slow = result.seconds > max_seconds
    after = fingerprint(path)
    changed_files = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    reached = servers.connections - connections
    stray = wait_lane_quiet()
    outcome = describe(entry, scores, honest_scores, wrong) + f"; {result.seconds:.1f} s"
    if changed_files:
        outcome += f"; FILES CHANGED: {changed_files}"
    if reached:
        outcome += f"; the test's servers saw {reached} connection(s)"
    if stray:
        outcome += f"; {len(stray)} student process(es) still running after grading"
    if too_big:
        outcome += f"; the grader's memory grew by {peak.mb:.0f} MiB (at most {max_mb:g})"
    if slow:
        outcome += f"; graded in {result.seconds:.0f} s, over its bound of {max_seconds:g} s"
    unreviewed = [p for p in entry.review if not any(p in item for item in result.review)]
    if entry.review:
        outcome += f"; review: {len(result.review)} item(s)" + (f", none naming {unreviewed}" if unreviewed else "")
    catalogue.REPORT.record(entry, outcome, changed=bool(wrong or changed_files or reached or too_big or slow
                                                         or unreviewed),
                            gained=bool(set(wrong) & set(entry.attacked) or changed_files or reached),
                            seconds=result.seconds, grader_mb=peak.mb)

    assert not too_big, f"{entry.id}: {outcome}"
    assert not slow, f"{entry.id}: {outcome}"
    assert not changed_files, f"{entry.id} changed files: {changed_files}"
    assert reached == 0, f"{entry.id} reached the test's servers (outside clients: {servers.outsiders[-5:]})"
    assert not wrong, f"{entry.id}: {outcome}\n" + feedback(result, set(wrong))
    assert not stray, f"{entry.id}: student processes outlived the grading: {stray}"
    text = feedback(result, set(entry.attacked))
    missing = catalogue.lacking(entry, text)
    assert not missing, f"{entry.id}: the feedback does not say {missing}:\n{text}"
    assert not unreviewed, f"{entry.id}: the instructor's review list does not name {unreviewed}: {result.review}"


def test_servers_were_reachable_from_outside(servers):
    """The network attacks were refused by the sandbox, not by a server that was not listening."""
    assert own_connection_works(servers)


CLIENT = ("import socket, sys, time\n"
          "s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5)\n"
          "s.recv(256); time.sleep(1); s.close()\n")


@pytest.mark.parametrize("detached", [False, True], ids=["this-tests-child", "another-process"])
def test_servers_count_the_clients_this_test_may_have_started(detached, tmp_path):
    """A client in this test's process tree counts; one outside it (a test beside this one scanning every listening
    port, as the hub's attacker does) is listed apart and does not count."""
    s = Servers(f"TOKEN-{uuid.uuid4().hex}")
    try:
        script = tmp_path / "client.py"
        script.write_text(CLIENT)
        command = f"{shlex.quote(sys.executable)} {script} {s.port}"
        if detached:   # a double fork: the client's parent exits, so it is nobody's descendant here
            command = f"( {command} & )"
        subprocess.run(["sh", "-c", command], check=True, timeout=30)
        deadline = time.time() + 10
        while s.connections + len(s.outsiders) < 1 and time.time() < deadline:
            time.sleep(0.05)
        assert (s.connections, len(s.outsiders)) == ((0, 1) if detached else (1, 0)), s.outsiders
    finally:
        s.close()


# ----------------------------------------------------------------------------------------------- notebook-level
@pytest.mark.parametrize("entry", params(catalogue.NOTEBOOK_ATTACKS))
def test_notebook_attack(entry, nb_class):
    assert bubblewrap.sandboxed() is True
    outcome = nb_class["outcomes"].get(entry.id)
    scores = nb_class["scores"].get(entry.id, {})
    honest_scores = nb_class["honest"]
    lost = outcome is None or not outcome.ok
    wrong = judge(entry, scores, honest_scores)
    text = describe(entry, scores, honest_scores, wrong)
    if lost:
        last = (outcome.error.strip().splitlines() or ["?"])[-1] if outcome else "not graded"
        text = f"nbgrader autograde failed: {last[:160]}; gradebook: {text}"
    seconds, mb = (outcome.seconds, outcome.peak_mb) if outcome else (None, None)
    max_seconds, max_mb = bounds(entry)
    over = outcome is not None and (outcome.seconds > max_seconds or outcome.peak_mb > max_mb)
    catalogue.REPORT.record(entry, text, changed=bool(wrong or over), lost=lost,
                            gained=bool(set(wrong) & set(entry.attacked)), seconds=seconds, grader_mb=mb)
    assert not lost, f"{entry.id}: the submission was not graded: {outcome.error[-1500:] if outcome else ''}"
    assert not wrong, f"{entry.id}: {text}"
    assert not over, f"{entry.id}: graded in {seconds:.0f} s, the worker's memory grew by {mb:.0f} MiB"


def test_notebook_attacks_left_graders_gradebook_and_submissions_alone(nb_class):
    """sha256 of the graders and of every submitted file before and after the class; the gradebook's grade
    cells and points are the assignment's own; the honest student got full marks."""
    changed = sorted(k for k in set(nb_class["before"]) | set(nb_class["after"])
                     if nb_class["before"].get(k) != nb_class["after"].get(k))
    assert not changed, changed
    assert nb_class["shape_after"] == nb_class["shape_before"]
    assert nb_class["shape_after"]["max_score"] == sum(nb_class["honest"].values())
    assert nb_class["scores"]["honest"] == nb_class["honest"]


def test_markdown_bombs_cost_what_an_honest_notebook_costs(nb_class):
    """Markdown that makes the sanitizer quadratic (20,000 nested <div>, 3 MB of bold, 12,000 unclosed <div>, 15,000
    headings) is measured before it is rendered and shown as text with the reason: the submission keeps every point
    (``test_notebook_attack``), its grading stays within the catalogue's bounds of time and worker memory, and making
    the class's feedback (which does not render the autograded notebook again) does too."""
    from autograder.messages import Notice
    from tests.sandbox.live.harness import MAX_SECONDS

    outcome, honest = nb_class["outcomes"]["markdown_bombs"], nb_class["outcomes"]["honest"]
    page = nb_class["feedback"]["markdown_bombs"]
    for who, o in (("markdown bombs", outcome), ("honest", honest)):
        catalogue.REPORT.timings[f"{who}: graded (class of {len(nb_class['outcomes'])})"] = o.seconds
        catalogue.REPORT.timings[f"{who}: feedback made"] = o.feedback_seconds
    assert outcome.ok and outcome.feedback == "", (outcome.error[-500:], outcome.feedback)
    assert outcome.seconds <= MAX_SECONDS and outcome.peak_mb <= 1024, (outcome.seconds, outcome.peak_mb)
    assert 0 < outcome.feedback_seconds <= MAX_SECONDS, outcome.feedback_seconds
    assert Notice.MARKDOWN_TOO_BIG.found_in(page) and Notice.MARKDOWN_TOO_DEEP.found_in(page), page[-3000:]


def test_student_text_forges_no_line_of_the_grade_cell_report(nb_class):
    """An exception's text with newlines, a carriage return, a line separator and a clear-screen sequence stays on
    its one line of the report (escaped, shown), in the autograded notebook's grade cell (what formgrader shows) and
    in the student's feedback page: no line of either claims the forged full marks."""
    import re

    import nbformat

    course = nb_class["dir"]
    nb = nbformat.read(str(course / "autograded" / "forged_report_lines" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"), 4)
    cell = catalogue.grade_cell(nb, catalogue.TARGET)
    report = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    lines = report.splitlines()
    forged = re.compile(rf"^\s*(\[{catalogue.TARGET}\] 2 / 2점|✅ (모든 검사 통과|total))")
    assert lines[0].startswith(f"[{catalogue.TARGET}] 0 / 2점"), report
    assert not [line for line in lines if forged.match(line)], report
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]", report), repr(report)
    assert any(f"\\n[{catalogue.TARGET}] 2 / 2점" in line for line in lines), report   # shown, escaped, not dropped
    page = nb_class["feedback"]["forged_report_lines"]
    assert f"[{catalogue.TARGET}] 0 / 2점" in page
    assert not [line for line in page.splitlines() if forged.match(line)], "a forged line in the feedback page"
