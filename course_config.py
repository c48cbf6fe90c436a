"""Every setting of the course, in one place.

nbgrader loads this file through ``nbgrader_config.py`` (``c`` is nbgrader's config object there); the package's
own tools (``python -m autograder``) load it too and read the plain ``COURSE`` dictionary below.
Environment variables override a few values for CI and multi-machine grading (see README).
"""
import os

COURSE = {
    # nbgrader course id and the assignments, in teaching order (each is source/<name>/<name>.ipynb).
    # COURSE_ID: a separate hub's course (`python -m autograder hub --namespace`, the hub tests) in its own copy.
    "course_id": os.environ.get("COURSE_ID", "attention-ko"),
    "assignments": ["attention", "kv_cache", "decoder", "modern", "quiz"],
    # Digits after the decimal point of the scores students and instructors read (feedback, formgrader): a test
    # can be worth 0.125 points, so 3 (2.625 stays 2.625).
    "score_decimals": 3,
    # The gradebook (SQLite file by default; a PostgreSQL URL for several graders at once).
    "db_url": os.environ.get("COURSE_DB_URL", "sqlite:///gradebook.db"),
    # nbgrader's exchange directory (a shared folder on JupyterHub).
    "exchange_root": os.environ.get("COURSE_EXCHANGE", "/srv/nbgrader/exchange"),
    # The hub's exchange (`python -m autograder hub`: ngshare, a hub service; autograder/hub/exchange_service.py):
    # what it accepts of one submission when it arrives, how many submissions of one assignment it keeps per student
    # and how much of one student in all (every assignment). A release notebook is about 0.1 MB; a refused
    # submission gets the reason in Korean at once. Its door (autograder/hub/exchange_guard.py), before a request's
    # body is read: requests of one user at once, uploads of everyone at once, refused uploads of one user within
    # refused_window_s before their uploads pause, the seconds a body may take and an idle connection is kept; and
    # the service's own memory (MiB) and CPU (cores), bounded by its control group.
    "exchange": {"max_submission_mb": 20, "max_files": 100, "max_submissions": 100, "max_stored_mb": 500,
                 "door": {"max_requests": 4, "max_uploads": 8, "max_refused": 3, "refused_window_s": 600.0,
                          "body_timeout_s": 30.0, "idle_timeout_s": 60.0, "memory_mb": 1024, "cpu_limit": 1.0}},
    # Due dates (nbgrader applies them; a submission's time is the exchange's timestamp) and late penalties.
    "due_dates": {
        "attention": "2026-12-07 23:59:00 +0900",
        "kv_cache": "2026-12-14 23:59:00 +0900",
        "decoder": "2026-12-16 23:59:00 +0900",
        "modern": "2026-12-17 23:59:00 +0900",
        "quiz": "2026-12-18 23:59:00 +0900",
    },
    "late_penalty": {"percent_per_day": 10.0, "grace_minutes": 0.0, "max_percent": 100.0},
    # The time zone in which formgrader shows due dates and submission times (an IANA name).
    "timezone": "Asia/Seoul",
    # Every time limit of grading, in seconds (autograder/sandbox/policy.py: Timeouts, which says what each limits).
    "timeouts": {
        # One code cell of a submission (a cell past it is stopped; the next cells run) and all of them together.
        # The course's notebooks run in 1-3 s on a loaded 2-core machine (the slowest correct implementation
        # included; no cell takes more than 1 s), so these leave a wide margin; a notebook whose cells call a hanging
        # function costs at most "notebook" before the graders start (a cell past its limit costs that cell only).
        "cell": 8,
        "notebook": 20,
        # Validate in a student's JupyterLab on the hub (`python -m autograder hub`): a cold kernel imports torch and
        # keras itself there (no warm sandbox), so its first cell and that cell's output may take this long on a
        # busy hub (nbgrader's 30 s and nbclient's 4 s failed there); it judges nothing.
        "validate": 120,
        # All of Validate there, every cell together (autograder/hub/lab_validate.py): past it Validate stops, with
        # its kernel, and says so in Korean (the attention notebook validates in 30-40 s on a busy hub).
        "validate_total": 180,
        # nbgrader's own execution of a whole notebook outside the sandbox, one cell at a time (its Execute
        # preprocessor: c.Execute.timeout below): generate_solution (the answer key with its outputs, `python -m
        # autograder build`) and Validate in a JupyterLab without the hub's setting. Grading never uses it
        # (autograde's Execute is replaced by SandboxedExecute: submissions run in the sandbox with "cell" above,
        # demo-only cells skipped), but the decoder notebook's demo cells train a small model and time generate
        # (15-30 s on a loaded 2-core machine), which the answer key shows.
        "execute": 120,
        "call": 20,           # one call of a student's function by a hidden grader (a call with big inputs)
        # A call past its limit is stopped by its process's own alarm (the process lives on, nothing is replayed);
        # one whose code stops the alarm is killed this much later (and its process started again).
        "interrupt_grace": 1.0,
        # A call whose inputs are small (at most call_small numbers: every grader input but flash_attention's
        # long memory tests; the float64 reference needs milliseconds there) gets call_floor seconds. The
        # slowest correct implementation (tests/implementations/*_loops.py) needs at most 0.4 s for such a call
        # (benchmarks/results/worst_case.txt). A call past its limit is stopped and recognised once: that
        # function is not called again (its later checks fail at once with the same message).
        "call_floor": 2.0,
        "call_small": 100_000,
        "exercise": 10.0,     # all calls of one function together (a slow function cannot use up the others' time)
        "calls": 30.0,        # all calls of one submission together (the worst submission stays under a minute)
        "submission": 600,    # everything for one submission
        # The student's process lists the names its notebook defined, after its last cell, within what is left of
        # "notebook" (at least a second) and at most this long: none of the student's code runs there (milliseconds).
        "names": 5,
        # A class run (`python -m autograder autograde`) stops grading a submission that is still running after
        # notebook + submission + this many seconds (nbgrader's own work included), grades it as blank with a
        # note, and goes on with the class; a worker that does not stop kill_grace seconds later is killed and
        # replaced (its alarm was blocked).
        "grace": 60,
        "kill_grace": 30,
        # The sandbox's warm processes (autograder/sandbox/nursery.py, lanes.py): the nursery, or a lane on its own,
        # imports numpy, torch and keras (3.5-6 s on a loaded 2-core machine, more when many start at once); each
        # request to one (make a lane, fork a submission's process) is answered in milliseconds.
        "imports": 180,
        "lane_request": 30,
    },
    # The course on JupyterHub (`python -m autograder hub`, autograder/hub).
    "hub": {
        # Limits of each user's server: their JupyterLab with every kernel, terminal and process it starts, together
        # (like The Littlest JupyterHub's mem_limit and cpu_limit), enforced by the kernel's control groups
        # (autograder/hub/limits.py). A student past the memory limit loses their own largest process (the kernel
        # that allocates), never another user's. A kernel with torch and keras loaded holds 0.5-0.7 GiB: 2 GiB is two
        # open notebooks and the server.
        "mem_limit_mb": 2048,
        "cpu_limit": 1.0,         # cores (CFS quota); under contention each user gets an equal share:
        "cpu_weight": 100,        # relative to the other users (cgroup v2's scale, 1..10000)
        "max_processes": 512,     # tasks (processes and threads: torch starts a thread per core) of one user
        "file_size_mb": 1024,     # the largest file a user's process may write (RLIMIT_FSIZE; not a disk quota)
        # On a Kubernetes cluster (`python -m autograder k8s`: the same mem_limit_mb and cpu_limit above become each
        # student pod's limits): what the scheduler reserves for a student pod (a kernel with torch and keras holds
        # 0.5-0.7 GiB; most students are idle most of the time), and the size of each student's home volume (a
        # PersistentVolumeClaim of its own). The one-machine hub reserves nothing and gives no volume of its own.
        "mem_guarantee_mb": 1024,
        "cpu_guarantee": 0.1,
        "storage_gb": 2,
        # Each person's home: a disk image of this size of their own, loop-mounted on /home/<user> (what one student
        # can write to the disk; autograder/hub/homes.py). 0: homes on the machine's file system, unbounded.
        "home_mb": 2048,
        # jupyterhub-idle-culler (a hub service): a server with no activity (no open tab, no running kernel's output)
        # for this long is stopped, with everything it started; checked every cull_every_s. 0: never.
        "idle_timeout_s": 3600,
        "cull_every_s": 300,
        # Each user's processes: at most this many open files each (a JupyterLab with kernels holds a few hundred), and
        # this many TCP connections at once; on this machine they reach the hub's port, its API and the exchange only
        # (autograder/hub/firewall.py). The hub's API, formgrader and every user's server close a connection that
        # brings no complete request within connection_idle_s.
        "open_files": 4096,
        "connections_per_user": 128,
        "connection_idle_s": 60,
        # The formgrader service (JupyterLab of the grading account and the grading it runs: a lane of the sandbox with
        # its graders and one submission's process, sandbox memory_mb) in a control group of its own.
        "formgrader_mem_limit_mb": 8192,
        # What a user's server prints (JupyterLab's log, its kernels' stray output) goes to a log of that user's own in
        # the hub's state folder, at most this many KiB (and the previous file), repeated and rapid lines dropped.
        "server_log_kb": 1024,
    },
    # Limits of the process that runs student code (applied by autograder/sandbox).
    "sandbox": {
        # bubblewrap around every process that runs student code. Grading refuses to start where it cannot
        # run, unless unsandboxed grading is allowed explicitly (then every result says so).
        "allow_unsandboxed": os.environ.get("AUTOGRADER_ALLOW_UNSANDBOXED") == "1",
        "memory_mb": 4096,
        "cpu_seconds": 300,
        "max_processes": 64,
        "file_size_mb": 64,
        "output_kb": 256,         # kept of each cell's stdout, and of its stderr, in the autograded notebook
        "notebook_output_kb": 4096,   # kept of all cells' outputs together; later cells' outputs are elided
        "total_restarts": 20, # fresh processes for one submission in all (each replays the cells that ran well)
        # The scratch folder (home, TMPDIR, working directory) of each student process is a tmpfs of its own: at
        # most this many MiB in all (memory of the grading machine) and this many files and folders (inodes).
        "scratch_mb": 256,
        "scratch_files": 4096,
        # The largest reply accepted from a student's process: its arrays at most this many MiB once converted to
        # float64 (the largest reply of the graders' own calls is under 4 MiB). Checked before anything is read.
        "reply_mb": 64,
        # While an exercise is graded, the other contract functions it calls are answered by the graders' float64
        # references (autograder/graders/isolation.py). One answer may take at most this many MiB of the grading
        # machine's memory: its size is known from the arguments' shapes before it is computed; a small one is
        # computed in the grader, a bigger one in a forked child under this limit and the call's time limit, and
        # a question over it is refused with a Korean reason (that call fails). An honest submission's largest
        # question needs 0.8 MiB.
        "answer_mb": 256,
    },
    # The instructor's similarity report (autograder/feedback/similarity/: copydetect's winnowing, names and
    # strings filtered out, the release's code ignored). A student's exercise is listed with another student's when
    # at least pair_threshold of one's fingerprinted code is found in the other, and with a library routine of the
    # forbidden rules when at least library_threshold of the student's code is found there; either way only when
    # at least min_match filtered characters (about four lines) match: shorter runs are written alike by everyone
    # (the torch and keras.ops students' multi_head_attention, one line of 64 characters, match at 1.00).
    # Measured on the demo class (tests/feedback/test_similarity.py prints it): the renamed copy matches its original at
    # 1.00 on each of its exercises longer than min_match; of the independent implementations (the solution, torch,
    # loops, keras.ops, numpy), no two share more than 0.55 of an exercise with min_match matched, and none shares
    # min_match characters with any library routine; the student who pasted Keras's Attention._calculate_scores and
    # _apply_scores (made functions: self. and two branches removed) matches at 0.69 (every edit breaks the k-grams
    # around it, hence the lower library threshold).
    "similarity": {"pair_threshold": 0.8, "library_threshold": 0.5, "min_match": 120},
    # The grades an LMS imports (`python -m autograder report`: reports/grades.csv, autograder/feedback/lms.py).
    # Canvas's assignment id of each assignment (the number in its URL, .../assignments/1234): its column is then
    # "attention (1234)", which Canvas's importer matches to that assignment whatever its title there; without one
    # the column is the name, and Canvas creates a new assignment unless one has exactly that title. And the Section
    # written for a student whose roster line names none.
    "lms": {"canvas_assignment_ids": {}, "section": ""},
    # Login and grade passback through the university's LMS, LTI 1.3 (autograder/lti; how to register the tool in
    # Canvas or Moodle and where each value below comes from: docs/instructors/lms.md). Off: the hub logs in with Unix
    # passwords. On: a student opens the hub from the LMS; the launch's user_claim (the SIS id Canvas and Moodle send
    # as lis_person_sourcedid, or sub, email, preferred_username, custom:NAME) is looked up in the roster's
    # student_id column, and the hub logs in that roster account; anyone else is refused. Instructors: the roster's
    # role, or an LTI role of instructor_roles. `python -m autograder lti push ASSIGNMENT` posts the gradebook's
    # scores to the LMS's gradebook (AGS: a line item per assignment in lineitems_url; who is who from
    # memberships_url, NRPS), with an access token signed by tool_key.
    "lti": {
        "enabled": False,
        "issuer": "",
        "client_id": "",
        "deployment_id": "",
        "auth_url": "",
        "token_url": "",
        "jwks_url": "",
        "tool_key": "",
        "user_claim": "lis_person_sourcedid",
        "instructor_roles": ["http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",
                             "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"],
        "lineitems_url": "",
        "memberships_url": "",
    },
}

# nbgrader's own settings; ``c`` exists only when nbgrader loads this file.
try:
    c  # noqa: F821, B018 (provided by traitlets' load_subconfig)
except NameError:
    c = None

if c is not None:
    c.CourseDirectory.course_id = COURSE["course_id"]
    c.CourseDirectory.db_url = COURSE["db_url"]
    c.CourseDirectory.solution_directory = "solutions"
    c.Exchange.root = COURSE["exchange_root"]
    if os.environ.get("COURSE_NGSHARE_URL"):
        # On the hub (`python -m autograder hub` sets it for the grading account): the exchange is the hub's ngshare
        # service; collect and release feedback go on past a submission they cannot take (autograder/hub/exchange.py).
        from ngshare_exchange import configureExchange as _ngshare

        _ngshare(c, os.environ["COURSE_NGSHARE_URL"])
        c.ExchangeFactory.collect = "autograder.hub.exchange.ExchangeCollect"
        c.ExchangeFactory.release_feedback = "autograder.hub.exchange.ExchangeReleaseFeedback"
    # nbgrader's Execute runs a notebook in a Jupyter kernel outside the sandbox: generate_solution (the answer key,
    # `python -m autograder build`) and Validate use it. Autograde does not: its preprocessors below replace it with
    # SandboxedExecute, whose limits are "cell" and "notebook". (Execute is an ExecutePreprocessor; its own setting
    # is the one it reads, so nbconvert's ExecutePreprocessor needs none.)
    c.Execute.timeout = COURSE["timeouts"]["execute"]
    c.NbGraderAPI.timezone = COURSE["timezone"]   # formgrader's due dates and times (nbgrader's default: UTC)
    c.AssignLatePenalties.plugin_class = "autograder.gradebook.late.PercentPerDay"
    for _name, _value in COURSE["late_penalty"].items():
        setattr(c.PercentPerDay, _name, _value)
    c.ClearSolutions.code_stub = {"python": "# 여기에 코드를 작성하세요\nraise NotImplementedError()"}
    c.ClearSolutions.text_stub = "여기에 답을 작성하세요."
    # A student's edits of nbgrader metadata are undone from the gradebook before nbgrader's own checks.
    c.Autograde.sanitize_preprocessors = [
        "autograder.gradebook.preprocessors.RestoreCellMetadata",
        "nbgrader.preprocessors.ClearOutput",
        "nbgrader.preprocessors.DeduplicateIds",
        "nbgrader.preprocessors.OverwriteKernelspec",
        "nbgrader.preprocessors.OverwriteCells",
        "nbgrader.preprocessors.CheckCellMetadata",
    ]
    # The submission's code runs once, in the sandbox (not in a Jupyter kernel), and the hidden graders judge
    # every grade cell from that same process before nbgrader saves the grades (autograder/gradebook/preprocessors:
    # what each hands to the next is checked there).
    c.Autograde.autograde_preprocessors = [
        "autograder.gradebook.preprocessors.SandboxedExecute",
        "nbgrader.preprocessors.IgnorePattern",
        "nbconvert.preprocessors.ClearMetadataPreprocessor",
        "nbgrader.preprocessors.LimitOutput",
        "autograder.gradebook.preprocessors.HiddenGraders",
        "autograder.gradebook.preprocessors.WriteGradeCells",
        "autograder.gradebook.preprocessors.SaveGradeResult",
        "autograder.gradebook.preprocessors.RecordReview",
        "nbgrader.preprocessors.SaveAutoGrades",
        "nbgrader.preprocessors.AssignLatePenalties",
        "nbgrader.preprocessors.CheckCellMetadata",
    ]
    # Submitted files are data: nbgrader reads a submitted notebook without following links (a link, FIFO, device
    # or hard link is graded as the blank release with the reason), copies only plain files of a submission into
    # autograded/, none into feedback/, and the exchange's collect copies links as links
    # (autograder/gradebook/files.py, autograder/patches/files.py).
    from autograder.patches.files import harden_nbgrader as _harden

    _harden()
    # A new gradebook's schema version is read from nbgrader's migration scripts in the process, not by starting
    # `alembic heads` for each one (autograder/patches/gradebook.py).
    from autograder.patches.gradebook import head_in_process as _head_in_process

    _head_in_process()
    c.Autograde.exporter_class = "autograder.gradebook.files.SubmittedNotebookExporter"
    # No student HTML runs anywhere: markdown, raw cells and rich outputs are made inert in the autograded notebook
    # (what formgrader shows and feedback is made from), within bounds and in a bounded child, once: a notebook whose
    # digest is recorded (made inert by autograde) is not rendered again when feedback is generated, one autograded
    # before is (autograder/feedback/sanitize.py); nbconvert's own sanitising of outputs is on as well.
    c.Autograde.autograde_preprocessors = [*c.Autograde.autograde_preprocessors,
                                           "autograder.feedback.sanitize.SanitizeStudentHTML"]
    c.SanitizeStudentHTML.record_dir = ".autograder/inert"
    # The students' feedback page: the course's template (Korean labels, the course's score precision, LaTeX by
    # KaTeX inlined: no CDN needed; autograder/feedback/html.py).
    c.GenerateFeedback.exporter_class = "autograder.feedback.html.FeedbackExporter"
    c.FeedbackExporter.template_name = "autograder-feedback"
    from autograder.feedback.html import template_dirs as _template_dirs

    c.FeedbackExporter.extra_template_basedirs = _template_dirs()   # GenerateFeedback sets HTMLExporter's
    c.GenerateFeedback.preprocessors = ["nbgrader.preprocessors.GetGrades",
                                        "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
                                        "autograder.feedback.sanitize.SanitizeStudentHTML"]
    c.HTMLExporter.sanitize_html = True
    # Formgrader's manual-grading view: nbgrader's formgrade template with the notebook's math rendered by the same
    # inlined KaTeX (offline; nbgrader's loads MathJax from a CDN). Formgrader makes a plain HTMLExporter with this
    # config; GenerateFeedback's exporter has its own template above.
    from autograder.feedback.html import template_paths as _template_paths

    c.HTMLExporter.template_name = "autograder-formgrade"
    c.HTMLExporter.extra_template_basedirs = _template_dirs()
    c.HTMLExporter.extra_template_paths = _template_paths()
    c.HTMLExporter.preprocessors = ["autograder.feedback.html.CourseResources"]
    # Formgrader's totals net of late penalties (nbgrader's own show the raw sum) and the roster's student numbers on
    # submissions (autograder/patches/formgrader.py).
    from autograder.patches.formgrader import student_numbers as _student_numbers
    from autograder.patches.formgrader import totals_with_late_penalties as _net_totals

    _net_totals()
    _student_numbers()
    # `nbgrader export`: the same columns as nbgrader's, written as CSV (quoted where needed), text cells safe from
    # spreadsheet formulas, the file replaced whole (autograder/feedback/lms.py).
    c.ExportApp.plugin_class = "autograder.feedback.lms.CsvExport"
