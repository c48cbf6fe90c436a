"""Fixtures of the sandbox's attack and fault catalogues (issue 5), and the report printed at the end of the run.

* Every test here runs with the sandbox really active (``bubblewrap.sandboxed()`` must be True; no skipping).
* ``ctx``: the real secrets of this run that the attacks aim at: the repository's hidden graders and stored
  references, a decoy course (an nbgrader gradebook and another student's submission holding a marker), a TCP
  server on 127.0.0.1 and an abstract unix socket that hand out a token (and count who connected).
* ``lean_ctx``: ``ctx`` whose solution has no demonstration cells (figures, worked examples, the training demo),
  the base of the cell-level attacks and faults.
* ``honest``: the instructor solution graded once in this process with the run's seed (full marks), the score
  every untouched exercise must keep.
* ``nb_class``: the class under load: the notebook- and file-level entries of the catalogues, the cell-level ones
  marked ``in_class`` and honest students of 8 kinds, graded through the real nbgrader path, once, with
  ``autograde_class(workers=2)``.
* ``fingerprint``: sha256 of every file that must not change (graders, references, gradebook, submissions).
"""
from __future__ import annotations

import copy
import os
import sys
import time
import uuid
from pathlib import Path

import nbformat
import pytest

from tests.sandbox.live import catalogue  # noqa: E402
from tests.helpers import notebooks  # noqa: E402
from autograder.sandbox import bubblewrap  # noqa: E402
from tests.sandbox.live.harness import (ASSIGNMENT, GRADER_CEILING_MB, MAX_SECONDS, ROOT, SEED,  # noqa: E402
                                        CourseTimeouts,
                                        SHORT_TIMEOUTS, Servers, cell_scores, expected_cell_scores, feedback_pages,
                                        gradebook_shape, new_course, submit, tree_hashes)


# ----------------------------------------------------------------------------------------------- the sandbox
@pytest.fixture(scope="session", autouse=True)
def sandbox_is_active():
    """These catalogues mean something only with bubblewrap really around the student's code."""
    assert bubblewrap.sandboxed() is True, "the sandbox must be active for the attack/fault catalogues"


@pytest.fixture
def short_timeouts(monkeypatch):
    """The course's timeouts shortened for this test (the limits on memory, processes and output stay)."""
    timeouts = CourseTimeouts(monkeypatch)
    timeouts.update(SHORT_TIMEOUTS)
    return timeouts


# ----------------------------------------------------------------------------------------------- hashes
@pytest.fixture(scope="session")
def fingerprint(decoy):
    """``fingerprint()``: hashes of the graders, references, the decoy gradebook and the other submission."""
    return lambda *extra: tree_hashes(ROOT / "autograder", decoy / "gradebook.db", decoy / "submitted", *extra)


# ----------------------------------------------------------------------------------------------- secrets
@pytest.fixture(scope="session")
def servers():
    s = Servers(f"TOKEN-{uuid.uuid4().hex}")
    yield s
    s.close()


@pytest.fixture(scope="session")
def decoy(tmp_path_factory) -> Path:
    """A course directory with an nbgrader gradebook and another student's submission (holding a marker)."""
    from nbgrader.api import Gradebook

    course = tmp_path_factory.mktemp("decoy") / "course"
    (course / "submitted" / "victim" / ASSIGNMENT).mkdir(parents=True)
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{path}"   # a new gradebook runs alembic
    try:
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "attention-ko") as gb:
            gb.add_student("victim", first_name=MARKER)
            gb.add_assignment(ASSIGNMENT)
    finally:
        os.environ["PATH"] = path
    nb = copy.deepcopy(notebooks.solution_notebook(ASSIGNMENT))
    nb.cells.append(nbformat.v4.new_markdown_cell(f"비밀 표식: {MARKER}"))
    nbformat.write(nb, str(course / "submitted" / "victim" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"))
    return course


MARKER = f"VICTIM-MARKER-{uuid.uuid4().hex}"


@pytest.fixture(scope="session")
def ctx(decoy, servers) -> catalogue.Context:
    graders = ROOT / "autograder" / "graders"
    refs = graders / "gpu_refs" / "cases"
    first_case = sorted(p for p in refs.iterdir() if p.is_dir())[0]
    return catalogue.Context(
        solution=notebooks.solution_notebook(ASSIGNMENT),
        release=notebooks.release_notebook(ASSIGNMENT),
        other_assignment=notebooks.solution_notebook("kv_cache"),
        graders=[str(graders / ASSIGNMENT / f"test_{catalogue.TARGET}.py"), str(graders / "references.py"),
                 str(graders / "tolerances.py"), str(graders / "compare.py")],
        gpu_refs=[str(refs / "index.json")] + [str(p) for p in sorted(first_case.iterdir())],
        gradebook=str(decoy / "gradebook.db"),
        submission=str(decoy / "submitted" / "victim" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"),
        course=str(decoy), marker=MARKER, port=servers.port, unix_name=servers.unix_name, token=servers.token)


@pytest.fixture(scope="session")
def lean_ctx(ctx) -> catalogue.Context:
    """``ctx`` with the solution's demonstration cells left out (``notebooks.without_demonstrations``): what the
    cell-level attacks and faults are built on. Every entry ran those cells alike (the figures, the worked examples,
    the small model's training; 130 tests alone in one process: 207 s with them, 184 s without) and no entry
    attacks them;
    the class under load (``nb_class``), the honest kinds and the cost catalogue (whose hung functions each
    demonstration cell waits out) keep them."""
    import dataclasses

    return dataclasses.replace(ctx, solution=notebooks.without_demonstrations(ctx.solution))


@pytest.fixture(scope="session")
def honest():
    """The instructor solution graded with the run's seed: every exercise's honest score (full marks)."""
    from autograder.grade import grade_notebook

    start = time.perf_counter()
    result = grade_notebook(notebooks.solution_notebook(ASSIGNMENT), f"{ASSIGNMENT}.ipynb", ASSIGNMENT, seed=SEED)
    catalogue.REPORT.timings["honest solution (in process)"] = time.perf_counter() - start
    assert result.score == result.max_score, [t.message for e in result.exercises for t in e.tests if not t.passed]
    assert result.review == [], result.review      # nothing for an instructor to look at in the honest solution
    return result


# ----------------------------------------------------------------------------------------------- nbgrader path
@pytest.fixture(scope="session")
def generated_course(tmp_path_factory) -> Path:
    """A scratch course with `attention` generated by the real nbgrader (release, gradebook; the catalogues grade
    the repository's solutions, not generated ones)."""
    from autograder import course

    start = time.perf_counter()
    work = course.scratch_course(tmp_path_factory.mktemp("generated") / "course", [ASSIGNMENT])
    course.generate(work, ASSIGNMENT, solution=False)
    catalogue.REPORT.timings["nbgrader generate_assignment"] = time.perf_counter() - start
    return work


# Of each honest kind (``harness.honest_kinds``, 8 kinds) in the class: 24 honest submissions beside the catalogues' 28
# and the honest student, 53 in all, more than a fifth of them from the catalogues (issue 5, requirement 4).
COPIES = 3


@pytest.fixture(scope="session")
def nb_class(generated_course, tmp_path_factory, ctx, honest):
    """One class graded by ``autograde_class`` (2 workers, the course's own timeouts and limits) with
    ``feedback=True``, as ``python -m autograder autograde --feedback`` grades a class: the class under load of
    issue 5 (requirement 4) and the nbgrader path of the catalogues. Its students: the notebook- and file-level
    entries of the catalogues and the cell-level ones marked ``in_class`` (each under its id), one honest student
    (``honest``: the solution) and ``COPIES`` of each honest kind (``h<i>_<kind>``). While it runs, a trivial
    ``python -c pass`` is started every second and timed (``probe``). Every honest kind is graded alone too, in this
    process with the same seed (``alone``: its per-cell scores), the score it must get in the class."""
    import json

    from autograder.gradebook.batch import autograde_class
    from autograder.grade import grade_notebook
    from tests.sandbox.live.harness import Probe, honest_kinds

    kinds = honest_kinds(ctx)
    alone = {"solution": expected_cell_scores(honest)}
    start = time.perf_counter()
    for kind, nb in kinds.items():
        if kind not in alone:
            alone[kind] = expected_cell_scores(grade_notebook(nb, f"{ASSIGNMENT}.ipynb", ASSIGNMENT, seed=SEED))
    catalogue.REPORT.timings["honest kinds graded alone (in process)"] = time.perf_counter() - start

    course_dir = new_course(generated_course, tmp_path_factory.mktemp("nbclass") / "course")
    entries = catalogue.NOTEBOOK_ATTACKS + catalogue.FILE_FAULTS
    entries += [e for e in catalogue.ALL if e.in_class and e.id not in {x.id for x in entries}]
    honest_students = {"honest": "solution"}
    submit(course_dir, "honest", ctx.solution)
    for i in range(COPIES):
        for kind, nb in kinds.items():
            honest_students[f"h{i}_{kind}"] = kind
            submit(course_dir, f"h{i}_{kind}", nb)
    for entry in entries:
        submit(course_dir, entry.id, entry.build(ctx))
    shape_before = gradebook_shape(course_dir)
    before = tree_hashes(ROOT / "autograder", course_dir / "submitted")
    probe = Probe()
    probe.start()
    start = time.perf_counter()
    try:
        with open(os.devnull, "w") as quiet:
            outcomes = autograde_class(course_dir, ASSIGNMENT, workers=2, progress=quiet, feedback=True)
    finally:
        seconds = time.perf_counter() - start
        probe.stop.set()
        probe.join()
    run = json.loads((course_dir / ".autograder" / "runs" / f"{ASSIGNMENT}.json").read_text())
    catalogue.REPORT.timings[f"nbgrader class of {len(entries) + len(honest_students)} submissions (2 workers, with "
                             f"feedback: {run['feedback']:.1f} s of it)"] = seconds
    after = tree_hashes(ROOT / "autograder", course_dir / "submitted")
    students = list(honest_students) + [e.id for e in entries]
    return {
        "dir": course_dir, "outcomes": {o.student: o for o in outcomes}, "before": before, "after": after,
        "shape_before": shape_before, "shape_after": gradebook_shape(course_dir), "run": run,
        "scores": {s: cell_scores(course_dir, s) for s in students},
        "feedback": feedback_pages(course_dir, ["honest"] + [e.id for e in entries]),
        "honest": expected_cell_scores(honest), "entries": entries, "honest_students": honest_students,
        "alone": alone, "seconds": seconds, "probe": probe.times,
    }


# ----------------------------------------------------------------------------------------------- the report
REPORT_TITLE = "sandbox: attack and fault catalogues (issue 5)"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The report of issue 5 at the end of a run in one process."""
    lines = report_lines()
    if lines:
        terminalreporter.section(REPORT_TITLE)
        for line in lines:
            terminalreporter.write_line(line)


def pytest_sessionfinish(session):
    """In a pytest-xdist worker the report goes to the controller, which prints it (tests/conftest.py)."""
    if hasattr(session.config, "workerinput"):
        lines = report_lines()
        if lines:
            session.config.workeroutput["catalogue_report"] = {"title": REPORT_TITLE, "lines": lines}


def report_lines() -> list[str]:
    """The report of issue 5: attacks tried and those that changed a score, faults, lost submissions, the class
    (none where this run tried no entry)."""
    report = catalogue.REPORT
    if not report.outcomes and not report.class_run:
        return []
    attacks = {k: v for k, v in report.outcomes.items() if v[0] == "attack"}
    faults = {k: v for k, v in report.outcomes.items() if v[0] == "fault"}

    def listed(ids):
        known = [i for i in ids if report.outcomes[i][4]]
        text = f" ({len(known)} of them known core bugs, xfail strict)" if known else ""
        return text + (f" -> {', '.join(ids)}" if ids else "")

    changed = sorted(k for k, v in attacks.items() if v[2] or v[3])
    gained = sorted(k for k in changed if attacks[k][5])
    wrong_faults = sorted(k for k, v in faults.items() if v[2])
    lost = sorted(k for k, v in report.outcomes.items() if v[3])
    lines: list[str] = []
    write = lines.append
    write(f"attacks tried: {len(attacks)}; attacks that changed a score: {len(changed)} (must be 0){listed(changed)}")
    if changed:
        write(f"  of which gained points on what they attack (or reached a secret): {len(gained)}; cost honest "
              f"exercises their points: {len(changed) - len(gained)}")
    write(f"faults tried: {len(faults)}; faults graded wrongly: {len(wrong_faults)}{listed(wrong_faults)}")
    write(f"submissions lost: {len(lost)} (must be 0){listed(lost)}")
    if report.class_run:
        c = report.class_run
        write(f"class under load: {c['submissions']} submissions ({c['catalogue']} from the catalogues), "
              f"{c['workers']} workers, wall time {c['seconds']:.1f} s; graded {c['graded']}/{c['submissions']}, "
              f"lost {c['lost']}; honest scores equal to graded alone: {c['honest_equal']}/{c['honest']}; "
              f"`python -c pass` during grading: max {c['probe_max']:.2f} s over {c['probes']} runs")
    for name, seconds in report.timings.items():
        write(f"  {name}: {seconds:.1f} s")
    costs = [c for c in report.costs.values() if c[0] is not None]
    if costs:
        worst_s = max(costs, key=lambda c: c[0])
        worst_mb = max((c for c in costs if c[1] is not None), key=lambda c: c[1], default=(0.0, 0.0))
        write(f"cost of one entry (bounds: {MAX_SECONDS:g} s, grader memory +{GRADER_CEILING_MB:g} MiB): "
              f"worst time {worst_s[0]:.1f} s, worst grader memory +{worst_mb[1]:.0f} MiB")
    write(f"  {'kind':6s} {'entry':34s} {'time':>7s} {'grader memory':>14s}  outcome")
    for entry_id, (kind, outcome, bad, gone, bug, _) in report.outcomes.items():
        flag = "LOST " if gone else ("CHANGED " if bad and kind == "attack" else ("WRONG " if bad else ""))
        seconds, mb = report.costs.get(entry_id, (None, None))
        took = f"{seconds:5.1f} s" if seconds is not None else "      -"
        memory = f"+{mb:6.0f} MiB" if mb is not None else "           -"
        write(f"  {kind:6s} {entry_id:34s} {took:>7s} {memory:>14s}  "
              f"{flag}{'[known bug] ' if bug and (bad or gone) else ''}{outcome}")
    return lines
