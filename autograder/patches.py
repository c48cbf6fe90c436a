"""Every change this course makes to nbgrader's own code, in one place: what, why, and the upstream it was checked
against (nbgrader 0.9.6, its JupyterLab extension @jupyter/nbgrader 0.9.6).

Settings, templates and hooks come first and need no patch: the feedback page (``autograder/feedback``), the
manual-grading view's math (``autograder-formgrade`` template), the late-penalty plugin, the exporters and
preprocessors are all configured in ``course_config.py``. What no setting reaches is changed here, and only here:

**In the running process** (``course_config.py`` calls ``formgrader_totals_with_late_penalties``; wherever nbgrader
loads the course's config: formgrader, the nbgrader commands):

* formgrader's totals subtract the late penalty. nbgrader stores the penalty with each submitted notebook and
  subtracts it in ``nbgrader export`` and in the feedback, but formgrader's API (``NbGraderAPI``) shows the raw
  sum of the grades: a student 2.7 points late still read 27 / 27. The API's answers (submissions, notebooks,
  students, averages) now carry ``score`` net of the penalty and the penalty as ``late_submission_penalty``.
  (``autograder.gradebook.files.harden_nbgrader`` is the other in-process change: how nbgrader reads and copies
  submitted files, with its own tests.)

**In files of the hub's environment** (``/opt/<course>-env``, every user's and the formgrader's JupyterLab;
``FILE_PATCHES``, applied by ``python -m autograder hub`` when it builds the environment). The environment's files
are hard links into the course's ``.venv``: a patched file replaces its link with a file of its own, and ``.venv``
(which the other tests and the demo use) is never written. Each patch names the sha256 of the upstream file it was
written against; where the source file differs (nbgrader upgraded), the hub refuses to start and
``tests/test_patches.py`` fails, instead of patching a file that is no longer the one read:

* formgrader's ``static/js/utils.js``: ``roundToPrecision`` rounds every score formgrader shows to the course's
  ``score_decimals`` instead of the 2 that its pages pass (2.625 showed as 2.63). The pages' templates are not
  configurable (formgrader's Jinja loader is fixed to its own folder); ``roundToPrecision`` is the one function they
  all call.
* the lab extension's Validate dialog (``labextensions/@jupyter/nbgrader/static/161.*.js``, function ``k``): where
  the server's answer has a ``summary`` (``autograder/hub/lab_validate.py``: a title, a count and one line per
  exercise, in Korean), the dialog shows that, as text; without one, nbgrader's own dialog as before. The dialog's
  words are hard-coded in the extension (no translation is loaded for it), so only a patch can change them.
"""
from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

NBGRADER_VERSION = "0.9.6"


# ------------------------------------------------------------------------------------------------ files
@dataclass(frozen=True)
class FilePatch:
    """Replace ``old`` by ``new`` (exactly once) in one file of an environment."""

    name: str
    path: str                       # under the environment's prefix; {site} is its site-packages
    upstream_sha256: str            # the file this patch was written against
    old: str
    new: str
    why: str

    def target(self, prefix: Path) -> Path:
        site = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
        return prefix / self.path.format(site=site)

    def patched(self, upstream: str, **values) -> str:
        if hashlib.sha256(upstream.encode()).hexdigest() != self.upstream_sha256:
            raise UpstreamChanged(f"{self.name}: the upstream file is not the one this patch was written against "
                                  f"(nbgrader {NBGRADER_VERSION}, sha256 {self.upstream_sha256[:12]}…): check the "
                                  "patch against the new file and update it (autograder/patches.py)")
        if upstream.count(self.old) != 1:
            raise UpstreamChanged(f"{self.name}: the text to replace is not in the file exactly once")
        return upstream.replace(self.old, self.new.format(**values))


class UpstreamChanged(RuntimeError):
    """A file to patch is not the upstream file its patch was written against."""


# Formgrader's pages call roundToPrecision(score, 2) everywhere; the course's precision wins.
ROUND_TO_PRECISION = FilePatch(
    name="formgrader's score precision",
    path="{site}/nbgrader/server_extensions/formgrader/static/js/utils.js",
    upstream_sha256="bf49532f75071613ab5439a3aaed26f89515634fc7e0e95f4729579cfec18272",
    old="var roundToPrecision = function (num, precision) {\n",
    new="var roundToPrecision = function (num, precision) {{\n"
        "    precision = {decimals};  // the course's score_decimals (autograder/patches.py), not the pages' fixed 2\n",
    why="formgrader showed 2.625 as 2.63: every page passes a fixed precision of 2",
)

# The Validate dialog: a summary (autograder/hub/lab_validate.py) shown as a short list, as text (innerText).
VALIDATE_SUMMARY_JS = (
    'function attentionCourseSummary(r){var t=document.createElement("div");t.id="validation-message";'
    't.classList.add(r.ok?"validation-success":"validation-failed");var h=document.createElement("p");'
    'h.innerText=r.headline;t.append(h);if(r.items.length){var u=document.createElement("ul");'
    'u.classList.add("attention-course-validation");for(var i=0;i<r.items.length;i++){'
    'var li=document.createElement("li");li.innerText=r.items[i].text;'
    'li.classList.add(r.items[i].ok?"validation-item-passed":"validation-item-failed");u.append(li)}t.append(u)}'
    'if(r.note){var q=document.createElement("p");q.innerText=r.note;t.append(q)}'
    'f({title:r.title,body:new b.Widget({node:t}),buttons:[o.Dialog.okButton({label:r.ok_label})]},!r.ok);'
    'return r.ok}'
)
VALIDATE_DIALOG = FilePatch(
    name="the Validate dialog",
    path="share/jupyter/labextensions/@jupyter/nbgrader/static/161.290a640318af4049.js",
    upstream_sha256="2b750db4bf124d21fce83bacafe078dd0c6573fb355708f7b96be5804d806cdc",
    old='function k(e){var t=document.createElement("div");t.id="validation-message";',
    new=VALIDATE_SUMMARY_JS.replace("{", "{{").replace("}", "}}")
    + 'function k(e){{if(e&&e.summary)return attentionCourseSummary(e.summary);'
      'var t=document.createElement("div");t.id="validation-message";',
    why="the dialog's English words and its 20 KB of failing cells' source are hard-coded in the extension",
)

FILE_PATCHES = (ROUND_TO_PRECISION, VALIDATE_DIALOG)


def patch_values() -> dict:
    from autograder import settings

    return {"decimals": int(settings.course().get("score_decimals", 3))}


def apply_file_patches(prefix: Path, source: Path = Path(sys.prefix)) -> list[str]:
    """Patch ``FILE_PATCHES`` into the environment at ``prefix`` (made from ``source``): each file made anew from
    the source's upstream file, written where it differs (idempotent), never through a hard link. Returns what it
    wrote. Raises ``UpstreamChanged`` where a source file is not the upstream one a patch was written against."""
    values, written = patch_values(), []
    for patch in FILE_PATCHES:
        target = patch.target(prefix)
        new = patch.patched(patch.target(source).read_text(encoding="utf-8"), **values)
        if target.is_file() and target.read_text(encoding="utf-8") == new:
            continue
        fresh = target.with_name(target.name + ".patching")
        fresh.write_text(new, encoding="utf-8")
        os.chmod(fresh, 0o644)
        os.replace(fresh, target)          # a new inode: the hard link into .venv is replaced, not written through
        written.append(patch.name)
    return written


# ------------------------------------------------------------------------------------------------ in the process
@dataclass
class LatePenalties:
    """Every positive late penalty of a gradebook, summed the ways formgrader's pages show scores."""

    by_notebook_submission: dict
    by_submission: dict             # (assignment, student)
    by_student: dict
    by_assignment: dict
    by_notebook: dict               # (assignment, notebook)

    @classmethod
    def read(cls, gb) -> "LatePenalties":
        from nbgrader.api import Assignment, Notebook, Student, SubmittedAssignment, SubmittedNotebook

        rows = (gb.db.query(SubmittedNotebook.id, Assignment.name, Notebook.name, Student.id,
                            SubmittedNotebook.late_submission_penalty)
                .join(SubmittedAssignment, SubmittedNotebook.assignment)
                .join(Notebook, SubmittedNotebook.notebook)
                .join(Assignment, SubmittedAssignment.assignment)
                .join(Student, SubmittedAssignment.student)
                .filter(SubmittedNotebook.late_submission_penalty > 0).all())
        found = cls({}, {}, {}, {}, {})
        for nb_id, assignment, notebook, student, penalty in rows:
            found.by_notebook_submission[nb_id] = penalty
            for table, key in ((found.by_submission, (assignment, student)), (found.by_student, student),
                               (found.by_assignment, assignment), (found.by_notebook, (assignment, notebook))):
                table[key] = table.get(key, 0.0) + penalty
        return found


def _net(entry: dict | None, penalty: float) -> None:
    """``entry``'s score net of ``penalty`` (once: an entry that carries its penalty is left alone)."""
    if not entry or "late_submission_penalty" in entry or entry.get("score") is None:
        return
    entry["late_submission_penalty"] = penalty
    entry["score"] = max(0.0, entry["score"] - penalty)


def formgrader_totals_with_late_penalties() -> None:
    """Formgrader's scores net of late penalties (``NbGraderAPI``; idempotent)."""
    from nbgrader.apps.api import NbGraderAPI

    if getattr(NbGraderAPI, "_attention_course_late_penalties", False):
        return
    original = {name: getattr(NbGraderAPI, name) for name in (
        "get_assignment", "get_notebooks", "get_submission", "get_submissions", "get_notebook_submissions",
        "get_student", "get_students", "get_student_notebook_submissions")}

    def penalties(api) -> LatePenalties:
        with api.gradebook as gb:
            return LatePenalties.read(gb)

    def average(entry, total, count) -> None:
        if entry and total and count and entry.get("average_score") and "late_submission_penalty" not in entry:
            entry["late_submission_penalty"] = total / count
            entry["average_score"] = max(0.0, entry["average_score"] - total / count)

    def get_assignment(self, assignment_id, released=None):
        entry = original["get_assignment"](self, assignment_id, released=released)
        total = penalties(self).by_assignment.get(assignment_id, 0.0)
        if total:
            with self.gradebook as gb:
                count = gb.find_assignment(assignment_id).num_submissions
            average(entry, total, count)
        return entry

    def get_notebooks(self, assignment_id):
        entries = original["get_notebooks"](self, assignment_id)
        late = penalties(self)
        for entry in entries:
            total = late.by_notebook.get((assignment_id, entry.get("name")), 0.0)
            if total:
                with self.gradebook as gb:
                    count = gb.find_notebook(entry["name"], assignment_id).num_submissions
                average(entry, total, count)
        return entries

    def get_submission(self, assignment_id, student_id, *args, **kwargs):
        entry = original["get_submission"](self, assignment_id, student_id, *args, **kwargs)
        _net(entry, penalties(self).by_submission.get((assignment_id, student_id), 0.0))
        return entry

    def net_each(entries, penalty_of):
        for entry in entries:
            _net(entry, penalty_of(entry))
        return entries

    def get_submissions(self, assignment_id):
        late = penalties(self).by_submission
        return net_each(original["get_submissions"](self, assignment_id),
                        lambda entry: late.get((assignment_id, entry["student"]), 0.0))

    def get_notebook_submissions(self, assignment_id, notebook_id):
        late = penalties(self).by_notebook_submission
        return net_each(original["get_notebook_submissions"](self, assignment_id, notebook_id),
                        lambda entry: late.get(entry.get("id"), 0.0))

    def get_student_notebook_submissions(self, student_id, assignment_id):
        late = penalties(self).by_notebook_submission
        return net_each(original["get_student_notebook_submissions"](self, student_id, assignment_id),
                        lambda entry: late.get(entry.get("id"), 0.0))

    def get_student(self, student_id, submitted=None):
        entry = original["get_student"](self, student_id, submitted=submitted)
        _net(entry, penalties(self).by_student.get(student_id, 0.0))
        return entry

    def get_students(self):
        late = penalties(self).by_student
        return net_each(original["get_students"](self), lambda entry: late.get(entry["id"], 0.0))

    for name, function in (("get_assignment", get_assignment), ("get_notebooks", get_notebooks),
                           ("get_submission", get_submission), ("get_submissions", get_submissions),
                           ("get_notebook_submissions", get_notebook_submissions),
                           ("get_student_notebook_submissions", get_student_notebook_submissions),
                           ("get_student", get_student), ("get_students", get_students)):
        function.__doc__ = f"{original[name].__doc__ or ''}\n\n(Scores net of late penalties: autograder/patches.py)"
        setattr(NbGraderAPI, name, function)
    NbGraderAPI._attention_course_late_penalties = True
    NbGraderAPI._attention_course_originals = original     # nbgrader's own methods (tests compare with them)
