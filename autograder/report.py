"""Korean reports of a grading result: one per exercise (written into its grade cell) and a table (CLI)."""
from __future__ import annotations

from autograder import scores
from autograder.inert import one_line


def _points(x: float) -> str:
    """Points as every score is shown: to the course's decimals (``autograder.scores``)."""
    return scores.text(scores.rounded(x))


def exercise_report(exercise, notebook_errors=()) -> str:
    """What was checked for one exercise, the verdict of each check, and the likely mistake where known.

    Cases of one check (a parametrised test) are grouped on one line; a failure message shared by every
    check (e.g. "not implemented") is said once. Every text that may hold the student's (a failure's message, which
    quotes their exception; a note; a cell's error) is one inert line (``inert.one_line``: newlines and other control
    characters escaped), so no line of the report formgrader and the feedback show can be written by the student.
    """
    lines = [f"[{exercise.name}] {_points(exercise.score)} / {_points(exercise.max_score)}점 (비공개 채점기)"]
    messages = {t.message for t in exercise.tests if not t.passed}
    if exercise.tests and len(messages) == 1 and not any(t.passed for t in exercise.tests):
        lines.append(f"  ❌ {one_line(messages.pop())} (검사 {len(exercise.tests)}개 모두 통과하지 못함)")
    else:
        groups: dict[str, list] = {}
        for test in exercise.tests:
            groups.setdefault(test.description, []).append(test)
        for description, tests in groups.items():
            passed = [t for t in tests if t.passed]
            mark = "✅" if len(passed) == len(tests) else ("❌" if not passed else "◐")
            earned, possible = sum(t.points for t in passed), sum(t.points for t in tests)
            count = f"{len(passed)}/{len(tests)} 통과, " if len(tests) > 1 else ""
            lines.append(f"  {mark} {description} ({count}{_points(earned)}/{_points(possible)}점)")
            shown: dict[str, list] = {}
            for test in tests:
                if not test.passed:
                    shown.setdefault(test.message, []).append(_case(test.name))
            for message, cases in list(shown.items())[:3]:
                where = f"[{', '.join(c for c in cases if c)}] " if any(cases) and len(tests) > 1 else ""
                lines.append(f"      {one_line(where)}{one_line(message)}")
    if exercise.diagnosis:
        lines.append("  진단 — 다음 실수와 결과가 일치합니다:")
        lines += [f"    • {m.title}: {m.hint}" for m in exercise.diagnosis]
    for note in getattr(exercise, "notes", ()):
        lines.append(f"  참고 — {one_line(note)}")
    if exercise.score < exercise.max_score and notebook_errors:
        lines.append("  참고 — 노트북을 실행하는 중 오류가 난 셀:")
        lines += [f"    • {one_line(e)}" for e in notebook_errors[:5]]
    return "\n".join(lines)


def _case(name: str) -> str:
    return name[name.index("[") + 1 : -1] if name.endswith("]") and "[" in name else ""


def table(result) -> str:
    """A per-exercise table of one graded notebook (the notebook's own text, its name and errors, on one line each:
    ``one_line``)."""
    width = max([len(e.name) for e in result.exercises] + [8])
    lines = [f"{one_line(result.notebook)} ({result.assignment}), seed {result.seed}",
             f"{'exercise'.ljust(width)}  {'score':>7}  {'max':>5}  tests"]
    for e in result.exercises:
        passed = sum(t.passed for t in e.tests)
        note = f"  {e.diagnosis[0].title}" if e.diagnosis else ""
        lines.append(f"{e.name.ljust(width)}  {_points(e.score):>7}  {_points(e.max_score):>5}  "
                     f"{passed}/{len(e.tests)}{note}")
    lines.append(f"{'total'.ljust(width)}  {_points(result.score):>7}  {_points(result.max_score):>5}")
    for error in result.notebook_errors:
        lines.append(f"notebook: {one_line(error)}")
    return "\n".join(lines)
