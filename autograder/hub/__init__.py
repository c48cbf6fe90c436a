"""The course on a real multi-user JupyterHub, on one machine (``python -m autograder hub``).

Roles as in nbgrader's ``demo_one_class_multiple_graders``: every person is a Unix user who logs in with their
password (PAM) and gets their own JupyterLab (the local-process spawner); the grading account
``grader-<course_id>`` owns a copy of the course repository (unreadable to anyone else) and runs nbgrader's
formgrader as a hub service named after the course, which only the hub group ``formgrade-<course_id>``
(the instructors) may reach. The exchange is ngshare, a hub service: who submitted is the hub user of the
request's token, when is the server's clock. Students' servers and kernels run in an environment without the
``autograder`` package; the formgrader's does too, and finds ``autograder`` only in the
course copy (``PYTHONPATH``), so grading there runs this package's whole pipeline (sandbox, hidden graders,
Korean reports) as the non-root grading account.

* ``layout``   where everything lives (one ``Layout`` for the setup, the hub's config and the tests)
* ``accounts`` Unix users, hub groups, passwords
* ``environment`` the students' environment (every user's JupyterLab and kernels) and the course's additions to it
* ``provision`` the course copy, the course in the exchange, every user's nbgrader config
* ``teardown`` a namespace's hub removed
* ``server``   jupyterhub's config, start, wait, stop
* ``exchange_service`` ngshare as the hub runs it (checks on arrival)
* ``exchange`` the grading side's collect and release feedback (one bad submission never stops the class)
"""
