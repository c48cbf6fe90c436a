"""An LMS for the tests: lti1p3platform (an LTI 1.3 platform from PyPI) served by tornado on 127.0.0.1.

The library does the protocol: the OIDC login initiation it sends the tool, the checks of the tool's answer, the
id_token it signs (with the AGS and NRPS claims), its key set, the access token (the tool's client assertion checked
against the tool's key set, fetched from the hub's URL), and each AGS and NRPS request (the bearer token and its
scopes, the methods, the media types, the status codes). What a platform built on it supplies is here: a tornado
adapter (the library ships Django and FastAPI ones), the course's people and the storage of line items and scores,
the way an LMS keeps them (a score without ``scoreGiven`` is no result; a concluded enrollment takes no score).
"""
from __future__ import annotations

import asyncio
import html
import json
import threading
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from lti1p3platform.exceptions import LineItemNotFoundException, LtiException, MissingRequiredClaim, \
    UnsupportedGrantType
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.membership import Context
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService, NamesRoleProvisioningService
from tornado import web
from tornado.ioloop import IOLoop

LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
TA = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
LIS = "https://purl.imsglobal.org/spec/lti/claim/lis"


def rsa_pem() -> tuple[str, str]:
    """A new RSA key: (private PEM, public PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


@dataclass
class Person:
    sub: str                       # the LMS's user id
    name: str
    sourcedid: str                 # the SIS id (the university's student number)
    roles: list
    concluded: bool = False        # an enrollment that takes no more scores


@dataclass
class Course:
    """What the LMS holds of one course: its people, line items and scores."""

    people: dict
    line_items: dict = field(default_factory=dict)     # number -> line item
    scores: dict = field(default_factory=dict)         # (number, userId) -> the last score posted
    posted: list = field(default_factory=list)         # every score request, in order


class TornadoRequest(Request):
    def build_metadata(self, handler):
        body = handler.request.body
        content_type = handler.request.headers.get("Content-Type", "")
        return {"method": handler.request.method,
                "form_data": {k: v[-1].decode() for k, v in handler.request.body_arguments.items()},
                "get_data": {k: v[-1].decode() for k, v in handler.request.query_arguments.items()},
                "headers": handler.request.headers, "content_type": content_type, "path": handler.request.path,
                "json": json.loads(body) if body and "json" in content_type else None}


class Config(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs):
        self.settings = kwargs

    def get_registration_by_params(self, **kwargs):
        s = self.settings
        return (Registration().set_iss(s["issuer"]).set_client_id(s["client_id"])
                .set_deployment_id(s["deployment_id"]).set_oidc_login_url(s["oidc_login_url"])
                .set_launch_url(s["launch_url"]).set_tool_key_set_url(s["tool_jwks_url"])
                .set_platform_private_key(s["private_pem"]).set_platform_public_key(s["public_pem"]))


class Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs):
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url):
        return url


class Launch(LTIAdvantageMessageLaunchAbstract):
    def render_launch_form(self, launch_data, **kwargs):
        return launch_data


class Grades(AssignmentsGradesService):
    course: Course = None

    def _item(self, number: str) -> dict:
        if number not in self.course.line_items:
            raise LineItemNotFoundException(number)
        return self.course.line_items[number]

    def find_lineitems(self, page=1, limit=None, line_item_id=None, resource_link_id=None, resource_id=None,
                       tag=None):
        items = [i for i in self.course.line_items.values() if resource_id is None or i["resourceId"] == resource_id]
        return {"content": items, "has_next": False, "next": None}

    def find_lineitem(self, line_item_id):
        return self._item(line_item_id)

    def create_lineitem(self, creation_data):
        number = str(len(self.course.line_items) + 1)
        item = {**creation_data, "id": f"{self.ags.lineitems_url}/{number}"}
        self.course.line_items[number] = item
        return item

    def update_lineitem(self, update_data):
        raise NotImplementedError

    def delete_lineitem(self, line_item_id):
        raise NotImplementedError

    def update_score(self, line_item_id, score):
        self._item(line_item_id)
        self.course.posted.append((line_item_id, score))
        person = next((p for p in self.course.people.values() if p.sub == score.get("userId")), None)
        if person is None or person.concluded:
            return UpdateScoreStatus.NOTAPPLIED
        key = (line_item_id, score["userId"])
        if key in self.course.scores and self.course.scores[key]["timestamp"] > score["timestamp"]:
            return UpdateScoreStatus.OLD_TIMESTAMP
        created = key not in self.course.scores
        self.course.scores[key] = score
        return UpdateScoreStatus.CREATED if created else UpdateScoreStatus.SUCCESS

    def get_results(self, line_item_id, page=1, limit=None, user_id=None):
        item = self._item(line_item_id)
        results = []
        for (number, user), score in self.course.scores.items():
            if number == line_item_id and "scoreGiven" in score:
                results.append({"id": f"{item['id']}/results/{user}", "scoreOf": item["id"], "userId": user,
                                "resultScore": score["scoreGiven"], "resultMaximum": score["scoreMaximum"],
                                "comment": score.get("comment", "")})
        return {"content": results, "has_next": False, "next": None}


class Members(NamesRoleProvisioningService):
    course: Course = None

    def get_member_data_page(self, page=1, limit=None, role=None, since=None, **_):
        return {"content": [{"user_id": p.sub, "roles": p.roles, "name": p.name, "lis_person_sourcedid": p.sourcedid,
                             "status": "Active"} for p in self.course.people.values()], "has_next": False}

    def get_context_by_id(self):
        return Context(id="course-1", label="ATT101", title="어텐션")


class Handler(web.RequestHandler):
    def initialize(self, lms):
        self.lms = lms

    def check_xsrf_cookie(self):
        pass

    def reply(self, response):
        """A library ``Response`` as HTTP (as its Django adapter answers)."""
        self.set_status(response.code)
        self.set_header("Content-Type", response.media_type)
        if 200 <= response.code < 300:
            result = response.result
            if isinstance(result, dict) and result.get("next"):
                self.set_header("Link", f'<{result["next"]}>; rel="next"')
            body = result["content"] if isinstance(result, dict) and "content" in result else result
        else:
            body = {"error": response.message}
        if body is not None and response.code != 204:
            self.write(json.dumps(body))


class StartLaunch(Handler):
    """The link a person clicks in the course: the OIDC login initiation, to the tool."""

    def get(self, sub):
        login = Login(TornadoRequest(self), self.lms.config)
        login.set_lti_message_hint(hint="resource-1")
        self.redirect(login.initiate_login(sub))


class Authorize(Handler):
    """The tool's authentication request: the launch (a form that posts the signed id_token to the tool)."""

    def get(self):
        request = TornadoRequest(self)
        person = self.lms.course.people[request.get_data["login_hint"]]
        launch = Launch(request, self.lms.config)
        launch.set_user_data(person.sub, person.roles, full_name=person.name)
        launch.set_resource_link_claim("resource-1", title="JupyterHub")
        launch.set_launch_context_claim("course-1", context_title="어텐션", context_label="ATT101")
        launch.set_extra_claims({LIS: {"person_sourcedid": person.sourcedid}})
        launch.set_ags(f"{self.lms.url}/lineitems")
        launch.set_nrps(f"{self.lms.url}/members")
        data = launch.lti_launch()
        self.write(f'<form method="POST" action="{html.escape(data["launch_url"])}">'
                   f'<input type="hidden" name="id_token" value="{html.escape(data["id_token"])}"/>'
                   f'<input type="hidden" name="state" value="{html.escape(data["state"])}"/></form>')

    post = get


class KeySet(Handler):
    def get(self):
        self.write(self.lms.config.get_jwks())


class Token(Handler):
    def post(self):
        try:
            self.write(self.lms.config.get_access_token(TornadoRequest(self).form_data))
        except (MissingRequiredClaim, UnsupportedGrantType, LtiException, ValueError) as exc:
            self.set_status(400)
            self.write({"error": "invalid_client", "error_description": str(exc) or type(exc).__name__})


class LineItems(Handler):
    def service(self):
        grades = Grades(TornadoRequest(self), self.lms.config, f"{self.lms.url}/lineitems")
        grades.course = self.lms.course
        return grades

    def get(self, number=None, what=None):
        grades = self.service()
        if number is None:
            self.reply(grades.handle_resp(grades.handle_get_lineitems))
        elif what == "results":
            self.reply(grades.handle_resp(grades.handle_get_results, line_item_id=number))
        else:
            self.reply(grades.handle_resp(grades.handle_get_lineitem, line_item_id=number))

    def post(self, number=None, what=None):
        grades = self.service()
        if number is None:
            self.reply(grades.handle_resp(grades.handle_create_lineitem))
        else:
            self.reply(grades.handle_resp(grades.handle_update_score, line_item_id=number))


class MemberList(Handler):
    def get(self):
        members = Members(TornadoRequest(self), self.lms.config, f"{self.lms.url}/members")
        members.course = self.lms.course
        self.reply(members.handle_resp(members.handle_get_members))


class LMS:
    """The platform on ``127.0.0.1:port`` (``start``/``stop``: a thread of its own) for a tool at ``hub_url``."""

    def __init__(self, port: int, hub_url: str, people: list[Person], client_id="tool-1", deployment_id="dep-1"):
        self.url = f"http://127.0.0.1:{port}"
        self.port = port
        self.course = Course({p.sub: p for p in people})
        private, public = rsa_pem()
        self.config = Config(issuer=self.url, client_id=client_id, deployment_id=deployment_id,
                             oidc_login_url=f"{hub_url}/hub/lti13/oauth_login", launch_url=f"{hub_url}/hub/",
                             tool_jwks_url=f"{hub_url}/hub/lti13/jwks", private_pem=private, public_pem=public)
        self.config.get_registration()
        self._loop = self._server = None

    def app(self) -> web.Application:
        lms = {"lms": self}
        return web.Application([
            (r"/launch/([^/]+)", StartLaunch, lms), (r"/authorize", Authorize, lms), (r"/jwks", KeySet, lms),
            (r"/token", Token, lms), (r"/lineitems", LineItems, lms),
            (r"/lineitems/([^/]+)", LineItems, lms), (r"/lineitems/([^/]+)/(scores|results)", LineItems, lms),
            (r"/members", MemberList, lms)])

    def start(self) -> None:
        ready = threading.Event()

        def serve():
            asyncio.set_event_loop(asyncio.new_event_loop())
            self._loop = IOLoop.current()
            self._server = self.app().listen(self.port, "127.0.0.1")
            ready.set()
            self._loop.start()

        threading.Thread(target=serve, daemon=True, name="lms").start()
        assert ready.wait(10), "the test LMS did not start"

    def stop(self) -> None:
        """Its port closed and its thread ended."""
        if self._loop is not None:
            def close():
                self._server.stop()
                self._loop.stop()

            self._loop.add_callback(close)
