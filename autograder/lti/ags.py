"""The LMS's web services as the tool calls them (LTI Advantage): an access token, line items and scores (Assignment
and Grade Services 2.0), the course's members (Names and Role Provisioning Services 2.0).

Every call that fails raises ``ServiceError`` naming the call, the URL, the HTTP status and what the LMS answered:
nothing is retried or passed over here (``push.py`` decides what a failure stops).

Example:
    >>> lms = Platform(settings.load().lti, tool.load_key(settings.load().lti.tool_key))
    >>> lms.authorize([SCORE, LINEITEM])
    >>> item = lms.line_item("attention", label="attention", maximum=23)
    >>> lms.post_score(item["id"], {"userId": "...", "scoreGiven": 19, "scoreMaximum": 23, ...})
"""
from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

import requests

LINEITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
RESULTS = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"
SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
MEMBERS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
MEDIA = {"lineitems": "application/vnd.ims.lis.v2.lineitemcontainer+json",
         "lineitem": "application/vnd.ims.lis.v2.lineitem+json",
         "score": "application/vnd.ims.lis.v1.score+json",
         "results": "application/vnd.ims.lis.v2.resultcontainer+json",
         "members": "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"}
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
MAX_PAGES = 100        # a paged list longer than this is an LMS that loops: an error, not a hang


class ServiceError(RuntimeError):
    """A call to the LMS that failed: the message names the call, the URL and the answer."""


def below(url: str, segment: str) -> str:
    """The URL of a line item's ``scores`` or ``results`` (its path with ``/segment`` appended, its query kept:
    Moodle's line items carry ``?type_id=``)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + segment))


def _answer(response: requests.Response) -> str:
    text = " ".join(response.text.split())
    return f"HTTP {response.status_code}" + (f": {text[:300]}" if text else "")


@dataclass
class Platform:
    """The LMS of ``lti`` (``settings.Lti``), reached as the tool whose key is ``key`` (``tool.ToolKey``)."""

    lti: object
    key: object
    timeout: float = 30.0
    session: requests.Session = field(default_factory=requests.Session)
    token: str = ""
    scopes: tuple = ()

    # ------------------------------------------------------------------------------------------------ the token
    def authorize(self, scopes) -> None:
        """An access token for ``scopes`` (OAuth 2 client credentials, the client assertion signed with the tool's
        key: IMS Security Framework 4.1). Raises ``ServiceError`` where the LMS refuses it or grants fewer scopes."""
        url = self.lti.token_url
        form = {"grant_type": "client_credentials", "client_assertion_type": ASSERTION_TYPE,
                "client_assertion": self.key.assertion(self.lti.client_id, url), "scope": " ".join(scopes)}
        response = self._send("the access token", "POST", url, data=form, authorized=False)
        try:
            answer = response.json()
            self.token = answer["access_token"]
        except (ValueError, KeyError, TypeError):
            raise ServiceError(f"the access token: {url} answered without one ({_answer(response)})") from None
        granted = str(answer.get("scope", " ".join(scopes))).split()
        missing = [s for s in scopes if s not in granted]
        if missing:
            raise ServiceError(f"the access token: {url} did not grant {', '.join(missing)} (granted: "
                               f"{', '.join(granted) or 'nothing'}): enable these services for the tool in the LMS")
        self.scopes = tuple(scopes)

    def _send(self, what: str, method: str, url: str, authorized: bool = True, accept: str = "", **kwargs):
        headers = kwargs.pop("headers", {})
        if authorized:
            headers["Authorization"] = f"Bearer {self.token}"
        if accept:
            headers["Accept"] = accept
        try:
            response = self.session.request(method, url, headers=headers, timeout=self.timeout, **kwargs)
        except requests.RequestException as exc:
            raise ServiceError(f"{what}: {method} {url} failed: {exc}") from exc
        if not 200 <= response.status_code < 300:
            raise ServiceError(f"{what}: {method} {url} answered {_answer(response)}")
        return response

    def _json(self, what: str, response: requests.Response):
        try:
            return response.json()
        except ValueError:
            raise ServiceError(f"{what}: {response.url} answered what is not JSON ({_answer(response)})") from None

    def _pages(self, what: str, url: str, accept: str) -> list:
        """Every item of a paged list (the ``Link: <...>; rel="next"`` header of each page)."""
        items, pages = [], 0
        while url:
            pages += 1
            if pages > MAX_PAGES:
                raise ServiceError(f"{what}: more than {MAX_PAGES} pages at {url}")
            response = self._send(what, "GET", url, accept=accept)
            page = self._json(what, response)
            if isinstance(page, dict):            # NRPS: {"members": [...]}; AGS: a bare list
                page = page.get("members", [])
            if not isinstance(page, list):
                raise ServiceError(f"{what}: {url} answered {type(page).__name__}, not a list")
            items.extend(page)
            url = response.links.get("next", {}).get("url", "")
        return items

    # ------------------------------------------------------------------------------------------------ AGS
    def line_items(self) -> list[dict]:
        return self._pages("the line items", self.lti.lineitems_url, MEDIA["lineitems"])

    def line_item(self, resource_id: str, label: str, maximum: float) -> dict:
        """The course's line item of ``resource_id`` (an assignment's name), made where there is none (a column of
        the LMS's gradebook titled ``label``). Two of them is an error: which one is meant cannot be told."""
        found = [item for item in self.line_items() if item.get("resourceId") == resource_id]
        if len(found) > 1:
            raise ServiceError(f"the line items: {len(found)} in {self.lti.lineitems_url} have resourceId "
                               f"{resource_id!r} ({', '.join(str(i.get('id')) for i in found)}): delete all but one "
                               "in the LMS's gradebook")
        if found:
            return found[0]
        item = {"label": label, "scoreMaximum": maximum, "resourceId": resource_id, "tag": "autograder"}
        response = self._send("a new line item", "POST", self.lti.lineitems_url, accept=MEDIA["lineitem"],
                              json=item, headers={"Content-Type": MEDIA["lineitem"]})
        made = self._json("a new line item", response)
        if not isinstance(made, dict) or not made.get("id"):
            raise ServiceError(f"a new line item: {self.lti.lineitems_url} answered without its id "
                               f"({_answer(response)})")
        return made

    def post_score(self, line_item: str, score: dict) -> None:
        """One student's score for the line item whose id (its URL) is ``line_item``."""
        self._send(f"the score of {score.get('userId')}", "POST", below(line_item, "scores"), json=score,
                   headers={"Content-Type": MEDIA["score"]})

    def results(self, line_item: str) -> list[dict]:
        """The LMS's current results of a line item (what its gradebook holds)."""
        return self._pages("the results", below(line_item, "results"), MEDIA["results"])

    # ------------------------------------------------------------------------------------------------ NRPS
    def members(self) -> list[dict]:
        """The course's members as the LMS lists them (``user_id``, roles, and per the tool's privacy level
        ``lis_person_sourcedid``, ``email``, names)."""
        return self._pages("the course's members", self.lti.memberships_url, MEDIA["members"])
