"""The hub's config for its login through the LMS (``login.RosterLTIAuthenticator``), from ``COURSE["lti"]`` and the
roster: what the hub's config (``autograder/hub/jupyterhub_config.py``) ends with, and why a hub cannot start with
it."""
from __future__ import annotations

from autograder.lti import tool


def roster_ids(people) -> dict[str, dict]:
    """The roster's LMS ids: ``student_id`` -> the person's account and role (people without one are left out)."""
    found: dict[str, dict] = {}
    for person in people:
        if person.student_id:
            if person.student_id in found:
                raise ValueError(f"the roster gives student_id {person.student_id} to both "
                                 f"{found[person.student_id]['username']} and {person.username}: one LMS user can "
                                 "log in as one account only")
            found[person.student_id] = {"username": person.username, "role": person.role}
    return found


def refusal(lti, people) -> str | None:
    """Why the hub cannot start with LTI login (``lti``: ``settings.Lti``; ``people``: the roster), or None (also
    when LTI is off)."""
    if not lti.enabled:
        return None
    found = tool.problems(lti, "login")
    try:
        if not roster_ids(people or []):
            found.append("no one on the roster has a student_id, the id an LMS launch is matched with: give the "
                         "hub a roster (--roster) with each person's LMS id (COURSE['lti']['user_claim'])")
    except ValueError as exc:
        found.append(str(exc))
    return "; ".join(found) or None


def configure(c, lti, roster: dict[str, dict], formgrade_group: str, course_id: str) -> None:
    """The end of the hub's config (``autograder/hub/jupyterhub_config.py``, its traitlets config ``c``) where LTI
    login is on (``lti``: ``settings.Lti``): the authenticator with the course's platform and ``roster`` (the roster's
    LMS ids, ``roster_ids``), and groups managed by it; nothing where it is off (the hub logs in with PAM).

    Login through the LMS, LTI 1.3 (``autograder/lti/login.py``), instead of Unix passwords: a launch logs in the
    roster account of its ``user_claim`` (the roster's student_id); anyone else is refused. Instructors: the roster's,
    and those whose launch has a role of ``instructor_roles``; the authenticator sets each person's groups at every
    login (the formgrade group is its, not ``load_groups``')."""
    if not lti.enabled:
        return
    name = "RosterLTIAuthenticator"
    c.JupyterHub.authenticator_class = f"autograder.lti.login.{name}"
    auth = c[name]
    auth.issuer = lti.issuer
    auth.client_id = {lti.client_id}
    auth.deployment_id = lti.deployment_id
    auth.authorize_url = lti.auth_url
    auth.jwks_endpoint = lti.jwks_url
    auth.tool_key = str(lti.tool_key)
    auth.user_claim = lti.user_claim
    auth.instructor_roles = list(lti.instructor_roles)
    auth.formgrade_group = formgrade_group
    auth.tool_name = f"{course_id} JupyterHub"
    auth.tool_description = "어텐션 메커니즘 강의의 JupyterHub (과제, 자동 채점)"
    auth.roster = dict(roster)
    c.Authenticator.allowed_users = sorted({p["username"] for p in roster.values()})
    c.Authenticator.manage_groups = True
    c.JupyterHub.load_groups = {}
    # Students' JupyterLab without Create Assignment: whoever is not in the formgrade group at their server's start.
    by_name = c.Spawner.pre_spawn_hook

    def page_config_by_group(spawner):
        if formgrade_group not in {group.name for group in spawner.user.groups} and callable(by_name):
            by_name(spawner)

    c.Spawner.pre_spawn_hook = page_config_by_group
