"""The hub's config for its login through the LMS (``login.RosterLTIAuthenticator``), from ``COURSE["lti"]`` and the
roster: what ``autograder/hub/server.py`` ends the hub's config with, and why a hub cannot start with it."""
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


def hub_config(lti, people, formgrade_group: str, course_id: str) -> str:
    """What the hub's config (jupyterhub_config.py) ends with where LTI login is on: the authenticator with the
    course's platform and roster, and groups managed by it; "" where it is off (the hub logs in with PAM)."""
    if not lti.enabled:
        return ""
    ids = roster_ids(people or [])
    name = "RosterLTIAuthenticator"
    return f'''
# Login through the LMS, LTI 1.3 (COURSE['lti'] of course_config.py; autograder/lti/login.py), instead of Unix
# passwords: a launch logs in the roster account of its {lti.user_claim} (the roster's student_id); anyone else is
# refused. Instructors: the roster's, and those whose launch has a role of instructor_roles; the authenticator sets
# each person's groups at every login (the formgrade group above is its, not load_groups').
c.JupyterHub.authenticator_class = "autograder.lti.login.{name}"
c.{name}.issuer = {lti.issuer!r}
c.{name}.client_id = {{{lti.client_id!r}}}
c.{name}.deployment_id = {lti.deployment_id!r}
c.{name}.authorize_url = {lti.auth_url!r}
c.{name}.jwks_endpoint = {lti.jwks_url!r}
c.{name}.tool_key = {str(lti.tool_key)!r}
c.{name}.user_claim = {lti.user_claim!r}
c.{name}.instructor_roles = {list(lti.instructor_roles)!r}
c.{name}.formgrade_group = {formgrade_group!r}
c.{name}.tool_name = {f"{course_id} JupyterHub"!r}
c.{name}.tool_description = "어텐션 메커니즘 강의의 JupyterHub (과제, 자동 채점)"
c.{name}.roster = {ids!r}
c.Authenticator.allowed_users = {sorted({p["username"] for p in ids.values()})!r}
c.Authenticator.manage_groups = True
c.JupyterHub.load_groups = {{}}
# Students' JupyterLab without Create Assignment: whoever is not in the formgrade group at their server's start.
_page_config_by_name = c.Spawner.pre_spawn_hook


def _page_config_by_group(spawner):
    if {formgrade_group!r} not in {{group.name for group in spawner.user.groups}} and callable(_page_config_by_name):
        _page_config_by_name(spawner)


c.Spawner.pre_spawn_hook = _page_config_by_group
'''
