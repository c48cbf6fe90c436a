"""Korean reports of a grading result: one per exercise (written into its grade cell) and a table (CLI)."""
from __future__ import annotations


def _points(x: float) -> str:
    return f"{x:g}"


def exercise_report(exercise, notebook_errors=()) -> str:
    """What was checked for one exercise, each test's verdict, and the likely mistake where known."""
    lines = [f"[{exercise.name}] {_points(exercise.score)} / {_points(exercise.max_score)}점 (숨은 채점기)"]
    for test in exercise.tests:
        mark = "✅" if test.passed else "❌"
        lines.append(f"  {mark} {test.description} [{test.name}] ({_points(test.points)}점)")
        if test.message and not test.passed:
            lines.append(f"      {test.message}")
    if exercise.diagnosis:
        lines.append("  진단 — 다음 실수와 결과가 일치합니다:")
        lines += [f"    • {m.title}: {m.hint}" for m in exercise.diagnosis]
    if exercise.score < exercise.max_score and notebook_errors:
        lines.append("  참고 — 노트북을 실행하는 중 오류가 난 셀:")
        lines += [f"    • {e}" for e in notebook_errors[:5]]
    return "\n".join(lines)


def table(result) -> str:
    """A per-exercise table of one graded notebook."""
    width = max([len(e.name) for e in result.exercises] + [8])
    lines = [f"{result.notebook} ({result.assignment}), seed {result.seed}",
             f"{'exercise'.ljust(width)}  {'score':>7}  {'max':>5}  tests"]
    for e in result.exercises:
        passed = sum(t.passed for t in e.tests)
        note = f"  {e.diagnosis[0].title}" if e.diagnosis else ""
        lines.append(f"{e.name.ljust(width)}  {_points(e.score):>7}  {_points(e.max_score):>5}  "
                     f"{passed}/{len(e.tests)}{note}")
    lines.append(f"{'total'.ljust(width)}  {_points(result.score):>7}  {_points(result.max_score):>5}")
    for error in result.notebook_errors:
        lines.append(f"notebook: {error}")
    return "\n".join(lines)
