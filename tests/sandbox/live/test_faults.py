"""The fault catalogue (issue 5, requirement 3): broken, hostile-by-accident and unusual submissions.

Each is graded: 0 on the exercises it breaks, the honest score on every other exercise, a clear Korean message
in the feedback (the report the hidden graders write into the grade cell), no submitted file changed and no
student process left running. Cell-level faults are graded in this process from the submitted file, as
``python -m autograder grade`` does (``collect_file`` + ``grade_submission``, the lane's warm fork server), with
shortened timeouts (the memory, process and output limits are the course's own), built on the solution without its
demonstration cells (``lean_ctx``: figures, worked examples, training; the cost catalogue keeps them); files that are
not gradable
notebooks go through the real nbgrader path with the rest of a class (fixture ``nb_class``), where they must get 0
with the reason in the feedback and must not stop anyone else's grading.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.sandbox.live import catalogue
from tests.sandbox.live.harness import (CourseTimeouts, GraderPeak, bounds, describe, entry_timeouts, grade_file, judge,
                                        wait_lane_quiet, write_submission)
from autograder.sandbox import bubblewrap
from autograder.report import exercise_report
from autograder.messages import Reason

pytestmark = pytest.mark.slow

ASSIGNMENT = catalogue.ASSIGNMENT


def params(entries):
    return [pytest.param(e, id=e.id, marks=[pytest.mark.xfail(strict=True, reason=e.known_bug)] if e.known_bug
                         else []) for e in entries]


# ----------------------------------------------------------------------------------------------- catalogue shape
def test_catalogue_covers_the_faults():
    """Every fault family of the issue has an entry."""
    ids = {e.id for e in catalogue.ALL}
    families = {
        "infinite loops at import and in a graded call": {"loop_at_import", "loop_in_call"},
        "a slow but correct solution": {"slow_but_correct"},
        "memory exhaustion": {"memory_at_import", "memory_in_call"},
        "fork bombs": {"fork_bomb", "detached_children"},
        "output floods": {"output_flood_at_import", "output_flood_in_call"},
        "sys.exit, os._exit, a segfault": {"sys_exit_at_import", "sys_exit_in_call", "os_exit_at_import",
                                           "os_exit_in_call", "segfault_at_import", "segfault_in_call"},
        "syntax errors, missing/renamed function, wrong signature": {"syntax_error", "missing_function",
                                                                     "renamed_function", "wrong_signature"},
        "wrong shapes/dtypes, NaN/inf/None": {"wrong_shape", "wrong_dtype", "returns_nan", "returns_inf",
                                              "returns_none"},
        "broken files": {"truncated_notebook", "not_json", "other_assignment", "not_utf8", "huge_notebook"},
        "replays past the submission's deadline (issue 13)": {"slow_when_replayed"},
    }
    for family, needed in families.items():
        assert needed <= ids, (family, needed - ids)
    assert all(e.expect for e in catalogue.FILE_FAULTS)


# ----------------------------------------------------------------------------------------------- cell-level faults
@pytest.mark.parametrize("entry", params(catalogue.FAULTS))
def test_fault(entry, lean_ctx, honest, fingerprint, short_timeouts, tmp_path, monkeypatch):
    """The solution without its demonstration cells (``lean_ctx``) with the fault in it: graded as the entry says,
    in Korean, nothing left running or changed, within its bounds."""
    assert bubblewrap.sandboxed() is True
    entry_timeouts(entry, monkeypatch)
    honest_scores = {e.name: e.score for e in honest.exercises}
    path = write_submission(entry.build(lean_ctx), tmp_path)
    before = fingerprint(path)
    try:
        with GraderPeak() as peak:
            result = grade_file(path)
    except Exception as exc:  # noqa: BLE001 - grading itself broke: the submission is lost
        catalogue.REPORT.record(entry, f"grading raised {type(exc).__name__}: {exc}", lost=True)
        raise
    after = fingerprint(path)
    scores = {e.name: e.score for e in result.exercises}
    wrong = judge(entry, scores, honest_scores)
    stray = wait_lane_quiet()
    shown = set(entry.attacked) or set(honest_scores)
    text = "\n".join(exercise_report(e, result.notebook_errors) for e in result.exercises if e.name in shown)
    missing = catalogue.lacking(entry, text)
    outcome = describe(entry, scores, honest_scores, wrong) + f"; {result.seconds:.1f} s"
    if missing:
        outcome += f"; feedback lacks {missing}"
    if stray:
        outcome += f"; {len(stray)} student process(es) still running after grading"
    max_seconds, max_mb = bounds(entry)
    slow = result.seconds > max_seconds
    if slow:
        outcome += f"; graded in {result.seconds:.0f} s, over its bound of {max_seconds:g} s"
    too_big = peak.mb > max_mb
    if too_big:
        outcome += f"; the grader's memory grew by {peak.mb:.0f} MiB (at most {max_mb:g})"
    changed_files = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    if changed_files:
        outcome += f"; FILES CHANGED: {changed_files}"
    catalogue.REPORT.record(entry, outcome, changed=bool(wrong or missing or stray or changed_files or slow or too_big),
                            seconds=result.seconds, grader_mb=peak.mb)

    assert not wrong, f"{entry.id}: {outcome}\n{text}"
    assert not missing, f"{entry.id}: the feedback does not say {missing}:\n{text}"
    assert any("\uac00" <= ch <= "\ud7a3" for ch in text), "the feedback must be Korean"
    assert not stray, f"{entry.id}: student processes outlived the grading: {stray}"
    assert not changed_files, changed_files
    assert not slow, f"{entry.id}: {outcome}"
    assert not too_big, f"{entry.id}: {outcome}"


# ----------------------------------------------------------------------------------------------- file-level faults
@pytest.mark.parametrize("entry", params(catalogue.FILE_FAULTS))
def test_file_fault(entry, nb_class):
    """Graded through nbgrader as the blank release with a Korean note: 0 points, the reason in the feedback."""
    assert bubblewrap.sandboxed() is True
    outcome = nb_class["outcomes"].get(entry.id)
    scores = nb_class["scores"].get(entry.id, {})
    html = nb_class["feedback"].get(entry.id, "")
    lost = outcome is None or not outcome.ok
    missing = catalogue.lacking(entry, html)
    total = sum(v for v in scores.values() if v is not None)
    text = (f"graded as the blank release: {total:g}/{sum(nb_class['honest'].values()):g}, "
            f"notes {outcome.notes if outcome else '-'}")
    if missing:
        text += f"; feedback lacks {missing}"
    seconds, mb = (outcome.seconds, outcome.peak_mb) if outcome else (None, None)
    max_seconds, max_mb = bounds(entry)
    over = outcome is not None and (outcome.seconds > max_seconds or outcome.peak_mb > max_mb)
    catalogue.REPORT.record(entry, text, changed=bool(total or missing or over), lost=lost or not scores,
                            seconds=seconds, grader_mb=mb)
    assert not lost, f"{entry.id}: the submission was not graded: {outcome.error[-1500:] if outcome else ''}"
    assert not over, f"{entry.id}: graded in {seconds:.0f} s, the worker's memory grew by {mb:.0f} MiB"
    assert scores and total == 0, scores
    assert outcome.notes, "the staging step must say why the file was replaced"
    assert not missing, f"{entry.id}: the feedback does not say {missing}"


def test_the_class_around_the_faults_was_graded(nb_class):
    """Every student of the nbgrader class was graded (none lost), the honest one with full marks, and no
    submitted file changed (sha256 of everything under submitted/ before and after)."""
    lost = [s for s, o in nb_class["outcomes"].items() if not o.ok]
    known = {e.id for e in catalogue.NOTEBOOK_ATTACKS if e.known_bug}
    assert set(lost) <= known, f"submissions lost beyond the known bugs: {sorted(set(lost) - known)}"
    assert nb_class["scores"]["honest"] == nb_class["honest"]
    changed = sorted(k for k in set(nb_class["before"]) | set(nb_class["after"])
                     if nb_class["before"].get(k) != nb_class["after"].get(k))
    assert not changed, changed


# ----------------------------------------------------------------------------------------------- the class bounded
STALLS = {"stall_soft": "STALL-SOFT", "stall_hard": "STALL-HARD"}


def test_a_stalled_grader_never_stalls_the_class(generated_course, tmp_path_factory, ctx, honest, monkeypatch):
    """A submission whose grading never ends gets a grade (blank, with a Korean note) and the rest of the class is
    graded. The stall is one no student behaviour reaches any more (every wait of the grader has a deadline): it is
    made below the grader's end of the protocol (``protocol.read_frame``), in the worker's reading of a reply that
    carries a student's marker, once where the worker's alarm can stop it (``STALL-SOFT``) and once with the alarm
    blocked, so that only the parent's kill of the worker ends it (``STALL-HARD``)."""
    import copy
    import json
    import signal
    import time

    import nbformat

    from autograder.gradebook import batch, worker
    from autograder.sandbox import protocol
    from tests.sandbox.live.harness import cell_scores, expected_cell_scores, new_course, submit

    real = protocol.read_frame

    def stuck(fd, *args, **kwargs):
        header, arrays = real(fd, *args, **kwargs)
        text = json.dumps(header)
        if "STALL-HARD" in text:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        if "STALL-" in text:
            time.sleep(10 ** 6)
        return header, arrays

    monkeypatch.setattr(protocol, "read_frame", stuck)
    timeouts = CourseTimeouts(monkeypatch)
    # a stall waits out notebook + submission + grace (19 s), the one with its alarm blocked kill_grace more (22 s);
    # the honest submission needs 2-4 s of the 8 s each (its notebook ~1 s, its graders 1-3 s on a loaded machine)
    timeouts.update({"cell": 5, "call": 2.5, "notebook": 8, "submission": 8, "grace": 3, "kill_grace": 3})
    course_dir = new_course(generated_course, tmp_path_factory.mktemp("stalls") / "course")
    submit(course_dir, "honest", ctx.solution)
    for student, marker in STALLS.items():
        nb = copy.deepcopy(ctx.solution)
        first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
        nb.cells.insert(first_code + 1, nbformat.v4.new_code_cell(f"print({marker!r})"))
        submit(course_dir, student, nb)
    start = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        outcomes = {o.student: o for o in batch.autograde_class(course_dir, ASSIGNMENT, workers=2, progress=quiet)}
    seconds = time.perf_counter() - start
    catalogue.REPORT.timings["class of 3 with two stalled gradings (2 workers)"] = seconds

    assert set(outcomes) == {"honest", *STALLS}
    assert all(o.ok for o in outcomes.values()), {s: o.error[-500:] for s, o in outcomes.items() if not o.ok}
    assert cell_scores(course_dir, "honest") == expected_cell_scores(honest)
    for student in STALLS:
        overtime = Reason.OVERTIME.korean(limit=worker.submission_limit())
        assert any(note.endswith(overtime) for note in outcomes[student].notes), outcomes[student].notes
        scores = cell_scores(course_dir, student)
        assert scores and not any(scores.values()), scores
    limit = timeouts["notebook"] + timeouts["submission"] + timeouts["grace"]
    assert outcomes["stall_soft"].seconds < limit + 10, outcomes["stall_soft"].seconds


# ----------------------------------------------------------------------------------------------- a worker that dies
DEATHS = {"dies_once": "DIE-ONCE", "dies_always": "DIE-ALWAYS", "oom_killed": "OOM-KILL"}


def _memory_cgroup() -> Path | None:
    """This process's cgroup v1 memory folder, when child cgroups can be made in it (root on this machine)."""
    try:
        line = next(x for x in Path("/proc/self/cgroup").read_text().splitlines() if x.split(":")[1] == "memory")
    except (OSError, StopIteration):
        return None
    folder = Path("/sys/fs/cgroup/memory") / line.split(":", 2)[2].lstrip("/")
    return folder if os.geteuid() == 0 and os.access(folder, os.W_OK) else None


def _run_out_of_memory(folder: Path) -> None:
    """In a worker: move into a new memory cgroup of 256 MiB and allocate until the kernel's OOM killer ends it."""
    group = folder / f"judge-core-oom-{os.getpid()}"
    group.mkdir()
    (group / "memory.limit_in_bytes").write_text(str(256 << 20))
    if (group / "memory.memsw.limit_in_bytes").exists():
        (group / "memory.memsw.limit_in_bytes").write_text(str(256 << 20))
    (group / "cgroup.procs").write_text(str(os.getpid()))
    hog = []
    while True:
        block = bytearray(16 << 20)
        block[::4096] = b"\1" * len(block[::4096])   # a write per page: the memory is really taken
        hog.append(block)


def test_a_worker_that_dies_is_noticed_at_once(generated_course, tmp_path_factory, ctx, honest, monkeypatch):
    """A grading worker that dies (killed by a signal, or by the kernel's OOM killer in a memory cgroup) is noticed at
    once, not after the submission's hard limit: its submission is graded again once in a fresh worker (a worker
    that died once is graded in full), then as blank with the true reason (signal, memory); the rest of the class is
    graded right. The deaths are made below the grader's end of the protocol (``protocol.read_frame``), in the
    worker's reading of a reply that carries a student's marker (as the stalled grader above): ``DIE-ONCE`` kills its
    worker the first time only."""
    import copy
    import json
    import signal
    import time

    import nbformat

    from autograder.gradebook import batch, worker
    from autograder.sandbox import protocol
    from tests.sandbox.live.harness import cell_scores, expected_cell_scores, new_course, submit

    cgroup = _memory_cgroup()
    once = tmp_path_factory.mktemp("deaths") / "died-once"
    real = protocol.read_frame

    def dying(fd, *args, **kwargs):
        header, arrays = real(fd, *args, **kwargs)
        text = json.dumps(header)
        if "DIE-ONCE" in text and not once.exists():
            once.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        if "DIE-ALWAYS" in text:
            os.kill(os.getpid(), signal.SIGKILL)
        if "OOM-KILL" in text:
            _run_out_of_memory(cgroup)
        return header, arrays

    monkeypatch.setattr(protocol, "read_frame", dying)
    timeouts = CourseTimeouts(monkeypatch)
    timeouts.update({"notebook": 20, "submission": 20, "grace": 10, "kill_grace": 10})   # hard limit: 60 s
    course_dir = new_course(generated_course, tmp_path_factory.mktemp("deaths") / "course")
    submit(course_dir, "honest", ctx.solution)
    deaths = {s: m for s, m in DEATHS.items() if cgroup is not None or s != "oom_killed"}
    for student, marker in deaths.items():
        nb = copy.deepcopy(ctx.solution)
        first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
        nb.cells.insert(first_code + 1, nbformat.v4.new_code_cell(f"print({marker!r})"))
        submit(course_dir, student, nb)
    start = time.time()
    try:
        with open(os.devnull, "w") as quiet:
            outcomes = {o.student: o for o in batch.autograde_class(course_dir, ASSIGNMENT, workers=2,
                                                                    progress=quiet)}
    finally:
        for group in cgroup.glob("judge-core-oom-*") if cgroup is not None else ():
            group.rmdir()
    seconds = time.time() - start
    catalogue.REPORT.timings[f"class of {len(deaths) + 1} with workers that die (2 workers)"] = seconds

    assert set(outcomes) == {"honest", *deaths}
    assert all(o.ok for o in outcomes.values()), {s: o.error[-500:] for s, o in outcomes.items() if not o.ok}
    expected = expected_cell_scores(honest)
    assert cell_scores(course_dir, "honest") == expected
    assert cell_scores(course_dir, "dies_once") == expected, outcomes["dies_once"].notes     # graded again, in full
    assert any("graded again" in note for note in outcomes["dies_once"].notes), outcomes["dies_once"].notes
    reasons = {"dies_always": Reason.WORKER_SIGNAL.korean(signal="SIGKILL"),
               "oom_killed": Reason.WORKER_MEMORY.korean()}
    hard = worker.submission_limit() + timeouts["kill_grace"]
    for student in set(deaths) - {"dies_once"}:
        assert any(note.endswith(reasons[student]) for note in outcomes[student].notes), outcomes[student].notes
        scores = cell_scores(course_dir, student)
        assert scores and not any(scores.values()), scores
        # noticed at once: its blank placeholder was graded long before the submission's hard limit had passed
        assert outcomes[student].began - start < hard - 15, (student, outcomes[student].began - start, hard)
