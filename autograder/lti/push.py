"""``python -m autograder lti push ASSIGNMENT``: the gradebook's scores of one assignment into the LMS's gradebook
(LTI Advantage, Assignment and Grade Services).

What is sent is what the grades CSV says (``feedback/instructor.collect_grades``: the total less the late penalty),
one score per graded student, to the assignment's line item (its ``resourceId`` is the assignment's name; made
where the LMS has none). A submission whose hand-graded answers are not graded yet is sent without a score, as
``gradingProgress`` "PendingManual" (the LMS shows it as waiting for grading, not as a final grade), with what the
autograder gave in the comment; push again once formgrader's grading is done.

Who each student is in the LMS: the roster's student_id (the gradebook's ``lms_user_id``) is the LMS's own user id
where ``user_claim`` is "sub", otherwise it is found in the LMS's member list (NRPS) under ``user_claim``.

It fails loudly and sends nothing half-way without saying so. Everything that can be checked before a score is sent
is (the settings and the key, the token and its scopes, the line item, every student found in the LMS): a problem
there exits 2 having sent nothing. A score the LMS refuses is named with its answer and the others are still sent
(exit 1); sending again is safe (the LMS keeps a score's latest value).
"""
from __future__ import annotations

import datetime as dt
import sys
from dataclasses import dataclass
from pathlib import Path

from autograder import scores
from autograder.lti import ags, tool


@dataclass(frozen=True)
class Score:
    """One student's score as the LMS gets it."""

    student: str
    user_id: str
    given: float
    maximum: float
    pending: bool         # hand-graded answers still to grade: sent without a score
    late: float

    def payload(self, timestamp: str) -> dict:
        """The AGS score (``application/vnd.ims.lis.v1.score+json``)."""
        body = {"userId": self.user_id, "timestamp": timestamp, "activityProgress": "Completed",
                "gradingProgress": "FullyGraded", "scoreGiven": self.given, "scoreMaximum": self.maximum}
        if self.pending:
            body.update(activityProgress="Submitted", gradingProgress="PendingManual")
            del body["scoreGiven"], body["scoreMaximum"]
            body["comment"] = (f"자동 채점 {scores.text(self.given)}/{scores.text(self.maximum)}점, 수기 채점은 "
                               "아직 끝나지 않았습니다.")
        elif self.late:
            body["comment"] = f"지각 감점 {scores.text(self.late)}점이 반영된 점수입니다."
        return body


class Refused(RuntimeError):
    """Nothing was sent: the message says why (exit 2)."""


def graded(db_url: str, assignment: str, course_dir: Path) -> tuple[dict, dict[str, str]]:
    """The grades CSV's rows of ``assignment`` (``collect_grades``) and each student's LMS id (the roster's
    student_id, kept in the gradebook as ``lms_user_id``)."""
    from nbgrader.api import Gradebook

    from autograder.feedback.instructor import collect_grades

    data = collect_grades(db_url, [assignment], course_dir)
    with Gradebook(db_url) as gb:
        ids = {s.id: (s.lms_user_id or "").strip() for s in gb.students}
    return data, ids


def match(data: dict, assignment: str, ids: dict[str, str], lti, members: list[dict] | None) -> tuple[list[Score],
                                                                                                   list[str]]:
    """The scores to send, and the students who cannot be found in the LMS (each with why)."""
    by_id: dict[str, str] = {}
    for member in members or []:
        status = str(member.get("status", "Active"))
        value = tool.member_value(member, lti.user_claim)
        if value and status == "Active" and member.get("user_id"):
            by_id[value] = str(member["user_id"])
    found, unmatched = [], []
    for row in data["students"]:
        graded_ = row["assignments"].get(assignment)
        if graded_ is None:
            continue
        lms_id = ids.get(row["id"], "")
        if not lms_id:
            unmatched.append(f"{row['id']} (no student_id in the roster)")
            continue
        user_id = lms_id if lti.user_claim == "sub" else by_id.get(lms_id)
        if not user_id:
            unmatched.append(f"{row['id']} ({lti.user_claim} {lms_id} is no active member of the LMS course)")
            continue
        found.append(Score(row["id"], user_id, graded_["score"], scores.rounded(graded_["max"]),
                           bool(graded_["needs_manual"]), graded_["late"]))
    return found, unmatched


def push(assignment: str, course_dir, db_url: str, lti, skip_unmatched: bool = False, dry_run: bool = False,
         out=None) -> int:
    """Send ``assignment``'s scores to the LMS (the summary to ``out``, stdout by default; what failed to stderr);
    returns the exit status (0 all sent, 1 some not, 2 none)."""
    out = out or sys.stdout
    try:
        lms, item, scores_, unmatched = prepare(assignment, Path(course_dir), db_url, lti, skip_unmatched, dry_run)
    except Refused as exc:
        print(f"lti push {assignment}: nothing sent: {exc}", file=sys.stderr)
        return 2
    pending = sum(s.pending for s in scores_)
    if dry_run:
        for score in scores_:
            print(f"{score.student}\t{score.user_id}\t" + ("pending manual grading" if score.pending else
                                                        f"{scores.text(score.given)}/{scores.text(score.maximum)}"),
                  file=out)
        print(f"lti push {assignment}: dry run, nothing sent: {len(scores_)} scores ({pending} pending manual "
              "grading)" + (f"; not found in the LMS: {'; '.join(unmatched)}" if unmatched else ""), file=out)
        return 0
    timestamp = dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")
    failed = []
    for score in scores_:
        try:
            lms.post_score(item["id"], score.payload(timestamp))
        except ags.ServiceError as exc:
            failed.append(f"{score.student}: {exc}")
    print(f"lti push {assignment}: {len(scores_) - len(failed)} of {len(scores_)} scores sent to {item['id']} "
          f"({pending} pending manual grading, sent without a score)", file=out)
    problems = [f"not sent: {f}" for f in failed] + [f"not found in the LMS, not sent: {u}" for u in unmatched]
    for problem in problems:
        print(f"lti push {assignment}: {problem}", file=sys.stderr)
    if problems:
        print(f"lti push {assignment}: {len(problems)} student(s) not sent; sending again is safe", file=sys.stderr)
    return 1 if problems else 0


def prepare(assignment: str, course_dir: Path, db_url: str, lti, skip_unmatched: bool, dry_run: bool):
    """Everything checked before a score is sent: the settings and the key, the gradebook, the LMS's token and
    members, every graded student found there (unless ``skip_unmatched``), and the line item (made where the LMS
    has none, never in a dry run). Returns the LMS, the line item, the scores and the students not found; raises
    ``Refused`` having changed nothing in the LMS."""
    problems = tool.problems(lti, "push")
    if problems:
        raise Refused("; ".join(problems))
    data, ids = graded(db_url, assignment, course_dir)
    if not any(assignment in r["assignments"] for r in data["students"]):
        raise Refused(f"no graded submission of {assignment} in the gradebook {db_url}")
    lms = ags.Platform(lti, tool.load_key(lti.tool_key))
    by_sub = lti.user_claim == "sub"
    try:
        lms.authorize([ags.LINEITEM, ags.SCORE] + ([] if by_sub else [ags.MEMBERS]))
        scores_, unmatched = match(data, assignment, ids, lti, None if by_sub else lms.members())
        if unmatched and (not skip_unmatched or not scores_):
            raise Refused(f"{len(unmatched)} graded student(s) not found in the LMS: {'; '.join(unmatched)}. Fix "
                          "the roster or the LMS course" +
                          (", or send the others with --skip-unmatched" if scores_ and not skip_unmatched else ""))
        item = None if dry_run else lms.line_item(assignment, label=assignment, maximum=scores_[0].maximum)
    except ags.ServiceError as exc:
        raise Refused(str(exc)) from exc
    return lms, item, scores_, unmatched
