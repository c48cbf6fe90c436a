"""The demo class, end to end, through nbgrader's real exchange (the README's main job).

``python -m autograder demo`` sets up a course directory (``demo/``), and for every assignment:
``generate_assignment`` -> ``release_assignment`` -> every student's ``fetch_assignment`` and ``submit`` (as
distinct students; the on-time group first, then the due date passes, then the late group) -> ``collect`` ->
parallel ``autograde`` (the hidden graders, in the sandbox), whose workers then make the feedback
(``generate_feedback``'s converter, one student each) -> ``release_feedback`` ->
every student's ``fetch_feedback``; then ``export``. The instructor's commands of each assignment run nbgrader's own
converter and exchange classes in this process (``NbGraderAPI``, as formgrader runs them; ``DemoClass.api``). It
prints a per-student, per-exercise table and writes the grades CSV (Canvas import format), the feedback HTML and the
instructor's report.

Re-running it on the same directory is idempotent: students are upserted, each student keeps one submission per
assignment (the newest), and grades are overwritten, not added.
"""
from __future__ import annotations

import datetime as dt
import shutil
import sys
import time
from pathlib import Path

import nbformat

from autograder import course, settings
from autograder.demo import roster, submissions
from autograder.gradebook.batch import autograde_class


def _stamp(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


class DemoClass:
    def __init__(self, course_dir: Path, assignments=None, db_url: str | None = None, workers: int | None = None,
                 students=None, log=sys.stderr):
        self.dir = Path(course_dir).resolve()
        self.assignments = assignments or settings.load().assignments
        self.env = course.course_env(self.dir)
        if db_url:
            self.env["COURSE_DB_URL"] = db_url
        self.workers = workers
        self.students = students or roster.ROSTER
        self.log = log
        self.timings: dict[str, float] = {}
        self._api = None

    # ------------------------------------------------------------------ helpers
    def nbgrader(self, *args, cwd=None):
        return course.nbgrader(*args, cwd=cwd or self.dir, env=self.env)

    def api(self):
        """nbgrader's ``NbGraderAPI`` (what formgrader's buttons run) on the course's ``nbgrader_config.py``, read once
        as the nbgrader command reads it (with this demo's gradebook and exchange in the environment it sees), for the
        instructor's per-assignment commands: ``generate_assignment``, ``release_assignment --force``, ``collect
        --update`` and ``release_feedback`` run nbgrader's own converter and exchange classes in this process. As
        commands they cost an interpreter each, four per assignment, one after the other (1.4-2.0 s of CPU each on
        this machine, of which the command's own work is a few tenths)."""
        if self._api is None:
            import os

            from nbgrader.apps import NbGraderAPI
            from nbgrader.coursedir import CourseDirectory
            from traitlets.config.loader import PyFileConfigLoader

            saved = {name: os.environ.get(name) for name in self.env}
            os.environ.update(self.env)   # course_config.py reads the gradebook's URL and the exchange from it
            try:
                config = PyFileConfigLoader("nbgrader_config.py", path=str(self.dir)).load_config()
            finally:
                for name, value in saved.items():
                    if value is None:
                        os.environ.pop(name, None)
                    else:
                        os.environ[name] = value
            config.CourseDirectory.root = str(self.dir)
            config.ExchangeReleaseAssignment.force = True    # release_assignment --force
            # The demo's students are simulated by this one account, so every submission is owned by it: collect's
            # check that a submission's owner is the student it names ("... owned by root; cheating attempt?") can
            # only warn here, once per student. In a class where students are Unix users it stays on.
            config.ExchangeCollect.check_owner = False
            self._api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
        return self._api

    def instructor(self, command: str, assignment: str) -> None:
        """One of ``api``'s commands of ``assignment``; a failure stops the demo with nbgrader's log, as the command's
        exit status did."""
        from nbgrader.utils import capture_log, temp_attrs

        api = self.api()

        def release_feedback():   # the API's own passes the authenticator misspelt (nbgrader 0.9.6): as the command
            with temp_attrs(api.coursedir, assignment_id=assignment, student_id="*"):
                return capture_log(api.exchange.ReleaseFeedback(coursedir=api.coursedir,
                                                                authenticator=api.authenticator, parent=api))

        result = {"generate_assignment": lambda: api.generate_assignment(assignment, force=True),
                  "release_assignment": lambda: api.release_assignment(assignment),
                  "collect": lambda: api.collect(assignment, update=True),
                  "release_feedback": release_feedback}[command]()
        if not result.get("success"):
            raise RuntimeError(f"nbgrader {command} {assignment} failed:\n{result.get('log', '')}\n"
                               f"{result.get('error', '')}")

    def as_student(self, command: str, assignment: str, student: roster.Student) -> None:
        """A student's nbgrader exchange command (fetch_assignment, submit, fetch_feedback) from their home folder.

        It runs nbgrader's own exchange classes in this process, the code ``nbgrader submit`` runs, configured
        as that student's JupyterLab would be (course id, exchange root, their id, their folder).
        """
        from nbgrader.auth import Authenticator
        from nbgrader.coursedir import CourseDirectory
        from nbgrader.exchange.default import ExchangeFetchAssignment, ExchangeFetchFeedback, ExchangeSubmit
        from traitlets.config import Config

        home = self.dir / "home" / student.id
        config = Config()
        config.CourseDirectory.course_id = settings.load().course_id
        config.CourseDirectory.root = str(home)
        config.CourseDirectory.assignment_id = assignment
        config.CourseDirectory.student_id = student.id
        config.Exchange.root = self.env["COURSE_EXCHANGE"]
        config.Exchange.assignment_dir = str(home)
        # The student's own nbgrader cache (in their home, as $JUPYTER_DATA_DIR would put it): submit records each
        # submission there, and fetch_feedback fetches the feedback of the submissions it finds there. One shared
        # cache (this process's home) made every student fetch every classmate's feedback.
        config.Exchange.cache = str(home / ".local" / "share" / "jupyter" / "nbgrader_cache")
        kind = {"fetch_assignment": ExchangeFetchAssignment, "submit": ExchangeSubmit,
                "fetch_feedback": ExchangeFetchFeedback}[command]
        coursedir = CourseDirectory(config=config)
        kind(coursedir=coursedir, authenticator=Authenticator(config=config), config=config).start()

    def say(self, text: str) -> None:
        print(text, file=self.log, flush=True)

    def timed(self, label: str):
        demo = self

        class _Timer:
            def __enter__(self):
                self.start = time.perf_counter()

            def __exit__(self, *exc):
                demo.timings[label] = demo.timings.get(label, 0.0) + time.perf_counter() - self.start

        return _Timer()

    # ------------------------------------------------------------------ the course
    def setup(self) -> None:
        """Course files (configs, sources) refreshed; exchange, gradebook and earlier results kept."""
        self.dir.mkdir(parents=True, exist_ok=True)
        course.venv_on_path()
        for name in course.COURSE_FILES:
            shutil.copy(course.ROOT / name, self.dir / name)
        for assignment in self.assignments:
            target = self.dir / "source" / assignment
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(course.ROOT / "source" / assignment, target)
        known = {s.id for s in self.students} | {s.id for s in roster.ROSTER}
        for folder in ("submitted", "autograded", "feedback", ".autograder/staging"):  # left by another demo
            for stale in (self.dir / folder).glob("*"):
                if stale.is_dir() and stale.name not in known:
                    shutil.rmtree(stale)
        (self.dir / "exchange").mkdir(exist_ok=True)
        (self.dir / "exchange").chmod(0o777)
        from nbgrader.api import Gradebook

        with Gradebook(self.env["COURSE_DB_URL"], settings.load().course_id) as gb:  # upserts: re-runs add none
            for student in self.students:   # the demo's user names are the student numbers
                gb.update_or_create_student(student.id, first_name=student.first_name,
                                            last_name=student.last_name, email=student.email,
                                            lms_user_id=student.id)

    def release(self, assignment: str) -> None:
        """``generate_assignment`` and ``release_assignment`` (``api``). No ``generate_solution``: nothing in the demo
        reads the course folder's solution/, and the command runs the whole answer key in a kernel (10–12 s an
        assignment; the repository's solutions/ are built once by ``python -m autograder build``)."""
        self.instructor("generate_assignment", assignment)
        self.instructor("release_assignment", assignment)

    def set_due(self, assignment: str, when: dt.datetime) -> None:
        """What ``nbgrader db assignment add ASSIGNMENT --duedate=...`` does (its ``start``), in this process: the
        command's interpreter and imports cost more than the write (twice per assignment)."""
        from nbgrader.api import Gradebook

        with Gradebook(self.env["COURSE_DB_URL"], settings.load().course_id) as gb:
            gb.update_or_create_assignment(assignment, duedate=_stamp(when))

    def hand_in(self, assignment: str, student: roster.Student) -> None:
        """The student fetches the release, works on it, and submits (as themselves)."""
        home = self.dir / "home" / student.id
        home.mkdir(parents=True, exist_ok=True)
        if (home / assignment).exists():
            shutil.rmtree(home / assignment)
        self.as_student("fetch_assignment", assignment, student)
        notebook = home / assignment / f"{assignment}.ipynb"
        release_nb = nbformat.read(str(notebook), as_version=4)
        source_nb = nbformat.read(str(self.dir / "source" / assignment / f"{assignment}.ipynb"), as_version=4)
        built = submissions.notebook_for(student, assignment, release_nb, source_nb)
        if isinstance(built, bytes):
            notebook.write_bytes(built)
        else:
            nbformat.write(built, str(notebook))
        self.as_student("submit", assignment, student)

    def run_assignment(self, assignment: str) -> None:
        with self.timed("release"):
            self.release(assignment)
            # The due date passes between the on-time group and the late group.
            self.set_due(assignment, dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1))
            self.extend(assignment)
        with self.timed("students hand in"):
            for student in self.students:
                if not student.late:
                    self.hand_in(assignment, student)
            # nbgrader keeps due dates to the second: the next whole second is after every on-time submission.
            due = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(seconds=1)
            self.set_due(assignment, due)
            time.sleep(max(0.0, (due - dt.datetime.now(dt.timezone.utc)).total_seconds()) + 0.2)
            for student in self.students:
                if student.late:
                    self.hand_in(assignment, student)
        with self.timed("collect"):
            self.instructor("collect", assignment)   # --update, without the owner check (``api``)
        with self.timed("autograde + feedback"):
            outcomes = self.autograde(assignment)
        failed = [o.student for o in outcomes if not o.ok]
        if failed:
            self.say(f"  {assignment}: autograding failed for {failed}")
        without = [o.student for o in outcomes if o.ok and o.feedback]
        if without:
            self.say(f"  {assignment}: no feedback for {without}")
        with self.timed("feedback"):
            self.instructor("release_feedback", assignment)
            for student in self.students:
                self.as_student("fetch_feedback", assignment, student)

    def autograde(self, assignment: str) -> list:
        """The collected class graded (``autograde_class``); the workers that grade it then make each student's
        feedback (generate_feedback's work). Returns every submission's outcome."""
        return autograde_class(self.dir, assignment, self.workers, progress=self.log,
                               db_url=self.env["COURSE_DB_URL"], feedback=True)

    def extend(self, assignment: str) -> None:
        """The extensions the instructor gives before the due date (``python -m autograder extend``'s ``grant``)."""
        from autograder.gradebook.extensions import grant

        ids = {s.id for s in self.students}
        for (student, name), days in roster.EXTENSIONS.items():
            if name == assignment and student in ids:
                grant(self.env["COURSE_DB_URL"], student, assignment, days=days)

    def as_instructor(self, command: str, assignment: str) -> None:
        """The instructor's ``release_assignment`` or ``collect`` of ``assignment`` with nbgrader's own exchange
        classes in this process (the code the commands run, with the course's hardening of collect installed, as
        ``course_config.py`` installs it): for the regrade form, whose two commands would cost two interpreters."""
        from nbgrader.auth import Authenticator
        from nbgrader.coursedir import CourseDirectory
        from nbgrader.exchange.default import ExchangeCollect, ExchangeReleaseAssignment
        from traitlets.config import Config

        from autograder.patches.files import harden_nbgrader

        harden_nbgrader()
        config = Config()
        config.CourseDirectory.course_id = settings.load().course_id
        config.CourseDirectory.root = str(self.dir)
        config.CourseDirectory.assignment_id = assignment
        config.CourseDirectory.db_url = self.env["COURSE_DB_URL"]
        config.Exchange.root = self.env["COURSE_EXCHANGE"]
        config.ExchangeReleaseAssignment.force = True
        config.ExchangeCollect.update = True
        config.ExchangeCollect.check_owner = False   # one account simulates every student (collect above)
        kind = {"release_assignment": ExchangeReleaseAssignment, "collect": ExchangeCollect}[command]
        kind(coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config),
             config=config).start()

    def regrade_requests(self) -> None:
        """The regrade form released (what ``python -m autograder regrade --release`` runs), filled in and submitted
        by the students who ask, and collected (``nbgrader collect regrade --update``)."""
        from autograder.feedback import regrade

        asking = [s for s in self.students if s.id in roster.REGRADE_REQUESTS]
        if not asking:
            return
        regrade.place_form(self.dir)
        self.as_instructor("release_assignment", regrade.NAME)
        for student in asking:
            home = self.dir / "home" / student.id
            if (home / regrade.NAME).exists():
                shutil.rmtree(home / regrade.NAME)
            self.as_student("fetch_assignment", regrade.NAME, student)
            form = home / regrade.NAME / regrade.FORM
            form.write_text(form.read_text(encoding="utf-8") + roster.REGRADE_REQUESTS[student.id], encoding="utf-8")
            self.as_student("submit", regrade.NAME, student)
        self.as_instructor("collect", regrade.NAME)

    def run(self) -> dict:
        start = time.perf_counter()
        with self.timed("setup"):
            self.setup()
        for assignment in self.assignments:
            self.say(f"== {assignment}: release, {len(self.students)} students hand in, collect, autograde, feedback")
            self.run_assignment(assignment)
        with self.timed("regrade requests"):
            self.regrade_requests()
        with self.timed("export"):
            self.nbgrader("export", "--to=grades_nbgrader.csv")
        from autograder.feedback import instructor, regrade, similarity

        data = instructor.collect_grades(self.env["COURSE_DB_URL"], self.assignments, self.dir)
        data["regrades"] = regrade.collect_requests(self.dir)
        with self.timed("similarity"):
            data["similarity"] = similarity.for_course(self.dir, self.assignments)
        outputs = instructor.write_all(data, self.dir)
        self.timings["total"] = time.perf_counter() - start
        print(instructor.table(data))
        for label, path in outputs.items():
            print(f"{label}: {path}")
        for assignment, report in data["similarity"].items():
            print(f"similarity {assignment}: " + similarity.summary(report))
        print("timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.timings.items()))
        return data


def main(course_dir=None, assignments=None) -> int:
    demo = DemoClass(course_dir or course.ROOT / "demo", assignments)
    data = demo.run()
    return 0 if data["students"] else 1
