"""The instructor's view of a class: the per-student table, the grades CSV for an LMS, and an HTML report with
score distributions per exercise, the most frequent diagnosed mistakes and the submissions to review.

The review list of a submission (``GradeResult.review``: escape hatches that its code names or its process used,
which the sandbox cannot block; ``autograder/graders/review.py``) is part of its record wherever grades are read:
the table marks the student, the CSV has a ``review`` column, report.html a section per flagged submission with
what was seen, and formgrader's manual-grading view a note on top (``gradebook/preprocessors/record_review.py``).
Nothing of it changes a score."""
from __future__ import annotations

import base64
import html
import io
import json
from collections import Counter
from pathlib import Path

from autograder import scores


def collect_grades(db_url: str, assignments, course_dir: Path) -> dict:
    """Scores per student, assignment and exercise from the gradebook, plus the graders' diagnoses."""
    from nbgrader.api import Gradebook, MissingEntry

    from autograder.gradebook.preprocessors.save_grade_result import RESULTS_DIR

    data = {"assignments": list(assignments), "students": [], "exercise_max": {}, "diagnoses": {}}
    results = {assignment: _results(Path(course_dir) / RESULTS_DIR / assignment) for assignment in assignments}
    with Gradebook(db_url) as gb:
        for student in sorted(gb.students, key=lambda s: s.id):
            row = {"id": student.id, "name": f"{student.last_name or ''}{student.first_name or ''}",
                   "email": student.email or "", "assignments": {}}
            for assignment in assignments:
                try:
                    sub = gb.find_submission(assignment, student.id)
                except MissingEntry:
                    continue
                exercises = {}
                for nb in sub.notebooks:
                    for grade in nb.grades:
                        exercises[grade.name.removeprefix("test_")] = grade.score
                        data["exercise_max"].setdefault(assignment, {})[grade.name.removeprefix("test_")] = \
                            grade.max_score
                penalty = sub.late_submission_penalty or 0.0
                review = [item for result in results[assignment].get(student.id, []) for item in result["review"]]
                row["assignments"][assignment] = {
                    "score": scores.rounded(sub.score - penalty), "raw": sub.score, "max": sub.max_score,
                    "late": penalty, "needs_manual": sub.needs_manual_grade, "exercises": exercises,
                    "review": review}
            data["students"].append(row)
    for assignment in assignments:
        counts: Counter = Counter()
        for result in (r for kept in results[assignment].values() for r in kept):
            for exercise in result.get("exercises", []):
                for mistake in exercise.get("diagnosis", []):
                    counts[(exercise["name"], mistake["title"])] += 1
        data["diagnoses"][assignment] = counts.most_common()
    return data


def _results(folder: Path) -> dict[str, list[dict]]:
    """The graded notebooks' results (``SaveGradeResult``) of one assignment: ``{student: [result, ...]}``, each with
    a ``review`` list of text (empty where the file has none)."""
    found: dict[str, list[dict]] = {}
    for path in sorted(folder.glob("*/*.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        review = result.get("review")
        result["review"] = [str(item) for item in review] if isinstance(review, list) else []
        found.setdefault(path.parent.name, []).append(result)
    return found


def flagged(data: dict, assignment: str) -> list[dict]:
    """The students of ``assignment`` whose submission has something to review (in the table's order)."""
    return [r for r in data["students"] if r["assignments"].get(assignment, {}).get("review")]


def table(data: dict) -> str:
    """A plain-text per-student, per-exercise table (one block per assignment)."""
    blocks = []
    for assignment in data["assignments"]:
        exercises = list(data["exercise_max"].get(assignment, {}))
        short = [f"#{i}" for i in range(1, len(exercises) + 1)]
        width = max([5] + [len(_num(m)) + 1 for m in data["exercise_max"].get(assignment, {}).values()])
        head = f"{'student':9} {'name':5} " + " ".join(f"{s:>{width}}" for s in short) + f" {'late':>6} {'total':>7}"
        legend = "  ".join(f"#{i}={e}" for i, e in enumerate(exercises, 1))
        lines = [f"[{assignment}]  {legend}", head]
        for row in data["students"]:
            a = row["assignments"].get(assignment)
            if a is None:
                continue
            cells = " ".join(f"{_num(a['exercises'].get(e)):>{width}}" for e in exercises)
            late = f"-{a['late']:g}" if a["late"] else ""
            lines.append(f"{row['id']:9} {row['name']:5} {cells} {late:>6} {a['score']:>7g}"
                         + (" (+수기 채점)" if a["needs_manual"] else "")
                         + (f" (검토 {len(a['review'])}건)" if a.get("review") else ""))
        maxima = data["exercise_max"].get(assignment, {})
        lines.append(f"{'max':9} {'':5} " + " ".join(f"{_num(maxima[e]):>{width}}" for e in exercises) +
                     f" {'':>6} {sum(maxima.values()):>7g}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _num(x) -> str:
    return "-" if x is None else f"{x:g}"


def _histograms(data: dict, assignment: str) -> str:
    """A PNG (base64) with one score histogram per exercise."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    maxima = data["exercise_max"].get(assignment, {})
    names = list(maxima)
    cols = 4
    rows = max(1, -(-len(names) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.4 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        values = [r["assignments"][assignment]["exercises"].get(name) for r in data["students"]
                  if assignment in r["assignments"]]
        values = [s for s in values if s is not None]
        ax.hist(values, bins=10, range=(0, maxima[name] or 1), color="#3b7dd8")
        ax.set_title(f"{name} (/{maxima[name]:g})", fontsize=9)
        ax.set_xlabel("score", fontsize=8)
        ax.set_ylabel("students", fontsize=8)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def write_report(data: dict, path: Path) -> Path:
    """The instructor's HTML report. Every value from the gradebook or the results (ids, names, exercise names,
    diagnoses) is escaped, and the page's Content-Security-Policy allows no script at all (its pictures are data: URIs,
    its style inline), so nothing a student wrote can run in it even if an escape were missed."""
    parts = ["<!doctype html><html lang='ko'><head><meta charset='utf-8'>"
             "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; img-src data:; "
             "style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'\"><title>채점 보고서</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#eee}"
             ".sbs{display:flex;gap:1em}.sbs>div{flex:1;min-width:0}.sbs pre{overflow-x:auto;font-size:12px;"
             "background:#f7f7f7;padding:4px}mark{background:#ffd54f}td.l,th.l{text-align:left}"
             "</style></head><body>",
             "<h1>어텐션 과목 — 채점 보고서</h1>"]
    for assignment in data["assignments"]:
        students = [r for r in data["students"] if assignment in r["assignments"]]
        if not students:
            continue
        total = sum(data["exercise_max"].get(assignment, {}).values())
        mean = sum(r["assignments"][assignment]["score"] for r in students) / len(students)
        late = sum(bool(r["assignments"][assignment]["late"]) for r in students)
        parts.append(f"<h2>{html.escape(assignment)}</h2><p>제출 {len(students)}명, 평균 {mean:.2f} / {total:g}점, "
                     f"지각 감점 {late}명</p>")
        parts.append(f"<h3>연습별 점수 분포</h3><img alt='score distributions' "
                     f"src='data:image/png;base64,{_histograms(data, assignment)}'>")
        parts.append("<h3>가장 자주 진단된 실수</h3><table><tr><th>연습</th><th>실수</th><th>학생 수</th></tr>")
        for (exercise, title), count in data["diagnoses"].get(assignment, [])[:15]:
            parts.append(f"<tr><td>{html.escape(exercise)}</td><td style='text-align:left'>{html.escape(title)}</td>"
                         f"<td>{count}</td></tr>")
        parts.append("</table>")
        parts.append(review_html(data, assignment))
        report = data.get("similarity", {}).get(assignment)
        if report is not None:
            names = {r["id"]: r["name"] for r in data["students"]}
            parts.append(similarity_html(report, names))
    parts.append("<h2>학생별 점수</h2><pre>" + html.escape(table(data)) + "</pre></body></html>")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def review_html(data: dict, assignment: str) -> str:
    """The section of the submissions to review of one assignment: per flagged submission its student, score and
    what was seen (every item escaped)."""
    students = flagged(data, assignment)
    parts = [f"<h3 id='review-{html.escape(assignment)}'>검토할 제출물 ({len(students)}명)</h3>",
             "<p>샌드박스가 막지 못하거나 채점 중에 볼 수 없는 방법(신호 처리기, 프레임·클로저 읽기, 코드 객체 만들기, "
             "디스패처 다루기 등)을 코드에 적었거나 실행 중에 쓴 제출물입니다. 점수는 바뀌지 않았습니다. 코드를 직접 "
             "확인하세요 (formgrader의 수기 채점 화면에도 같은 목록이 보입니다).</p>"]
    if not students:
        parts.append("<p>없음.</p>")
    for row in students:
        a = row["assignments"][assignment]
        total = sum(data["exercise_max"].get(assignment, {}).values())
        parts.append(f"<div class='review'><h4>{html.escape(str(row['id']))} {html.escape(row['name'])}: "
                     f"{a['score']:g} / {total:g}점, 검토 {len(a['review'])}건</h4><ul>"
                     + "".join(f"<li>{html.escape(str(item))}</li>" for item in a["review"]) + "</ul></div>")
    return "\n".join(parts)


def _who(student: str, names: dict) -> str:
    name = names.get(student, "")
    return html.escape(f"{student} {name}".strip())


def _percent(x: float) -> str:
    return f"{100 * x:.0f}%"


def _side_by_side(match, left: str, right: str) -> str:
    """Two codes next to each other (escaped; the matched parts marked)."""
    left_code, right_code = match.codes()
    return (f"<div class='sbs'><div><h5>{left}</h5><pre>{left_code}</pre></div>"
            f"<div><h5>{right}</h5><pre>{right_code}</pre></div></div>")


def similarity_html(report, names: dict) -> str:
    """The similarity section of one assignment (``autograder.feedback.similarity.Report``): student pairs, code
    like a library routine's, code like the answer key's; every code and name escaped."""
    from autograder.feedback.similarity import OTHER

    def exercise(name):
        return "(그 밖의 코드)" if name == OTHER else name

    o = report.options
    parts = [f"<h3>코드 유사도</h3><p>{html.escape(report.detector)}: 이름·문자열·주석을 뺀 코드의 지문"
             f"(winnowing)을 연습별로 비교. 배포 노트북의 코드는 제외. 학생 {report.students}명, "
             f"학생 쌍은 {_percent(o.pair_threshold)} 이상, 라이브러리는 {_percent(o.library_threshold)} 이상, "
             f"둘 다 {o.min_match}자 이상 일치할 때만 표시 ({report.seconds:.1f} s).</p>"]
    by_pair: dict = {}
    for m in report.pairs:
        by_pair.setdefault((m.left.owner, m.right.owner), []).append(m)
    parts.append(f"<h4>비슷한 학생 쌍 ({len(by_pair)})</h4>")
    if not by_pair:
        parts.append("<p>없음.</p>")
    for (a, b), matches in sorted(by_pair.items(), key=lambda item: (-len(item[1]), item[0])):
        listed = ", ".join(f"{html.escape(exercise(m.exercise))} {_percent(m.similarity)}" for m in matches)
        parts.append(f"<details><summary><b>{_who(a, names)}</b> ↔ <b>{_who(b, names)}</b>: {listed}</summary>")
        for m in matches:
            parts.append(f"<h5>{html.escape(exercise(m.exercise))}: {_percent(m.similarity)}, {m.matched}자 일치</h5>"
                         + _side_by_side(m, _who(a, names), _who(b, names)))
        parts.append("</details>")
    parts.append(f"<h4>라이브러리 코드와 비슷한 제출 ({len(report.library)})</h4>")
    if not report.library:
        parts.append("<p>없음.</p>")
    for m in report.library:
        parts.append(f"<details><summary><b>{_who(m.left.owner, names)}</b> {html.escape(exercise(m.exercise))} ↔ "
                     f"<b>{html.escape(m.right.owner)}</b>: {_percent(m.similarity)} ({m.matched}자 일치)</summary>"
                     + _side_by_side(m, _who(m.left.owner, names), html.escape(m.right.owner)) + "</details>")
    on_key: dict = {}
    for m in report.answer_key:
        on_key.setdefault(m.left.owner, []).append(m)
    parts.append(f"<h4>해답(source/)과 같은 코드 ({len(on_key)}명)</h4>")
    if on_key:
        parts.append("<details><summary>학생과 연습 보기</summary><table><tr><th class='l'>학생</th>"
                     "<th class='l'>해답과 같은 연습</th></tr>")
        for student, matches in sorted(on_key.items()):
            listed = ", ".join(f"{html.escape(exercise(m.exercise))} {_percent(m.similarity)}" for m in matches)
            parts.append(f"<tr><td class='l' style='white-space:nowrap'>{_who(student, names)}</td>"
                         f"<td class='l'>{listed}</td></tr>")
        parts.append("</table></details>")
    else:
        parts.append("<p>없음.</p>")
    if report.cut:
        from autograder.feedback.similarity import MAX_UNIT

        listed = ", ".join(f"{_who(student, names)} {html.escape(exercise(ex))} ({length:,}자)"
                           for student, ex, length in report.cut)
        parts.append(f"<p>너무 길어서 앞의 {MAX_UNIT:,}자만 비교한 코드: {listed}.</p>")
    if report.explained:
        parts.append(f"<p>두 학생 모두 과목의 자료(해답, 채점기의 실수 목록)와 같아서 쌍으로 싣지 않은 경우: "
                     f"{report.explained}쌍.</p>")
    sources = "; ".join(f"{html.escape(label)} — {html.escape(where)} ({len(names_)}개 함수)"
                        for label, where, names_ in report.sources)
    parts.append(f"<p><small>비교한 라이브러리 소스: {sources}.")
    if report.missing:
        parts.append(" 비교하지 못한 것: " + "; ".join(f"{html.escape(label)} ({html.escape(why)})"
                                                for label, why in report.missing) + ".")
    parts.append("</small></p>")
    return "\n".join(parts)


def write_all(data: dict, course_dir: Path) -> dict:
    out = Path(course_dir) / "reports"
    out.mkdir(exist_ok=True)
    from autograder.feedback.lms import write_grades_csv

    return {"grades CSV (Canvas)": write_grades_csv(data, out / "grades.csv"),
            "instructor report": write_report(data, out / "report.html"),
            "feedback HTML": Path(course_dir) / "feedback"}


def main(course_dir=".", assignments=None, db_url: str | None = None) -> int:
    """``python -m autograder report``: the per-student table, the grades CSV and report.html (with the code
    similarity of ``autograder.feedback.similarity``) of a graded course directory, written to its ``reports/``."""
    import os

    from autograder import settings
    from autograder.feedback import similarity

    course_dir = Path(course_dir).resolve()
    assignments = assignments or settings.load().assignments
    db_url = db_url or os.environ.get("COURSE_DB_URL") or f"sqlite:///{course_dir / 'gradebook.db'}"
    data = collect_grades(db_url, assignments, course_dir)
    data["similarity"] = similarity.for_course(course_dir, assignments)
    outputs = write_all(data, course_dir)
    print(table(data))
    for label, path in outputs.items():
        print(f"{label}: {path}")
    for assignment, report in data["similarity"].items():
        print(f"similarity {assignment}: " + similarity.summary(report))
    return 0 if data["students"] else 1
