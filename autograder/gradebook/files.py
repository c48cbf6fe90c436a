"""Submitted files are data: what the grading pipeline copies of a submission, and how nbgrader is kept to that.

Grading runs as root, so a submitted symbolic link would be followed as root: a link to another student's
notebook would be graded as that notebook, a link to ``/etc/shadow`` copied into ``autograded/`` and released with
the student's feedback, a link to ``/dev/zero`` copied forever. Here every submitted file is opened with
``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat`` on the open descriptor (so nothing can be swapped in
between check and read); symbolic links, FIFOs, sockets, device files and hard links (``st_nlink > 1``) are
refused with a reason, never read.

``harden_nbgrader()`` (called by ``course_config.py`` whenever nbgrader loads the course's config, so plain
``nbgrader autograde``, formgrader's buttons and the batch workers all get it) changes three of nbgrader's copies,
which all follow links: ``autograde`` copies the submission folder's other files into ``autograded/`` only
when they are plain files (links and special files are skipped with a warning) and reads each notebook through
``SubmittedNotebookExporter``; ``generate_feedback`` copies no file of ``autograded/`` into ``feedback/``, so
feedback holds only the HTML the pipeline made; the exchange's ``collect`` copies links as links (for
the checks above to refuse) instead of copying what they point to, and refuses an inbound folder that is a link.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from nbconvert.exporters import NotebookExporter

from autograder.submission.files import NotGradable, RefusedFile, copy_plain_tree, placeholder, read_submitted

RELEASE_FEEDBACK_READS = frozenset({"timestamp.txt", "submission_secret.txt"})   # written by nbgrader's submit


# ------------------------------------------------------------------------------------------- nbgrader's copies
class SubmittedNotebookExporter(NotebookExporter):
    """nbgrader autograde's reader of a submitted notebook (``c.Autograde.exporter_class``): a link, FIFO,
    device or hard link is not read; the blank release notebook with a Korean note stands in for it (0 points,
    the reason in the feedback). What is not refused is read by nbconvert as before."""

    def from_filename(self, filename, resources=None, **kw):
        try:
            read_submitted(filename)
        except RefusedFile as exc:
            return self.from_notebook_node(self._placeholder(filename, exc), resources, **kw)
        except NotGradable:
            pass   # unreadable, too big, not JSON: nbgrader's own reading reports it as before
        return super().from_filename(filename, resources, **kw)

    def _placeholder(self, filename: str, refused: RefusedFile):
        coursedir = getattr(self.parent, "coursedir", None)
        root = Path(coursedir.root if coursedir is not None else ".")
        self.log.warning("Not reading %s (%s); graded as the blank release", filename, refused)
        return placeholder(root, Path(filename).parent.name, Path(filename).name, refused.message.korean)


def harden_nbgrader() -> None:
    """Make nbgrader's autograde, generate_feedback and exchange collect treat submitted files as data only."""
    from nbgrader.converters import base
    from nbgrader.converters.autograde import Autograde
    from nbgrader.converters.generate_feedback import GenerateFeedback

    if getattr(base.BaseConverter.init_assignment, "_autograder", False):
        return
    original = base.BaseConverter.init_assignment

    def init_assignment(self, assignment_id, student_id):
        if not isinstance(self, (Autograde, GenerateFeedback)):
            return original(self, assignment_id, student_id)
        source = Path(self._format_source(assignment_id, student_id))
        dest = Path(self._format_dest(assignment_id, student_id))
        # feedback/ gets the HTML that generate_feedback writes and the two files release_feedback reads
        only = RELEASE_FEEDBACK_READS if isinstance(self, GenerateFeedback) else None
        for rel, why in copy_plain_tree(source, dest, exclude=[*self.coursedir.ignore, "*.ipynb"], only=only):
            self.log.warning("Not copying %s of %s's submission: %s", rel, student_id, why)

    init_assignment._autograder = True
    base.BaseConverter.init_assignment = init_assignment
    _harden_timestamp()
    _harden_collect()


def _harden_timestamp() -> None:
    """nbgrader reads a submission's ``timestamp.txt`` (written by the exchange's submit) with ``open``: a link
    or a FIFO there would be followed, or block, as root. Read as data; a refused one counts as no timestamp."""
    from nbgrader.coursedir import CourseDirectory

    original = CourseDirectory.get_existing_timestamp

    def get_existing_timestamp(self, dest_path):
        path = os.path.join(dest_path, "timestamp.txt")
        if os.path.lexists(path):
            try:
                read_submitted(path, 1 << 10)
            except NotGradable as exc:
                self.log.warning("Ignoring %s: %s", path, exc)
                return None
        return original(self, dest_path)

    CourseDirectory.get_existing_timestamp = get_existing_timestamp


def _harden_collect() -> None:
    """The exchange's collect (run by the instructor, often as root) copies each inbound submission with
    ``shutil.copytree``, which copies what links point to; a student can write links straight into the inbound
    folder. Here links are copied as links (the checks above then refuse them) and an inbound folder that is a
    link is not collected; nbgrader's size limits and ignore/include globs apply as before."""
    import shutil

    from nbgrader.exchange.default import exchange
    from nbgrader.exchange.default.collect import ExchangeCollect

    def do_copy(self, src, dest, log=None):
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
        if self.coursedir.groupshared:   # as nbgrader's own, except that a link's target is never chmod-ed
            for dirname, dirnames, filenames in os.walk(dest):
                for name in dirnames + filenames:
                    path = os.path.join(dirname, name)
                    st = os.lstat(path)
                    if not stat.S_ISLNK(st.st_mode):
                        os.chmod(path, (st.st_mode | (0o2770 if stat.S_ISDIR(st.st_mode) else 0o660))
                                 & (0o2777 if stat.S_ISDIR(st.st_mode) else 0o777))

    ExchangeCollect.do_copy = do_copy
