"""The hub's exchange: ngshare (a JupyterHub service with a database), started by the hub as ``python -m
autograder.hub.exchange_service`` instead of ngshare's own ``main``.

Who submitted is the hub user whose token made the request (ngshare asks the hub's ``/hub/api/user`` with it); when
is the server's clock (``Submission.timestamp``, UTC, set when the request arrives); a student may submit only to a
course that lists them (the roster the hub command writes), and nothing a student sends names another user or a
time. Files are stored by the service under names of its own, out of every user's reach.

What ngshare's ``main`` does differently, and why it is not used:

* it listens on every interface (``0.0.0.0``) and runs tornado with ``autoreload``; here: 127.0.0.1 only, no
  reloading;
* its database and files default to ``/srv/ngshare`` (one per machine); here: the hub's root-only state folder
  (``Layout.exchange_state``);
* on SQLAlchemy 2 it stores no release and no submission (``autograder.patches.hub.fix_ngshare_sqlalchemy2``);
* it accepts any submission tornado can buffer (100 MB) and any number of them; here every submission is checked
  when it arrives, before anything is stored (``check_submission``: well-formed, the file count, names, the decoded
  size; ``course_config.py``'s ``exchange``), and a student keeps at most ``max_submissions`` of one assignment
  and ``max_stored_mb`` in all (every assignment of the course).
  A refused submission gets the reason in Korean (autograder/messages.py) and leaves the hub's log a line in English
  for the instructor;
* it lets only instructors download a submission; here a student downloads their own too
  (``autograder.patches.hub.own_ngshare_submissions``), never another's;
* it reads any number of bodies at once, of anyone, for as long as they take; here a door in front of ngshare
  (``autograder/hub/exchange_guard.py``) decides from a request's headers, before its body is read: requests and
  uploads at once per user, the body's size, refused uploads counted against the student; and the service runs in
  a control group of its own (memory, CPU).
"""
from __future__ import annotations

import argparse
import base64
import binascii
import dataclasses
import json
import logging
import os
from collections import namedtuple
from urllib.parse import urlparse

from autograder import settings
from autograder.hub import exchange_guard
from autograder.messages import Message, Reason

MAX_PATH = 255


def bad_path(path: str) -> bool:
    """A submitted file's name that is not taken: empty, too long, not printable, a backslash, or a part that is
    empty, ``.`` or ``..`` (so nothing absolute and nothing outside the submission)."""
    return (not path or len(path) > MAX_PATH or not path.isprintable() or "\\" in path
            or any(part in ("", ".", "..") for part in path.split("/")))


class Refused(Exception):
    def __init__(self, status: int, message: Message):
        super().__init__(str(message))
        self.status, self.message = status, message


def check_submission(files_json: str | None, limits: settings.Exchange, path_ok) -> list[dict]:
    """The files of a submission request (ngshare's ``files`` field: a JSON list of ``{"path", "content"}`` with
    base64 content), checked; raises ``Refused`` with the reason. ``path_ok``: ngshare's own path check."""
    if files_json is None:
        raise Refused(400, Reason.MALFORMED_SUBMISSION(what="no files"))
    try:
        files = json.loads(files_json)
    except (ValueError, RecursionError):
        raise Refused(400, Reason.MALFORMED_SUBMISSION(what="not JSON")) from None
    if not isinstance(files, list) or not all(isinstance(f, dict) and isinstance(f.get("path"), str)
                                              and isinstance(f.get("content"), str) for f in files):
        raise Refused(400, Reason.MALFORMED_SUBMISSION(what="not a list of files"))
    if len(files) > limits.max_files:
        raise Refused(413, Reason.TOO_MANY_FILES(count=len(files), limit=limits.max_files))
    seen, total, limit = set(), 0, limits.max_submission_mb * 1e6
    for entry in files:
        path = entry["path"]
        if bad_path(path) or path in seen or not path_ok(path):
            raise Refused(400, Reason.BAD_FILE_NAME(path=path[:80]))
        seen.add(path)
        total += len(entry["content"]) * 3 // 4                       # base64: checked exactly below
        if total > limit * 1.01 + 4:
            break
    if total <= limit * 1.01 + 4:
        try:
            total = sum(len(base64.b64decode(f["content"].encode(), validate=False)) for f in files)
        except (binascii.Error, ValueError):
            raise Refused(400, Reason.MALFORMED_SUBMISSION(what="content not base64")) from None
    if total > limit:
        raise Refused(413, Reason.SUBMISSION_TOO_BIG(size_mb=total / 1e6, limit_mb=limits.max_submission_mb))
    return files


def stored_bytes(course, student_id: str) -> int:
    """What the exchange keeps of one student's submissions to ``course`` (every assignment), in bytes."""
    return sum(f.size or 0 for assignment in course.assignments for submission in assignment.submissions
               if submission.student_id == student_id for f in submission.files)


def install_checks(limits: settings.Exchange, on_refused=lambda user: None) -> None:
    """ngshare's submit handler checks a submission before it stores anything, and keeps a quota per student (the
    patch of its handler: ``autograder.patches.hub.check_ngshare_submissions``); ``on_refused(user id)`` hears of
    every refused submission (``exchange_guard.Guard.refused``: refused uploads count against the student)."""
    from tornado.log import app_log

    from autograder.patches.hub import check_ngshare_submissions

    def check(self, course_id, assignment_id):
        if self.user is None:
            self.json_error(403, "Permission denied")
        course = self.find_course(course_id)
        self.check_course_user(course)
        assignment = self.find_assignment(course, assignment_id)
        try:
            files = check_submission(self.get_body_argument("files", None), limits, self.path_check)
            count = self.find_student_submissions(assignment, self.user).count()
            if count >= limits.max_submissions:
                raise Refused(429, Reason.TOO_MANY_SUBMISSIONS(limit=limits.max_submissions))
            if limits.max_stored_mb:
                stored = stored_bytes(course, self.user.id)
                if stored + sum(len(f["content"]) * 3 // 4 for f in files) > limits.max_stored_mb * 1e6:
                    raise Refused(413, Reason.STORED_TOO_MUCH(stored_mb=stored / 1e6,
                                                              limit_mb=limits.max_stored_mb))
        except Refused as refused:
            app_log.warning("exchange: refused a submission of %s/%s by %s: %s", course_id, assignment_id,
                            self.user.id, refused.message.english)
            on_refused(self.user.id)
            self.json_error(refused.status, refused.message.korean)

    check_ngshare_submissions(check)


def log_to_stderr() -> None:
    """The service's log into the hub's log (its stderr): what was refused and why, in English for the instructor,
    and the requests answered 4xx/5xx (tornado's access log at WARNING), not every request. Called after ngshare's
    database upgrade: alembic's ``fileConfig`` there disables every logger that exists (tornado's included)."""
    logging.basicConfig(level=logging.INFO, format="[%(levelname).1s %(asctime)s exchange] %(message)s",
                        force=True)
    for name in ("tornado.application", "tornado.general", "tornado.access"):
        logging.getLogger(name).disabled = False
    logging.getLogger("tornado.access").setLevel(logging.WARNING)


SERVICE_GROUP = "exchange-service"       # not a user name (the hub's users' groups are siblings of it)


def bound(parent: str, limits: settings.Exchange) -> None:
    """This process (root, before it serves) into a control group of its own below ``parent``: its memory and CPU
    bounded (the door's ``memory_mb``, ``cpu_limit``: ``COURSE["exchange"]["door"]``), so that whatever a student
    makes it hold, the kernel ends the service, not another process of the machine."""
    from autograder.hub import limits as groups

    found = groups.detect(parent)
    groups.join(found.make(SERVICE_GROUP, groups.UserLimits(memory_mb=int(limits.door.memory_mb),
                                                             cpu_limit=float(limits.door.cpu_limit))))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m autograder.hub.exchange_service",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--state", required=True, help="folder of the database and the stored files (root only)")
    parser.add_argument("--admins", default="", help="ngshare admin user ids (comma separated)")
    parser.add_argument("--ip", default="127.0.0.1", help="the address it listens on (default: 127.0.0.1, the "
                        "one-machine hub's; a cluster's exchange pod listens on its pod's address, 0.0.0.0)")
    parser.add_argument("--cgroup", default="", help="the parent control group (below the hub's own) of the "
                        "service's own group (root only; none: no group of its own)")
    args = parser.parse_args(argv)
    limits = settings.load().exchange
    if args.cgroup:
        bound(args.cgroup, limits)
    from ngshare import dbutil, ngshare
    from tornado.httpserver import HTTPServer
    from tornado.ioloop import IOLoop

    from autograder.patches.hub import fix_ngshare_sqlalchemy2, own_ngshare_submissions

    os.makedirs(args.state, mode=0o700, exist_ok=True)
    os.chmod(args.state, 0o700)
    database = f"sqlite:///{os.path.join(args.state, 'ngshare.db')}"
    storage = os.path.join(args.state, "files")
    dbutil.upgrade(database, cmd_opts=namedtuple("CmdOpts", ["x"])(["data=true", f"storage={storage}"]))
    log_to_stderr()
    fix_ngshare_sqlalchemy2()
    own_ngshare_submissions()
    admins = [a for a in args.admins.split(",") if a]
    body = exchange_guard.body_limit(limits.max_submission_mb)
    door = {**dataclasses.asdict(limits.door), "max_body": body}
    prefix = os.environ["JUPYTERHUB_SERVICE_PREFIX"]
    app = ngshare.MyApplication(prefix, database, storage, admin=admins, debug=False, autoreload=False)
    guard = exchange_guard.Guard(app, door, admins=admins, zone=settings.load().timezone)
    install_checks(limits, guard.refused)
    server = HTTPServer(guard, max_body_size=body, max_buffer_size=body, body_timeout=door["body_timeout_s"],
                        idle_connection_timeout=door["idle_timeout_s"])
    server.listen(urlparse(os.environ["JUPYTERHUB_SERVICE_URL"]).port, args.ip)
    IOLoop.current().start()


if __name__ == "__main__":
    main()
