"""The course in the university's LMS (Canvas, Moodle, ...) through LTI 1.3: the hub's login and grade passback.

The LMS is the *platform*, the course's JupyterHub the *tool* (registered once in the LMS: docs/instructors/lms.md).
Its settings are ``COURSE["lti"]`` of ``course_config.py`` (``settings.Lti``), read once and passed in.

* ``tool``   the tool's own key (its public key set, the client assertion it signs) and the settings checked
* ``login``  the hub's authenticator: a launch from the LMS logs in the roster account of its student number
             (jupyterhub-ltiauthenticator's OIDC login and id_token checks; the roster mapping, refusal and
             instructors here), and the hub config that turns it on
* ``ags``    the LMS's web services as the tool calls them: an OAuth 2 access token (client credentials with a JWT
             assertion), line items and scores (Assignment and Grade Services), the course's members (Names and Role
             Provisioning Services)
* ``push``   ``python -m autograder lti push ASSIGNMENT``: the gradebook's totals (as in the grades CSV) to the LMS
* ``command`` the ``lti`` subcommands (``key``, ``urls``, ``push``)
"""
