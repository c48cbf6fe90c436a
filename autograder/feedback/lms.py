"""The grades an LMS imports (``python -m autograder report``'s ``reports/grades.csv``): Canvas's gradebook import
format."""
from __future__ import annotations

import csv
from pathlib import Path

from autograder import scores

REVIEW_COLUMN = "review"


def write_grades_csv(data: dict, path: Path) -> Path:
    """Canvas's gradebook import format: Student, ID, SIS User ID, SIS Login ID, Section, then one column per
    assignment, and a 'Points Possible' row; last, the ``review`` column (not a grade: leave it out of an LMS
    import): per assignment with something to review, its name, the number of items and the items."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *data["assignments"],
                         REVIEW_COLUMN])
        maxima = [sum(data["exercise_max"].get(a, {}).values()) for a in data["assignments"]]
        writer.writerow(["Points Possible", "", "", "", "", *[scores.text(scores.rounded(m)) for m in maxima], ""])
        for row in data["students"]:
            cells = [scores.text(row["assignments"][a]["score"]) if a in row["assignments"] else ""
                     for a in data["assignments"]]
            writer.writerow([row["name"], "", row["id"], row["email"], "어텐션", *cells, _review_cell(row, data)])
    return path


def _review_cell(row: dict, data: dict) -> str:
    """The CSV's review column of one student: ``attention: 2건 — item; item`` per flagged assignment, one line each
    (the text of a cell is never read as a spreadsheet formula: it starts with the assignment's name)."""
    lines = []
    for assignment in data["assignments"]:
        items = row["assignments"].get(assignment, {}).get("review") or []
        if items:
            text = "; ".join(" ".join(str(item).split()) for item in items)
            lines.append(f"{assignment}: {len(items)}건 — {text}")
    return "\n".join(lines)
