"""Patches in the hub's processes (``SERVICE_WAIT``, ``NGSHARE_SESSION``, ``NGSHARE_CHECKS``,
``NGSHARE_OWN_SUBMISSION`` in ``autograder.patches``): JupyterHub's patience with the formgrader service, and
ngshare, the exchange service."""
from __future__ import annotations

from autograder.patches import NGSHARE_CHECKS, NGSHARE_OWN_SUBMISSION, NGSHARE_SESSION, SERVICE_WAIT, install

SERVICE_WAITS: dict[int, float] = {}     # port of a managed service -> seconds each try of wait_up may take


def patient_service_wait_up(port: int, seconds: float) -> None:
    """JupyterHub 5 gives a managed service 10 s to answer (10 tries of 1 s, fixed in app.py) and exits when it does
    not; JupyterLab with nbgrader's extensions takes longer to start on a busy machine. Only for the service's server
    at ``port`` (formgrader's): each try waits up to ``seconds``. Called by the hub's config
    (autograder/hub/jupyterhub_config.py)."""
    from jupyterhub.objects import Server

    SERVICE_WAITS[port] = seconds

    def make(wait_up):
        def patient_wait_up(self, timeout=10, http=False, **kwargs):
            if http and self.port in SERVICE_WAITS:
                timeout = max(timeout, SERVICE_WAITS[self.port])
            return wait_up(self, timeout=timeout, http=http, **kwargs)

        return patient_wait_up

    install(SERVICE_WAIT, Server, "wait_up", make)


def fix_ngshare_sqlalchemy2() -> None:
    """ngshare 0.6.0 was written for SQLAlchemy 1.3: a new ``Assignment(name, course)`` or ``Submission(student,
    assignment)`` joined the session through its back-reference to a persistent object (``cascade_backrefs``),
    which SQLAlchemy 2.0 removed; on 2.x (nbgrader 0.9 and JupyterHub 5 bring 2.1) a release or a submission is
    silently not stored ("SAWarning: Object of type <Assignment> not in session"). Each joins its anchor's session
    here, as it did."""
    from ngshare.database import Assignment, Submission
    from sqlalchemy.orm import object_session

    def joins(anchor):
        def make(original):
            def __init__(self, *args, **kwargs):
                original(self, *args, **kwargs)
                session = object_session(getattr(self, anchor))
                if session is not None:
                    session.add(self)

            return __init__

        return make

    install(NGSHARE_SESSION, Assignment, "__init__", joins("course"))
    install(NGSHARE_SESSION, Submission, "__init__", joins("assignment"))


def check_ngshare_submissions(check) -> None:
    """ngshare's submit handler calls ``check(handler, course_id, assignment_id)`` first (its checks on arrival:
    ``autograder.hub.exchange_service``), which ends the request with an error where it refuses."""
    from ngshare import ngshare

    def make(post):
        def checked_post(self, course_id, assignment_id):
            check(self, course_id, assignment_id)
            return post(self, course_id, assignment_id)

        return checked_post

    install(NGSHARE_CHECKS, ngshare.SubmitAssignment, "post", make)


def own_ngshare_submissions() -> None:
    """ngshare's download of a submission answers a user of the course who asks for their own (the check that the
    user is the course's instructor is passed over for that request only); anyone else's is checked as before."""
    from ngshare import ngshare

    def make(get):
        def own_or_instructors(self, course_id, assignment_id, student_id):
            if self.user is not None and self.user.id == student_id:
                self.check_course_user(self.find_course(course_id))       # ends the request where it is not
                self.check_course_instructor = lambda course: None        # this request, this handler only
            return get(self, course_id, assignment_id, student_id)

        return own_or_instructors

    install(NGSHARE_OWN_SUBMISSION, ngshare.DownloadAssignment, "get", make)
