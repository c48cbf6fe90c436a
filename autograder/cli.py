"""``python -m autograder grade NOTEBOOK.ipynb [--json FILE|-] [--seed N] [--fail-under X]``

Grades one submitted notebook with the hidden graders, without touching any gradebook, and prints a
per-exercise table. Exit status: 0 graded (whatever the score), 1 graded but below ``--fail-under``,
2 not gradable (the reason on stderr).
"""
from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    grade = commands.add_parser("grade", help="grade one notebook with the hidden graders")
    grade.add_argument("notebook", help="the submitted .ipynb file")
    grade.add_argument("--json", metavar="FILE", help="write the result as JSON to FILE ('-' for stdout)")
    grade.add_argument("--seed", type=int, help="seed of the random inputs (default: a fresh one, recorded)")
    grade.add_argument("--fail-under", type=float, metavar="X", help="exit 1 when the score is below X")
    grade.add_argument("--assignment", help="assignment name (default: detected from the notebook's cells)")
    grade.add_argument("--junit", metavar="FILE", help="also write the per-test verdicts as JUnit XML")
    grade.add_argument("--gradescope", metavar="FILE", help="also write a Gradescope-style results.json")
    grade.add_argument("--visibility", default="visible", choices=("visible", "after_due_date", "after_published",
                       "hidden"), help="Gradescope's visibility of the exercises' tests (default: visible)")
    grade.add_argument("--submitted-at", metavar="TIME", help="when it was submitted (ISO 8601 with a time zone): "
                       "apply the course's late penalty against the assignment's due date")
    grade.add_argument("--due-date", metavar="TIME", help="with --submitted-at: this due date instead of the "
                       "course's (an extension)")
    build = commands.add_parser("build", help="regenerate release/ and solutions/ from source/ with nbgrader")
    build.add_argument("assignments", nargs="*", help="assignments (default: all of course_config.py)")
    batch = commands.add_parser("autograde", help="grade a whole assignment with N parallel workers (nbgrader)")
    batch.add_argument("assignment")
    batch.add_argument("--workers", type=int, help="worker processes (default: the number of cores)")
    batch.add_argument("--shard", metavar="i/n", help="grade only shard i of n (split a class over machines)")
    batch.add_argument("--student", action="append", dest="students", help="only these students (repeatable)")
    batch.add_argument("--course-dir", default=".", help="the nbgrader course directory (default: .)")
    batch.add_argument("--feedback", action="store_true", help="then make each graded student's feedback with the "
                       "same workers (what `nbgrader generate_feedback --force` makes, in parallel)")
    report = commands.add_parser("report", help="write the instructor's reports of a graded course: grades CSV, "
                                 "report.html (scores, frequent mistakes, code similarity)")
    report.add_argument("assignments", nargs="*", help="assignments (default: all of course_config.py)")
    report.add_argument("--course-dir", default=".", help="the nbgrader course directory (default: .)")
    report.add_argument("--db-url", help="the gradebook (default: $COURSE_DB_URL, else the course's gradebook.db)")
    report.add_argument("--bom", action="store_true", help="start the CSV files with UTF-8's byte-order mark (Korean "
                        "Windows Excel needs it to read UTF-8)")
    report.add_argument("--roster", metavar="CSV", help="the class list (the hub's roster format, with an optional "
                        "section column): the students' sections and student numbers in the CSV files")
    extend = commands.add_parser("extend", help="give a student more time on an assignment (nbgrader's "
                                 "grant_extension; the late penalty, the CSV and the feedback follow)")
    extend.add_argument("student", help="the student: the nbgrader id (user name)")
    extend.add_argument("assignment")
    extend.add_argument("--days", type=float, required=True, help="days after the due date (0: take it back)")
    extend.add_argument("--hours", type=float, default=0.0, help="and hours (default: 0)")
    extend.add_argument("--course-dir", default=".", help="the nbgrader course directory (default: .)")
    extend.add_argument("--db-url", help="the gradebook (default: $COURSE_DB_URL, else the course's gradebook.db)")
    regrade = commands.add_parser("regrade", help="the students' regrade requests: print those collected, or "
                                  "release the request form (`regrade` in the Assignment List)")
    regrade.add_argument("--release", action="store_true", help="release the form to the students "
                         "(nbgrader release_assignment regrade)")
    regrade.add_argument("--course-dir", default=".", help="the nbgrader course directory (default: .)")
    demo = commands.add_parser("demo", help="the main job: generate and grade the demo submissions via nbgrader")
    demo.add_argument("assignments", nargs="*", help="assignments (default: all of course_config.py)")
    demo.add_argument("--course-dir", help="where the demo course lives (default: demo/)")
    hub = commands.add_parser("hub", help="set up and run the course on a multi-user JupyterHub (as root)")
    hub.add_argument("--students", type=int, default=2, help="student accounts student1..N (default: 2)")
    hub.add_argument("--port", type=int, default=8000, help="the hub's port (default: 8000)")
    hub.add_argument("--ip", default="", help="the hub's address (default: all interfaces)")
    hub.add_argument("--namespace", help="a separate hub that shares nothing with the course's: course id, accounts "
                     "(NAME-student1, ...), exchange, state, environment (default: $AUTOGRADER_HUB_NAMESPACE, "
                     "else the course's own hub)")
    hub.add_argument("--roster", metavar="CSV", help="the class: username,student_id,last_name,first_name,email,role "
                     "per line (autograder/hub/roster.py); instead of --students")
    hub.add_argument("--ssl-cert", metavar="PEM", help="serve HTTPS with this certificate (chain); with --ssl-key "
                     "(JupyterHub's ssl_cert and ssl_key)")
    hub.add_argument("--ssl-key", metavar="PEM", help="the certificate's private key (root's, mode 0600)")
    hub.add_argument("--domain", metavar="NAME", help="the hub's DNS name: each user's server and formgrader get a "
                     "name of their own below it (<user>.NAME), so DNS must resolve *.NAME to this machine (and "
                     "--ssl-cert cover it); required unless --ip is 127.0.0.1 (then hub.localhost)")
    hub.add_argument("--stop", action="store_true", help="stop the hub that runs (and all it started; the home "
                     "images are unmounted)")
    hub.add_argument("--remove", action="store_true", help="stop the hub and remove everything the hub command made: "
                     "its accounts with their homes (the grading account's gradebook too), home images, control "
                     "groups, firewall chains, services, state and environment")
    k8s = commands.add_parser("k8s", help="write the course's Kubernetes bundle (Zero to JupyterHub values, images, "
                              "exchange, formgrader, gradebook, network policies, grading Jobs)")
    k8s.add_argument("--out", required=True, metavar="DIR", help="where to write it")
    k8s.add_argument("--namespace", default="course", help="the cluster's namespace (default: course)")
    k8s.add_argument("--release", default="course", help="the jupyterhub chart's Helm release (default: course)")
    k8s.add_argument("--registry", help="where the two images live (required: e.g. ghcr.io/ORG/attention-ko)")
    k8s.add_argument("--tag", default="1", help="the images' tag (default: 1)")
    k8s.add_argument("--shards", type=int, default=4, help="pods of one grading Job (default: 4)")
    k8s.add_argument("--workers", type=int, default=2, help="grading workers (cores) per pod (default: 2)")
    k8s.add_argument("--instructor", action="append", dest="instructors", help="a hub user of the formgrade "
                     "group (repeatable; at least one)")
    k8s.add_argument("--storage-class", help="students' home volumes and the exchange's (default: the cluster's)")
    k8s.add_argument("--course-storage-class", help="the course volume, ReadWriteMany (default: the cluster's)")
    k8s.add_argument("--roster", metavar="CSV", help="who logs in: the class roster (as for `hub --roster`), a "
                     "password each in DIR/passwords.csv (kept when run again), their hashes in the values")
    from autograder.ci.command import add_commands

    add_commands(commands)   # ci (due, pushes, refuse, gather) and gradescope (build, run)
    from autograder.lti.command import add_parser as lti_parser

    lti_parser(commands)
    return parser


def main(argv=None) -> int:
    """Run a command. A name, folder or file that does not exist (an assignment, a student, the course folder, a
    roster), or a setting the course cannot use, is said on stderr and the exit status is 2; nothing to work on
    (no submission collected, nothing graded) exits 1, with the reason."""
    from autograder.course import NoCourse
    from autograder.gradebook.batch import NoSubmissions
    from autograder.hub.roster import RosterError
    from autograder.names import UnknownName
    from autograder.outputs import EmptyOutput
    from autograder.settings import ConfigError

    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except (ConfigError, UnknownName, NoCourse, RosterError) as exc:   # say what, stop
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (NoSubmissions, EmptyOutput) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def exit_now(code: int) -> None:
    """End this process with exit status ``code`` as the interpreter's own exit would, less its teardown.

    Once a command is done, the interpreter still clears every module and frees their objects (keras, torch and
    nbgrader loaded: benchmarks/results/speed.md, "the grading process"). None of it is the command's work. This
    runs what an exit must run (the ``atexit`` handlers: the sandbox's nursery and lanes ended and their folders
    removed, ``weakref.finalize`` clean-ups, logging flushed), flushes stdout and stderr, and ends with
    ``os._exit``. Where it cannot do the same as the interpreter (a thread that is not a daemon still running, a
    Python without ``atexit._run_exitfuncs``, a stream that cannot be flushed) the interpreter exits as before.

    Args:
        code: the exit status (what ``main`` returned).

    Example:
        >>> exit_now(main())   # ``python -m autograder``
    """
    import atexit
    import os
    import threading

    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if run_handlers is None or others or not isinstance(code, int) or not 0 <= code <= 255:
        raise SystemExit(code)
    run_handlers()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):   # e.g. a closed pipe: the interpreter says so and exits as it would have
        raise SystemExit(code) from None
    os._exit(code)


def run(args) -> int:
    if args.command == "grade":
        return grade(args)
    if args.command == "autograde":
        from autograder.gradebook.batch import autograde_class

        try:
            outcomes = autograde_class(args.course_dir, args.assignment, args.workers, args.shard, args.students,
                                       feedback=args.feedback)
        except ValueError as exc:   # a --shard that is not i/n
            print(f"error: {exc}", file=sys.stderr)
            return 2
        from autograder.feedback.summary import print_summary

        print_summary(args.course_dir, args.assignment, outcomes)
        return 0 if all(o.ok and not o.feedback for o in outcomes) else 1
    if args.command == "report":
        from autograder.feedback.instructor import main as report_main

        people = None
        if args.roster:   # the hub's roster file (its numbers and names for the LMS files)
            from pathlib import Path

            from autograder.hub import roster

            people = roster.read(Path(args.roster))
        return report_main(args.course_dir, args.assignments or None, args.db_url, bom=args.bom, people=people)
    if args.command == "extend":
        from autograder.gradebook.extensions import main as extend_main

        return extend_main(args.student, args.assignment, args.days, args.hours, args.course_dir, args.db_url)
    if args.command == "regrade":
        from autograder.feedback.regrade import main as regrade_main

        return regrade_main(args.course_dir, args.release)
    if args.command == "hub":
        from autograder.hub.command import main as hub_main

        return hub_main(args)
    if args.command in ("ci", "gradescope"):
        from autograder.ci.command import main as ci_main

        return ci_main(args)
    if args.command == "k8s":
        from autograder.k8s.command import main as k8s_main

        return k8s_main(args)
    if args.command == "lti":
        from autograder.lti.command import main as lti_main

        return lti_main(args)
    from autograder import course

    if args.command == "build":
        course.build(args.assignments or None)
        return 0
    if args.command == "demo":
        from autograder.demo.classroom import main as demo_main

        return demo_main(args.course_dir, args.assignments or None)
    return 2


def grade(args) -> int:
    if args.submitted_at or args.due_date:   # a time that cannot be read is said before minutes of grading
        from autograder.ci.command import times_problem

        if problem := times_problem(args):
            print(f"error: {problem}", file=sys.stderr)
            return 2
    from autograder.sandbox import bubblewrap, nursery
    from autograder.sandbox.bubblewrap import SandboxUnavailable

    # The sandbox's nursery first: its imports (numpy, torch, keras, matplotlib: the longest part of a grading) run
    # while this process makes its own, from the start. A file that cannot be graded is still said first.
    try:
        sandboxed, unavailable = bubblewrap.sandboxed(), None
        nursery.shared(sandboxed)
    except SandboxUnavailable as exc:
        unavailable = exc
    from autograder import scores
    from autograder.inert import console, one_line
    from autograder.grade import grade_submission, warm_up
    from autograder.report import table
    from autograder.submission.files import NotGradable
    from autograder.submission.notebook import collect_file

    if args.assignment:
        from autograder import names, settings

        names.require("assignment", [args.assignment], settings.load().assignments, "course_config.py")
    try:
        submission = collect_file(args.notebook, args.assignment)
    except NotGradable as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        from autograder.ci.command import write_not_graded

        write_not_graded(args, exc)   # an explicit 0 with the reason, in every file asked for
        return 2
    if unavailable is not None:
        print(f"error: {unavailable}", file=sys.stderr)
        return 2
    try:
        warm_up(sandboxed, assignment=submission.assignment)
        result = grade_submission(submission, args.seed)
    except SandboxUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from autograder.ci.command import late_of
    from autograder.feedback.exports import write_requested

    late = late_of(args, result)
    # what is printed holds the notebook's text (its errors, review items): inert in a CI log (``console``)
    out = sys.stderr if args.json == "-" else sys.stdout
    print(console(table(result)), file=out)
    if late is not None:
        print(f"{late.english()}; score after it {late.net(result.score):g}", file=out)
    for item in result.review:   # what the sandbox cannot block, for a person to look at (docs/security/model.md)
        print(console(f"review: {one_line(item)}"), file=out)
    write_requested(result, args, late)   # each file replaced whole or not at all (``outputs``)
    score = late.net(result.score) if late is not None else result.score
    if args.fail_under is not None and score < args.fail_under:
        print(f"score {scores.text(score)} of {scores.text(result.max_score)} is below --fail-under "
              f"{args.fail_under:g}: exit status 1", file=sys.stderr)
        return 1
    return 0

