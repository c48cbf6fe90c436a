"""Regrade requests: a student asks for a second look at a grade through the course's own exchange, and the
instructor reads every request in report.html.

The request is a form, ``release/regrade/regrade_request.md``, released like an assignment (``python -m autograder
regrade --release``: nbgrader's ``release_assignment regrade``) under the name ``regrade``, which is not an
assignment of ``course_config.py``: nothing grades it, and it has no place in the gradebook or the LMS files. A
student fetches it in the Assignment List, writes one block per request (``과제:``, ``연습:``, ``이유:``) and
submits it; submitting again replaces the earlier request (the form says so: write every open request). The
instructor collects it like any assignment (``nbgrader collect regrade --update``); ``python -m autograder report``
then lists every student's latest requests (``collect_requests``) in report.html, next to that exercise's current
score, and ``python -m autograder regrade`` prints them.

A request cannot change a grade: it is data that is only ever shown. The file is read without following links
(``read_submitted``), at most ``MAX_BYTES``, as text (bad bytes replaced), at most ``MAX_REQUESTS`` requests a
student, and every character of it is escaped in the report; the grades come from the gradebook alone. Who filed
it is the student the exchange says submitted it (nbgrader's collect; on the hub, ngshare checks the login).
"""
from __future__ import annotations

import html
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from autograder import settings
from autograder.feedback.tables import STUDENT_HEADS, student_cells, td, thead

NAME = "regrade"                      # the pseudo-assignment of the form (never an assignment of the course)
FORM = "regrade_request.md"
MAX_BYTES = 64 << 10
MAX_REQUESTS = 20
FIELD = re.compile(r"^\s*(과제|연습|이유)\s*[:：]\s?(.*)$")


@dataclass
class Request:
    """One request of a student: the assignment and exercise it names (as written) and the reason."""

    assignment: str = ""
    exercise: str = ""
    reason: str = ""


@dataclass
class Filed:
    """A student's latest regrade form: who, when it was submitted, its requests; ``problem`` where it could not
    be read (a link, too big), ``extra`` where it held more than ``MAX_REQUESTS``."""

    student: str
    timestamp: str
    requests: list = field(default_factory=list)
    problem: str = ""
    extra: int = 0


def form_path(root: Path = settings.ROOT) -> Path:
    """The form as the repository keeps it (what students get): ``release/regrade/regrade_request.md``."""
    return root / "release" / NAME / FORM


def parse(text: str) -> list[Request]:
    """The requests of a form's text: a block starts at each ``과제:`` line, ``연습:`` names the exercise, ``이유:``
    starts the reason, which goes on until the next ``과제:``. Lines starting with ``>`` (the form's instructions) and
    blocks without a reason are left out (an untouched form holds no request)."""
    requests, current, in_reason = [], None, False
    for line in text.splitlines():
        if line.lstrip().startswith(">"):
            continue
        match = FIELD.match(line)
        if match:
            key, value = match.group(1), match.group(2).strip()
            if key == "과제":
                current = Request(assignment=value)
                requests.append(current)
                in_reason = False
            elif current is None:
                continue
            elif key == "연습":
                current.exercise, in_reason = value, False
            else:
                current.reason, in_reason = value, True
        elif current is not None and in_reason:
            current.reason = f"{current.reason}\n{line}" if current.reason else line
    for request in requests:
        request.reason = request.reason.strip()
    return [r for r in requests if r.reason]


def collect_requests(course_dir: Path) -> list[Filed]:
    """Every student's latest collected regrade form (``submitted/<student>/regrade/``), by student."""
    from autograder.submission.files import NotGradable, read_submitted

    filed = []
    for folder in sorted(Path(course_dir, "submitted").glob(f"*/{NAME}")):
        if folder.is_symlink() or not folder.is_dir():
            continue
        stamp = ""
        try:
            stamp = read_submitted(folder / "timestamp.txt", 200).decode("utf-8", "replace").strip()
        except NotGradable:
            pass
        entry = Filed(folder.parent.name, stamp)
        try:
            text = read_submitted(folder / FORM, MAX_BYTES).decode("utf-8", "replace")
        except NotGradable as exc:
            entry.problem = str(exc)
        else:
            requests = parse(text)
            entry.requests, entry.extra = requests[:MAX_REQUESTS], max(0, len(requests) - MAX_REQUESTS)
            if not requests:
                entry.problem = "the form holds no request (no block with 과제: and 이유:)"
        filed.append(entry)
    return filed


def _current(data: dict, student: str, request: Request) -> str:
    """The student's current grade of the exercise a request names (or of the assignment), as the report reads it."""
    row = next((r for r in data.get("students", []) if r["id"] == student), None)
    graded = (row or {}).get("assignments", {}).get(request.assignment)
    if graded is None:
        return ""
    maxima = data["exercise_max"].get(request.assignment, {})
    exercise = request.exercise.strip().strip("`").removeprefix("test_")
    if exercise in maxima:
        if exercise in graded.get("pending", ()):
            return f"대기 / {maxima[exercise]:g}"
        return f"{graded['exercises'].get(exercise, 0):g} / {maxima[exercise]:g}"
    return f"{graded['score']:g} / {sum(maxima.values()):g} (과제 전체)"


def requests_html(filed: list[Filed], data: dict) -> str:
    """report.html's section of the regrade requests: one row per request, with the student, when, what it names,
    the current grade there and the reason; every value escaped."""

    rows_by_id = {r["id"]: r for r in data.get("students", [])}
    count = sum(len(f.requests) for f in filed)
    parts = [f"<h2 id='regrades'>재채점 요청 ({count}건, 학생 {len(filed)}명)</h2>",
             "<p>학생이 <code>regrade</code> 양식으로 제출한 요청입니다(학생마다 가장 최근 제출). 요청은 점수를 바꾸지 "
             "않습니다: 점수를 고치려면 formgrader에서 채점하세요. 현재 점수는 성적부의 점수입니다.</p>"]
    if not filed:
        parts.append("<p>없음.</p>")
        return "\n".join(parts)
    body = []
    for entry in filed:
        row = rows_by_id.get(entry.student, {"id": entry.student, "name": "", "number": "", "section": ""})
        for request in entry.requests:
            body.append("<tr>" + student_cells(row) + td(entry.timestamp, cls="l")
                        + td(request.assignment, cls="l") + td(request.exercise, cls="l")
                        + td(_current(data, entry.student, request), cls="l")
                        + f"<td class='l reason'>{html.escape(request.reason)}</td></tr>")
        if entry.problem or entry.extra:
            note = entry.problem or f"요청 {entry.extra}건 더 (앞의 {MAX_REQUESTS}건만 표시)"
            body.append("<tr>" + student_cells(row) + td(entry.timestamp, cls="l")
                        + f"<td class='l' colspan='4'>{html.escape(note)}</td></tr>")
    parts.append("<div class='wide'><table class='sortable' id='regrade-requests'>"
                 + thead(STUDENT_HEADS, "<th class='l'>제출 시각</th>", "<th class='l'>과제</th>",
                          "<th class='l'>연습</th>", "<th class='l'>현재 점수</th>", "<th class='l'>이유</th>")
                 + "<tbody>" + "".join(body) + "</tbody></table></div>")
    return "\n".join(parts)


def place_form(course_dir: Path) -> Path:
    """The form in the course folder's ``release/regrade/`` (copied there from the repository where it has none)."""
    import shutil

    target = form_path(Path(course_dir))
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(form_path(), target)
    return target


def release(course_dir: Path, env: dict | None = None) -> str:
    """Release the form to the students (``nbgrader release_assignment regrade --force`` in ``course_dir``, with the
    course's exchange, the hub's too; the form placed first: ``place_form``); returns nbgrader's output."""
    from autograder import course

    place_form(course_dir)
    proc = course.nbgrader("release_assignment", NAME, "--force", cwd=Path(course_dir), env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"nbgrader release_assignment {NAME} failed:\n{proc.stdout}{proc.stderr}".rstrip())
    return (proc.stdout + proc.stderr).strip()


def main(course_dir=".", release_form: bool = False) -> int:
    """``python -m autograder regrade [--release]``: release the form, or print the requests collected so far."""
    course_dir = Path(course_dir).resolve()
    if release_form:
        try:
            release(course_dir)
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"regrade: the form {FORM} is released as `{NAME}`; students fetch it in the Assignment List, fill it "
              f"in and submit it; then: nbgrader collect {NAME} --update && python -m autograder report")
        return 0
    filed = collect_requests(course_dir)
    if not filed:
        print(f"regrade: no request collected in {course_dir / 'submitted'} (nbgrader collect {NAME} --update "
              "first)")
        return 0
    from autograder.inert import console, one_line

    for entry in filed:   # the student's text on one line each, its control characters escaped
        head = f"{entry.student} ({one_line(entry.timestamp) or 'no timestamp'})"
        if entry.problem:
            print(console(f"{head}: {one_line(entry.problem)}"))
        for request in entry.requests:
            reason = " ".join(request.reason.split())[:200]
            print(console(f"{head}: {one_line(request.assignment)} {one_line(request.exercise)}: {one_line(reason)}"))
    return 0
