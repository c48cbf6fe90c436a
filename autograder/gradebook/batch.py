"""Grade a whole assignment with N worker processes: ``python -m autograder autograde ASSIGNMENT``.

Keras is imported twice per grading run, never per submission or per worker: once by this process (then
forked into the workers, which run the hidden graders) and once, at the same time on the other core, by the
sandbox's nursery (then forked into each lane's fork server, which forks each submission's process; see
``autograder.sandbox.lanes``). Each worker is one warm grading lane: it runs nbgrader's own ``Autograde``
converter in-process (the course's preprocessors: the sandboxed execution and the hidden graders) for one student
after another. Workers and student processes run one thread each, so N workers use N cores without
oversubscribing them. ``--shard i/n`` grades the
students whose stable hash falls in shard i, so several machines can split a class against one PostgreSQL
gradebook. A failure in one submission is reported at the end and never stops the run.

Submissions are never changed: they are copied into a staging folder (``.autograder/staging``) that nbgrader
reads (``autograder.gradebook.staging``). A notebook that cannot be graded at all (not JSON, truncated, not UTF-8,
too big, or another assignment's notebook) is staged as the blank release with a Korean note at the top, so that
the student gets a 0 with the reason in the feedback instead of no grade at all.

Every submission is bounded in time, whatever it does: a worker stops grading a submission still running after
``notebook + submission + grace`` seconds (``Timeouts.class_run``; an alarm in the worker) and grades it as the
blank release with a Korean note instead; a worker that does not stop ``kill_grace`` s later is killed by this process
(and replaced by another), and the submission is graded as blank by another worker. A worker that ends while it
grades a submission (the kernel's OOM killer, any signal, an exit) is seen at once and replaced, and the submission
is graded again in the fresh worker, then, if that one ends too, as blank with the true reason (memory, the signal,
the exit code). One submission never stalls the class.

A worker's side is ``autograder.gradebook.worker``; starting, feeding, watching and replacing the workers is
``autograder.gradebook.crew``.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

from autograder import outputs
from autograder.gradebook.crew import Workers, collect, collect_feedback
from autograder.gradebook.staging import stage
from autograder.gradebook.worker import Outcome, warm_up


def shard_of(student: str, shards: int) -> int:
    """A student's shard in 1..shards, stable across machines and class lists."""
    return int(hashlib.sha256(student.encode()).hexdigest(), 16) % shards + 1


class NoSubmissions(Exception):
    """Nothing of the assignment is collected in the course folder: nothing to grade (the message says where)."""


def parse_shard(text: str | None) -> tuple[int, int]:
    if not text:
        return 1, 1
    try:
        index, total = (int(x) for x in text.split("/"))
    except ValueError:
        index, total = 0, 0
    if not 1 <= index <= total:
        raise ValueError(f"--shard {text}: expected i/n with 1 <= i <= n (e.g. 2/3)")
    return index, total


def submitted_students(course_dir: Path, assignment: str) -> list[str]:
    return sorted(p.parent.name for p in (course_dir / "submitted").glob(f"*/{assignment}") if p.is_dir())



def autograde_class(course_dir: Path, assignment: str, workers: int | None = None, shard: str | None = None,
                    students: list[str] | None = None, progress=sys.stderr, db_url: str | None = None,
                    feedback: bool = False) -> list[Outcome]:
    """Grade every (or the given) submitted student of ``assignment`` in this shard with ``workers`` lanes.

    ``db_url`` overrides the gradebook of the course's configuration (``$COURSE_DB_URL`` does too). ``feedback``: then
    the same workers make each graded student's feedback (``nbgrader generate_feedback``'s work, in parallel); each
    outcome's ``feedback`` says whether it was made."""
    from autograder import course, names, settings

    course_dir = Path(course_dir).resolve()
    names.require("assignment", [assignment], settings.load().assignments, "course_config.py")
    index, total = parse_shard(shard)
    if not (course_dir / "nbgrader_config.py").is_file():
        raise course.NoCourse(f"{course_dir} is not a course folder (no nbgrader_config.py): cd into the course "
                              "folder or give --course-dir")
    submitted = submitted_students(course_dir, assignment)
    if not submitted:
        raise NoSubmissions(f"no submission of {assignment} in {course_dir / 'submitted'}: collect them first "
                            f"(nbgrader collect {assignment}, in the course folder)")
    if students:
        names.require("student", students, submitted, f"{assignment} collected in {course_dir / 'submitted'}")
    everyone = students or submitted
    mine = [s for s in everyone if shard_of(s, total) == index]
    from autograder.sandbox import bubblewrap

    sandboxed = bubblewrap.sandboxed()  # refuse before starting anything when the sandbox cannot run
    if not mine:
        print(f"{assignment}: no submissions to grade" + (f" in shard {index}/{total}" if total > 1 else ""),
              file=progress)
        return []
    start, began = time.perf_counter(), time.time()
    phases, feedback_s = {}, 0.0
    nursery = warm_up(sandboxed, assignment)   # its keras import runs while this process does its own
    phases["imports"] = time.perf_counter() - start
    jobs = [(assignment, s, stage(course_dir, assignment, s)) for s in mine]
    workers = max(1, min(workers or os.cpu_count() or 1, len(jobs)))
    outcomes: list[Outcome] = []
    phases["stage"] = time.perf_counter() - start - phases["imports"]
    crew = Workers(str(course_dir), db_url, sandboxed, nursery)
    fallback = crew.start_lanes(workers)   # where the nursery cannot make one, the worker starts its lane on its own
    phases["lanes"] = time.perf_counter() - start - phases["stage"] - phases["imports"]
    if fallback:
        print(f"note: each lane imports keras on its own ({fallback.splitlines()[0]})", file=progress)
    try:
        for worker in range(workers):
            crew.start(worker)
        crew.release_lanes()   # the workers hold the lanes now
        collect(crew, jobs, outcomes, start, progress)
        if feedback:
            feedback_start = time.perf_counter()
            took: dict = {}
            made = collect_feedback(crew, assignment, [o.student for o in outcomes if o.ok], took)
            for outcome in outcomes:
                outcome.feedback = made.get(outcome.student, "not graded")
                outcome.feedback_seconds = round(took.get(outcome.student, 0.0), 3)
            feedback_s = time.perf_counter() - feedback_start
    finally:
        crew.stop()
        crew.close_lanes()
    print(file=progress)
    failed = [o for o in outcomes if not o.ok]
    wall = time.perf_counter() - start
    run = run_summary(outcomes, workers, wall, began, phases, feedback_s)
    print(f"{assignment}: {len(outcomes) - len(failed)}/{len(jobs)} graded in {wall:.1f} s "
          f"with {workers} worker(s)" + (f", shard {index}/{total}" if total > 1 else "")
          + f" (start-up {run['startup']:.1f} s, then {run['per_submission_median']:.2f} s a submission per worker)",
          file=progress)
    runs = course_dir / ".autograder" / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    name = f"{assignment}.json" if total == 1 else f"{assignment}-shard{index}of{total}.json"
    outputs.write_text(runs / name, json.dumps(run, indent=1))
    for outcome in outcomes:
        for note in outcome.notes:
            print(f"  {outcome.student}: {note}", file=progress)
    for outcome in outcomes:
        if outcome.feedback:
            print(f"  NO FEEDBACK {outcome.student}: {outcome.feedback.strip().splitlines()[-1]}", file=progress)
    for outcome in failed:
        print(f"  FAILED {outcome.student}: {outcome.error.strip().splitlines()[-1] if outcome.error else '?'}",
              file=progress)
    return outcomes


def run_summary(outcomes: list[Outcome], workers: int, wall: float, began: float, phases: dict,
                feedback: float = 0.0) -> dict:
    """Where a class run's time went (kept in ``.autograder/runs/<assignment>.json``)."""
    import statistics

    first = min((o.began for o in outcomes), default=began)
    last = max((o.ended for o in outcomes), default=began)
    return {
        "workers": workers, "submissions": len(outcomes), "wall": round(wall, 3),
        "startup": round(first - began, 3),   # staging, imports, lanes, forking the workers (until the first job)
        **{f"startup_{k}": round(v, 3) for k, v in phases.items()},
        "grading": round(last - first, 3),
        "feedback": round(feedback, 3),                   # the workers making the graded students' feedback
        "feedback_max": max((o.feedback_seconds for o in outcomes), default=0.0),   # one student's, at most
        "after_last": round(wall - (last - began) - feedback, 3),   # handing back, closing the lanes
        "per_submission_median": round(statistics.median(o.seconds for o in outcomes), 3) if outcomes else 0.0,
        "per_submission_max": round(max((o.seconds for o in outcomes), default=0.0), 3),
        "worker_memory_max_mb": max((o.peak_mb for o in outcomes), default=0.0),   # growth of a worker's peak
    }
