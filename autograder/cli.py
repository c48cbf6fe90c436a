"""``python -m autograder grade NOTEBOOK.ipynb [--json FILE|-] [--seed N] [--fail-under X]``

Grades one submitted notebook with the hidden graders, without touching any gradebook, and prints a
per-exercise table. Exit status: 0 graded (whatever the score), 1 graded but below ``--fail-under``,
2 not gradable (the reason on stderr).
"""
from __future__ import annotations

import argparse
import json
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
    hub.add_argument("--stop", action="store_true", help="stop the hub that runs (and all it started)")
    k8s = commands.add_parser("k8s", help="write the course's Kubernetes bundle (Zero to JupyterHub values, images, "
                              "exchange, formgrader, gradebook, network policies, grading Jobs)")
    k8s.add_argument("--out", required=True, metavar="DIR", help="where to write it")
    k8s.add_argument("--namespace", default="course", help="the cluster's namespace (default: course)")
    k8s.add_argument("--release", default="course", help="the jupyterhub chart's Helm release (default: course)")
    k8s.add_argument("--registry", default="registry.example.org/attention-ko", help="where the two images live")
    k8s.add_argument("--tag", default="1", help="the images' tag (default: 1)")
    k8s.add_argument("--shards", type=int, default=4, help="pods of one grading Job (default: 4)")
    k8s.add_argument("--workers", type=int, default=2, help="grading workers (cores) per pod (default: 2)")
    k8s.add_argument("--instructor", action="append", dest="instructors", help="a hub user of the formgrade "
                     "group (repeatable)")
    k8s.add_argument("--storage-class", help="students' home volumes and the exchange's (default: the cluster's)")
    k8s.add_argument("--course-storage-class", help="the course volume, ReadWriteMany (default: the cluster's)")
    from autograder.lti.command import add_parser as lti_parser

    lti_parser(commands)
    return parser


def main(argv=None) -> int:
    from autograder.settings import ConfigError

    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except ConfigError as exc:   # course_config.py sets what the course cannot use: say what, stop
        print(f"error: {exc}", file=sys.stderr)
        return 2


def exit_now(code: int) -> None:
    """End this process with exit status ``code`` as the interpreter's own exit would, less its teardown.

    Once a command is done, the interpreter still clears every module and frees their objects: 0.17 s with keras,
    torch and nbgrader loaded (a graded notebook took about 4.2 s in all). None of it is the command's work. This
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

        outcomes = autograde_class(args.course_dir, args.assignment, args.workers, args.shard, args.students,
                                   feedback=args.feedback)
        return 0 if all(o.ok and not o.feedback for o in outcomes) else 1
    if args.command == "report":
        from autograder.feedback.instructor import main as report_main

        return report_main(args.course_dir, args.assignments or None, args.db_url)
    if args.command == "hub":
        from autograder.hub.command import main as hub_main

        return hub_main(args)
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
    from autograder.sandbox import bubblewrap, nursery
    from autograder.sandbox.bubblewrap import SandboxUnavailable

    # The sandbox's nursery first: its imports (numpy, torch, keras, matplotlib: the longest part of a grading) run
    # while this process makes its own, from the start. A file that cannot be graded is still said first.
    try:
        sandboxed, unavailable = bubblewrap.sandboxed(), None
        nursery.shared(sandboxed)
    except SandboxUnavailable as exc:
        unavailable = exc
    from autograder.feedback.inert import console, json_safe, one_line
    from autograder.grade import grade_submission, warm_up
    from autograder.report import table
    from autograder.submission.files import NotGradable
    from autograder.submission.notebook import collect_file

    try:
        submission = collect_file(args.notebook, args.assignment)
    except NotGradable as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
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
    # what is printed holds the notebook's text (its errors, review items): inert in a CI log (``console``)
    out = sys.stderr if args.json == "-" else sys.stdout
    print(console(table(result)), file=out)
    for item in result.review:   # what the sandbox cannot block, for a person to look at (docs/security/model.md)
        print(console(f"review: {one_line(item)}"), file=out)
    if args.json:
        text = json.dumps(json_safe(result.to_json()), ensure_ascii=False, indent=2)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
    if args.junit:
        from autograder.feedback.exports import write_junit

        write_junit(result, args.junit)
    if args.gradescope:
        from autograder.feedback.exports import write_gradescope

        write_gradescope(result, args.gradescope)
    if args.fail_under is not None and result.score < args.fail_under:
        return 1
    return 0
