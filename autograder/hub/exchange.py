"""The grading side of the hub's exchange (ngshare): nbgrader's collect and release feedback as the formgrader runs
them (``course_config.py`` selects these classes when ``COURSE_NGSHARE_URL`` is set, as on the hub).

ngshare-exchange's own ``collect`` stops the whole class at the first submission it cannot write and takes the
student's files as they come (a file named ``timestamp.txt``, or a folder of that name, decides or breaks the
time); its ``release_feedback`` stops at the first student whose upload fails. Here:

* **collect** takes the roster's students only (the gradebook's; ngshare already takes submissions only from the
  students its course lists), the latest submission of each (by the server's time), checks its files again
  (names, count, sizes: ``course_config.py``'s ``exchange``), leaves out ``timestamp.txt`` and
  ``submission_secret.txt`` the student sent, writes the server's time as ``timestamp.txt``, and moves the folder
  into ``submitted/`` only when all of it was written. A submission that cannot be collected is skipped with the
  reason in the log (formgrader shows it), and the class goes on.
* **release feedback** releases every student's feedback it can and names the ones it could not.
"""
from __future__ import annotations

import base64
import binascii
import glob
import os
import shutil
import tempfile

from nbgrader.utils import parse_utc
from ngshare_exchange.collect import ExchangeCollect as NgshareCollect
from ngshare_exchange.release_feedback import ExchangeReleaseFeedback as NgshareReleaseFeedback

from autograder import settings
from autograder.hub.exchange_service import bad_path

NOT_FROM_STUDENTS = frozenset({"timestamp.txt", "submission_secret.txt"})   # nbgrader's own files: the server's


class SkipSubmission(Exception):
    pass


def safe_parts(path: str) -> list[str]:
    if bad_path(path):
        raise SkipSubmission(f"a file name that is not allowed: {path[:80]!r}")
    return path.split("/")


def write_files(files: list, dest: str, limits: settings.Exchange) -> list[str]:
    """Write a downloaded submission's files under ``dest`` (a new, empty folder of the grading account) without
    following anything there; returns what was left out. Raises ``SkipSubmission`` when the whole is refused."""
    if not isinstance(files, list) or len(files) > limits.max_files:
        raise SkipSubmission(f"{len(files) if isinstance(files, list) else 'no'} files (limit {limits.max_files})")
    left_out, total, written = [], 0, set()
    for entry in files:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise SkipSubmission("a malformed file entry")
        parts = safe_parts(entry["path"])
        if parts[0] in NOT_FROM_STUDENTS:
            left_out.append(f"{entry['path']} (written by the exchange, not taken from the student)")
            continue
        try:
            data = base64.b64decode(entry.get("content", "").encode())
        except (binascii.Error, ValueError):
            raise SkipSubmission(f"{entry['path']}: content that is not base64") from None
        total += len(data)
        if total > limits.max_submission_mb * 1e6:
            raise SkipSubmission(f"over {limits.max_submission_mb} MB")
        if entry["path"] in written:
            raise SkipSubmission(f"{entry['path']} twice")
        written.add(entry["path"])
        fd_dir = os.open(dest, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            for part in parts[:-1]:
                try:
                    os.mkdir(part, 0o700, dir_fd=fd_dir)
                except FileExistsError:
                    pass
                try:
                    inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd_dir)
                except (NotADirectoryError, OSError) as exc:
                    raise SkipSubmission(f"{entry['path']}: {exc.strerror}") from None
                os.close(fd_dir)
                fd_dir = inner
            try:
                fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=fd_dir)
            except OSError as exc:
                raise SkipSubmission(f"{entry['path']}: {exc.strerror}") from None
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        finally:
            os.close(fd_dir)
    return left_out


class ExchangeCollect(NgshareCollect):
    """ngshare-exchange's collect, one student at a time, never stopping the class (see the module's text)."""

    def _roster(self) -> set[str] | None:
        from nbgrader.api import Gradebook

        try:
            with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
                return {s.id for s in gb.students}
        except Exception as exc:          # no gradebook yet: ngshare's roster alone decides
            self.log.warning("Collect: the gradebook's students could not be read (%s); taking ngshare's", exc)
            return None

    def init_src(self):
        super().init_src()
        roster = self._roster()
        if roster is not None:
            for rec in [r for r in self.src_records if r["student_id"] not in roster]:
                self.log.error("Not collecting %s's submission of %s: not a student of the course's roster",
                               rec["student_id"], self.coursedir.assignment_id)
                self.src_records.remove(rec)

    def copy_files(self):
        limits = settings.load().exchange
        collected, skipped = [], []
        for rec in sorted(self.src_records, key=lambda r: r["student_id"]):
            student = rec["student_id"]
            try:
                if self._collect_one(rec, limits):
                    collected.append(student)
            except SkipSubmission as exc:
                skipped.append(student)
                self.log.error("Not collecting %s's submission of %s (%s): %s", student,
                               self.coursedir.assignment_id, rec["timestamp"], exc)
            except Exception as exc:                           # noqa: BLE001 (one student never stops the class)
                skipped.append(student)
                self.log.error("Not collecting %s's submission of %s: %s: %s", student,
                               self.coursedir.assignment_id, type(exc).__name__, exc)
        self.log.info("Collected %d submission(s) of %s%s", len(collected), self.coursedir.assignment_id,
                      f"; skipped {len(skipped)}: {', '.join(skipped)}" if skipped else "")

    def _collect_one(self, rec, limits) -> bool:
        student, assignment = rec["student_id"], self.coursedir.assignment_id
        dest = self.coursedir.format_path(self.coursedir.submitted_directory, student, assignment)
        if os.path.isdir(dest):
            existing = self.coursedir.get_existing_timestamp(dest)
            if not self.update or (existing is not None and rec["timestamp"] <= existing):
                self.log.info("No newer submission to collect: %s %s", student, assignment)
                return False
        response = self.ngshare_api_get(f"/submission/{self.coursedir.course_id}/{assignment}/{student}")
        if response is None:
            raise SkipSubmission("the exchange did not give it (see the error above)")
        timestamp = parse_utc(response["timestamp"])          # the server's time of arrival
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        staging = tempfile.mkdtemp(prefix=f".{assignment}-", dir=os.path.dirname(dest))
        try:
            for note in write_files(response["files"], staging, limits):
                self.log.warning("Collect %s: left out %s", student, note)
            fd = os.open(os.path.join(staging, "timestamp.txt"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(timestamp.strftime("%Y-%m-%d %H:%M:%S.%f %Z").strip())
            if os.path.isdir(dest):
                self.log.info("Updating submission: %s %s", student, assignment)
                shutil.rmtree(dest)
            else:
                self.log.info("Collecting submission: %s %s", student, assignment)
            os.rename(staging, dest)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return True


class ExchangeReleaseFeedback(NgshareReleaseFeedback):
    """ngshare-exchange's release feedback, one submission at a time, going on past one that cannot be released."""

    def copy_files(self):
        from autograder.submission.files import NotGradable, read_submitted

        exclude = set(filter(None, self.coursedir.student_id_exclude.split(",")))
        staged: dict[tuple[str, str], list] = {}
        for html in sorted(glob.glob(os.path.join(self.src_path, "*.html"))):
            folder = os.path.dirname(html)
            student = os.path.basename(os.path.dirname(folder))
            if student in exclude:
                continue
            try:
                timestamp = read_submitted(os.path.join(folder, "timestamp.txt"), 1 << 10).decode().strip()
                parse_utc(timestamp)
            except (NotGradable, ValueError, UnicodeDecodeError) as exc:
                self.log.error("Not releasing feedback %s: no readable time of its submission (%s)", html, exc)
                continue
            notebook = os.path.splitext(os.path.basename(html))[0]
            staged.setdefault((student, timestamp), []).append({"notebook_id": notebook, "path": html})
        failed = []
        for (student, timestamp), info in staged.items():
            try:
                result = self.post_feedback(student, timestamp, info)
            except Exception as exc:                                  # noqa: BLE001 (never stops the class)
                result, why = None, f"{type(exc).__name__}: {exc}"
            else:
                why = "not accepted by the exchange (see the error above)"
            if result is None:
                failed.append(student)
                self.log.error("Feedback of %s (%s) not released: %s", student, timestamp, why)
            else:
                self.log.info("Released feedback of %s (%s)", student, timestamp)
        self.log.info("Released feedback of %d submission(s) of %s%s", len(staged) - len(failed),
                      self.coursedir.assignment_id, f"; not released: {', '.join(failed)}" if failed else "")
