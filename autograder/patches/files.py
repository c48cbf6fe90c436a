"""nbgrader's copies and reads of a submission's files, as data only (``PLAIN_COPIES``, ``TIMESTAMP``, ``COLLECT`` in
``autograder.patches``): nothing of a submission is followed through a link, read from a FIFO or device, or released
as feedback but the HTML the pipeline made."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from autograder.patches import COLLECT, PLAIN_COPIES, TIMESTAMP, install
from autograder.submission.files import NotGradable, copy_plain_tree, read_submitted

RELEASE_FEEDBACK_READS = frozenset({"timestamp.txt", "submission_secret.txt"})   # written by nbgrader's submit


def harden_nbgrader() -> None:
    """Make nbgrader's autograde, generate_feedback and exchange collect treat submitted files as data only
    (idempotent)."""
    from nbgrader.converters.base import BaseConverter
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange.default.collect import ExchangeCollect

    install(PLAIN_COPIES, BaseConverter, "init_assignment", _plain_copies)
    install(TIMESTAMP, CourseDirectory, "get_existing_timestamp", _timestamp_as_data)
    install(COLLECT, ExchangeCollect, "do_copy", lambda original: _collect_links_as_links)


def _plain_copies(original):
    from nbgrader.converters.autograde import Autograde
    from nbgrader.converters.generate_feedback import GenerateFeedback

    def init_assignment(self, assignment_id, student_id):
        if not isinstance(self, (Autograde, GenerateFeedback)):
            return original(self, assignment_id, student_id)
        source = Path(self._format_source(assignment_id, student_id))
        dest = Path(self._format_dest(assignment_id, student_id))
        # feedback/ gets the HTML that generate_feedback writes and the two files release_feedback reads
        only = RELEASE_FEEDBACK_READS if isinstance(self, GenerateFeedback) else None
        for rel, why in copy_plain_tree(source, dest, exclude=[*self.coursedir.ignore, "*.ipynb"], only=only):
            self.log.warning("Not copying %s of %s's submission: %s", rel, student_id, why)

    return init_assignment


def _timestamp_as_data(original):
    """nbgrader reads a submission's ``timestamp.txt`` (written by the exchange's submit) with ``open``: a link
    or a FIFO there would be followed, or block, as root. Read as data; a refused one counts as no timestamp."""

    def get_existing_timestamp(self, dest_path):
        path = os.path.join(dest_path, "timestamp.txt")
        if os.path.lexists(path):
            try:
                read_submitted(path, 1 << 10)
            except NotGradable as exc:
                self.log.warning("Ignoring %s: %s", path, exc)
                return None
        return original(self, dest_path)

    return get_existing_timestamp


def _collect_links_as_links(self, src, dest, log=None):
    """The exchange's collect (run by the instructor, often as root) copies each inbound submission with
    ``shutil.copytree``, which copies what links point to; a student can write links straight into the inbound
    folder. Here links are copied as links (the checks above then refuse them) and an inbound folder that is a
    link is not collected; nbgrader's size limits and ignore/include globs apply as before."""
    from nbgrader.exchange.default import exchange

    if os.path.islink(src):
        self.log.warning("Not collecting %s: it is a symbolic link", src)
        return
    size = self.get_size(src)
    if size > 1000 * self.coursedir.max_dir_size:
        raise RuntimeError(f"Directory size is too big. Size is {size}, maximum size is "
                           f"{1000 * self.coursedir.max_dir_size}")
    shutil.copytree(src, dest, symlinks=True,
                    ignore=exchange.ignore_patterns(exclude=self.coursedir.ignore, include=self.coursedir.include,
                                                    max_file_size=self.coursedir.max_file_size, log=self.log))
    if self.coursedir.groupshared:   # as nbgrader's own (dest included), except that a link is never followed
        for dirname, _, filenames in os.walk(dest):          # os.walk enters no linked folder
            _group_writable(self, dirname, 0o2770, 0o2777)
            for name in filenames:
                if not os.path.islink(os.path.join(dirname, name)):
                    _group_writable(self, os.path.join(dirname, name), 0o660, 0o777)


def _group_writable(self, path: str, wanted: int, keep: int) -> None:
    """nbgrader's groupshared modes: a folder ug+rwx and setgid (2770), a file ug+rw (660), where it is not yet."""
    mode = os.lstat(path).st_mode
    if mode & wanted != wanted:
        try:
            os.chmod(path, (mode | wanted) & keep)
        except PermissionError:
            self.log.warning("Could not update permissions of %s to make it groupshared", path)
