"""The instructor's view of a class: the per-student table, the grades for an LMS (``lms.py``), and an HTML report
with sortable tables, the totals' histogram, the exercises ranked by difficulty, the most frequent diagnosed
mistakes and the submissions to review.

The review list of a submission (``GradeResult.review``: escape hatches that its code names or its process used,
which the sandbox cannot block; ``autograder/graders/review.py``) is part of its record wherever an instructor reads
grades: the table marks the student, report.html has a section per flagged submission with what was seen and a note
in the student's row, and formgrader's manual-grading view a note on top
(``gradebook/preprocessors/record_review.py``). The LMS's files carry grades only (an LMS reads any other column as
an assignment). Nothing of it changes a score."""
from __future__ import annotations

import base64
import html
import json
import statistics
from collections import Counter
from pathlib import Path

from autograder import scores
from autograder.feedback.tables import STUDENT_HEADS, student_cells, td, thead


def collect_grades(db_url: str, assignments, course_dir: Path, roster=None) -> dict:
    """Scores per student, assignment and exercise from the gradebook, plus the graders' diagnoses.

    A submission counts once something of it is graded (a row that ``extend`` made before the student handed in
    is not a submission yet). A grade that waits for a person (a written answer: nbgrader's ``needs_manual_grade``
    with no manual score) is ``None`` in ``exercises`` and named in ``pending``; the score is then what is graded
    so far. ``roster``: the class list (``autograder.hub.roster.read``), for the students' sections and the student
    numbers the gradebook lacks."""
    from nbgrader.api import Gradebook, MissingEntry

    from autograder.gradebook.preprocessors.save_grade_result import RESULTS_DIR

    people = {p.username: p for p in roster or ()}
    data = {"assignments": list(assignments), "students": [], "exercise_max": {}, "diagnoses": {}}
    results = {assignment: _results(Path(course_dir) / RESULTS_DIR / assignment) for assignment in assignments}
    with Gradebook(db_url) as gb:
        for assignment in assignments:
            try:
                notebooks = gb.find_assignment(assignment).notebooks
            except MissingEntry:
                continue
            data["exercise_max"][assignment] = {cell.name.removeprefix("test_"): cell.max_score
                                                for nb in notebooks for cell in nb.grade_cells}
        for student in sorted(gb.students, key=lambda s: s.id):
            person = people.get(student.id)
            row = {"id": student.id, "name": f"{student.last_name or ''}{student.first_name or ''}",
                   "last_name": student.last_name or "", "first_name": student.first_name or "",
                   "email": student.email or "",
                   "number": student.lms_user_id or (person.student_id if person else ""),
                   "section": getattr(person, "section", "") if person else "", "assignments": {}}
            for assignment in assignments:
                try:
                    sub = gb.find_submission(assignment, student.id)
                except MissingEntry:
                    continue
                grades = [grade for nb in sub.notebooks for grade in nb.grades]
                if not any(g.auto_score is not None or g.manual_score is not None for g in grades):
                    continue   # not graded yet (e.g. an extension granted before the student handed in)
                exercises, pending = {}, []
                for grade in grades:
                    name = grade.name.removeprefix("test_")
                    waits = bool(grade.needs_manual_grade) and grade.manual_score is None
                    exercises[name] = None if waits else grade.score
                    pending += [name] if waits else []
                    data["exercise_max"].setdefault(assignment, {}).setdefault(name, grade.max_score)
                penalty = sub.late_submission_penalty or 0.0
                review = [item for result in results[assignment].get(student.id, []) for item in result["review"]]
                row["assignments"][assignment] = {
                    "score": scores.rounded(sub.score - penalty), "raw": sub.score, "max": sub.max_score,
                    "late": penalty, "needs_manual": sub.needs_manual_grade, "exercises": exercises,
                    "pending": pending, "review": review,
                    "extension": sub.extension.total_seconds() / 86400 if sub.extension else 0.0,
                    "timestamp": sub.timestamp, "due": sub.duedate}
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
            cells = " ".join(f"{_cell(a, e):>{width}}" for e in exercises)
            late = f"-{a['late']:g}" if a["late"] else ""
            waiting = sum(data["exercise_max"][assignment][e] for e in a.get("pending", ()))
            lines.append(f"{row['id']:9} {row['name']:5} {cells} {late:>6} {a['score']:>7g}"
                         + (f" (+{waiting:g} 수기 채점 대기)" if waiting else "")
                         + (f" (검토 {len(a['review'])}건)" if a.get("review") else ""))
        maxima = data["exercise_max"].get(assignment, {})
        lines.append(f"{'max':9} {'':5} " + " ".join(f"{_num(maxima[e]):>{width}}" for e in exercises) +
                     f" {'':>6} {sum(maxima.values()):>7g}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _num(x) -> str:
    return "-" if x is None else f"{x:g}"


PENDING = "대기"   # a grade that waits for a person (a written answer), wherever grades are shown


def _cell(graded: dict, exercise: str) -> str:
    """An exercise's score as the table shows it: the score, ``대기`` while it waits for a person, ``-`` if absent."""
    return PENDING if exercise in graded.get("pending", ()) else _num(graded["exercises"].get(exercise))


def bins(values: list[float], top: float, count: int) -> list[int]:
    """How many of ``values`` fall in each of ``count`` equal bins of ``[0, top]`` (``top`` itself in the last)."""
    top = top or 1.0
    counts = [0] * count
    for value in values:
        counts[min(count - 1, max(0, int(value / top * count)))] += 1
    return counts


def histogram_html(values: list[float], top: float, count: int = 10, height: int = 140) -> str:
    """A histogram of ``values`` in ``[0, top]`` as HTML (bars of a height in pixels, the count above each, the
    range below): no picture to make, sharp at any zoom, readable by a screen reader (its label)."""
    counts = bins(values, top, count)
    widest = max(counts) or 1
    columns = []
    for i, n in enumerate(counts):
        low, high = top * i / count, top * (i + 1) / count
        span = f"{low:g}–{high:g}"
        columns.append(f"<div class='col' title='{span}점: {n}명'><span class='n'>{n or ''}</span>"
                       f"<span class='b' style='height:{round(n / widest * height)}px'></span>"
                       f"<span class='x'>{low:g}</span></div>")
    label = ", ".join(f"{top * i / count:g}–{top * (i + 1) / count:g}점 {n}명" for i, n in enumerate(counts) if n)
    return (f"<div class='hist' role='img' aria-label='{html.escape(label, quote=True)}'>" + "".join(columns)
            + f"<div class='col'><span class='x'>{top:g}</span></div></div>")


def spark_html(values: list[float], top: float, waiting: int) -> str:
    """One exercise's distribution in a table cell: five bars (0-20 % of its points, ..., 80-100 %), or how many
    wait for a person where nobody's grade is known yet (never a bar at 0)."""
    if not values:
        return f"<span class='pending'>수기 채점 대기 {waiting}명</span>" if waiting else ""
    counts = bins(values, top, 5)
    widest = max(counts) or 1
    bars = "".join(f"<span class='s' style='height:{max(1, round(n / widest * 24)) if n else 0}px' "
                   f"title='{20 * i}–{20 * (i + 1)}%: {n}명'></span>" for i, n in enumerate(counts))
    return f"<span class='spark'>{bars}</span>" + (f" <span class='pending'>대기 {waiting}</span>" if waiting else "")


def difficulty(data: dict, assignment: str) -> list[dict]:
    """The exercises of ``assignment`` from the hardest to the easiest: each one's mean share of its points over the
    students whose grade is known (a pending grade is not a 0), with the numbers of full marks, zeros and pending."""
    graded = [r["assignments"][assignment] for r in data["students"] if assignment in r["assignments"]]
    ranking = []
    for name, points in data["exercise_max"].get(assignment, {}).items():
        known = [a["exercises"][name] for a in graded
                 if name not in a.get("pending", ()) and a["exercises"].get(name) is not None]
        share = (sum(known) / len(known) / points) if known and points else None
        ranking.append({"exercise": name, "points": points, "mean": sum(known) / len(known) if known else None,
                        "share": share, "full": sum(v >= points for v in known), "zero": sum(v == 0 for v in known),
                        "pending": sum(name in a.get("pending", ()) for a in graded), "students": len(known),
                        "values": known})
    order = list(data["exercise_max"].get(assignment, {}))   # ties in the notebook's order
    return sorted(ranking, key=lambda e: (e["share"] is None, e["share"] if e["share"] is not None else 0,
                                          order.index(e["exercise"])))


def overview_html(data: dict) -> str:
    """The class at a glance: one row per student, each assignment's total (net of late penalties; ``대기`` where a
    written answer waits), their sum; a sortable table."""
    maxima = {a: sum(data["exercise_max"].get(a, {}).values()) for a in data["assignments"]}
    heads = [STUDENT_HEADS, *(f"<th>{html.escape(a)}<br><small>/{maxima[a]:g}</small></th>"
                              for a in data["assignments"]),
             f"<th>합계<br><small>/{sum(maxima.values()):g}</small></th>"]
    rows = []
    for row in data["students"]:
        cells, total = [], 0.0
        for assignment in data["assignments"]:
            a = row["assignments"].get(assignment)
            if a is None:
                cells.append(td("-", -1))
                continue
            total += a["score"]
            marks = (" 대기" if a.get("pending") else "") + (" 지각" if a["late"] else "") + \
                    (f" 연장 {a['extension']:g}일" if a.get("extension") else "")
            cells.append(td(f"{a['score']:g}{marks}", a["score"]))
        rows.append("<tr>" + student_cells(row) + "".join(cells) + td(f"{total:g}", total) + "</tr>")
    return ("<div class='wide'><table class='sortable' id='overview'>" + thead(*heads) + "<tbody>" + "".join(rows)
            + "</tbody></table></div>")


def students_html(data: dict, assignment: str) -> str:
    """One assignment's per-student, per-exercise table (sortable; scrolls sideways inside its box)."""
    maxima = data["exercise_max"].get(assignment, {})
    heads = [STUDENT_HEADS, *(f"<th class='ex' title='{html.escape(e, quote=True)}'>"
                              f"{html.escape(e).replace('_', '_<wbr>')}<br><small>/{m:g}</small></th>"
                              for e, m in maxima.items()),
             "<th>지각 감점</th><th>연장(일)</th><th>총점</th><th class='l'>비고</th>"]
    rows = []
    for row in data["students"]:
        a = row["assignments"].get(assignment)
        if a is None:
            continue
        cells = "".join(td(PENDING, "", "pending") if e in a.get("pending", ()) else
                        td(_num(a["exercises"].get(e)), a["exercises"].get(e)) for e in maxima)
        waiting = sum(maxima[e] for e in a.get("pending", ()))
        notes = ([f"수기 채점 대기 {waiting:g}점"] if waiting else []) + \
                ([f"검토 {len(a['review'])}건"] if a.get("review") else [])
        rows.append("<tr>" + student_cells(row) + cells + td(f"-{a['late']:g}" if a["late"] else "", a["late"])
                    + td(f"{a['extension']:g}" if a.get("extension") else "", a.get("extension") or 0)
                    + td(f"{a['score']:g}", a["score"]) + td(", ".join(notes), cls="l") + "</tr>")
    return (f"<div class='wide'><table class='sortable' id='students-{html.escape(assignment, quote=True)}'>"
            + thead(*heads) + "<tbody>" + "".join(rows) + "</tbody></table></div>")


def difficulty_html(data: dict, assignment: str) -> str:
    rows = []
    for rank, e in enumerate(difficulty(data, assignment), 1):
        share = "" if e["share"] is None else f"{100 * e['share']:.0f}%"
        mean = "" if e["mean"] is None else f"{e['mean']:.2f}"
        rows.append("<tr>" + td(rank, rank) + td(e["exercise"], cls="l") + td(f"{e['points']:g}", e["points"])
                    + td(mean, e["mean"] if e["mean"] is not None else "") + td(share, e["share"] or 0)
                    + td(e["full"], e["full"]) + td(e["zero"], e["zero"]) + td(e["pending"], e["pending"])
                    + f"<td class='l'>{spark_html(e['values'], e['points'], e['pending'])}</td></tr>")
    return ("<table class='sortable difficulty'>"
            + thead("<th>순위</th>", "<th class='l'>연습</th>", "<th>배점</th>", "<th>평균</th>", "<th>평균/배점</th>",
                     "<th>만점</th>", "<th>0점</th>", "<th>채점 대기</th>", "<th class='l'>분포 (0→만점)</th>")
            + "<tbody>" + "".join(rows) + "</tbody></table>")


# The only script of the report: sorts a table by the column whose heading is clicked (or Enter/Space on it; again:
# the other way). Allowed by its hash in the page's Content-Security-Policy, nothing else: no other script runs.
SORT_SCRIPT = """document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, column) {
    th.tabIndex = 0;
    th.setAttribute("aria-sort", "none");
    function sort() {
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (other) { other.setAttribute("aria-sort", "none"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      function key(row) {
        var cell = row.cells[column], value = cell.getAttribute("data-sort");
        return value === null ? cell.textContent.trim() : value;
      }
      var numeric = rows.every(function (row) { var k = key(row); return k === "" || !isNaN(Number(k)); });
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (x === "" || y === "") { return (x === "") - (y === ""); }
        var order = numeric ? Number(x) - Number(y) : x.localeCompare(y, "ko");
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); }
    });
  });
});"""


def _script_hash(script: str) -> str:
    import hashlib

    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")


STYLE = ("body{font-family:sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse}"
         "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}th{background:#eee}"
         "table.sortable th{cursor:pointer;white-space:nowrap;position:sticky;top:0}table.sortable th.ex{"
         "white-space:normal;min-width:3em;max-width:9em;vertical-align:bottom}"
         "table.sortable th[aria-sort=ascending]::after{content:' \\25B2'}"
         "table.sortable th[aria-sort=descending]::after{content:' \\25BC'}"
         "div.wide{overflow-x:auto;width:fit-content;max-width:100%;border:1px solid #ddd}"
         "td.pending{color:#a15c00;background:#fff4e0}"
         ".sbs{display:flex;gap:1em}.sbs>div{flex:1;min-width:0}.sbs pre{overflow-x:auto;font-size:12px;"
         "background:#f7f7f7;padding:4px}mark{background:#ffd54f}td.l,th.l{text-align:left}"
         ".hist{display:flex;align-items:flex-end;gap:3px;margin:.5em 0 1em}.hist .col{display:flex;"
         "flex-direction:column;align-items:center;justify-content:flex-end;min-width:40px}"
         ".hist .b{display:block;width:100%;background:#2a9d8f}.hist .n{font-size:12px}.hist .x{font-size:11px;"
         "color:#555;align-self:flex-start;border-top:1px solid #999;width:100%}"
         ".spark{display:inline-flex;align-items:flex-end;gap:1px;height:24px;vertical-align:middle}"
         ".spark .s{display:inline-block;width:9px;background:#3b7dd8}span.pending{color:#a15c00}")


def write_report(data: dict, path: Path) -> Path:
    """The instructor's HTML report, replaced whole (``outputs``): the class at a glance (a sortable table of every
    student's totals), then per assignment its total-score histogram, the exercises ranked by difficulty, the score
    distribution of each exercise (a grade that waits for a person shown as pending, never as 0), the most frequent
    diagnosed mistakes, the submissions to review, code similarity, and the per-student, per-exercise table
    (sortable); last, the regrade requests students filed.

    Every value from the gradebook or the results (ids, names, exercise names, diagnoses, requests) is escaped, and
    the page's Content-Security-Policy allows one script, by its hash (``SORT_SCRIPT``: sorting the tables), and
    nothing else (its pictures are data: URIs, its style inline): nothing a student wrote can run in it even if an
    escape were missed. The page loads nothing from anywhere: it is opened as a local file."""
    from autograder import outputs

    parts = ["<!doctype html><html lang='ko'><head><meta charset='utf-8'>"
             "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; img-src data:; "
             f"style-src 'unsafe-inline'; script-src '{_script_hash(SORT_SCRIPT)}'; base-uri 'none'; "
             "form-action 'none'\"><title>채점 보고서</title>",
             f"<style>{STYLE}</style></head><body>",
             "<h1>어텐션 과목 — 채점 보고서</h1>",
             "<p>표의 제목 칸을 누르면 그 열로 정렬합니다(한 번 더 누르면 반대로). ‘대기’는 사람이 채점할 답(서술형)이 "
             "아직 채점되지 않은 것입니다: 0점이 아니며, grades.csv에서는 빈칸입니다.</p>",
             "<h2>학생별 합계</h2>", overview_html(data)]
    for assignment in data["assignments"]:
        students = [r for r in data["students"] if assignment in r["assignments"]]
        if not students:
            continue
        total = sum(data["exercise_max"].get(assignment, {}).values())
        final = [r["assignments"][assignment]["score"] for r in students
                 if not r["assignments"][assignment].get("pending")]
        waiting = len(students) - len(final)
        late = sum(bool(r["assignments"][assignment]["late"]) for r in students)
        extended = sum(bool(r["assignments"][assignment].get("extension")) for r in students)
        summary = (f"제출 {len(students)}명" + (f", 평균 {statistics.mean(final):.2f} / {total:g}점, 중앙값 "
                                              f"{statistics.median(final):g}점" if final else "")
                   + f", 지각 감점 {late}명, 기한 연장 {extended}명"
                   + (f", 수기 채점 대기 {waiting}명 (합계와 분포에서 제외)" if waiting else ""))
        parts.append(f"<h2 id='a-{html.escape(assignment, quote=True)}'>{html.escape(assignment)}</h2>"
                     f"<p>{html.escape(summary)}</p>")
        if final:
            parts.append("<h3>총점 분포</h3>" + histogram_html(final, total))
        parts.append("<h3>어려운 연습 순서 (연습별 점수 분포)</h3>" + difficulty_html(data, assignment))
        parts.append("<h3>가장 자주 진단된 실수</h3>")
        diagnosed = data["diagnoses"].get(assignment, [])[:15]
        parts.append("<table><tr><th>연습</th><th>실수</th><th>학생 수</th></tr>" if diagnosed else "<p>없음.</p>")
        for (exercise, title), count in diagnosed:
            parts.append(f"<tr><td>{html.escape(exercise)}</td><td style='text-align:left'>{html.escape(title)}</td>"
                         f"<td>{count}</td></tr>")
        parts.append("</table>" if diagnosed else "")
        parts.append(review_html(data, assignment))
        report = data.get("similarity", {}).get(assignment)
        if report is not None:
            names = {r["id"]: r["name"] for r in data["students"]}
            parts.append(similarity_html(report, names))
        parts.append("<h3>학생별 점수</h3>" + students_html(data, assignment))
    if "regrades" in data:
        from autograder.feedback import regrade

        parts.append(regrade.requests_html(data["regrades"], data))
    parts.append(f"<script>{SORT_SCRIPT}</script></body></html>")
    outputs.write_text(path, "\n".join(parts))
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


def write_all(data: dict, course_dir: Path, bom: bool = False) -> dict:
    """Every report of ``data`` into ``course_dir``'s ``reports/``, each file replaced whole or not at all."""
    from autograder.feedback import lms

    out = Path(course_dir) / "reports"
    out.mkdir(exist_ok=True)
    return {"grades CSV (Canvas)": lms.write_grades_csv(data, out / "grades.csv", bom=bom),
            "grades CSV (Moodle)": lms.write_moodle_csv(data, out / "grades-moodle.csv", bom=bom),
            "instructor report": write_report(data, out / "report.html"),
            "feedback HTML": Path(course_dir) / "feedback"}


def pending_lines(data: dict) -> list[str]:
    """One line per assignment with grades that wait for a person: who, and that the LMS files leave them blank."""
    lines = []
    for assignment in data["assignments"]:
        waiting = [r["id"] for r in data["students"] if r["assignments"].get(assignment, {}).get("pending")]
        if waiting:
            lines.append(f"{assignment}: {len(waiting)} student(s) wait for manual grading in formgrader "
                         f"({', '.join(waiting[:10])}{', ...' if len(waiting) > 10 else ''}): their {assignment} "
                         "grade is blank in the LMS files until then, not 0")
    return lines


def main(course_dir=".", assignments=None, db_url: str | None = None, bom: bool = False,
         people: list | None = None) -> int:
    """``python -m autograder report``: the per-student table, the grades CSVs (Canvas, Moodle) and report.html (with
    the code similarity of ``autograder.feedback.similarity`` and the students' regrade requests) of a graded course
    directory, written to its ``reports/``.

    An assignment name that the course does not have is refused before anything is read (exit 2, the known names
    listed); a gradebook without a graded submission of the assignments writes nothing (exit 1): the reports already
    in ``reports/`` are kept. ``people``: the hub's roster (``hub.roster.read``, which the command's ``--roster``
    reads), whose numbers and names the LMS files use."""
    import sys

    from autograder import course, names, settings
    from autograder.feedback import regrade, similarity

    names.require("assignment", assignments or [], settings.load().assignments, "course_config.py")
    course_dir = Path(course_dir).resolve()
    assignments = assignments or settings.load().assignments
    db_url = course.gradebook_url(course_dir, db_url)
    data = collect_grades(db_url, assignments, course_dir, people)
    if not any(r["assignments"] for r in data["students"]):
        print(f"error: no graded submission of {', '.join(assignments)} in the gradebook {db_url}: nothing written "
              f"(the files in {course_dir / 'reports'} are kept). Grade first: python -m autograder autograde "
              "ASSIGNMENT", file=sys.stderr)
        return 1
    data["similarity"] = similarity.for_course(course_dir, assignments)
    data["regrades"] = regrade.collect_requests(course_dir)
    outputs = write_all(data, course_dir, bom=bom)
    print(table(data))
    for label, path in outputs.items():
        print(f"{label}: {path}")
    for assignment, report in data["similarity"].items():
        print(f"similarity {assignment}: " + similarity.summary(report))
    for line in pending_lines(data):
        print(f"pending: {line}")
    if data["regrades"]:
        print(f"regrade requests: {sum(len(f.requests) for f in data['regrades'])} from "
              f"{len(data['regrades'])} student(s) (report.html, section 재채점 요청)")
    return 0
