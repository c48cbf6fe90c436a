"""The Assignment List of the hub's JupyterLab as a student reads it: a Jupyter server extension of the hub's
environment, in place of nbgrader's ``assignment_list`` (the same URLs, nbgrader's handlers, a manager of its own).

What nbgrader's list leaves a student to guess, said here:

* the assignments in the course's teaching order (``course_config.py``'s ``assignments``), not alphabetically
  (attention, decoder, kv_cache, quiz);
* each assignment's due date (``due_dates``) and each submission's time in the course's time zone
  (``timezone``: "2026-12-07 23:59 (KST)"), where nbgrader showed no due date and the exchange's UTC time without a
  zone;
* "view feedback" opens the feedback page itself, rendered (its math too), in a tab of its own (``feedback_url``:
  the page as the server's ``files/`` serves it), where nbgrader opened its folder in the file browser and
  JupyterLab's viewer showed raw ``$T_q$`` until "Trust HTML";
* a student downloads what they submitted (``GET assignments/submission``: a zip of one submission as the
  exchange keeps it, asked with the student's own token; the exchange answers a student's own submissions only);
* a submission the exchange refuses fails with the exchange's Korean reason (``CourseSubmit``), where
  ngshare-exchange logged it and returned as if it had submitted.

The lab extension shows the new fields (patched in the hub's environment: ``autograder/patches``,
``ASSIGNMENT_LIST``). Runs in the hub's environment, which has no ``autograder`` package: ``python -m autograder
hub`` copies this file there as ``attention_course_assignments.py`` with the course's order, due dates, time zone
and words next to it (``attention_course_assignments.json``: ``environment.assignments_data``) and enables it in
place of nbgrader's ``assignment_list`` (``autograder/hub/environment.py``).
"""
from __future__ import annotations

import base64
import datetime as dt
import io
import json
import os
import re
import traceback
import zipfile
from pathlib import Path
from urllib.parse import quote, urlencode
from zoneinfo import ZoneInfo

import pwd

os.environ.setdefault("USER", pwd.getpwuid(os.getuid()).pw_name)   # ngshare-exchange reads it when imported (a
# service's server, the formgrader's, may have neither it nor JUPYTERHUB_USER)

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange import ExchangeError, ExchangeFactory
from nbgrader.server_extensions.assignment_list import handlers as nbgrader_list
from ngshare_exchange import Exchange, ExchangeSubmit
from tornado import web
from tornado.httpclient import AsyncHTTPClient, HTTPRequest

EXCHANGE_TIME = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S.%f %Z", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f")


def course_facts() -> dict:
    """The course's order, due dates, time zone and words: the JSON the hub writes next to this file
    (``environment.assignments_data``), else (the course's own environment, the tests) the same, made here."""
    written = Path(__file__).with_suffix(".json")
    if written.is_file():
        return json.loads(written.read_text(encoding="utf-8"))
    from autograder.hub.environment import assignments_data

    return assignments_data()


def local_time(when: dt.datetime, zone: str) -> str:
    """A time as a student reads it: "2026-12-07 23:59 (KST)" in the course's zone."""
    local = when.astimezone(ZoneInfo(zone))
    return f"{local:%Y-%m-%d %H:%M} ({local:%Z})"


def exchange_time(text: str) -> dt.datetime | None:
    """The exchange's time of a submission (UTC, without a zone: "2026-12-07 05:00:00.123456"), or None."""
    for form in EXCHANGE_TIME:
        try:
            return dt.datetime.strptime(text.strip(), form).replace(tzinfo=dt.timezone.utc)
        except ValueError:
            continue
    return None


def dressed(reply: dict, root: str, data: dict | None = None) -> dict:
    """nbgrader's list (``{"success", "value"}``) with the course's order, due dates, local times, the feedback's
    page and the download of each submission."""
    if not reply.get("success"):
        return reply
    data = data or course_facts()
    order = {name: i for i, name in enumerate(data["assignments"])}
    zone, words = data["timezone"], data["words"]
    for assignment in reply["value"]:
        name = assignment.get("assignment_id", "")
        if name in data["due_dates"]:
            assignment["due_date"] = words["due"].format(
                when=local_time(dt.datetime.fromisoformat(data["due_dates"][name]), zone))
        for submission in assignment.get("submissions", []):
            stamp = submission.get("timestamp", "")
            when = exchange_time(stamp)
            submission["exchange_timestamp"] = stamp
            if when is not None:
                submission["timestamp"] = local_time(when, zone)
            submission["download_url"] = "assignments/submission?" + urlencode(
                {"course_id": submission.get("course_id", ""), "assignment_id": name, "timestamp": stamp})
            submission["download_label"] = words["download"]
            pages = [nb["local_feedback_path"] for nb in submission.get("notebooks", [])
                     if nb.get("has_local_feedback") and nb.get("local_feedback_path")]
            if pages:
                page = os.path.relpath(pages[0], root) if os.path.isabs(pages[0]) else pages[0]
                submission["feedback_url"] = "files/" + quote(page)
    reply["value"] = sorted(reply["value"], key=lambda a: (a.get("course_id", ""),
                                                            order.get(a.get("assignment_id"), len(order)),
                                                            a.get("assignment_id", "")))
    return reply


class CourseSubmit(ExchangeSubmit):
    """ngshare-exchange's submit, failing with the exchange's reason (its Korean ``message``) where the exchange
    refuses, instead of logging it and returning as if it had submitted."""

    refusal = None

    def _ngshare_api_check_error(self, response, url):
        checked = super()._ngshare_api_check_error(response, url)
        if checked is None:
            try:
                self.refusal = response.json().get("message") or None
            except Exception:  # noqa: BLE001  (not JSON: the words below)
                self.refusal = None
        return checked

    def post_submission(self, src_path):
        timestamp = super().post_submission(src_path)
        if timestamp is None:
            raise ExchangeError(self.refusal or course_facts()["words"]["submit_refused"])
        return timestamp


class CourseAssignmentList(nbgrader_list.AssignmentList):
    """nbgrader's manager of the Assignment List, its answers ``dressed``; a refused submission answered with its
    reason alone (nbgrader answers a traceback)."""

    def list_released_assignments(self, course_id=None):
        return dressed(super().list_released_assignments(course_id=course_id), self._root_dir)

    def list_submitted_assignments(self, course_id=None):
        return dressed(super().list_submitted_assignments(course_id=course_id), self._root_dir)

    def submit_assignment(self, course_id, assignment_id):
        with self.get_assignment_dir_config() as config:
            try:
                config = self.load_config()
                config.CourseDirectory.course_id = course_id
                config.CourseDirectory.assignment_id = assignment_id
                coursedir = CourseDirectory(config=config)
                authenticator = Authenticator(config=config)
                submit = ExchangeFactory(config=config).Submit(coursedir=coursedir, authenticator=authenticator,
                                                               config=config)
                submit.start()
            except ExchangeError as error:
                self.log.error(traceback.format_exc())
                return {"success": False, "value": str(error)}
            except Exception:  # noqa: BLE001  (as nbgrader's: the student reads what happened)
                self.log.error(traceback.format_exc())
                return {"success": False, "value": traceback.format_exc()}
        return {"success": True}


class SubmissionDownloadHandler(JupyterHandler):
    """``GET assignments/submission?course_id=&assignment_id=&timestamp=``: one of the student's own submissions
    as the exchange keeps it, as a zip (asked with the student's own token: the exchange refuses anyone else's)."""

    @web.authenticated
    async def get(self):
        course_id, assignment_id = self.get_argument("course_id"), self.get_argument("assignment_id")
        timestamp = self.get_argument("timestamp", "")
        words = course_facts()["words"]
        config = self.settings["assignment_list_manager"].load_config()
        url = url_path_join(Exchange(config=config).ngshare_url, "submission", quote(course_id, safe=""),
                            quote(assignment_id, safe=""), quote(os.environ.get("JUPYTERHUB_USER", ""), safe=""))
        request = HTTPRequest(url + ("?" + urlencode({"timestamp": timestamp}) if timestamp else ""),
                              headers={"Authorization": f"token {os.environ.get('JUPYTERHUB_API_TOKEN', '')}"},
                              request_timeout=60)
        reply = await AsyncHTTPClient().fetch(request, raise_error=False)
        try:
            answer = json.loads(reply.body or b"{}")
        except ValueError:
            answer = {}
        if reply.code != 200 or not answer.get("success"):
            self.log.warning("download of %s/%s %s refused by the exchange: %s %s", course_id, assignment_id,
                             timestamp, reply.code, answer.get("message"))
            self.set_status(reply.code if 400 <= reply.code < 600 else 502)
            self.set_header("Content-Type", "text/plain; charset=utf-8")
            self.finish(words["download_refused"].format(reason=answer.get("message") or reply.code))
            return
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for entry in answer.get("files", []):
                path = entry.get("path", "")
                if path and not path.startswith("/") and ".." not in path.split("/"):
                    archive.writestr(f"{assignment_id}/{path}", base64.b64decode(entry.get("content", "")))
        stamp = re.sub(r"[^0-9]", "", answer.get("timestamp") or timestamp)[:14] or "submission"
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{assignment_id}-{stamp}.zip")
        self.set_header("Content-Type", "application/zip")
        self.set_header("Content-Disposition", f'attachment; filename="{name}"')
        self.finish(buffer.getvalue())


def _jupyter_server_extension_points():
    return [{"module": __name__}]


def _load_jupyter_server_extension(serverapp):
    webapp = serverapp.web_app
    manager = CourseAssignmentList(parent=serverapp)
    manager.root_dir = serverapp.root_dir
    webapp.settings["assignment_list_manager"] = manager
    base_url = webapp.settings["base_url"]
    webapp.add_handlers(".*$", [(url_path_join(base_url, "/assignments/submission"), SubmissionDownloadHandler)]
                        + [(url_path_join(base_url, pattern), handler)
                           for pattern, handler in nbgrader_list.default_handlers])
    serverapp.log.info("The Assignment List in the course's order and time zone (attention course)")
