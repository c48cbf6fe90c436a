"""The class's CI results in one grade sheet: each grading job's artifact (a folder with ``repository.txt`` and the
``result.json`` that ``python -m autograder grade --json`` wrote) read back, matched to the roster, and written as
the class CSV that ``python -m autograder report`` writes for the LMS (``grades.csv``,
``feedback.lms.write_grades_csv``) plus ``ci-results.csv``, one line per repository with what happened.

Nobody is left out silently: a notebook that was missing or could not be graded is an explicit 0 with its reason
(the grading wrote it so: ``exports.not_graded``); a repository of the roster without any result (its job failed
before it wrote one, or was cancelled) is a 0 with "no result", and the command exits 1 so that the run shows it.

The roster (``roster/repositories.txt`` of the course repository) is one repository a line: ``owner/name``, then
optionally the student's id (the gradebook's, which the LMS matches) and name; ``#`` starts a comment.
"""
from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
CI_RESULTS = ("repository", "student", "assignment", "status", "score", "max_score", "late_points",
              "submitted_at", "commit", "reason")


class GatherError(ValueError):
    """A roster or artifact that cannot be read (the message names the file)."""


@dataclass(frozen=True)
class Entry:
    """One line of the roster."""

    repository: str
    student: str
    name: str = ""


@dataclass
class Row:
    """What the class CSV says of one repository."""

    entry: Entry
    status: str                          # graded, not graded, no result
    score: float = 0.0
    max_score: float = 0.0
    late_points: float = 0.0
    reason: str = ""
    submitted_at: str = ""
    commit: str = ""
    result: dict = field(default_factory=dict)


def read_roster(path) -> list[Entry]:
    """The roster's repositories, checked: ``owner/name`` each, none twice."""
    entries, seen = [], set()
    try:
        lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise GatherError(f"{path}: cannot read the roster ({exc})") from exc
    for number, line in enumerate(lines, 1):
        parts = line.split("#", 1)[0].split()
        if not parts:
            continue
        if not REPOSITORY.fullmatch(parts[0]):
            raise GatherError(f"{path}:{number}: {parts[0]!r} is not a repository (owner/name)")
        if parts[0].lower() in seen:
            raise GatherError(f"{path}:{number}: {parts[0]} is listed twice")
        seen.add(parts[0].lower())
        entries.append(Entry(parts[0], parts[1] if len(parts) > 1 else parts[0].split("/")[1], " ".join(parts[2:])))
    return entries


def read_artifacts(folder) -> dict[str, Path]:
    """``{repository (lower case): its artifact folder}``: every folder under ``folder`` with a ``repository.txt``."""
    found: dict[str, Path] = {}
    for marker in sorted(Path(folder).rglob("repository.txt")):
        repository = marker.read_text(encoding="utf-8").strip()
        if not REPOSITORY.fullmatch(repository):
            raise GatherError(f"{marker}: {repository!r} is not a repository (owner/name)")
        if repository.lower() in found:
            raise GatherError(f"{marker}: {repository} has two artifacts ({found[repository.lower()]})")
        found[repository.lower()] = marker.parent
    return found


def row_of(entry: Entry, artifact: Path | None) -> Row:
    """The row of one roster entry from its artifact folder (None: the job left none)."""
    path = artifact / "result.json" if artifact else None
    if path is None or not path.is_file():
        return Row(entry, "no result", reason="the grading job left no result (see its log, then grade again)")
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
        score, max_score = float(result["score"]), float(result["max_score"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Row(entry, "no result", reason=f"{path.name} cannot be read ({exc})")
    submission = {}
    if (artifact / "submission.json").is_file():
        submission = json.loads((artifact / "submission.json").read_text(encoding="utf-8"))
    late = result.get("late") or {}
    refused = result.get("refused")
    return Row(entry, "not graded" if refused else "graded", 0.0 if refused else score, max_score,
               float(late.get("points") or 0.0), refused or "", str(late.get("submitted_at") or
                                                                  submission.get("pushed_at") or ""),
               str(submission.get("sha") or ""), result)


def gather(artifacts, roster: list[Entry], assignment: str) -> list[Row]:
    """Every roster entry's row, then those of artifacts of repositories the roster does not name."""
    found = read_artifacts(artifacts)
    rows = [row_of(entry, found.pop(entry.repository.lower(), None)) for entry in roster]
    for _key, folder in sorted(found.items()):
        repository = (folder / "repository.txt").read_text(encoding="utf-8").strip()
        rows.append(row_of(Entry(repository, repository.split("/")[1]), folder))
    for row in rows:
        if row.result and row.result.get("assignment") not in (None, assignment):
            row.status, row.score = "not graded", 0.0
            row.reason = f"its result is of {row.result.get('assignment')!r}, not {assignment!r}"
    maximum = max((r.max_score for r in rows if r.result), default=0.0)
    for row in rows:
        row.max_score = row.max_score or maximum
    return rows


def class_data(rows: list[Row], assignment: str) -> dict:
    """The rows as the instructor's report reads a class (``feedback.instructor.collect_grades``'s form), so that
    the class CSV is written by the same code as ``python -m autograder report``'s."""
    from autograder import scores

    exercise_max = {}
    for row in rows:
        for exercise in row.result.get("exercises", []):
            exercise_max.setdefault(exercise["name"], exercise["max_score"])
    students = []
    for row in rows:
        late = row.late_points
        students.append({"id": row.entry.student, "name": row.entry.name, "email": "", "assignments": {assignment: {
            "score": scores.rounded(row.score), "raw": scores.rounded(row.score + late), "max": row.max_score,
            "late": late, "needs_manual": False, "pending": False,
            "exercises": {e["name"]: e["score"] for e in row.result.get("exercises", [])} if row.status == "graded"
            else {}, "review": [str(item) for item in row.result.get("review", [])]}}})
    return {"assignments": [assignment], "students": students, "exercise_max": {assignment: exercise_max},
            "diagnoses": {assignment: []}}


def write(rows: list[Row], assignment: str, out) -> dict[str, Path]:
    """``out/grades.csv`` (the class grade sheet, as ``report`` writes it) and ``out/ci-results.csv``."""
    from autograder import outputs, scores
    from autograder.feedback.lms import formula_safe, write_grades_csv

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    grades = write_grades_csv(class_data(rows, assignment), out / "grades.csv")
    results = out / "ci-results.csv"
    with outputs.replacing(results, newline="") as fh:   # replaced whole or not at all
        writer = csv.writer(fh)
        writer.writerow(CI_RESULTS)
        for row in rows:   # repository and student names are the roster's text: formula-safe, as in grades.csv
            writer.writerow([formula_safe(row.entry.repository), formula_safe(row.entry.student), assignment,
                             row.status, scores.text(row.score), scores.text(row.max_score),
                             scores.text(row.late_points), row.submitted_at, row.commit,
                             formula_safe(" ".join(row.reason.split()))])
    return {"grades": grades, "ci-results": results}
