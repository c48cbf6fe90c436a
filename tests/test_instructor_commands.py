"""Every instructor command fails loudly and loses nothing (in-process: ``cli.main``, no interpreter started).

A typo (an assignment, a student), a command run outside the course folder, nothing to grade or report: exit 2 (a
name or folder that does not exist, with the known ones) or 1 (nothing to work on), one line on stderr, and no file
written. A report file is replaced whole or not at all (``autograder/outputs.py``). ``autograde`` ends with the class
on one screen; ``k8s`` asks for what it cannot guess."""
from __future__ import annotations

import warnings
from types import SimpleNamespace

import pytest

from autograder import cli, outputs, settings
from autograder.gradebook.worker import Outcome


@pytest.fixture(autouse=True)
def _quiet_sqlalchemy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def reports(course) -> dict:
    return {p.name: p.read_bytes() for p in sorted((course / "reports").glob("*"))}


def test_report_reads_the_hubs_roster_for_the_lms_files(graded_course, tmp_path, capsys):
    """``report --roster FILE``: the hub's roster gives grades.csv each student's section; a roster that cannot be
    read is said (file and line) with exit status 2 and no report written."""
    import csv

    roster = tmp_path / "roster.csv"
    rows = [[p.username, p.number, p.last, p.first, p.email, "student", "01분반" if p.username < "m" else "02분반"]
            for p in graded_course.people]
    with open(roster, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["username", "student_id", "last_name", "first_name", "email", "role", "section"],
                                 *rows])
    assert cli.main(["report", "--course-dir", str(graded_course.dir), "--roster", str(roster)]) == 0
    grades = list(csv.reader(open(graded_course.dir / "reports" / "grades.csv", encoding="utf-8-sig")))
    column = grades[0].index("Section")
    assert {row[column] for row in grades[2:]} == {"01분반", "02분반"}

    (graded_course.dir / "reports" / "grades.csv").unlink()
    roster.write_text("username,student_id,role\nkimmj,2026001,teacher\n", encoding="utf-8")   # no such role
    capsys.readouterr()
    assert cli.main(["report", "--course-dir", str(graded_course.dir), "--roster", str(roster)]) == 2
    assert f"{roster}, line 2: role 'teacher'" in capsys.readouterr().err
    assert not (graded_course.dir / "reports" / "grades.csv").exists()


@pytest.fixture()
def reported(graded_course, capsys):
    """The graded course with its reports written once (what a typo must not replace)."""
    assert cli.main(["report", "--course-dir", str(graded_course.dir)]) == 0
    capsys.readouterr()
    return graded_course


def test_a_typo_in_report_replaces_nothing_and_names_the_assignments(reported, capsys):
    before = reports(reported.dir)
    assert cli.main(["report", "--course-dir", str(reported.dir), "atention"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown assignment 'atention' (did you mean 'attention'?)")
    assert ", ".join(settings.load().assignments) in err
    assert reports(reported.dir) == before and set(before) == {"grades.csv", "grades-moodle.csv", "report.html"}


def test_report_outside_the_course_folder_says_so_and_makes_no_gradebook(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("COURSE_DB_URL", raising=False)
    assert cli.main(["report", "--course-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no gradebook at" in err and "cd into it" in err
    assert list(tmp_path.iterdir()) == []


def test_report_of_an_ungraded_assignment_writes_nothing(reported, capsys):
    before = reports(reported.dir)
    assert cli.main(["report", "--course-dir", str(reported.dir), "kv_cache"]) == 1
    err = capsys.readouterr().err
    assert "no graded submission of kv_cache" in err and "nothing written" in err
    assert reports(reported.dir) == before


def test_a_report_that_fails_half_way_leaves_the_old_one(reported, monkeypatch):
    """The page is built, then written under a temporary name and renamed: a failure while building it (here: in
    the histogram of the second assignment) leaves the old page byte for byte, and no temporary file."""
    from autograder.feedback import instructor

    before = reports(reported.dir)
    calls = []

    def failing(*args, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk full, say")
        return ""

    monkeypatch.setattr(instructor, "histogram_html", failing)
    with pytest.raises(RuntimeError, match="disk full"):
        cli.main(["report", "--course-dir", str(reported.dir)])
    assert reports(reported.dir)["report.html"] == before["report.html"]
    assert sorted(p.name for p in (reported.dir / "reports").iterdir()) == sorted(before)


def test_an_empty_output_never_replaces_a_file(tmp_path):
    kept = tmp_path / "grades.csv"
    kept.write_text("Student,ID\n", encoding="utf-8")
    with pytest.raises(outputs.EmptyOutput, match="came out empty"):
        outputs.write_text(kept, "")
    with pytest.raises(KeyboardInterrupt), outputs.replacing(kept) as fh:
        fh.write("half a file")
        raise KeyboardInterrupt
    assert kept.read_text(encoding="utf-8") == "Student,ID\n" and [p.name for p in tmp_path.iterdir()] == [kept.name]
    outputs.write_text(kept, "new\n")
    assert kept.read_text(encoding="utf-8") == "new\n"


# ----------------------------------------------------------------------------------------------- autograde
@pytest.fixture()
def collected(graded_course):
    """The graded course with attention collected for three students (their submitted/ folders)."""
    for student in ("kimmj", "leesy", "parkdy"):
        (graded_course.dir / "submitted" / student / "attention").mkdir(parents=True)
    return graded_course


@pytest.mark.parametrize("argv, status, said", [
    (["autograde", "atention"], 2, "unknown assignment 'atention' (did you mean 'attention'?)"),
    (["autograde", "attention", "--student", "9999999"], 2,
     "unknown student '9999999'; the 3 known students of attention collected in"),
    (["autograde", "attention", "--student", "kimmj", "--student", "lesy"], 2, "'lesy' (did you mean 'leesy'?)"),
    (["autograde", "kv_cache"], 1, "no submission of kv_cache in"),
    (["autograde", "attention", "--shard", "1of3"], 2, "--shard 1of3: expected i/n with 1 <= i <= n"),
])
def test_autograde_refuses_what_does_not_exist_before_it_starts(collected, capsys, monkeypatch, argv, status, said):
    from autograder.sandbox import bubblewrap

    monkeypatch.setattr(bubblewrap, "sandboxed", lambda: pytest.fail("the sandbox was started"))
    assert cli.main([*argv, "--course-dir", str(collected.dir)]) == status
    err = capsys.readouterr().err
    assert err.startswith("error: ") and said in err, err
    if "9999999" in argv:
        assert "kimmj, leesy, parkdy" in err


def test_autograde_outside_a_course_folder_says_so(tmp_path, capsys):
    assert cli.main(["autograde", "attention", "--course-dir", str(tmp_path)]) == 2
    assert "is not a course folder (no nbgrader_config.py)" in capsys.readouterr().err


def test_autograde_ends_with_the_class_on_one_screen(graded_course, capsys, monkeypatch):
    """What ``autograde`` prints on stdout when done: counts, a histogram of the totals, the statistics, the late
    and extended, the hardest exercises, who waits or needs a look, the next commands; at most 24 lines."""
    from autograder.gradebook import batch

    students = ["choihe", "kimmj", "leesy", "mallory", "parkdy"]
    ran = [Outcome(s, s != "parkdy", 1.0, "boom" if s == "parkdy" else "",
                   ["attention.ipynb: graded as blank: 노트북이 아닙니다"] if s == "leesy" else []) for s in students]
    monkeypatch.setattr(batch, "autograde_class", lambda *a, **kw: ran)
    assert cli.main(["autograde", "attention", "--course-dir", str(graded_course.dir)]) == 1   # one failed
    out = capsys.readouterr().out.splitlines()
    assert 12 <= len(out) <= 24, out
    assert out[0] == "== attention: 5 of 5 submission(s) graded, 1 failed (out of 27 points)"
    bars = [line for line in out if line.startswith("  ") and "-" in line]
    assert len(bars) == 10 and sum(int(line.split()[-1]) for line in bars if line.split()[-1].isdigit()) == 5
    text = "\n".join(out)
    assert "mean 23.32, median 23, lowest 21 (parkdy), highest 27 (1 student(s))" in text
    assert "late: 1 (choihe)" in text and "hardest exercises: softmax 70%, causal_mask 70%" in text
    assert "graded with a note" in text and "leesy" in text and "FAILED" in text and "parkdy" in text
    assert out[-1].startswith("next: nbgrader generate_feedback attention")


# ----------------------------------------------------------------------------------------------- k8s
def test_k8s_asks_for_what_it_cannot_guess(tmp_path, capsys):
    out = tmp_path / "bundle"
    assert cli.main(["k8s", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cannot guess" in err and "--registry:" in err and "--instructor:" in err
    assert cli.main(["k8s", "--out", str(out), "--instructor", "prof"]) == 2
    err = capsys.readouterr().err
    assert "--registry:" in err and "--instructor:" not in err
    assert not out.exists()


def test_the_grade_commands_fail_under_says_why(monkeypatch, capsys, tmp_path):
    """``grade --fail-under X`` exits 1 with a line that says the score and X (tests/test_cli.py runs it whole)."""
    from autograder import grade as grading
    from autograder.sandbox import bubblewrap, nursery
    from tests.helpers import minimal

    result = SimpleNamespace(score=3.5, max_score=5.0, review=[], notebook="attention.ipynb", assignment="attention",
                             seed=1, exercises=[], notebook_errors=[], to_json=lambda: {})
    monkeypatch.setattr(bubblewrap, "sandboxed", lambda: False)
    monkeypatch.setattr(nursery, "shared", lambda sandboxed: None)
    monkeypatch.setattr(grading, "warm_up", lambda *a, **kw: None)
    monkeypatch.setattr(grading, "grade_submission", lambda submission, seed: result)
    notebook = minimal.write(minimal.notebook(), tmp_path / "attention.ipynb")
    assert cli.main(["grade", str(notebook), "--fail-under", "4"]) == 1
    assert capsys.readouterr().err.strip() == "score 3.5 of 5 is below --fail-under 4: exit status 1"
    assert cli.main(["grade", str(notebook), "--fail-under", "3"]) == 0
