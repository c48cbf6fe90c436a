"""Every change this course makes to upstream code (nbgrader, nbconvert, JupyterHub, ngshare), in one table: what it
changes, why, and the upstream version it was checked against. The code of each is in this package, by where it
runs: ``files``, ``formgrader`` and ``gradebook`` (nbgrader's processes), ``hub`` (the hub and its exchange service),
``environment`` (files of the hub's environment).

Settings, templates, hooks and configured subclasses come first and need no patch (``course_config.py``: the
preprocessors, ``SubmittedNotebookExporter``, the late-penalty plugin, the feedback and formgrader templates; the
hub's spawner and exchange classes). What no setting reaches is changed here and only here:

* ``PATCHES``: the functions replaced in a running process (``Patch``: each function with the signature it has
  upstream; where a patch writes a function again instead of wrapping it, the sha256 of the upstream source),
  installed by ``files.harden_nbgrader``, ``formgrader.totals_with_late_penalties``,
  ``formgrader.student_numbers`` and
  ``gradebook.head_in_process`` (wherever nbgrader loads ``course_config.py``: every nbgrader command, formgrader,
  the class run's workers), ``hub.patient_service_wait_up`` (the hub's config,
  ``autograder/hub/jupyterhub_config.py``),
  ``hub.fix_ngshare_sqlalchemy2`` and ``hub.check_ngshare_submissions`` (the exchange service,
  ``autograder/hub/exchange_service.py``). Each installer is idempotent (``install``: a function it installed is
  never wrapped again), and ``upstream`` finds the function a patch replaced.
* ``STARTUP``: ``rfc3987_syntax`` (what jsonschema imports for two string formats no Jupyter schema uses) is a
  stand-in until its first use, in every interpreter of the course's ``.venv`` and of the hub's environment
  (``startup``, installed by ``scripts/setup.sh`` and ``environment.lab_additions`` as a ``.pth`` file); it names
  the one function jsonschema imports from it.
* ``FILE_PATCHES``: the files of the hub's environment (``/opt/<course>-env``) that only a patch changes, applied by
  ``environment.apply_file_patches`` when ``python -m autograder hub`` builds it, each against the sha256 of the
  upstream file (the hub refuses to start on another). The environment's files are hard links into the course's
  ``.venv``: a patched file replaces its link with a file of its own, and ``.venv`` is never written. Browsers
  cache the lab extension's files by name: after a change of the patch, students reload their JupyterLab once.

* ``OVERRIDES``: the upstream methods the course's own subclasses override (configured, not installed: the
  preprocessors, exporters, late-penalty plugin, Validate's handler, the spawner, the exchange's collect and release
  feedback), each with its signature and, where the subclass writes it again or it is private, its source's sha256.

``tests/patches/test_patches.py`` fails when an installed upstream is not what a patch or an override was checked
against: another version, a patched or overridden function's signature, a rewritten function's source, a patched file;
and when a class of the package overrides an upstream method that ``OVERRIDES`` does not list.
"""
from __future__ import annotations

import hashlib
import importlib
import inspect
import sys
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

NBGRADER, JUPYTERHUB, NGSHARE = "nbgrader 0.9.6", "jupyterhub 5.5.4", "ngshare 0.6.0"
NBCONVERT, NGSHARE_EXCHANGE = "nbconvert 7.17.2", "ngshare-exchange 0.5.3"
NBGRADER_VERSION = NBGRADER.split()[1]
API = "nbgrader.apps.api:NbGraderAPI."


@dataclass(frozen=True)
class Patch:
    """One change of upstream functions in the running process."""

    name: str
    upstream: str                # the distribution and the version it was checked against
    functions: dict              # "module:Class.function" -> its upstream signature (no annotations)
    what: str
    why: str
    rewrites: dict = field(default_factory=dict)   # function -> sha256 of the upstream source it writes again


PLAIN_COPIES = Patch(
    "a submission's plain files only", NBGRADER,
    {"nbgrader.converters.base:BaseConverter.init_assignment": "(self, assignment_id, student_id)"},
    what="autograde copies a submission's other files into autograded/ only where they are plain files (a link, FIFO, "
         "device or hard link is left out with a warning); generate_feedback copies none of them into feedback/ but "
         "timestamp.txt and submission_secret.txt (release_feedback reads them), so feedback is the pipeline's HTML",
    why="grading runs as root and nbgrader's copy follows links: a link to /etc/shadow was copied into autograded/ and "
        "released as feedback. Unlike nbgrader (its tests test_force, test_force_f and test_filter_notebook of "
        "test_nbgrader_generate_feedback expect a submission's data files in feedback/; its docs describe feedback/ "
        "as the HTML of the graded notebooks), feedback does not carry a submission's other files",
    rewrites={"nbgrader.converters.base:BaseConverter.init_assignment":
              "bcfda8a38bd242811155417345b96d16e35245612781b3f6706187aa8943df59"})
TIMESTAMP = Patch(
    "timestamp.txt read as data", NBGRADER,
    {"nbgrader.coursedir:CourseDirectory.get_existing_timestamp": "(self, dest_path)"},
    what="a submission's timestamp.txt that is a link, FIFO, device, hard link or over 1 KiB counts as no timestamp",
    why="nbgrader opens it with open(): a link is followed and a FIFO blocks, as root")
COLLECT = Patch(
    "collect copies links as links", NBGRADER,
    {"nbgrader.exchange.default.collect:ExchangeCollect.do_copy": "(self, src, dest, log=None)"},
    what="the exchange's collect copies links as links (the checks of autograde and staging then refuse them) and "
         "does not collect an inbound folder that is a link; size limits, ignore/include and groupshared as nbgrader's",
    why="a student writes straight into the inbound folder, and shutil.copytree copies what a link points to",
    rewrites={"nbgrader.exchange.default.collect:ExchangeCollect.do_copy":
              "0bb2e9133a773bbc4bf176cc86806324f422bd477e72ee72fef8cf4fae7d1726"})
FORMGRADER_TOTALS = Patch(
    "formgrader's totals net of late penalties", NBGRADER,
    {API + "get_assignment": "(self, assignment_id, released=None)", API + "get_notebooks": "(self, assignment_id)",
     API + "get_submission": "(self, assignment_id, student_id, ungraded=None, students=None)",
     API + "get_submissions": "(self, assignment_id)",
     API + "get_notebook_submissions": "(self, assignment_id, notebook_id)",
     API + "get_student": "(self, student_id, submitted=None)", API + "get_students": "(self)",
     API + "get_student_notebook_submissions": "(self, student_id, assignment_id)"},
    what="the API's answers (submissions, notebooks, students, averages) carry score net of the late penalty and the "
         "penalty as late_submission_penalty (autograder.gradebook.late.LatePenalties)",
    why="nbgrader subtracts the penalty in export and feedback only: formgrader showed a student 2.7 points late 27/27")
STUDENT_NUMBERS = Patch(
    "formgrader's student numbers", NBGRADER,
    {API + "get_submission": "(self, assignment_id, student_id, ungraded=None, students=None)",
     API + "get_submissions": "(self, assignment_id)"},
    what="each submission the API answers with carries its student's lms_user_id (the roster's student number), "
         "which the Students and Submissions pages show beside the account name (STUDENTS_PAGE_ID, "
         "SUBMISSIONS_PAGE_ID)",
    why="formgrader's 'Student ID' column showed the account name; the university's number from the roster (kept "
        "as lms_user_id) appeared nowhere in formgrader")
SERVICE_WAIT = Patch(
    "patience with the formgrader service", JUPYTERHUB,
    {"jupyterhub.objects:Server.wait_up": "(self, timeout=10, http=False, ssl_context=None, extra_path='')"},
    what="each of JupyterHub's 10 tries to reach the formgrader service waits up to SERVICE_WAIT_S (hub/server.py)",
    why="JupyterHub 5 gives a managed service 10 s (fixed in app.py) and exits; JupyterLab with nbgrader's extensions "
        "took 28 s to start on the busy test machine")
NGSHARE_SESSION = Patch(
    "ngshare on SQLAlchemy 2", NGSHARE,
    {"ngshare.database:Assignment.__init__": "(self, name, course)",
     "ngshare.database:Submission.__init__": "(self, student, assignment)"},
    what="a new Assignment or Submission joins the session of its course or assignment, as on SQLAlchemy 1.3",
    why="SQLAlchemy 2 removed cascade_backrefs: ngshare silently stored no release and no submission")
NGSHARE_CHECKS = Patch(
    "the exchange's checks on arrival", NGSHARE,
    {"ngshare.ngshare:SubmitAssignment.post": "(self, course_id, assignment_id)"},
    what="a submission is checked before anything is stored, with a quota per student (hub/exchange_service.py)",
    why="ngshare accepts any submission tornado can buffer (100 MB) and any number of them")
NGSHARE_OWN_SUBMISSION = Patch(
    "a student downloads their own submission", NGSHARE,
    {"ngshare.ngshare:DownloadAssignment.get": "(self, course_id, assignment_id, student_id)"},
    what="GET /submission/<course>/<assignment>/<student> answers a user of the course who asks for their own "
         "submissions (as ngshare's list of them does); anyone else still needs to be an instructor",
    why="ngshare lets only instructors download a submission (its TODO: 'maybe allow student to see their own "
        "submissions?'): a student could not get back what they submitted (403)",
    rewrites={"ngshare.ngshare:DownloadAssignment.get":
              "0deb0658287f1caab961663b5211b613b8a30d0549da6f2cc54743a1646b9cc2"})
GRADEBOOK_HEAD = Patch(
    "a new gradebook's version read in the process", NBGRADER,
    {"nbgrader.api:get_alembic_version": "()"},
    what="the schema version a new gradebook is stamped with (the head revision of nbgrader's migration scripts) is "
         "read from those scripts in the process, once per process (alembic's ScriptDirectory; gradebook.py), where "
         "nbgrader runs the `alembic heads` command",
    why="nbgrader started `alembic -c <a temporary alembic.ini> heads` for every new gradebook: about 1.2 s of CPU "
        "each (73 times in one run of nbgrader's own suite), and a FileNotFoundError where `alembic` is not on $PATH",
    rewrites={"nbgrader.api:get_alembic_version": "40160af67d70e523876ed8258485d1aecb504c9e52644a20dc777b7b46c01de7"})
PATCHES = (PLAIN_COPIES, TIMESTAMP, COLLECT, FORMGRADER_TOTALS, STUDENT_NUMBERS, SERVICE_WAIT, NGSHARE_SESSION,
           NGSHARE_CHECKS, NGSHARE_OWN_SUBMISSION, GRADEBOOK_HEAD)
STARTUP = Patch(
    "rfc3987_syntax imported at its first use", "rfc3987-syntax 1.1.0",
    {"rfc3987_syntax.syntax_helpers:is_valid_syntax": "(term, value)"},
    what="until something uses it, rfc3987_syntax is a stand-in whose is_valid_syntax (the one name jsonschema "
         "imports from it) imports the real module at its first call (startup.py)",
    why="jsonschema, under nbformat, nbgrader and jupyter_server, imports it at its own import, and its import builds "
        "Lark's Earley parsers of RFC 3987: ~2 s of every nbgrader command and JupyterLab start, for IRI formats "
        "that no schema of theirs uses")


# ------------------------------------------------------------------------------------------------ subclasses
# Upstream methods that the course's own subclasses override (classes configured by name in course_config.py or the
# hub's config, so nothing is installed), checked like the patches: each with its upstream signature, and the sha256 of
# the upstream source wherever the subclass writes the method again instead of extending it, or overrides a private one.
# ``tests/patches/test_patches.py`` finds every such override in the package and fails on one not listed here.
PREPROCESS_STEPS = Patch(
    "the course's steps as nbconvert preprocessors", NBCONVERT,
    {"nbconvert.preprocessors.base:Preprocessor.preprocess": "(self, nb, resources)"},
    what="each step of autograder.gradebook.preprocessors, feedback.html.CourseResources and "
         "feedback.sanitize.SanitizeStudentHTML takes the whole notebook and its resources and returns them",
    why="nbconvert's preprocess calls preprocess_cell on each cell; each of these steps works on the notebook as a "
        "whole (the preprocessor API's documented extension point)")
FEEDBACK_RESOURCES = Patch(
    "the feedback page's resources", NBCONVERT,
    {"nbconvert.exporters.html:HTMLExporter.from_notebook_node": "(self, nb, resources=None, **kw)"},
    what="feedback.html.FeedbackExporter adds the course's page resources (Korean labels, precision, KaTeX) and does "
         "what HTMLExporter's own does, writing its last step again: pictures without alternative text get "
         "nbconvert's words (feedback.html.alt_text) without a BeautifulSoup parse and rewrite of the whole page; "
         "the tabindex of JupyterLab's cell wrappers is left out (the template is nbconvert's classic: it has none)",
    why="the feedback template reads the resources; the BeautifulSoup pass was most of a page's time "
        "(benchmarks/results/speed.md), and the page is the same once parsed",
    rewrites={"nbconvert.exporters.html:HTMLExporter.from_notebook_node":
              "3dccafff45cc4e749766089c7de2f5385ac071e03f4f5a15bfb3b025f54893b9"})
SUBMITTED_READ = Patch(
    "submitted notebooks read as data", NBCONVERT,
    {"nbconvert.exporters.exporter:Exporter.from_filename": "(self, filename, resources=None, **kw)"},
    what="gradebook.files.SubmittedNotebookExporter reads a submitted notebook with submission.files.read_submitted "
         "(no link followed, no FIFO or device read, size bounded); a refused file is graded as a placeholder "
         "notebook that says why",
    why="nbconvert opens the path it is given: as root, a link in a submission was followed and a FIFO blocked",
    rewrites={"nbconvert.exporters.exporter:Exporter.from_filename":
              "5e681e7c332f0fc3db4f7780cb0b5197c58f906b655fb1eea0c15220d0f51368"})
LATE_PLUGIN = Patch(
    "the late penalty per started day", NBGRADER,
    {"nbgrader.plugins.latesubmission:LateSubmissionPlugin.late_submission_penalty":
     "(self, student_id, score, total_seconds_late)"},
    what="gradebook.late.PercentPerDay: a percentage of the score per started day late, after a grace period, "
         "capped (course_config.py's late_penalty)",
    why="nbgrader's own plugin takes nothing off (its documented extension point)")
CSV_EXPORT = Patch(
    "nbgrader export's CSV quoted and formula-safe", NBGRADER,
    {"nbgrader.plugins.export:CsvExportPlugin.export": "(self, gradebook)"},
    what="feedback.lms.CsvExport (c.ExportApp.plugin_class in course_config.py): nbgrader's columns and values, "
         "written by the csv module, every text cell formula-safe, the file replaced whole",
    why="nbgrader joins the values with commas unquoted (a name with a comma shifted the row) and writes a roster name "
        "such as =HYPERLINK(...) as a formula a spreadsheet evaluates",
    rewrites={"nbgrader.plugins.export:CsvExportPlugin.export":
              "11c4c11bfc1e6c44c1509037095b7da52bacb5db12bcf57ff08278c7d0c205f2"})
VALIDATE_SUMMARY = Patch(
    "Validate's Korean summary, in a process of its own", NBGRADER,
    {"nbgrader.validator:Validator._preprocess": "(self, nb)",
     "nbgrader.server_extensions.validate_assignment.handlers:ValidateAssignmentHandler.post":
     "(self, *args, **kwargs)"},
    what="hub.lab_validate: RecordingValidator keeps the notebook that nbgrader's private _preprocess ran; "
         "KoreanValidateHandler.post runs nbgrader's validator in a process of its own (python -m the module), "
         "awaited without blocking the server, with a time limit and a cancel, and answers as nbgrader's handler "
         "with the Korean summary added",
    why="nbgrader's handler runs the notebook synchronously on the server's event loop (a notebook with an endless "
        "loop froze the student's whole JupyterLab for 26 minutes); the summary names each exercise's result and "
        "the real error of the cell that failed first, which only the executed notebook holds",
    rewrites={"nbgrader.validator:Validator._preprocess":
              "ca1c6e172237f38cd87011276497c0f70d0bbe3ec3afde1b92496fd691e5e52c",
              "nbgrader.server_extensions.validate_assignment.handlers:ValidateAssignmentHandler.post":
              "b989dddfa6a5bca7fb903f557baa0a29fe6bfd3983903809a96637401eb31df6"})
SPAWNER_LIMITS = Patch(
    "each user's server in limits", JUPYTERHUB,
    {"jupyterhub.spawner:LocalProcessSpawner.make_preexec_fn": "(self, name)",
     "jupyterhub.spawner:LocalProcessSpawner.start": "(self)",
     "jupyterhub.spawner:LocalProcessSpawner.stop": "(self, now=False)"},
    what="hub.spawner.LimitedSpawner: the server joins the user's control group and gets a /tmp, /dev/shm and /proc "
         "of its own, a file size and open-file limit before JupyterHub's own switch to the user; start gives its "
         "stdout and stderr to the user's own log (hub.server_log) and its stdin from /dev/null; stop also ends and "
         "empties the user's group",
    why="LocalProcessSpawner starts every user's server in the hub's own limits, with the hub's own log and terminal, "
        "and leaves what it started behind")
NGSHARE_GRADING = Patch(
    "collect and release feedback one student at a time", NGSHARE_EXCHANGE,
    {"ngshare_exchange.collect:ExchangeCollect.init_src": "(self)",
     "ngshare_exchange.collect:ExchangeCollect.copy_files": "(self)",
     "ngshare_exchange.release_feedback:ExchangeReleaseFeedback.copy_files": "(self)"},
    what="hub.exchange: collect takes the roster's students only, checks each submission's files and writes the "
         "server's time; one submission that cannot be collected or released is skipped with its reason",
    why="ngshare-exchange stops the whole class at the first submission it cannot write or release, and takes "
        "timestamp.txt from the student",
    rewrites={"ngshare_exchange.collect:ExchangeCollect.init_src":
              "7f89697d170b477d5f88dd1198a253ff4e7a8d1db330d17ab1f119131d4c94bc",
              "ngshare_exchange.collect:ExchangeCollect.copy_files":
              "221777d4b733419f1a77b28cbca60cf02a985d5190a4927a1875beaf8bacdcfe",
              "ngshare_exchange.release_feedback:ExchangeReleaseFeedback.copy_files":
              "b6117a7260e0b0ae8b4e1068f20e4c7169cffe543d45ba1f3ede727c37d06481"})
FORMGRADER_NO_KERNELS = Patch(
    "formgrader starts no kernel", "jupyter_server 2.21.1",
    {"jupyter_server.services.kernels.kernelmanager:MappingKernelManager.start_kernel":
     "(self, *, kernel_id=None, path=None, **kwargs)"},
    what="hub.formgrader_server.NoKernels: formgrader's server refuses every kernel start (kernels and sessions APIs: "
         "403)",
    why="a page on formgrader's origin started a kernel as the grading account, which reads the answer key")
FORMGRADER_NO_KERNELSPECS = Patch(
    "formgrader lists no kernel", "jupyter_client 8.10.0",
    {"jupyter_client.kernelspec:KernelSpecManager.find_kernel_specs": "(self)"},
    what="hub.formgrader_server.NoKernelSpecs: formgrader's JupyterLab opens notebooks with no kernel to choose",
    why="with kernels refused, a listed kernel only led to an error dialog")
ASSIGNMENT_LIST_MANAGER = Patch(
    "the Assignment List in the course's order and time zone", NBGRADER,
    {"nbgrader.server_extensions.assignment_list.handlers:AssignmentList.list_released_assignments":
     "(self, course_id=None)",
     "nbgrader.server_extensions.assignment_list.handlers:AssignmentList.list_submitted_assignments":
     "(self, course_id=None)",
     "nbgrader.server_extensions.assignment_list.handlers:AssignmentList.submit_assignment":
     "(self, course_id, assignment_id)"},
    what="hub.lab_assignments.CourseAssignmentList: nbgrader's lists with the course's teaching order, due dates and "
         "times in its zone, each submission's download and feedback page; a refused submission answered with the "
         "exchange's reason (the rest of submit_assignment as nbgrader's)",
    why="nbgrader sorts assignments by name, shows no due date and UTC times without a zone, and answers a refused "
        "submission with a traceback",
    rewrites={"nbgrader.server_extensions.assignment_list.handlers:AssignmentList.submit_assignment":
              "ea9755bac7e075bc480b72c2c6e67bcb36df174811494ce9b2c5d939433d742f"})
SUBMIT_REFUSALS = Patch(
    "a refused submission fails with its reason", NGSHARE_EXCHANGE,
    {"ngshare_exchange.exchange:Exchange._ngshare_api_check_error": "(self, response, url)",
     "ngshare_exchange.submit:ExchangeSubmit.post_submission": "(self, src_path)"},
    what="hub.lab_assignments.CourseSubmit keeps the exchange's message of a refused request and raises it "
         "(ExchangeError) where the submission was not stored",
    why="ngshare-exchange logs a refused submission and returns as if it had submitted: the student saw nothing",
    rewrites={"ngshare_exchange.exchange:Exchange._ngshare_api_check_error":
              "619b48b9556ae456139c49de87130efc8821d4671fb744336e0f9205a43ee83f"})
OVERRIDES = (PREPROCESS_STEPS, FEEDBACK_RESOURCES, SUBMITTED_READ, LATE_PLUGIN, CSV_EXPORT, VALIDATE_SUMMARY,
             SPAWNER_LIMITS, NGSHARE_GRADING, FORMGRADER_NO_KERNELS, FORMGRADER_NO_KERNELSPECS,
             ASSIGNMENT_LIST_MANAGER, SUBMIT_REFUSALS)
UPSTREAM_PACKAGES = ("nbgrader", "nbconvert", "jupyterhub", "ngshare", "ngshare_exchange", "jupyter_server",
                     "notebook", "traitlets", "jupyter_client")


def resolve(function: str):
    """The class (or module) and the attribute name of ``module:Class.function``."""
    module, _, path = function.partition(":")
    *owners, name = path.split(".")
    owner = importlib.import_module(module)
    for part in owners:
        owner = getattr(owner, part)
    return owner, name


def upstream(owner, name: str):
    """The upstream function ``owner.name`` is or replaced (this module's patches left out)."""
    function = getattr(owner, name)
    while getattr(function, "_course_patch", None):
        function = function.__wrapped__
    return function


def signature(function) -> str:
    """Parameters and defaults, without annotations (their spelling varies with Python and the library's style)."""
    sig = inspect.signature(function, follow_wrapped=False)
    return str(sig.replace(parameters=[p.replace(annotation=p.empty) for p in sig.parameters.values()],
                           return_annotation=sig.empty))


def checked(patch: Patch) -> list[str]:
    """What of the installed upstream differs from what ``patch`` was checked against (empty: nothing)."""
    distribution, checked_version = patch.upstream.split()
    problems = [f"{distribution} {version(distribution)} installed"] if version(distribution) != checked_version else []
    for function, expected in patch.functions.items():
        original = upstream(*resolve(function))
        if signature(original) != expected:
            problems.append(f"{function}{signature(original)}, not {expected}")
        if function in patch.rewrites:
            source = hashlib.sha256(inspect.getsource(original).encode()).hexdigest()
            if source != patch.rewrites[function]:
                problems.append(f"{function}'s source changed (sha256 {source[:12]}…)")
    return problems


def install(patch: Patch, owner, name: str, make) -> None:
    """``owner.name = make(original)``, once: a function this module installed for ``patch`` is left as it is, also
    where another patch has wrapped it since (two patches of one function, each installed twice, wrap it twice)."""
    current = function = getattr(owner, name)
    while getattr(function, "_course_patch", None):
        if function._course_patch == patch.name:
            return
        function = function.__wrapped__
    replacement = make(current)
    replacement._course_patch, replacement.__wrapped__ = patch.name, current
    setattr(owner, name, replacement)


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
    more: tuple = ()                # further (old, new) replacements in the same file, each exactly once

    def target(self, prefix: Path) -> Path:
        site = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
        return prefix / self.path.format(site=site)

    def patched(self, upstream: str, onto: str | None = None, **values) -> str:
        """``upstream`` (the file this patch was written against) with this patch's replacements, made ``onto`` the
        text that other patches of the same file made of it (default: ``upstream`` itself)."""
        if hashlib.sha256(upstream.encode()).hexdigest() != self.upstream_sha256:
            raise UpstreamChanged(f"{self.name}: the upstream file is not the one this patch was written against "
                                  f"(nbgrader {NBGRADER_VERSION}, sha256 {self.upstream_sha256[:12]}…): check the "
                                  "patch against the new file and update it (autograder/patches)")
        text = upstream if onto is None else onto
        for old, new in ((self.old, self.new), *self.more):
            if text.count(old) != 1:
                raise UpstreamChanged(f"{self.name}: the text to replace is not in the file exactly once: "
                                      f"{old[:60]!r}")
            text = text.replace(old, new.format(**values))
        return text


class UpstreamChanged(RuntimeError):
    """A file to patch is not the upstream file its patch was written against."""


# Formgrader's pages call roundToPrecision(score, 2) everywhere; the course's precision wins.
ROUND_TO_PRECISION = FilePatch(
    name="formgrader's score precision",
    path="{site}/nbgrader/server_extensions/formgrader/static/js/utils.js",
    upstream_sha256="bf49532f75071613ab5439a3aaed26f89515634fc7e0e95f4729579cfec18272",
    old="var roundToPrecision = function (num, precision) {\n",
    new="var roundToPrecision = function (num, precision) {{\n"
        "    precision = {decimals};  // the course's score_decimals (autograder/patches), not the pages' fixed 2\n",
    why="formgrader showed 2.625 as 2.63: every page passes a fixed precision of 2",
)

# The Validate dialog: a summary (autograder/hub/lab_validate.py) shown as a short list, as text (innerText): its
# headline, the error to fix first, one line per exercise, a note.
VALIDATE_SUMMARY_JS = (
    'function attentionCourseSummary(r){var t=document.createElement("div");t.id="validation-message";'
    't.classList.add(r.ok?"validation-success":"validation-failed");var h=document.createElement("p");'
    'h.innerText=r.headline;t.append(h);if(r.first){var p=document.createElement("p");p.innerText=r.first;'
    'p.classList.add("attention-course-first-error");t.append(p)}'
    'if(r.items.length){var u=document.createElement("ul");'
    'u.classList.add("attention-course-validation");for(var i=0;i<r.items.length;i++){'
    'var li=document.createElement("li");li.innerText=r.items[i].text;'
    'li.classList.add(r.items[i].ok?"validation-item-passed":"validation-item-failed");u.append(li)}t.append(u)}'
    'if(r.note){var q=document.createElement("p");q.innerText=r.note;t.append(q)}'
    'f({title:r.title,body:new b.Widget({node:t}),buttons:[o.Dialog.okButton({label:r.ok_label})]},!r.ok);'
    'return r.ok}'
)


def _js(text: str) -> str:
    """JavaScript text as a FilePatch's ``new`` (a format string): its braces doubled."""
    return text.replace("{", "{{").replace("}", "}}")


# While Validate runs (in a process of its own on the server: lab_validate.py), its buttons say so and a click
# cancels it (POST assignments/validate/cancel), in the notebook's toolbar and in the Assignment List.
VALIDATE_TOOLBAR_RUNNING = (
    'this.setButtonLabel("Validating..."),Z("assignments/validate",{method:"POST"},new Map([["path",this.panel.'
    'context.path]])).then(e=>{k(e),this.setButtonLabel(),this.setButtonDisabled(!1)}).catch(e=>{f({title:'
    '"Validation failed",body:`Cannot validate: ${e}`,',
    _js('this._attentionValidating=!0,this.setButtonLabel(') + '{running}' + _js('),this.setButtonDisabled(!1),'
    'Z("assignments/validate",{method:"POST"},new Map([["path",this.panel.context.path]])).then(e=>{'
    'this._attentionValidating=!1,k(e),this.setButtonLabel(),this.setButtonDisabled(!1)}).catch(e=>{'
    'this._attentionValidating=!1,f({title:') + '{title}' + _js(',body:') + '{not_run}' + _js('+e,'))
VALIDATE_TOOLBAR_CANCEL = (
    'newButtonCallback(){return()=>{Z("nbgrader_version",',
    _js('newButtonCallback(){return()=>{if(this._attentionValidating){this.setButtonLabel(') + '{cancelling}'
    + _js('),this.setButtonDisabled(),Z("assignments/validate/cancel",{method:"POST"},new Map([["path",'
          'this.panel.context.path]])).catch(()=>{});return}Z("nbgrader_version",'))
VALIDATE_LIST_RUNNING = (
    's.onclick=async function(){s.innerText="Validating...",s.setAttribute("disabled","disabled");let n={path:'
    'e.data.path};try{let t=await T("assignments/validate",{body:JSON.stringify(n),method:"POST"});'
    's.innerText="Validate",',
    _js('s.onclick=async function(){if(s._attentionValidating){s.innerText=') + '{cancelling}'
    + _js(',s.setAttribute("disabled","disabled"),T("assignments/validate/cancel",{body:JSON.stringify({path:'
          'e.data.path}),method:"POST"}).catch(()=>{});return}s._attentionValidating=!0,s.innerText=')
    + '{running}' + _js(';let n={path:e.data.path};try{let t=await T("assignments/validate",{body:'
                        'JSON.stringify(n),method:"POST"});s._attentionValidating=!1,s.innerText="Validate",'))
VALIDATE_LIST_FAILED = ('catch(e){E(t),t.innerText="Error validating assignment."',
                        _js('catch(e){s._attentionValidating=!1,E(t),t.innerText="Error validating assignment."'))
VALIDATE_DIALOG = FilePatch(
    name="the Validate dialog",
    path="share/jupyter/labextensions/@jupyter/nbgrader/static/161.290a640318af4049.js",
    upstream_sha256="2b750db4bf124d21fce83bacafe078dd0c6573fb355708f7b96be5804d806cdc",
    old='function k(e){var t=document.createElement("div");t.id="validation-message";',
    new=_js(VALIDATE_SUMMARY_JS)
    + 'function k(e){{if(e&&e.summary)return attentionCourseSummary(e.summary);'
      'var t=document.createElement("div");t.id="validation-message";',
    why="the dialog's English words and its 20 KB of failing cells' source are hard-coded in the extension; its "
        "buttons can neither say that Validate runs nor cancel it",
    more=(VALIDATE_TOOLBAR_RUNNING, VALIDATE_TOOLBAR_CANCEL, VALIDATE_LIST_RUNNING, VALIDATE_LIST_FAILED),
)

# The Assignment List (autograder/hub/lab_assignments.py): each assignment's due date after its name, each
# submission's download and its feedback page opened in a tab of its own (rendered), a refused submission's reason
# under a Korean title.
ASSIGNMENT_LIST = FilePatch(
    name="the Assignment List's due dates, downloads and feedback pages",
    path=VALIDATE_DIALOG.path,
    upstream_sha256=VALIDATE_DIALOG.upstream_sha256,
    old='let E=function(e){e.innerHTML=""};',
    new=_js('let E=function(e){e.innerHTML=""};function attentionCourseDue(d){var q=document.createElement("span");'
            'q.classList.add("attention-course-due");q.innerText=" · "+d;return q}'),
    why="nbgrader's list shows no due date, shows the exchange's UTC time without a zone, opens the feedback's folder "
        "(JupyterLab's viewer then shows raw math until 'Trust HTML') and offers no way to get a submission back",
    more=(('return e.innerText=this.data.assignment_id,t.append(e),t}',
           _js('return e.innerText=this.data.assignment_id,t.append(e),this.data.due_date&&t.append('
               'attentionCourseDue(this.data.due_date)),t}')),
          ('var s=document.createElement("span").innerText=this.data.timestamp;if(t.append(s),this.data.'
           'has_local_feedback&&!this.data.feedback_updated){var n=this.app,a=this.data.local_feedback_path,i=document.'
           'createElement("a");i.onclick=function(){n.commands.execute("filebrowser:go-to-path",{path:a})},',
           _js('var s=document.createElement("span").innerText=this.data.timestamp;if(t.append(s),this.data.'
               'download_url){var q=document.createElement("a");q.href=r.URLExt.join(r.PageConfig.getBaseUrl(),'
               'this.data.download_url),q.setAttribute("download",""),q.classList.add("attention-course-download"),'
               'q.innerText=" ("+this.data.download_label+")",t.append(q)}if(this.data.has_local_feedback&&!this.'
               'data.feedback_updated){var n=this.app,a=this.data.local_feedback_path,g=this.data.feedback_url,i='
               'document.createElement("a");g?(i.href=r.URLExt.join(r.PageConfig.getBaseUrl(),g),i.target="_blank",'
               'i.rel="noopener",i.classList.add("attention-course-feedback")):i.onclick=function(){n.commands.'
               'execute("filebrowser:go-to-path",{path:a})},')),
          ('submit_error(e){let t=v.createElement("p",null,"Assignment not submitted:"),s=v.createElement("pre",null,'
           'e.value);f({title:"Invalid Submission",',
           _js('submit_error(e){let t=v.createElement("p",null,') + '{not_submitted_why}' + _js(
               '),s=v.createElement("pre",null,e.value);f({title:') + '{not_submitted}' + ',')),
)

# Formgrader's Students and Submissions pages: the roster's student number (lms_user_id) in the "Student ID" column,
# the account name after it; the column sorts by the number.
STUDENTS_PAGE_ID = FilePatch(
    name="the Students page's student number",
    path="{site}/nbgrader/server_extensions/formgrader/static/js/manage_students.js",
    upstream_sha256="14379bf5c7471fac3377f63ea5b5ec10ae70b073901e23553120e09db8c4a09f",
    old='        var id = this.model.get("id");\n        this.$id.attr("data-order", id);\n'
        '        this.$id.text(id);\n',
    new='        var id = this.model.get("id");\n        var number = this.model.get("lms_user_id");'
        '  // the roster\'s (autograder/patches)\n'
        '        this.$id.attr("data-order", number || id);\n'
        '        this.$id.text(number ? number + " (" + id + ")" : id);\n',
    why="the 'Student ID' column showed the account name, never the student number of the roster",
)
SUBMISSIONS_PAGE_ID = FilePatch(
    name="the Submissions page's student number",
    path="{site}/nbgrader/server_extensions/formgrader/static/js/manage_submissions.js",
    upstream_sha256="530b74e8c265089d8ae1f40f2cff442fd13bef79cb6236758a35aeca7158e06b",
    old='        this.$student_id.attr("data-order", student);\n        this.$student_id.text(student);\n',
    new='        var number = this.model.get("lms_user_id");  // the roster\'s (STUDENT_NUMBERS, autograder/patches)\n'
        '        this.$student_id.attr("data-order", number || student);\n'
        '        this.$student_id.text(number ? number + " (" + student + ")" : student);\n',
    why="the 'Student ID' column showed the account name, never the student number of the roster",
)

# ipykernel's IOPub pipe (what forked subprocesses print reaches the notebook through it): an IPC socket in a folder of
# the kernel's owner alone, not a TCP port on 127.0.0.1 that any user of the machine may connect to and stream into.
IOPUB_PIPE = FilePatch(
    name="ipykernel's IOPub pipe on IPC",
    path="{site}/ipykernel/iostream.py",
    upstream_sha256="e59cd201a350a8cbc9d463e6e150987a87ca1e77d7cdfd6819a3ecfa34f202f6",
    old="""        pipe_in = ctx.socket(zmq.PULL)
        pipe_in.linger = 0

        try:
            self._pipe_port = pipe_in.bind_to_random_port("tcp://127.0.0.1")
        except zmq.ZMQError as e:
            warnings.warn(
                "Couldn't bind IOPub Pipe to 127.0.0.1: %s" % e
                + "\\nsubprocess output will be unavailable.",
                stacklevel=2,
            )
            self._pipe_flag = False
            pipe_in.close()
            return
        self._pipe_in = ZMQStream(pipe_in, self.io_loop)
        self._pipe_in.on_recv(self._handle_pipe_msg)

    def _handle_pipe_msg(self, msg):
        \"\"\"handle a pipe message from a subprocess\"\"\"
        if not self._pipe_flag or not self._is_master_process():
            return
        if msg[0] != self._pipe_uuid:
            print("Bad pipe message: %s", msg, file=sys.__stderr__)
            return
        self.send_multipart(msg[1:])

    def _setup_pipe_out(self):
        # must be new context after fork
        ctx = zmq.Context()
        pipe_out = ctx.socket(zmq.PUSH)
        pipe_out.linger = 3000  # 3s timeout for pipe_out sends before discarding the message
        pipe_out.connect("tcp://127.0.0.1:%i" % self._pipe_port)
        return ctx, pipe_out
""",
    new="""        pipe_in = ctx.socket(zmq.PULL)
        pipe_in.linger = 0
        # The course's hub (autograder/patches): an IPC socket in a folder of the kernel's owner alone (0700), not a
        # TCP port on 127.0.0.1 that every user of the machine can connect to; a message past MAXMSGSIZE ends the
        # connection that sent it instead of being buffered.
        pipe_in.setsockopt(zmq.MAXMSGSIZE, {pipe_max_bytes})

        try:
            import tempfile

            self._pipe_folder = tempfile.mkdtemp(prefix="ipykernel-pipe-")
            atexit.register(self._remove_pipe_folder, os.getpid())
            self._pipe_address = "ipc://" + os.path.join(self._pipe_folder, "pipe")
            pipe_in.bind(self._pipe_address)
        except (OSError, zmq.ZMQError) as e:
            warnings.warn(
                "Couldn't bind IOPub Pipe to a private IPC socket: %s" % e
                + "\\nsubprocess output will be unavailable.",
                stacklevel=2,
            )
            self._pipe_flag = False
            pipe_in.close()
            return
        self._pipe_in = ZMQStream(pipe_in, self.io_loop)
        self._pipe_in.on_recv(self._handle_pipe_msg)

    def _remove_pipe_folder(self, pid):
        if os.getpid() == pid:                      # not in a forked child that exits
            import shutil

            shutil.rmtree(self._pipe_folder, ignore_errors=True)

    def _handle_pipe_msg(self, msg):
        \"\"\"handle a pipe message from a subprocess\"\"\"
        if not self._pipe_flag or not self._is_master_process():
            return
        if msg[0] != self._pipe_uuid:
            print("Bad pipe message: %s", msg, file=sys.__stderr__)
            return
        self.send_multipart(msg[1:])

    def _setup_pipe_out(self):
        # must be new context after fork
        ctx = zmq.Context()
        pipe_out = ctx.socket(zmq.PUSH)
        pipe_out.linger = 3000  # 3s timeout for pipe_out sends before discarding the message
        pipe_out.connect(self._pipe_address)
        return ctx, pipe_out
""".replace("{", "{{").replace("}", "}}").replace("{{pipe_max_bytes}}", "{pipe_max_bytes}"),
    why="every kernel listened on a TCP port of 127.0.0.1 for its forked children's output, listed with its owner in "
        "/proc/net/tcp: another student connected and announced a 2,300 MiB message, which the kernel buffered "
        "until its owner's memory group killed it, or printed 'Bad pipe message' lines into its owner's running cell",
)

FILE_PATCHES = (ROUND_TO_PRECISION, VALIDATE_DIALOG, ASSIGNMENT_LIST, STUDENTS_PAGE_ID, SUBMISSIONS_PAGE_ID,
                IOPUB_PIPE)
