"""The exchange service's door: what a request may cost the service is decided from its headers, before its body is
read.

tornado reads (and keeps in memory) a request's whole body before ngshare's handler runs, and ngshare's handlers
run one at a time in the service's one thread. Without a door, a student who opens many connections, each
announcing a large body and sending it slowly (or never finishing it), makes the service hold all of them; one who
sends large bodies that are refused after they arrive makes it spend its CPU on them while everyone else waits.
Here every request passes ``Guard`` first (tornado's ``HTTPServerConnectionDelegate``, around ngshare's
application), which learns who sends it from the request's token (the hub's ``/hub/api/user``, asked without
blocking and remembered for a minute) and, per user:

* at most ``max_requests`` requests at once, and one upload (a request with a body);
* a body larger than ``max_body`` (``body_limit``: twice the largest allowed submission) is refused
  from its ``Content-Length`` and never read; a body without one (chunked) is refused too;
* every refused upload (at the door, or by ``exchange_service.check_submission`` after it arrived) counts against
  the student: after ``max_refused`` within ``refused_window_s`` their uploads are refused at the door until the
  window has passed, and each such refusal says why and until when, in Korean (``Reason.UPLOADS_PAUSED``: the
  time in the course's time zone);
* on the whole service, at most ``max_uploads`` bodies at once (503: busy, try again).

A refusal at the door is answered at once (the status and a JSON reason, as ngshare answers) and the connection
closed, so nothing of the body is kept. What the door lets through still has ``HTTPServer``'s body timeout and
idle timeout (``exchange_service.main``), and the service's memory and CPU are bounded by a control group of its
own.
"""
from __future__ import annotations

import json
import os
import time
from collections import Counter, defaultdict, deque

import datetime as dt
import math

from tornado import httputil
from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.log import app_log

from autograder.messages import Message, Reason

USER_CACHE_S = 60


class Guard(httputil.HTTPServerConnectionDelegate):
    def __init__(self, app, limits: dict, admins=(), user_url: str | None = None, clock=time.monotonic,
                 zone: str = "UTC"):
        self.app, self.limits, self.admins, self.clock = app, limits, set(admins), clock
        self.zone = zone                          # the course's time zone: when a paused student may upload again
        self.user_url = user_url or os.environ.get("JUPYTERHUB_API_URL", "").rstrip("/") + "/user"
        self.active: Counter = Counter()          # user -> requests in progress
        self.uploads: Counter = Counter()         # user -> uploads in progress
        self.refusals: dict = defaultdict(deque)  # user -> times of refused uploads
        self.users: dict = {}                     # token -> (user or None, until)

    def start_request(self, server_conn, request_conn):
        return Door(self, self.app.start_request(server_conn, request_conn), request_conn)

    def on_close(self, server_conn):
        self.app.on_close(server_conn)

    # ------------------------------------------------------------------ who, and what they may
    async def user(self, token: str | None) -> str | None:
        if not token:
            return None
        now = self.clock()
        cached = self.users.get(token)
        if cached and cached[1] > now:
            return cached[0]
        name = None
        try:
            request = HTTPRequest(self.user_url, headers={"Authorization": f"token {token}"}, request_timeout=10)
            reply = await AsyncHTTPClient().fetch(request, raise_error=False)
            if reply.code == 200:
                name = json.loads(reply.body).get("name")
        except Exception:  # noqa: BLE001 - the hub did not answer: the request is refused, not the service
            name = None
        if len(self.users) > 10_000:
            self.users.clear()
        self.users[token] = (name, now + USER_CACHE_S)
        return name

    def refused(self, user: str | None) -> None:
        """One refused upload of ``user`` (at the door, or a submission refused after it arrived)."""
        if user and user not in self.admins:
            self.refusals[user].append(self.clock())

    def paused_for(self, user: str) -> float:
        """Seconds until ``user``'s uploads are let in again (0: they are not paused): until enough of their refusals
        have left the window that fewer than ``max_refused`` remain."""
        times, window, most = self.refusals[user], self.limits["refused_window_s"], self.limits["max_refused"]
        now = self.clock()
        while times and times[0] < now - window:
            times.popleft()
        if len(times) < most:
            return 0.0
        return max(times[len(times) - most] + window - now, 0.0) or 1e-3

    def cooling(self, user: str) -> bool:
        return self.paused_for(user) > 0

    def paused(self, user: str) -> Message:
        """Why ``user``'s upload is refused while paused, and until when (the course's time zone)."""
        from zoneinfo import ZoneInfo

        wait = self.paused_for(user)
        until = dt.datetime.now(ZoneInfo(self.zone)) + dt.timedelta(seconds=wait)
        return Reason.UPLOADS_PAUSED(count=len(self.refusals[user]), window_min=self.limits["refused_window_s"] / 60,
                                     window_s=self.limits["refused_window_s"], wait_s=wait,
                                     until=f"{until:%H:%M} ({until:%Z})", minutes=max(math.ceil(wait / 60), 1))

    def decide(self, user: str | None, method: str, headers: httputil.HTTPHeaders) -> tuple[int, Message] | None:
        """None (let the request in) or the refusal's status and reason."""
        chunked = "chunked" in headers.get("Transfer-Encoding", "").lower()

        def door(why: str) -> Message:
            return Reason.EXCHANGE_DOOR(why=why)

        try:
            length = int(headers.get("Content-Length", "0") or 0)
        except ValueError:
            return 400, door("bad Content-Length")
        upload = chunked or length > 0
        who = user or "-"
        if self.active[who] >= self.limits["max_requests"]:
            return 429, door(f"more than {self.limits['max_requests']} requests at once")
        if not upload:
            return None
        if user is None:
            return 403, door("an upload needs a hub token")
        if chunked:
            return 411, door("an upload must say its length")
        if self.cooling(user):
            return 429, self.paused(user)
        if length > self.limits["max_body"]:
            return 413, door(f"a body of {length / 1e6:.1f} MB (the limit: {self.limits['max_body'] / 1e6:.1f} MB)")
        if self.uploads[user] >= 1:
            return 429, door("one upload at a time")
        if sum(self.uploads.values()) >= self.limits["max_uploads"]:
            return 503, door("the exchange is busy: try again in a minute")
        return None


class Door(httputil.HTTPMessageDelegate):
    """One request through the guard: refused from its headers, or passed on to ngshare's application."""

    def __init__(self, guard: Guard, inner, request_conn):
        self.guard, self.inner, self.conn = guard, inner, request_conn
        self.user = self.who = None
        self.upload = self.closed = self.refusing = False

    async def headers_received(self, start_line, headers):
        guard = self.guard
        auth = headers.get("Authorization", "")
        self.user = await guard.user(auth.split(" ", 1)[1].strip() if " " in auth else None)
        self.who = self.user or "-"
        refusal = guard.decide(self.user, start_line.method, headers)
        if refusal is not None:
            status, reason = refusal
            if status in (413, 429, 411) and self.user:
                guard.refused(self.user)
            app_log.warning("exchange: refused %s %s of %s at the door: %s", start_line.method, start_line.path,
                            self.who, reason.english)
            await self.refuse(status, reason)
            return None
        guard.active[self.who] += 1
        self.upload = int(headers.get("Content-Length", "0") or 0) > 0
        if self.upload:
            guard.uploads[self.user] += 1
        return await _maybe(self.inner.headers_received(start_line, headers))

    async def refuse(self, status: int, message: Message) -> None:
        self.refusing = True
        body = json.dumps({"success": False, "message": message.korean}).encode()
        headers = httputil.HTTPHeaders({"Content-Type": "application/json", "Content-Length": str(len(body)),
                                        "Connection": "close"})
        try:
            await self.conn.write_headers(httputil.ResponseStartLine("HTTP/1.1", status,
                                                                     httputil.responses.get(status, "")),
                                          headers, body)
            self.conn.finish()
        except Exception:  # noqa: BLE001 - the client went away
            pass
        self.conn.close()           # the body is never read

    def data_received(self, chunk):
        if not self.refusing:
            return self.inner.data_received(chunk)
        return None

    def finish(self):
        if not self.refusing:
            try:
                self.inner.finish()
            finally:
                self._release()

    def on_connection_close(self):
        if not self.refusing:
            try:
                self.inner.on_connection_close()
            finally:
                self._release()

    def _release(self):
        if self.closed or self.who is None:
            return
        self.closed = True
        self.guard.active[self.who] -= 1
        if self.upload:
            self.guard.uploads[self.user] -= 1


async def _maybe(value):
    if value is not None and hasattr(value, "__await__"):
        return await value
    return value


def body_limit(max_submission_mb: float) -> int:
    """The largest request body the door lets in: twice the largest allowed submission (base64 is 4/3 of it, form
    encoding adds up to half again for ``+``, ``/`` and ``=``) and a MiB for the form's other fields. A body a little
    over the submission limit still arrives, so that the student reads the exact size and the limit in Korean
    (``check_submission``); such refusals count against them."""
    return int(max_submission_mb * 2e6) + (1 << 20)
