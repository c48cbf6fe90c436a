"""Submitted files are data: what the grading pipeline copies of a submission, and how nbgrader is kept to that.

Grading runs as root, so a submitted symbolic link would be followed as root: a link to another student's
notebook would be graded as that notebook, a link to ``/etc/shadow`` copied into ``autograded/`` and released with
the student's feedback, a link to ``/dev/zero`` copied forever. Here every submitted file is opened with
``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat`` on the open descriptor (so nothing can be swapped in
between check and read); symbolic links, FIFOs, sockets, device files and hard links (``st_nlink > 1``) are
refused with a reason, never read.

nbgrader autograde reads each submitted notebook through ``SubmittedNotebookExporter`` (``c.Autograde.exporter_class``
in ``course_config.py``). nbgrader's own copies of a submission's other files, its reading of ``timestamp.txt`` and
the exchange's collect are changed by ``autograder.patches.files.harden_nbgrader`` (no setting reaches them).
"""
from __future__ import annotations

import datetime
import io
import os
from pathlib import Path

from nbconvert.exporters import NotebookExporter
from nbconvert.exporters.exporter import ResourcesDict

from autograder.submission.files import NotGradable, RefusedFile, placeholder, read_submitted


# ------------------------------------------------------------------------------------------- nbgrader's copies
class SubmittedNotebookExporter(NotebookExporter):
    """nbgrader autograde's reader of a submitted notebook (``c.Autograde.exporter_class``): a link, FIFO,
    device or hard link is not read; the blank release notebook with a Korean note stands in for it (0 points,
    the reason in the feedback). What is not refused is converted from the bytes read, as nbconvert's own
    ``from_filename`` would read them (the same resources, the same text: UTF-8 with universal newlines), so that
    the file is read once."""

    def from_filename(self, filename, resources=None, **kw):
        try:
            data = read_submitted(filename)
        except RefusedFile as exc:
            return self.from_notebook_node(self._placeholder(filename, exc), resources, **kw)
        except NotGradable:   # unreadable, too big: nbgrader's own reading reports it as before
            return super().from_filename(filename, resources, **kw)
        return self.from_file(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"),
                              self._file_resources(filename, resources), **kw)

    @staticmethod
    def _file_resources(filename, resources):
        """``resources`` with the file's metadata (its name, folder and modified date) as nbconvert's
        ``Exporter.from_filename`` sets them (``tests/submission/test_submitted_files.py`` compares the two)."""
        if resources is None:
            resources = ResourcesDict()
        if "metadata" not in resources or resources["metadata"] == "":
            resources["metadata"] = ResourcesDict()
        path, basename = os.path.split(filename)
        resources["metadata"]["name"] = os.path.splitext(basename)[0]
        resources["metadata"]["path"] = path
        modified = datetime.datetime.fromtimestamp(os.path.getmtime(filename), tz=datetime.timezone.utc)
        resources["metadata"]["modified_date"] = modified.strftime("%B %-d, %Y")
        return resources

    def _placeholder(self, filename: str, refused: RefusedFile):
        coursedir = getattr(self.parent, "coursedir", None)
        root = Path(coursedir.root if coursedir is not None else ".")
        self.log.warning("Not reading %s (%s); graded as the blank release", filename, refused)
        return placeholder(root, Path(filename).parent.name, Path(filename).name, refused.message.korean)
