"""The commands of grading outside the course's machines, and what ``python -m autograder grade`` takes from here:

* ``python -m autograder ci due [--at TIME]``: the assignment a scheduled run grades (its due date passed last);
* ``python -m autograder ci pushes ROSTER``: the grading jobs' matrix: each repository's graded commit and push time;
* ``python -m autograder ci refuse FOLDER``: remove and annotate links and special files of a submission;
* ``python -m autograder ci gather ARTIFACTS --assignment A --out DIR [--roster ROSTER]``: the class CSV;
* ``python -m autograder gradescope build ASSIGNMENT --out DIR [--zip FILE]`` and ``gradescope run``.

They import nothing heavy (no torch, no nbgrader): a workflow's bookkeeping steps run them with a bare Python 3.11.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def add_commands(commands) -> None:
    """The ``ci`` and ``gradescope`` commands, on the CLI's subparsers."""
    ci = commands.add_parser("ci", help="grading in CI (GitHub Actions): the assignment due, the jobs' matrix, "
                             "links refused, the class CSV").add_subparsers(dest="ci_command", required=True)
    due = ci.add_parser("due", help="print the assignment whose due date passed last (nothing before the first)")
    due.add_argument("--at", metavar="TIME", help="as of this time (ISO 8601; default: now)")
    due.add_argument("--assignment", help="this one instead (a manual run's choice): printed if the course has it, "
                     "else exit 2 with the course's assignments")
    pushes = ci.add_parser("pushes", help="print the grading matrix as JSON: each repository's graded commit and "
                           "when it was pushed (GitHub's activity log; $GH_TOKEN, $GITHUB_API_URL)")
    pushes.add_argument("roster", help="the roster: owner/name [student id [name]] per line")
    refuse = ci.add_parser("refuse", help="remove links, devices, FIFOs, sockets and hard links under FOLDER, "
                           "each with a GitHub warning")
    refuse.add_argument("folder", help="the student's checked-out repository")
    gather = ci.add_parser("gather", help="the class CSV from the grading jobs' artifacts (a missing notebook or "
                           "result: an explicit 0 with the reason)")
    gather.add_argument("artifacts", help="the folder the artifacts were downloaded into")
    gather.add_argument("--assignment", required=True, help="the assignment the jobs graded")
    gather.add_argument("--roster", help="the roster (every repository of it gets a line, with or without a result)")
    gather.add_argument("--out", required=True, metavar="DIR", help="where grades.csv and ci-results.csv go")
    gradescope = commands.add_parser("gradescope", help="the course on Gradescope: its autograder package, and "
                                     "what the package runs").add_subparsers(dest="gradescope_command", required=True)
    build = gradescope.add_parser("build", help="write the autograder package of ASSIGNMENT (setup.sh, "
                                  "run_autograder, the course's graders)")
    build.add_argument("assignment", help="the assignment the package grades (one package each)")
    build.add_argument("--out", required=True, metavar="DIR", help="the package's folder (new or empty)")
    build.add_argument("--zip", metavar="FILE", help="also the zip to upload to Gradescope")
    build.add_argument("--visibility", default="visible", help="Gradescope's visibility of the exercises' results: "
                       "visible, after_due_date, after_published (default: visible)")
    run = gradescope.add_parser("run", help="grade /autograder/submission (what run_autograder does)")
    run.add_argument("--root", default="/autograder", help="Gradescope's folder (default: /autograder)")


def main(args) -> int:
    from autograder.settings import ConfigError

    try:
        if args.command == "gradescope":
            return _gradescope(args)
        return {"due": _due, "pushes": _pushes, "refuse": _refuse, "gather": _gather}[args.ci_command](args)
    except (ValueError, OSError) as exc:   # a roster, artifact, time or folder that cannot be used: say which
        if isinstance(exc, ConfigError):
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _due(args) -> int:
    from autograder import settings
    from autograder.ci import times

    if args.assignment:
        if args.assignment not in settings.load().assignments:
            print(f"error: unknown assignment {args.assignment!r} (the course's: "
                  f"{', '.join(settings.load().assignments)})", file=sys.stderr)
            return 2
        print(args.assignment)
        return 0
    now = times.parse(args.at, "--at") if args.at else None
    assignment = times.latest_due(now)
    if assignment is None:
        first = min(settings.load().assignments, key=times.due_date)
        print(f"ci due: no due date has passed yet (the first: {first}, {times.due_date(first).isoformat()})",
              file=sys.stderr)
        return 0
    print(assignment)
    return 0


def _pushes(args) -> int:
    from autograder.ci import annotations, gather, pushes

    found = pushes.matrix(gather.read_roster(args.roster))
    for entry in found:
        if entry["error"]:
            print(annotations.command("warning", f"{entry['repository']}: {entry['error']} (graded from its default "
                                      "branch, without a late penalty)", title="no push time"), file=sys.stderr)
    print(json.dumps(found))
    return 0


def _refuse(args) -> int:
    from autograder.ci.annotations import refuse

    refuse(Path(args.folder))
    return 0


def _gather(args) -> int:
    from autograder.ci import annotations, gather

    roster = gather.read_roster(args.roster) if args.roster else []
    rows = gather.gather(args.artifacts, roster, args.assignment)
    written = gather.write(rows, args.assignment, args.out)
    counts = {status: sum(r.status == status for r in rows) for status in ("graded", "not graded", "no result")}
    summary = ", ".join(f"{n} {status}" for status, n in counts.items())
    print(f"ci gather: {len(rows)} repositories of {args.assignment}: {summary}; {written['grades']}, "
          f"{written['ci-results']}")
    for row in rows:   # each on its own, as an annotation of the run's summary on GitHub
        if row.status != "graded":
            text = f"{row.entry.repository} ({row.entry.student}): {row.status}, 0 — {row.reason}"
            print(annotations.command("warning", text, title=row.status) if os.environ.get("GITHUB_ACTIONS") == "true"
                  else f"  {text}")
    return 1 if counts["no result"] else 0


def _gradescope(args) -> int:
    from autograder.ci import gradescope

    if args.gradescope_command == "run":
        return gradescope.run(args.root)
    written = gradescope.build(args.assignment, args.out, args.visibility, args.zip)
    print(f"gradescope: {len(written)} files in {args.out}" + (f", {args.zip}" if args.zip else "") +
          " (upload the zip as the assignment's autograder; choose Gradescope's Ubuntu 22.04 base image)")
    return 0


# ----------------------------------------------------------------------------------- for `python -m autograder grade`
def times_problem(args) -> str | None:
    """Why ``--submitted-at``/``--due-date`` cannot be used (None: they can)."""
    from autograder.ci import times

    if args.due_date and not args.submitted_at:
        return "--due-date needs --submitted-at (the submission's time)"
    try:
        times.parse(args.submitted_at, "--submitted-at")
        if args.due_date:
            times.parse(args.due_date, "--due-date")
    except times.TimeError as exc:
        return str(exc)
    return None


def late_of(args, result):
    """The late penalty of ``result`` (None without ``--submitted-at``)."""
    if not args.submitted_at:
        return None
    from autograder.ci.late import Late

    return Late.of(result.score, result.assignment, args.submitted_at, args.due_date)


def write_not_graded(args, exc) -> None:
    """The files ``grade`` was asked for, for a notebook it could not grade: an explicit 0 with the reason. The
    assignment is ``--assignment``'s, else the file name's (``attention.ipynb``) when that names one."""
    if not (args.json or args.junit or args.gradescope):
        return
    from autograder import settings
    from autograder.feedback.exports import not_graded, write_requested

    name = Path(args.notebook).name
    assignment = args.assignment or Path(name).stem
    if assignment not in settings.load().assignments:
        print(f"error: no result written: which assignment {name} is of is unknown (give --assignment)",
              file=sys.stderr)
        return
    write_requested(not_graded(assignment, name, getattr(exc, "message", None) or str(exc)), args)
