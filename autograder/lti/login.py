"""The hub's login through the LMS (LTI 1.3): a launch logs in the roster account of its student number.

jupyterhub-ltiauthenticator does the protocol: the LMS's login initiation (``/hub/lti13/oauth_login``: the tool's
state and nonce in cookies, then to the platform's authorization endpoint), and the launch itself
(``/hub/lti13/oauth_callback``: the id_token's signature checked against the platform's key set, its issuer,
audience, expiry, nonce and state). This module decides who that is, from the roster
(``autograder/hub/roster.py``), never from what the LMS calls the person:

* the launch's ``user_claim`` (``COURSE["lti"]``: the SIS id, ``lis_person_sourcedid``, by default) is looked up in
  the roster's ``student_id`` column; the roster's ``username`` (the Unix account, nbgrader's student id) is who
  logs in;
* a launch of anyone else (not on the roster, the claim missing, another deployment of the tool) is refused with a
  Korean message that says what to ask for (HTTP 403), and logged in English for the instructor;
* an instructor is a roster person of role ``instructor`` or one whose launch carries a role of
  ``instructor_roles`` (a TA in the LMS): they join the formgrade group (formgrader) at this login, and leave it at
  a later login without such a role (the authenticator manages the hub's groups).

It serves two more pages for the LMS: the tool's public key set (``/hub/lti13/jwks``) and Canvas's JSON
configuration of the tool (``/hub/lti13/config``). It runs in the hub's process; ``hub.py`` writes the hub's
config that turns it on.
"""
from __future__ import annotations

import json

from jupyterhub.utils import url_path_join
from ltiauthenticator.lti13.auth import LTI13Authenticator
from ltiauthenticator.lti13.handlers import LTI13ConfigHandler, LTI13LoginInitHandler
from tornado import web
from traitlets import Dict, List, Unicode

from autograder.lti import tool
from autograder.messages import LtiText

ROLES = "https://purl.imsglobal.org/spec/lti/claim/roles"
DEPLOYMENT = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
CONTEXT = "https://purl.imsglobal.org/spec/lti/claim/context"
# What the tool asks of the LMS (Canvas's JSON configuration): launches, line items and scores, the member list.
SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
          "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score",
          "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"]


def refuse(status: int, text: str, log, english: str) -> web.HTTPError:
    """A refused launch: ``text`` (Korean) on the hub's error page, ``english`` in the hub's log."""
    log.warning("LTI launch refused: %s", english)
    return web.HTTPError(status, "%s", text)


class LoginInit(LTI13LoginInitHandler):
    """The LMS's login initiation, whose state and nonce cookies come back with the launch: a form the LMS posts
    from its own site. Browsers send a cookie on such a cross-site POST only when it is ``SameSite=None; Secure``
    (HTTPS): so they are, where the hub is served over HTTPS."""

    def _set_oauth_cookie(self, key: str, value):
        cross_site = {"samesite": "None", "secure": True} \
            if self.authenticator.get_uri_scheme(self.request) == "https" else {}
        self._set_cookie(key, value, expires_days=1, httponly=True, encrypted=True, **cross_site)


class KeySet(web.RequestHandler):
    """``/hub/lti13/jwks``: the tool's public key set, which the LMS checks the tool's signed requests with."""

    def initialize(self, authenticator):
        self.authenticator = authenticator

    def get(self):
        self.set_header("Content-Type", "application/json")
        self.write(json.dumps(tool.load_key(self.authenticator.tool_key).jwks()))


class CanvasConfig(LTI13ConfigHandler):
    """``/hub/lti13/config``: the tool's JSON configuration as Canvas reads it (Developer Keys, LTI key, "Enter URL"):
    where launches start and land, the public key set, the services grade passback uses, public privacy (the SIS id
    and e-mail in each launch), opened in a window of its own (the hub's session cookie is not sent in a frame of
    another site)."""

    async def get(self):
        scheme = self.authenticator.get_uri_scheme(self.request)
        hub = f"{scheme}://{self.request.host}{self.hub.base_url}"
        target = f"{scheme}://{self.request.host}/"
        placement = {"placement": "course_navigation", "message_type": "LtiResourceLinkRequest",
                     "windowTarget": "_blank", "target_link_uri": target, "text": self.authenticator.tool_name}
        self.set_header("Content-Type", "application/json")
        self.write(json.dumps({
            "title": self.authenticator.tool_name, "description": self.authenticator.tool_description,
            "oidc_initiation_url": url_path_join(hub, "lti13/oauth_login"), "target_link_uri": target,
            "public_jwk_url": url_path_join(hub, "lti13/jwks"), "scopes": SCOPES,
            "extensions": [{"platform": "canvas.instructure.com", "privacy_level": "public",
                            "settings": {"platform": "canvas.instructure.com", "placements": [placement]}}],
        }))


class RosterLTIAuthenticator(LTI13Authenticator):
    """LTI 1.3 launches of the roster's people, each as their roster account (see the module's docstring)."""

    login_handler = LoginInit
    config_handler = CanvasConfig

    roster = Dict(config=True, help="the roster's LMS ids (its student_id column) -> {'username': the account, "
                                    "'role': 'student' or 'instructor'}")
    user_claim = Unicode("lis_person_sourcedid", config=True,
                         help="the launch's claim that holds the roster's student_id (autograder.lti.tool.CLAIMS)")
    deployment_id = Unicode(config=True, help="the tool's deployment in the LMS; launches of any other are refused")
    instructor_roles = List(Unicode(), config=True, help="LTI roles that make a roster person an instructor")
    formgrade_group = Unicode(config=True, help="the hub group of the instructors (formgrader)")
    tool_key = Unicode(config=True, help="the tool's private key (PEM), whose public half /hub/lti13/jwks serves")

    def get_handlers(self, app):
        return [*super().get_handlers(app), (r"/lti13/jwks", KeySet, {"authenticator": self})]

    async def authenticate(self, handler, data=None):
        """The roster account of the launch's verified id_token (``data``), with its groups; a launch of anyone
        else is refused (HTTP 403 with the reason in Korean)."""
        token = data or {}
        log = self.log
        deployment = str(token.get(DEPLOYMENT, ""))
        if self.deployment_id and deployment != self.deployment_id:
            raise refuse(403, LtiText.OTHER_DEPLOYMENT.korean(), log,
                         f"deployment {deployment!r}, not this hub's {self.deployment_id!r} (sub {token.get('sub')!r})")
        lms_id = tool.claim_value(token, self.user_claim)
        if not lms_id:
            raise refuse(403, LtiText.NO_ID.korean(claim=self.user_claim), log,
                         f"the launch of sub {token.get('sub')!r} carries no {self.user_claim}: is the tool's privacy "
                         "level in the LMS public (name, e-mail, SIS id)?")
        person = self.roster.get(lms_id)
        if person is None:
            raise refuse(403, LtiText.NOT_ON_ROSTER.korean(lms_id=lms_id), log,
                         f"{self.user_claim} {lms_id!r} (sub {token.get('sub')!r}, {token.get('name', '')!r}) is on "
                         "no roster line: add them to the roster (student_id column) and restart the hub")
        roles = token.get(ROLES) or []
        instructor = person["role"] == "instructor" or any(role in self.instructor_roles for role in roles)
        if instructor:
            self._log_services(token)
        log.info("LTI launch: %s %r -> %s%s", self.user_claim, lms_id, person["username"],
                 " (instructor)" if instructor else "")
        return {"name": person["username"], "groups": [self.formgrade_group] if instructor else []}

    def _log_services(self, token: dict) -> None:
        """Where this course's line items and members are in the LMS (what ``COURSE["lti"]`` needs for grade
        passback), as an instructor's launch says it."""
        ags, nrps = token.get(AGS) or {}, token.get(NRPS) or {}
        context = (token.get(CONTEXT) or {}).get("title", "")
        if ags.get("lineitems") or nrps.get("context_memberships_url"):
            self.log.info("LTI course %r: lineitems_url %s, memberships_url %s", context, ags.get("lineitems", "-"),
                          nrps.get("context_memberships_url", "-"))
