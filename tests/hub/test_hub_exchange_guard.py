"""The exchange service's door (``autograder/hub/exchange_guard.py``) in one process, without a hub: a tornado
application behind ``Guard`` with a fake token lookup. What the door refuses it refuses from the headers, at once,
without reading the body; what it lets through reaches the application; refused uploads count against the sender."""
from __future__ import annotations

import asyncio
import socket
import time

import pytest
from tornado.httpserver import HTTPServer
from tornado.web import Application, RequestHandler

from autograder.hub import exchange_guard

LIMITS = {"max_requests": 4, "max_uploads": 8, "max_refused": 3, "refused_window_s": 600.0,
          "max_body": 2_000_000}


class Echo(RequestHandler):
    def get(self):
        self.write({"success": True})

    def post(self):
        self.write({"success": True, "size": len(self.request.body)})


async def serve(guard_limits=LIMITS):
    app = Application([(r"/.*", Echo)])
    guard = exchange_guard.Guard(app, guard_limits, user_url="http://unused")

    async def user(token):
        return {"t1": "student1", "t2": "student2"}.get(token)

    guard.user = user
    sock, port = bind()
    server = HTTPServer(guard, max_body_size=guard_limits["max_body"], body_timeout=5)
    server.add_sockets([sock])
    return guard, server, port


def bind():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.setblocking(False)
    return sock, sock.getsockname()[1]


async def request(port, token, length, send=None):
    """A raw POST announcing ``length`` bytes and sending ``send`` of them (all by default): status, seconds."""
    start = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write((f"POST /x HTTP/1.1\r\nHost: x\r\nAuthorization: token {token}\r\nContent-Length: {length}\r\n\r\n"
                  ).encode())
    body = b"a" * (length if send is None else send)
    try:
        writer.write(body)
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), 10)
    except (ConnectionError, asyncio.TimeoutError):
        line = b""
    writer.close()
    status = int(line.split()[1]) if line.startswith(b"HTTP/") else None
    return status, time.perf_counter() - start


def run(coro):
    return asyncio.new_event_loop().run_until_complete(coro)


def test_an_allowed_upload_reaches_the_service():
    async def go():
        guard, server, port = await serve()
        try:
            return await request(port, "t1", 1000), dict(guard.active), dict(guard.uploads)
        finally:
            server.stop()

    (status, _), active, uploads = run(go())
    assert status == 200
    assert not any(active.values()) and not any(uploads.values())          # released when done


def test_a_too_large_body_is_refused_from_its_headers_at_once_and_counted():
    async def go():
        guard, server, port = await serve()
        try:
            big = await request(port, "t1", 40_000_000, send=0)             # nothing of the body sent
            return big, len(guard.refusals["student1"])
        finally:
            server.stop()

    (status, seconds), refused = run(go())
    assert status == 413 and seconds < 2, (status, seconds)
    assert refused == 1


def test_an_unfinished_upload_holds_the_senders_one_upload_slot_not_anothers():
    """student1 announces a body and sends half of it; their second upload is refused at once, student2's passes."""
    async def go():
        guard, server, port = await serve()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"POST /x HTTP/1.1\r\nHost: x\r\nAuthorization: token t1\r\nContent-Length: 1000000\r\n\r\n"
                         + b"a" * 500_000)
            await writer.drain()
            await asyncio.sleep(0.3)
            second = await request(port, "t1", 1000)
            other = await request(port, "t2", 1000)
            writer.close()
            return second, other
        finally:
            server.stop()

    (second, _), (other, _) = run(go())
    assert second == 429 and other == 200


def test_after_three_refused_uploads_a_student_is_refused_at_the_door():
    async def go():
        guard, server, port = await serve()
        try:
            for _ in range(3):
                guard.refused("student1")                                      # e.g. check_submission's refusals
            return await request(port, "t1", 1000), await request(port, "t2", 1000)
        finally:
            server.stop()

    (mine, _), (other, _) = run(go())
    assert mine == 429 and other == 200


@pytest.mark.parametrize("token, status", [("nobody", 403)])
def test_an_upload_without_a_hub_user_is_refused(token, status):
    async def go():
        _, server, port = await serve()
        try:
            return await request(port, token, 1000)
        finally:
            server.stop()

    assert run(go())[0] == status


def test_a_paused_student_reads_why_and_until_when_in_korean():
    """After three refused uploads in the window, the student's next upload (a valid notebook) is refused with the
    reason and the time their uploads are let in again (in the course's time zone), not a bare 429; once the oldest
    refusal has left the window, their upload is let in."""
    import datetime as dt
    import re
    from zoneinfo import ZoneInfo

    from tornado.httputil import HTTPHeaders

    from autograder.messages import Reason

    now = [700.0]
    guard = exchange_guard.Guard(None, LIMITS, user_url="http://unused", clock=lambda: now[0], zone="Asia/Seoul")
    for t in (700.0, 800.0, 900.0):
        now[0] = t
        guard.refused("student1")
    now[0] = 1000.0
    upload = HTTPHeaders({"Content-Length": "100000"})
    status, message = guard.decide("student1", "POST", upload)
    expected_until = dt.datetime.now(ZoneInfo("Asia/Seoul")) + dt.timedelta(seconds=300)   # 700 + 600 - 1000
    assert status == 429 and message.code is Reason.UPLOADS_PAUSED
    assert message.fields["minutes"] == 5 and message.fields["count"] == 3
    assert re.fullmatch(r"\d\d:\d\d \(KST\)", message.fields["until"]), message.fields
    shown = dt.datetime.strptime(message.fields["until"][:5], "%H:%M")
    assert abs((shown.hour * 60 + shown.minute) - (expected_until.hour * 60 + expected_until.minute)) % 1440 <= 1
    assert message.korean.startswith("최근 10분 동안 제출이 3번 거부되어 ") and "약 5분" in message.korean
    assert message.english == "3 refused uploads in the last 600 s: uploads paused for 300 s more"
    assert guard.decide("student2", "POST", upload) is None
    now[0] = 1301.0                                                    # the first refusal has left the window
    assert guard.decide("student1", "POST", upload) is None
