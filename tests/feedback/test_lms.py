"""The grades an LMS imports as they are (autograder/feedback/lms.py): the Canvas file read the way Canvas's gradebook
importer reads it, the Moodle file, Excel's byte-order mark, and no cell a spreadsheet would evaluate (a roster name
``=HYPERLINK(...)``) in any CSV the course writes, ``nbgrader export``'s included."""
from __future__ import annotations

import csv
import io
import re
import warnings

import pytest

from autograder import cli
from autograder.feedback import instructor, lms
from tests.helpers.graded_course import FORMULA

# ----------------------------------------------------------------------------- Canvas's importer, as checks
# What Canvas's GradebookImporter (app/models/gradebook_importer.rb) and Assignment.title_and_id do with a file, written
# as code: the header row must start "Student", "ID" and end its student columns with "Section" (after "SIS User ID",
# "SIS Login ID"); every later column that is not a read-only total is an assignment, matched by the id of
# "Title (id)", else by the exact title, else created new; "Points Possible" starts the maxima row; a student is
# found by ID, then SIS User ID, then SIS Login ID, then name; a cell is stripped, a number with a decimal comma read
# with a point, blank or "-" is no grade, "EX" excused, anything else text.
TITLE_AND_ID = re.compile(r"\A(.*)\s\((\d+)\)\Z", re.S)
READ_ONLY = re.compile("Current Score|Current Points|Current Grade|Final Score|Final Points|Final Grade|"
                       "Override Score|Override Grade|Override Status")
SKIPPED_LINE = re.compile(r"^[;, ]+$")
NUMBER = re.compile(r"^-?[0-9.,]+%?$")


def canvas_reads(data: bytes, canvas_assignments: dict[int, str]) -> dict:
    """What Canvas's importer makes of ``data`` in a course whose assignments are ``canvas_assignments``
    (id -> title)."""
    text = data.decode("utf-8")   # Canvas reads the bytes: a byte-order mark stays in the first cell
    first = text.splitlines()[:3]
    counts = {sep: {len(next(csv.reader([line], delimiter=sep))) for line in first} for sep in ";,"}
    semicolon = len(counts[";"]) == 1 and len(counts[","]) == 1 and \
        next(iter(counts[";"])) > next(iter(counts[","]))
    lines = [line for line in text.splitlines(keepends=True) if not SKIPPED_LINE.match(line.rstrip("\r\n"))]
    rows = list(csv.reader(io.StringIO("".join(lines)), delimiter=";" if semicolon else ","))
    header = rows[0]
    assert len(header) > 3 and "Student" in header[0] and "ID" in header[1], f"invalid header row: {header}"
    student_columns = 3
    if re.search(r"SIS\s+Login\s+ID", header[2]):
        student_columns += 1
    elif re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3]):
        student_columns += 2 + bool(re.search(r"Integration\s+ID", header[4]))
    assert "Section" in header[student_columns - 1], f"invalid header row (no Section): {header}"
    by_title = {title: i for i, title in canvas_assignments.items()}
    columns, created = {}, []
    for index, name in enumerate(header[student_columns:], student_columns):
        if READ_ONLY.search(name):
            continue
        match = TITLE_AND_ID.match(name)
        found = int(match.group(2)) if match and int(match.group(2)) in canvas_assignments else by_title.get(name)
        if found is None:
            created.append(match.group(1) if match else name)
            found = f"new:{name}"
        columns[index] = found
    read = {"created": created, "points": {}, "students": []}
    for row in rows[1:]:
        if row and "Points Possible" in row[0]:
            read["points"] = {columns[i]: row[i] for i in columns if row[i]}
            continue
        if all(re.match(r"^\s*(Muted|Manual Posting.*)?\s*$", cell, re.I) for cell in row):
            continue
        grades = {}
        for index, assignment in columns.items():
            cell = row[index].strip() if index < len(row) else ""
            if cell in ("", "-"):
                grades[assignment] = None
            elif NUMBER.match(cell):
                parts = re.split(r"[,.]", cell)
                grades[assignment] = float(".".join(["".join(parts[:-1]), parts[-1]]) if len(parts) > 1 else cell)
            else:
                grades[assignment] = cell   # text: a letter grade, "EX", or a grade Canvas cannot read as points
        read["students"].append({"name": row[0], "id": row[1], "sis_user_id": row[2], "login": row[3],
                                 "section": row[student_columns - 1], "grades": grades})
    return read


CANVAS = {4101: "과제 1: 어텐션 구현", 4102: "과제 4: 퀴즈"}   # the Canvas course's assignments (titled its own way)
IDS = {"attention": 4101, "quiz": 4102}


@pytest.fixture(scope="module")
def read(graded_course_made):
    """The session's graded course as the report reads it (read once; the tests change copies of it only)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return instructor.collect_grades(graded_course_made.db_url, ["attention", "quiz"], graded_course_made.dir)


@pytest.fixture()
def data(read):
    import copy

    return copy.deepcopy(read)


def test_canvas_imports_the_file_as_it_is(data, graded_course_made, tmp_path):
    """With Canvas's assignment ids configured every column lands on its assignment (none created), no text column
    exists, every grade is a number or blank, the SIS User ID is the roster's student number, the Section the
    roster's, and a quiz whose written answers wait for a person is blank (never 0) while its autograded part is
    known."""
    for person in graded_course_made.people:   # the roster's sections, as `report --roster` reads them
        row = next(r for r in data["students"] if r["id"] == person.username)
        row["section"] = "01분반" if person.username < "m" else "02분반"
    path = lms.write_grades_csv(data, tmp_path / "grades.csv", canvas_ids=IDS, section="")
    read = canvas_reads(path.read_bytes(), CANVAS)
    assert read["created"] == [], f"Canvas would create assignments: {read['created']}"
    assert read["points"] == {4101: "27", 4102: "23"}
    students = {s["sis_user_id"]: s for s in read["students"]}
    numbers = {p.number: p for p in graded_course_made.people}
    assert set(students) == set(numbers)                                          # the student numbers, each once
    assert all(isinstance(g, float) or g is None for s in read["students"] for g in s["grades"].values())
    assert students["2026002"]["grades"] == {4101: 24.0, 4102: 22.0}             # written answers graded by hand
    assert students["2026001"]["grades"] == {4101: 27.0, 4102: None}              # quiz: 19 + 4 pending -> blank
    assert students["2026004"]["grades"][4101] == 21.6                           # net of the late penalty
    assert students["2026006"]["grades"] == {4101: None, 4102: None}              # handed in nothing
    assert {s["section"] for s in read["students"]} == {"01분반", "02분반"}
    assert students["2026001"]["login"] == "kimmj@example.ac.kr"


def test_without_ids_the_columns_are_the_names_and_the_section_the_course_default(data, tmp_path):
    path = lms.write_grades_csv(data, tmp_path / "grades.csv", canvas_ids={}, section="어텐션 1분반")
    read = canvas_reads(path.read_bytes(), {7: "attention", 8: "quiz"})   # titled exactly: matched by title
    assert read["created"] == [] and read["points"] == {7: "27", 8: "23"}
    assert {s["section"] for s in read["students"]} == {"어텐션 1분반"}
    renamed = canvas_reads(path.read_bytes(), CANVAS)        # titled otherwise: Canvas would make new ones (documented)
    assert renamed["created"] == ["attention", "quiz"]


def test_the_course_setting_names_canvas_ids_and_refuses_others(course_setting, data, tmp_path):
    from autograder import settings

    course_setting("lms", canvas_assignment_ids={"attention": 4101})
    header = next(csv.reader(lms.write_grades_csv(data, tmp_path / "g.csv").open(encoding="utf-8")))
    assert header[5:] == ["attention (4101)", "quiz"]
    config = tmp_path / "course_config.py"
    text = (settings.ROOT / "course_config.py").read_text(encoding="utf-8")
    config.write_text(text.replace('"canvas_assignment_ids": {}', '"canvas_assignment_ids": {"atention": "x"}'),
                      encoding="utf-8")
    with pytest.raises(settings.ConfigError, match=r"names 'atention', not an assignment of the course"):
        settings.Course.load(config)


def test_the_byte_order_mark_is_there_by_option_and_canvas_still_reads_the_header(data, tmp_path):
    plain = lms.write_grades_csv(data, tmp_path / "plain.csv", canvas_ids=IDS, section="").read_bytes()
    marked = lms.write_grades_csv(data, tmp_path / "bom.csv", bom=True, canvas_ids=IDS, section="").read_bytes()
    assert not plain.startswith(b"\xef\xbb\xbf") and marked == b"\xef\xbb\xbf" + plain
    assert canvas_reads(marked, CANVAS)["created"] == []
    moodle = lms.write_moodle_csv(data, tmp_path / "m.csv", bom=True).read_bytes()
    assert moodle.startswith(b"\xef\xbb\xbfID number,Username,Email address,First name,Last name,attention,quiz")


def test_moodle_rows_carry_the_student_number_and_leave_pending_blank(data, tmp_path):
    rows = list(csv.DictReader(lms.write_moodle_csv(data, tmp_path / "m.csv").open(encoding="utf-8")))
    kim = next(r for r in rows if r["Username"] == "kimmj")
    assert (kim["ID number"], kim["Last name"], kim["First name"], kim["attention"], kim["quiz"]) == \
        ("2026001", "김", "민준", "27", "")


SPREADSHEET_START = ("=", "+", "-", "@", "\t", "\r")


def evaluated(path, encoding="utf-8") -> list[str]:
    """The cells of a CSV a spreadsheet would evaluate as a formula."""
    return [cell for row in csv.reader(path.open(encoding=encoding, newline="")) for cell in row
            if cell.startswith(SPREADSHEET_START) and not re.fullmatch(r"-?\d+(\.\d+)?", cell)]


def test_no_csv_cell_is_a_formula(graded_course, tmp_path, capsys):
    """A roster name ``=HYPERLINK(...)`` is written as text (a leading apostrophe) in grades.csv, the Moodle file and
    nbgrader export's file, and stays escaped in report.html; the student numbers are in both reports."""
    assert cli.main(["report", "--course-dir", str(graded_course.dir), "attention", "quiz"]) == 0
    out = graded_course.dir / "reports"
    for name in ("grades.csv", "grades-moodle.csv"):
        assert evaluated(out / name) == [], name
        cells = [cell for row in csv.reader((out / name).open(encoding="utf-8", newline="")) for cell in row]
        assert "'" + FORMULA in cells, name
    report = (out / "report.html").read_text(encoding="utf-8")
    assert "=HYPERLINK(&quot;http://evil.example" in report and "2026005" in report and "2026001" in report

    from nbgrader.api import Gradebook
    from traitlets.config import Config

    export = tmp_path / "export.csv"
    plugin = lms.CsvExport(config=Config({"ExportPlugin": {"to": str(export)}}))
    with Gradebook(graded_course.db_url) as gb:
        plugin.export(gb)
    rows = list(csv.DictReader(export.open(encoding="utf-8")))
    assert evaluated(export) == [] and {r["last_name"] for r in rows} >= {"'" + FORMULA, "김"}
    assert len(rows) == 2 * len(graded_course.people)   # nbgrader's rows: every student of every assignment


def test_formula_safe_leaves_other_text_alone():
    assert [lms.formula_safe(x) for x in ("김민준", "2026001", "a=b", "", None, "+82", "@x", "\tx", "-1")] == \
        ["김민준", "2026001", "a=b", "", "", "'+82", "'@x", "'\tx", "'-1"]
