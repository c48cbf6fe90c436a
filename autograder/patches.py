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
* ``harden_nbgrader`` (also called by ``course_config.py``): how nbgrader copies and reads submitted files (below).
* ``patient_service_wait_up`` (called by the generated ``jupyterhub_config.py``): JupyterHub waits longer for the
  formgrader service to answer.

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
import stat
from dataclasses import dataclass
from pathlib import Path

from autograder.submission.files import NotGradable, copy_plain_tree, read_submitted

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
def formgrader_totals_with_late_penalties() -> None:
    """Formgrader's scores net of late penalties (``NbGraderAPI``; idempotent)."""
    from nbgrader.apps.api import NbGraderAPI

    if getattr(NbGraderAPI, "_attention_course_late_penalties", False):
        return
    original = {name: getattr(NbGraderAPI, name) for name in (
        "get_assignment", "get_notebooks", "get_submission", "get_submissions", "get_notebook_submissions",
        "get_student", "get_students", "get_student_notebook_submissions")}

    from autograder.gradebook.late import LatePenalties, net as _net

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


# ------------------------------------------------------------------------------------------------ submitted files
RELEASE_FEEDBACK_READS = frozenset({"timestamp.txt", "submission_secret.txt"})   # written by nbgrader's submit


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


# ------------------------------------------------------------------------------------------------ JupyterHub
def patient_service_wait_up(port: int, seconds: float) -> None:
    """JupyterHub 5 gives a managed service 10 s to answer (10 tries of 1 s, fixed in app.py) and exits when it does
    not; JupyterLab with nbgrader's extensions takes longer to start on a busy machine. Only for the service's server
    at ``port`` (formgrader's): each try waits up to ``seconds``. Called by the generated jupyterhub_config.py."""
    from jupyterhub.objects import Server

    wait_up = Server.wait_up

    def patient_wait_up(self, timeout=10, http=False, **kwargs):
        if http and self.port == port:
            timeout = max(timeout, seconds)
        return wait_up(self, timeout=timeout, http=http, **kwargs)

    Server.wait_up = patient_wait_up
