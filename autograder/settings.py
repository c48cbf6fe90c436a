"""The course's settings, read from ``course_config.py`` (the one place they are declared) and checked once.

``load()`` is the course as a typed record (``Course``): every section of ``COURSE`` a frozen dataclass whose fields
are exactly its keys, each with its help (``field(metadata={"help": ...})``). A key that nothing reads (a typo, or
a setting that no longer exists) or a missing key, in any section or a section's section, is a ``ConfigError``
naming the key, the section and the file, before anything uses the settings. The rest of the package reads
``load().hub.cpu_weight`` (or the record handed to it), never ``COURSE`` itself: a default written where a setting
is read would hide a mistyped key.
"""
from __future__ import annotations

import dataclasses
import os
import runpy
import typing
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class ConfigError(ValueError):
    """``course_config.py`` sets something the course cannot use; the message (English, for the instructor) says
    what and where."""


def path() -> Path:
    """The course's ``course_config.py`` ($COURSE_CONFIG, else the repository root next to this package)."""
    return Path(os.environ.get("COURSE_CONFIG", ROOT / "course_config.py"))


def _help(text: str):
    """A setting: a field of a section's record, with what it does."""
    return field(metadata={"help": text})


# ----------------------------------------------------------------------------------------------- the sections
@dataclass(frozen=True)
class Door:
    """The exchange service's door (``autograder/hub/exchange_guard.py``): what it lets in before a request's body
    is read, and the bounds of the service's own process."""

    max_requests: int = _help("requests of one user at once")
    max_uploads: int = _help("uploads (request bodies being received) of everyone at once")
    max_refused: int = _help("refused uploads of one user within refused_window_s before their uploads pause")
    refused_window_s: float = _help("the window (seconds) in which refused uploads are counted")
    body_timeout_s: float = _help("seconds a request's body may take to arrive")
    idle_timeout_s: float = _help("seconds an idle connection is kept")
    memory_mb: int = _help("the service's memory (its control group, MiB)")
    cpu_limit: float = _help("the service's CPU (its control group, cores)")


@dataclass(frozen=True)
class Exchange:
    """The hub's exchange (ngshare; ``autograder/hub/exchange_service.py``, ``autograder/hub/exchange.py``)."""

    max_submission_mb: int = _help("the largest submission accepted (MB, its files together)")
    max_files: int = _help("the most files in one submission")
    max_submissions: int = _help("submissions of one assignment kept per student")
    max_stored_mb: int = _help("what the exchange keeps of one student in all (MB; 0: no quota)")
    door: Door = _help("the service's door, before a request's body is read")


@dataclass(frozen=True)
class LatePenalty:
    """Late penalties (nbgrader's ``AssignLatePenalties`` with ``autograder.gradebook.late.PercentPerDay``)."""

    percent_per_day: float = _help("Percent of the score deducted per started day late.")
    grace_minutes: float = _help("Minutes after the due date that still count as on time.")
    max_percent: float = _help("The most that late penalties may take, in percent.")


@dataclass(frozen=True)
class Hub:
    """Each user's server on the hub (``autograder/hub``) and each student's pod on a cluster (``autograder/k8s``)."""

    mem_limit_mb: int = _help("memory of one user's server with all it starts (MiB)")
    cpu_limit: float = _help("cores of one user's server (CFS quota)")
    cpu_weight: int = _help("one user's share under contention, relative to the others (cgroup v2's 1..10000)")
    max_processes: int = _help("tasks (processes and threads) of one user")
    file_size_mb: int = _help("the largest file a user's process may write (MiB; RLIMIT_FSIZE)")
    mem_guarantee_mb: int = _help("memory the cluster's scheduler reserves for a student pod (MiB)")
    cpu_guarantee: float = _help("cores the cluster's scheduler reserves for a student pod")
    storage_gb: float = _help("each student's home volume on a cluster (GiB)")
    home_mb: int = _help("each person's home disk image on the one-machine hub (MiB; 0: unbounded)")
    idle_timeout_s: int = _help("a server idle this long is stopped (seconds; 0: never)")
    cull_every_s: int = _help("how often idle servers are looked for (seconds)")
    open_files: int = _help("files one process of a user may hold open (RLIMIT_NOFILE)")
    connections_per_user: int = _help("TCP connections one user's processes may hold at once (the firewall)")
    connection_idle_s: int = _help("seconds the hub's API, formgrader and users' servers wait for a request on a "
                                   "connection")
    formgrader_mem_limit_mb: int = _help("memory of the formgrader service with the grading it runs (MiB)")
    server_log_kb: int = _help("what each user's server log keeps (KiB, and as much in the previous file)")


@dataclass(frozen=True)
class Limits:
    """Resource limits of the student's process and of what it sends back (``course_config.COURSE["sandbox"]``,
    where each value's reason is written; applied by ``autograder.sandbox``)."""

    allow_unsandboxed: bool = _help("grade without bubblewrap where it cannot run (``bubblewrap.sandboxed``)")
    memory_mb: int = _help("address space (RLIMIT_AS)")
    cpu_seconds: int = _help("CPU time of the process (RLIMIT_CPU)")
    max_processes: int = _help("processes and threads of the lane's uid (RLIMIT_NPROC)")
    file_size_mb: int = _help("the largest file it may write (RLIMIT_FSIZE)")
    output_kb: int = _help("what one cell's stdout, and its stderr, keep of its output (KiB each)")
    notebook_output_kb: int = _help("what all cells' outputs together keep (KiB); later outputs are elided")
    total_restarts: int = _help("fresh processes for one submission in all")
    scratch_mb: int = _help("the scratch folder's tmpfs (MiB)")
    scratch_files: int = _help("files and folders in it (inodes)")
    reply_mb: int = _help("the largest reply accepted (its arrays as float64, MiB)")
    answer_mb: int = _help("the most memory the grader spends on one proxy answer (``graders.isolation``)")

    @classmethod
    def from_course(cls) -> Limits:
        return load().sandbox

    @property
    def reply_bytes(self) -> int:
        """The longest frame accepted from the student's process (its arrays plus 1 MiB of header)."""
        return (self.reply_mb + 1) << 20

    @property
    def reply_elements(self) -> int:
        """Array elements accepted in one reply: ``reply_mb`` MiB once converted to float64."""
        return (self.reply_mb << 20) // 8

    def rlimits(self) -> dict:
        """``setrlimit`` names and (soft, hard) values of the student's process: soft = hard, but for the CPU time,
        whose hard limit is a second later (the kernel sends SIGKILL at the hard limit and checks it first: at an
        equal soft limit the process never saw SIGXCPU, and its end read as an unexplained kill, not as CPU time)."""
        mb = 1 << 20
        return {"RLIMIT_AS": (self.memory_mb * mb,) * 2, "RLIMIT_CPU": (self.cpu_seconds, self.cpu_seconds + 1),
                "RLIMIT_FSIZE": (self.file_size_mb * mb,) * 2, "RLIMIT_NPROC": (self.max_processes,) * 2,
                "RLIMIT_CORE": (0, 0)}


@dataclass(frozen=True)
class Timeouts:
    """Every time limit of grading, in seconds (``course_config.COURSE["timeouts"]``, where each value's reason is
    written). A limit on the student's code ends what ran past it with a Korean message (``Reason.*_TIMEOUT``); the
    others bound how long the grader waits for its own helpers."""

    # the student's code
    cell: float = _help("one code cell of the notebook")
    notebook: float = _help("all the notebook's cells together (and a restarted process's replay of them)")
    call: float = _help("one call of a student's function by a grader (a call with big inputs)")
    call_floor: float = _help("one call whose inputs hold at most ``call_small`` numbers")
    call_small: int = _help("(a count of numbers, not seconds) the inputs of a call that gets ``call_floor``")
    exercise: float = _help("all calls of one function with small inputs together")
    calls: float = _help("all calls of one submission together")
    submission: float = _help("everything of one submission once its notebook ran (``StudentProcess.grade_within``)")
    interrupt_grace: float = _help("a call past its limit that its own alarm did not stop is killed this much later")
    names: float = _help("the student's process answers what names the notebook defined")
    # a class run (``python -m autograder autograde``)
    grace: float = _help("a submission is graded as blank after ``notebook + submission + grace``")
    kill_grace: float = _help("and its worker, still at it this much later, is killed and replaced")
    # the sandbox's warm processes
    imports: float = _help("the nursery (or a lane on its own) imports numpy, torch and keras and says it is ready")
    lane_request: float = _help("a warm process answers one request (make a lane, fork a submission's process)")
    # nbgrader's own execution of notebooks, outside the sandbox (never of a submission being graded)
    validate: float = _help("a cell of Validate in a student's JupyterLab on the hub (``hub/provision.py``)")
    validate_total: float = _help("all of Validate there, every cell together (``hub/lab_validate.py``)")
    execute: float = _help("a cell of ``generate_solution`` and of Validate elsewhere (``c.Execute.timeout``)")

    @classmethod
    def from_course(cls) -> Timeouts:
        return load().timeouts

    @property
    def class_run(self) -> float:
        """Seconds one submission may take in a class run before it is graded as blank instead."""
        return float(self.notebook + self.submission + self.grace)


@dataclass(frozen=True)
class Similarity:
    """The thresholds of the instructor's similarity report (``autograder.feedback.similarity``; where each value's
    measurement is: ``course_config.COURSE["similarity"]``)."""

    pair_threshold: float = _help("share of one student's fingerprinted code found in another's that lists the pair")
    library_threshold: float = _help("share of a student's code found in a forbidden library routine that lists it")
    min_match: int = _help("filtered characters that must match before either is listed")

    @classmethod
    def from_course(cls) -> Similarity:
        return load().similarity


@dataclass(frozen=True)
class Lms:
    """The grades an LMS imports (``autograder/feedback/lms.py``)."""

    canvas_assignment_ids: dict = _help("assignment -> Canvas's assignment id (its column is then 'name (id)')")
    section: str = _help("the Section of a student whose roster line names none")


@dataclass(frozen=True)
class Lti:
    """Login and grade passback through the university's LMS: LTI 1.3 (``autograder/lti``; what each value is in
    the LMS: docs/instructors/lms.md). Off: the hub logs in with Unix passwords (PAM)."""

    enabled: bool = _help("the hub's login through the LMS (LTI 1.3 launches) instead of Unix passwords")
    issuer: str = _help("the platform's issuer (the id_token's iss), e.g. https://canvas.instructure.com")
    client_id: str = _help("the tool's client id, given by the LMS when the tool is registered")
    deployment_id: str = _help("the deployment of the tool in the LMS (launches of another deployment are refused)")
    auth_url: str = _help("the platform's OIDC authorization endpoint (where a launch's login goes)")
    token_url: str = _help("the platform's OAuth 2 token endpoint (grade passback's access token)")
    jwks_url: str = _help("the platform's JSON Web Key Set (the keys its id_tokens are signed with)")
    tool_key: str = _help("the tool's private RSA key, PEM (``python -m autograder lti key`` makes one)")
    user_claim: str = _help("the launch's claim holding the roster's student_id: lis_person_sourcedid, sub, email, "
                            "preferred_username or custom:NAME")
    instructor_roles: list = _help("LTI role URIs that make a roster person an instructor (formgrader)")
    lineitems_url: str = _help("the course's AGS line items endpoint (grade passback)")
    memberships_url: str = _help("the course's NRPS memberships endpoint (who is who, for grade passback)")


@dataclass(frozen=True)
class Course:
    """Every setting of the course (``COURSE`` of ``course_config.py``), checked: ``load()``."""

    course_id: str = _help("nbgrader's course id")
    assignments: list = _help("the assignments in teaching order (each is source/<name>/<name>.ipynb)")
    score_decimals: int = _help("digits after the decimal point of the scores students and instructors read")
    db_url: str = _help("the gradebook's database URL")
    exchange_root: str = _help("nbgrader's exchange directory")
    exchange: Exchange = _help("the hub's exchange")
    due_dates: dict = _help("assignment -> its due date ('2026-12-07 23:59:00 +0900'), one per assignment")
    late_penalty: LatePenalty = _help("late penalties")
    timezone: str = _help("the time zone formgrader shows times in (an IANA name)")
    timeouts: Timeouts = _help("every time limit of grading")
    hub: Hub = _help("the course on JupyterHub")
    sandbox: Limits = _help("limits of the process that runs student code")
    similarity: Similarity = _help("the instructor's similarity report")
    lms: Lms = _help("the grades an LMS imports")
    lti: Lti = _help("login and grade passback through the LMS (LTI 1.3)")

    @classmethod
    def load(cls, config: Path | str) -> Course:
        """The course of the ``course_config.py`` at ``config``, checked (not cached: ``load()`` is)."""
        return _record(cls, runpy.run_path(str(config))["COURSE"], "COURSE", Path(config))


# ----------------------------------------------------------------------------------------------- reading them
def _record(record, values, where: str, config: Path):
    """``record`` built from ``values`` (the dict at ``where`` of ``config``), every section inside it too."""
    if not isinstance(values, dict):
        raise ConfigError(f"{config}: {where} is missing or not a dict")
    names = [f.name for f in dataclasses.fields(record)]
    unknown, missing = sorted(set(values) - set(names)), [n for n in names if n not in values]
    if unknown or missing:
        problems = ([f"sets {', '.join(map(repr, unknown))}, which nothing reads"] if unknown else []) + \
                   ([f"lacks {', '.join(map(repr, missing))}"] if missing else [])
        raise ConfigError(f"{config}: {where} {' and '.join(problems)} (its settings: {', '.join(names)}; "
                          f"read by {record.__module__}.{record.__qualname__})")
    types_ = typing.get_type_hints(record)
    built = {}
    for name in names:
        kind, inner = types_[name], f"{where}[{name!r}]"
        built[name] = _record(kind, values[name], inner, config) if dataclasses.is_dataclass(kind) else values[name]
    course = record(**built)
    if record is Course:
        _check_due_dates(course, config)
        _check_canvas_ids(course, config)
    return course


def _check_due_dates(course: Course, config: Path) -> None:
    """``due_dates`` has one date for each assignment and no other key."""
    where = "COURSE['due_dates']"
    if not isinstance(course.due_dates, dict):
        raise ConfigError(f"{config}: {where} is missing or not a dict")
    unknown = sorted(set(course.due_dates) - set(course.assignments))
    missing = [a for a in course.assignments if a not in course.due_dates]
    if unknown or missing:
        problems = ([f"sets {', '.join(map(repr, unknown))}, which nothing reads"] if unknown else []) + \
                   ([f"lacks {', '.join(map(repr, missing))}"] if missing else [])
        raise ConfigError(f"{config}: {where} {' and '.join(problems)} (its settings: the assignments, "
                          f"{', '.join(course.assignments)}; read by autograder.hub.provision)")


def _check_canvas_ids(course: Course, config: Path) -> None:
    """``lms.canvas_assignment_ids`` names only the course's assignments, each with a positive whole number."""
    where = "COURSE['lms']['canvas_assignment_ids']"
    ids = course.lms.canvas_assignment_ids
    if not isinstance(ids, dict):
        raise ConfigError(f"{config}: {where} is not a dict (assignment -> Canvas's assignment id)")
    unknown = sorted(set(ids) - set(course.assignments))
    bad = [a for a, i in ids.items() if a not in unknown and not (isinstance(i, int) and not isinstance(i, bool)
                                                                  and i > 0)]
    if unknown or bad:
        problems = ([f"names {', '.join(map(repr, unknown))}, not an assignment of the course"] if unknown else []) \
            + ([f"gives {', '.join(f'{a}: {ids[a]!r}' for a in bad)}, not a positive whole number"] if bad else [])
        raise ConfigError(f"{config}: {where} {' and '.join(problems)} (the assignments: "
                          f"{', '.join(course.assignments)}; read by autograder.feedback.lms)")


@cache
def course() -> dict:
    """``COURSE`` of ``course_config.py`` (``path()``) as written, unchecked: the package reads ``load()``."""
    return runpy.run_path(str(path()))["COURSE"]


@cache
def load() -> Course:
    """The course's settings (``course_config.py`` at ``path()``), checked once: every section of ``COURSE`` a
    record of its keys. A key that nothing reads or a missing key, in any section, is a ``ConfigError``.

    Example:
        >>> load().timeouts.cell
        8
    """
    return _record(Course, course(), "COURSE", path())

