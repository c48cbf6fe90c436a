"""Staging: a class run's copy of each submission, as data only, that nbgrader then reads.

Submissions are never changed: ``stage`` copies one into ``.autograder/staging`` (only plain files:
``autograder.submission.files.copy_plain_tree`` follows no link and reads no FIFO, device or hard-linked file). A
release notebook that cannot be graded at all (refused, not JSON, truncated, not UTF-8, too big, or another
assignment's notebook) is staged as the blank release with a Korean note at the top
(``autograder.submission.files.placeholder``), so that the student gets a 0 with the reason in the feedback instead
of no grade at all; ``stage_blank`` does that for every notebook of a submission whose grading ran past its time.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat

from autograder.messages import Reason
from autograder.submission.files import NotGradable, copy_plain_tree, placeholder, refused
from autograder.submission.notebook import detect_assignment, parse_notebook, read_notebook

STAGING = Path(".autograder") / "staging"


def stage(course_dir: Path, assignment: str, student: str) -> list[str]:
    """Copy one submission into the staging folder as data only; returns notes on what was left out or replaced.

    Only plain files are copied (``autograder.submission.files.copy_plain_tree``: no link is followed, no FIFO,
    device or hard-linked file is read). A release notebook that was refused or cannot be graded is staged as the
    blank release with the reason in Korean."""
    source = course_dir / "submitted" / student / assignment
    target = course_dir / STAGING / student / assignment
    if target.exists():
        shutil.rmtree(target)
    releases = sorted((course_dir / "release" / assignment).glob("*.ipynb"))
    names = {r.name for r in releases}
    copied = dict.fromkeys(names)   # the notebooks' bytes as the copy read them: checked without reading the copy
    left_out = dict(copy_plain_tree(source, target, keep=copied))
    notes = []
    for rel, why in left_out.items():
        if rel not in names and rel != ".":
            notes.append(f"{rel}: not copied: {why}")
    for release in releases:
        staged = target / release.name
        why = left_out.get(release.name) or left_out.get(".")
        try:
            if why:
                raise refused(release.name, why)
            if not staged.exists():
                continue  # a missing notebook is nbgrader's to report (it grades the others)
            data = copied[release.name]
            nb = read_notebook(staged) if data is None else parse_notebook(data, staged)
            if detect_assignment(nb, release.name) != assignment:
                raise NotGradable(Reason.OTHER_ASSIGNMENT())
        except NotGradable as exc:
            reason = exc.message.korean
            target.mkdir(parents=True, exist_ok=True)
            nbformat.write(placeholder(course_dir, assignment, release.name, reason), str(staged))
            notes.append(f"{release.name}: graded as blank: {reason}")
    return notes


def stage_blank(course_dir: Path, assignment: str, student: str, reason: str) -> list[str]:
    """Stage every notebook of a submission as the blank release with ``reason`` on top; returns the notes."""
    target = course_dir / STAGING / student / assignment
    notes = []
    for release in sorted((course_dir / "release" / assignment).glob("*.ipynb")):
        target.mkdir(parents=True, exist_ok=True)
        staged = target / release.name
        if staged.is_symlink() or staged.exists():
            staged.unlink()
        nbformat.write(placeholder(course_dir, assignment, release.name, reason), str(staged))
        notes.append(f"{release.name}: {reason}")
    return notes
