"""The class at a glance after ``python -m autograder autograde``: one screen on stdout (the progress and each
submission's notes went to stderr while it ran).

From the gradebook, for the students this run graded: how many were graded and how many failed, the distribution of
the totals (net of late penalties) as a text histogram, mean, median, lowest and highest, the late ones and the
extensions, the three hardest exercises, who waits for manual grading, what to look at (graded as blank,
review items, failures) and the commands that usually come next. At most ``LINES`` lines, whatever the class size.
"""
from __future__ import annotations

import statistics

LINES = 24
BINS = 10
BAR = 30   # the longest bar, in characters


def _names(ids: list[str], limit: int = 8) -> str:
    return ", ".join(ids[:limit]) + (f", ... ({len(ids)} in all)" if len(ids) > limit else "")


def histogram(values: list[float], total: float, bins: int = BINS) -> list[str]:
    """Text lines of a histogram of ``values`` in ``[0, total]``: one line per bin, its range, a bar, its count."""
    total = total or 1.0
    counts = [0] * bins
    for value in values:
        counts[min(bins - 1, max(0, int(value / total * bins)))] += 1
    widest = max(counts) or 1
    lines = []
    for i, count in enumerate(counts):
        low, high = total * i / bins, total * (i + 1) / bins
        bar = "#" * (round(count / widest * BAR) if count else 0)
        lines.append(f"  {low:5.1f}-{high:<5.1f}{']' if i == bins - 1 else ')'} {bar} {count or ''}".rstrip())
    return lines


def summary(data: dict, assignment: str, outcomes) -> list[str]:
    """The summary's lines for ``assignment`` (``instructor.collect_grades``'s ``data``; ``outcomes``: the run's)."""
    from autograder.feedback.instructor import difficulty

    ran = {o.student for o in outcomes}
    rows = [r for r in data["students"] if r["id"] in ran and assignment in r["assignments"]]
    graded = {r["id"]: r["assignments"][assignment] for r in rows}
    total = sum(data["exercise_max"].get(assignment, {}).values())
    failed = [o.student for o in outcomes if not o.ok]
    noted = sorted(o.student for o in outcomes if o.notes)
    final = [a["score"] for a in graded.values() if not a.get("pending")]
    waiting = sorted(s for s, a in graded.items() if a.get("pending"))
    lines = [f"== {assignment}: {len(graded)} of {len(outcomes)} submission(s) graded"
             + (f", {len(failed)} failed" if failed else "") + f" (out of {total:g} points)"]
    if final:
        best = max(final)
        lines += histogram(final, total)
        lowest = sorted(s for s, a in graded.items() if not a.get("pending") and a["score"] == min(final))
        lines.append(f"mean {statistics.mean(final):.2f}, median {statistics.median(final):g}, lowest {min(final):g} "
                     f"({_names(lowest, 3)}), highest {best:g} "
                     f"({sum(a['score'] == best for a in graded.values() if not a.get('pending'))} student(s))"
                     + (f"; of the {len(final)} without grading pending" if waiting else ""))
    late = sorted(s for s, a in graded.items() if a["late"])
    extended = sorted(s for s, a in graded.items() if a.get("extension"))
    if late or extended:
        lines.append(f"late: {len(late)}" + (f" ({_names(late)})" if late else "")
                     + (f"; extensions: {len(extended)} ({_names(extended)})" if extended else ""))
    hardest = [e for e in difficulty({**data, "students": rows}, assignment) if e["share"] is not None][:3]
    if hardest:
        lines.append("hardest exercises: " + ", ".join(f"{e['exercise']} {100 * e['share']:.0f}%" for e in hardest)
                     + " of their points on average")
    if waiting:
        lines.append(f"manual grading pending (formgrader): {len(waiting)} ({_names(waiting)}); their grade is "
                     "blank in the LMS files until then")
    review = sorted(s for s, a in graded.items() if a.get("review"))
    if noted:
        lines.append(f"graded with a note (a notebook graded as blank, a file left out; see above): {_names(noted)}")
    if review:
        lines.append(f"to review (report.html): {_names(review)}")
    if failed:
        lines.append(f"FAILED (see the messages above; grade them again with --student): {_names(failed)}")
    lines.append(f"next: nbgrader generate_feedback {assignment} && nbgrader release_feedback {assignment}; "
                 f"python -m autograder report")
    return lines[:LINES]


def print_summary(course_dir, assignment: str, outcomes, db_url: str | None = None, out=None) -> None:
    """Print the summary of a class run (``cli``): the gradebook's scores of the students ``outcomes`` graded."""
    import sys

    from autograder import course
    from autograder.feedback.instructor import collect_grades

    out = out or sys.stdout
    if not outcomes:
        return
    data = collect_grades(course.gradebook_url(course_dir, db_url), [assignment], course_dir)
    print("\n".join(summary(data, assignment, outcomes)), file=out)
