"""Grading outside the course's machines adds up (autograder/ci, feedback/exports.py):

* JUnit XML valid against the Jenkins xunit plugin's ``junit-10.xsd`` and Gradescope's results.json against its
  documented format (``tests/helpers/schemas.py``, ``tests/schemas``), for a graded, a late and a not-graded notebook;
* a notebook that cannot be graded (missing, refused) is an explicit 0 with its reason in every file asked for;
* the late penalty on the submission's time, by the course's rule; the assignment a scheduled run grades, by due date;
* GitHub annotations encoded, one per refused file; the class CSV from the jobs' artifacts, nobody left out;
* the grading matrix from GitHub's activity log (a local stand-in of its API);
* the Gradescope package, built by its command and run as Gradescope lays it out (``/autograder``: bubblewrap binds
  a temporary folder there), its results.json checked against the format.
"""
from __future__ import annotations

import csv
import dataclasses
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")

from autograder import cli, scores, settings  # noqa: E402
from autograder.ci import annotations, gradescope, times  # noqa: E402
from autograder.ci.late import Late  # noqa: E402
from autograder.feedback import exports  # noqa: E402
from tests.helpers.schemas import jenkins_junit_xsd  # noqa: E402

xmlschema = pytest.importorskip("xmlschema")
jsonschema = pytest.importorskip("jsonschema")

SCHEMAS = Path(__file__).parent / "schemas"


@functools.cache
def junit_validator():
    """Jenkins xunit's ``junit-10.xsd``, as pytest's source distribution carries it (``tests.helpers.schemas``)."""
    return xmlschema.XMLSchema(str(jenkins_junit_xsd()))


@functools.cache
def gradescope_validator():
    """Gradescope's documented results.json format (``tests/schemas``), itself a valid JSON Schema."""
    schema = json.loads((SCHEMAS / "gradescope-results.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture()
def junit_schema():
    return junit_validator()


@pytest.fixture()
def gradescope_schema():
    return gradescope_validator()


def schema_errors(validator, data) -> list[str]:
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(data)]


def graded_result(review=()):
    """A graded notebook as ``grade_submission`` returns it: one exercise passed, one with a failed test whose
    message holds what a student's exception may hold (a workflow command after a newline, a control character)."""
    from autograder.grade import ExerciseResult, GradeResult
    from autograder.graders.plugin import TestResult

    ok = [TestResult("softmax", f"sums_to_one[{i}]", "확률 분포입니다", 1.0, True, seconds=0.25) for i in range(2)]
    bad = [TestResult("scaled_dot_product_attention", "matches", "참조와 같습니다", 1.5, False,
                      "값이 다릅니다\n::error::full marks \x1b[31m", seconds=1.5),
           TestResult("scaled_dot_product_attention", "shape", "모양", 1.5, True, seconds=0.5)]
    return GradeResult("attention", "attention.ipynb", 7,
                       [ExerciseResult("softmax", 2.0, 2.0, ok),
                        ExerciseResult("scaled_dot_product_attention", 1.5, 3.0, bad)],
                       seconds=4.6, review=list(review))


# ------------------------------------------------------------------------------------------------- JUnit
def test_junit_is_valid_for_jenkins_xunit_and_carries_times(tmp_path, junit_schema):
    late = Late.of(3.5, "attention", "2026-12-09T01:00:00+09:00")
    cases = {"graded": (graded_result(), None), "late": (graded_result(), late),
             "missing": (exports.not_graded("attention", "attention.ipynb", "no such file"), None)}
    for name, (result, penalty) in cases.items():
        path = tmp_path / f"{name}.xml"
        exports.write_junit(result, path, penalty)
        junit_schema.validate(str(path))   # raises, naming the element and the rule, if it is not valid
    root = ET.parse(tmp_path / "graded.xml").getroot()
    suite = root.find("testsuite[@name='scaled_dot_product_attention']")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("time")) == ("2", "1", "0",
                                                                                                    "2.000")
    assert [c.get("time") for c in suite.iter("testcase")] == ["1.500", "0.500"]
    assert root.get("time") == "4.600" and root.get("failures") == "1"
    late_suite = ET.parse(tmp_path / "late.xml").getroot().find("testsuite[@name='late-penalty']")
    props = {p.get("name"): p.get("value") for p in late_suite.iter("property")}
    assert props["days"] == "2" and props["points"] == "0.7" and props["score"] == "2.8/5"
    missing = ET.parse(tmp_path / "missing.xml").getroot()
    (error,) = missing.iter("error")
    assert missing.get("errors") == "1" and "no such file" in error.get("message") and "0점" in error.text
    # the schema refuses what the writer used to write: a <testsuite> without `errors`
    del suite.attrib["errors"]
    ET.ElementTree(root).write(tmp_path / "old.xml", encoding="utf-8", xml_declaration=True)
    with pytest.raises(xmlschema.XMLSchemaValidationError, match="errors"):
        junit_schema.validate(str(tmp_path / "old.xml"))


# ------------------------------------------------------------------------------------------------- Gradescope
def test_gradescopes_results_follow_its_format(gradescope_schema):
    late = Late.of(3.5, "attention", "2026-12-09T01:00:00+09:00")
    result = graded_result(review=["os.system가 쓰였습니다"])
    data = exports.gradescope_results(result, late, visibility="after_published")
    assert schema_errors(gradescope_schema, data) == []
    exercises = [t for t in data["tests"] if t["visibility"] != "hidden"]
    assert [t["visibility"] for t in exercises] == ["after_published"] * 2
    assert [(t["score"], t["max_score"], t["status"]) for t in exercises] == [(2.0, 2.0, "passed"),
                                                                            (1.5, 3.0, "failed")]
    assert exercises[1]["extra_data"] == {"seconds": 2.0, "checks": 2, "passed": 1}
    # the review list is the instructor's: a hidden test worth nothing
    (review,) = [t for t in data["tests"] if t["visibility"] == "hidden"]
    assert review["max_score"] == 0 and "os.system" in review["output"]
    # the score: the tests' total less the late penalty (2 days: 20% of 3.5), the grading's whole seconds
    assert data["score"] == scores.rounded(3.5 - 0.7) and data["execution_time"] == 5
    assert "지각 감점" in data["output"] and data["extra_data"]["late"]["days"] == 2
    missing = exports.gradescope_results(exports.not_graded("attention", "attention.ipynb", "no such file"))
    assert schema_errors(gradescope_schema, missing) == []
    assert missing["score"] == 0 and sum(t["max_score"] for t in missing["tests"]) == 27
    # the format refuses what is not in it: a per-test execution_time, an unknown visibility
    data["tests"][0]["execution_time"] = 1
    data["visibility"] = "public"
    assert len(schema_errors(gradescope_schema, data)) == 2


# ------------------------------------------------------------------------------------------------- explicit 0
@pytest.mark.parametrize("assignment", settings.course()["assignments"])
def test_a_notebook_not_graded_is_every_exercise_at_zero(assignment):
    from autograder.graders import registry

    result = exports.not_graded(assignment, f"{assignment}.ipynb", "why")
    points = sum(r.points for r in registry.of_assignment(assignment)) + \
        sum(q.points for q in registry.questions_of(assignment))
    assert result.score == 0 and result.max_score == points > 0 and result.refused.endswith("why")


def test_the_grade_command_writes_an_explicit_zero_for_a_missing_notebook(tmp_path, capsys):
    files = {name: tmp_path / name for name in ("r.json", "j.xml", "g.json")}
    code = cli.main(["grade", str(tmp_path / "attention.ipynb"), "--json", str(files["r.json"]),
                     "--junit", str(files["j.xml"]), "--gradescope", str(files["g.json"])])
    assert code == 2 and "error: cannot read" in capsys.readouterr().err
    result = json.loads(files["r.json"].read_text(encoding="utf-8"))
    assert result["score"] == 0 and result["max_score"] == 27 and "No such file" in result["refused"]
    assert json.loads(files["g.json"].read_text(encoding="utf-8"))["score"] == 0
    assert ET.parse(files["j.xml"]).getroot().get("errors") == "1"
    # a file whose assignment is unknown gets no made-up result
    assert cli.main(["grade", str(tmp_path / "mine.ipynb"), "--json", str(tmp_path / "x.json")]) == 2
    assert not (tmp_path / "x.json").exists() and "give --assignment" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------- times, late
def test_times_and_the_late_rule():
    assert times.parse("2026-12-07 23:59:00 +0900") == times.parse("2026-12-07T14:59:00Z")
    for bad in ("2026-12-07 23:59:00", "tomorrow"):
        with pytest.raises(times.TimeError):
            times.parse(bad)
    # the course's rule: 10% per started day, at most 100%, nothing off an on-time or zero score
    assert scores.late_penalty(27, 1, 10.0) == (1, 10.0, 2.7)
    assert scores.late_penalty(27, 86400 * 15, 10.0) == (15, 100.0, 27.0)
    assert scores.late_penalty(27, 59, 10.0, grace_minutes=1) == (0, 0.0, 0.0)
    assert scores.late_penalty(0, 86400, 10.0) == (0, 0.0, 0.0)
    on_time = Late.of(27, "attention", "2026-12-07T14:58:59Z")
    assert on_time.days == 0 and on_time.net(27) == 27
    extended = Late.of(27, "attention", "2026-12-09T01:00:00+09:00", due="2026-12-10T00:00:00+09:00")
    assert extended.points == 0


@pytest.mark.parametrize("at, due", [("2026-12-01T00:00:00+09:00", ""), ("2026-12-08T00:30:00+09:00", "attention"),
                                     ("2026-12-15T00:30:00+09:00", "kv_cache"), ("2027-03-01T00:00:00Z", "quiz")])
def test_a_scheduled_run_grades_the_assignment_due_last(at, due, capsys):
    assert cli.main(["ci", "due", "--at", at]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == due
    assert due or "no due date has passed yet" in captured.err


def test_the_grade_command_refuses_a_time_it_cannot_read(tmp_path, capsys):
    assert cli.main(["grade", str(tmp_path / "attention.ipynb"), "--submitted-at", "2026-12-08 10:00"]) == 2
    assert "has no time zone" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------- annotations
def decode(data: str) -> str:
    """How GitHub's runner decodes a workflow command's message (the toolkit's escapeData, reversed)."""
    return data.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def test_every_refused_file_is_annotated_on_its_own_line_encoded(tmp_path, capsys):
    root = tmp_path / "submission"
    (root / "sub").mkdir(parents=True)
    (root / "attention.ipynb").write_text("{}", encoding="utf-8")
    names = ["key.ipynb", "100%\n::error::full marks.ipynb", "sub/line\rbreak", "sub/ok"]
    for name in names[:3]:
        (root / name).symlink_to("/etc/passwd")
    (root / "sub" / "ok").write_text("x")
    os.link(root / "sub" / "ok", root / "sub" / "twin")
    os.mkfifo(root / "fifo")
    assert cli.main(["ci", "refuse", str(root)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6 and all(line.startswith("::warning title=not graded as it is::") for line in lines)
    messages = sorted(decode(line.split("::", 2)[2]) for line in lines)
    assert [m.split(": ")[0] for m in messages] == sorted([*names[:3], "sub/ok", "sub/twin", "fifo"])
    assert sorted(p.name for p in root.rglob("*")) == ["attention.ipynb", "sub"]
    assert annotations.command("notice", "a:b,c", title="x:y,z") == "::notice title=x%3Ay%2Cz::a:b,c"


# ------------------------------------------------------------------------------------------------- the class CSV
def artifact(folder: Path, repository: str, result: dict | None, **submission) -> None:
    folder.mkdir(parents=True)
    (folder / "repository.txt").write_text(repository + "\n", encoding="utf-8")
    if result is not None:
        (folder / "result.json").write_text(json.dumps(result), encoding="utf-8")
    if submission:
        (folder / "submission.json").write_text(json.dumps(submission), encoding="utf-8")


def test_gather_makes_the_class_csv_with_nobody_left_out(tmp_path, capsys):
    late = Late.of(3.5, "attention", "2026-12-09T01:00:00+09:00")
    downloads = tmp_path / "artifacts"
    artifact(downloads / "grade-attention-0" / "results", "org/attention-kim",
             exports.result_json(graded_result(), late), sha="abc123", pushed_at="2026-12-08T16:00:00Z")
    missing = graded_result()   # as ``not_graded`` makes it, for this result's two exercises
    missing.exercises = [dataclasses.replace(e, score=0.0, tests=[]) for e in missing.exercises]
    missing.refused = "attention.ipynb could not be graded (0 points): No such file or directory"
    artifact(downloads / "grade-attention-1" / "results", "org/attention-lee", exports.result_json(missing))
    artifact(downloads / "grade-attention-2" / "results", "org/attention-park", None)   # the job died
    artifact(downloads / "grade-attention-3" / "results", "org/attention-extra", exports.result_json(graded_result()))
    roster = tmp_path / "repositories.txt"
    roster.write_text("# the class\norg/attention-kim 2026001 김민준\norg/attention-lee 2026002\n"
                      "org/attention-park 2026003\norg/attention-choi 2026004  # never cloned\n", encoding="utf-8")
    out = tmp_path / "class"
    code = cli.main(["ci", "gather", str(downloads), "--assignment", "attention", "--roster", str(roster),
                     "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 1 and "2 graded, 1 not graded, 2 no result" in printed, printed
    rows = list(csv.DictReader((out / "ci-results.csv").read_text(encoding="utf-8").splitlines()))
    by = {r["student"]: r for r in rows}
    assert [r["repository"] for r in rows][-1] == "org/attention-extra"       # not in the roster: listed, last
    assert by["2026001"]["status"] == "graded" and by["2026001"]["score"] == "2.8"
    assert by["2026001"]["late_points"] == "0.7" and by["2026001"]["commit"] == "abc123"
    assert by["2026002"]["status"] == "not graded" and by["2026002"]["score"] == "0"
    assert "No such file" in by["2026002"]["reason"]
    assert by["2026003"]["status"] == by["2026004"]["status"] == "no result"
    assert all(r["max_score"] == "5" for r in rows)
    # the grade sheet: every student of the roster with a number, a missing result as an explicit 0
    sheet = list(csv.reader((out / "grades.csv").read_text(encoding="utf-8").splitlines()))
    header, points = sheet[0], sheet[1]
    column = header.index("attention")
    students = {line[2]: line[column] for line in sheet[2:]}
    assert points[column] == "5"
    assert students == {"2026001": "2.8", "2026002": "0", "2026003": "0", "2026004": "0", "attention-extra": "3.5"}


def test_gather_refuses_a_roster_it_cannot_read(tmp_path, capsys):
    roster = tmp_path / "r.txt"
    roster.write_text("org/a\norg/A\n", encoding="utf-8")
    assert cli.main(["ci", "gather", str(tmp_path), "--assignment", "attention", "--roster", str(roster),
                     "--out", str(tmp_path / "o")]) == 2
    assert "listed twice" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------- push times
class GitHubStandIn(BaseHTTPRequestHandler):
    """The three GET endpoints of GitHub's REST API that ``ci pushes`` reads, answering as GitHub documents them."""

    repos = {"org/pushed": {"default_branch": "main", "activity": [
                 {"after": "c2", "timestamp": "2026-12-08T15:10:00Z", "activity_type": "force_push",
                  "ref": "refs/heads/main"}]},
             "org/template": {"default_branch": "trunk", "activity": [],
                              "head": {"sha": "c0", "commit": {"committer": {"date": "2026-11-30T00:00:00Z"}}}}}
    seen: list = []

    def do_GET(self):  # noqa: N802 - http.server's name
        from urllib.parse import parse_qs, urlparse

        url = urlparse(self.path)
        self.seen.append((url.path, parse_qs(url.query), self.headers.get("Authorization")))
        parts = url.path.strip("/").split("/")
        repo = self.repos.get("/".join(parts[1:3])) if parts[0] == "repos" else None
        body = None
        if repo and len(parts) == 3:
            body = {"default_branch": repo["default_branch"]}
        elif repo and parts[3:] == ["activity"]:
            body = repo["activity"]
        elif repo and parts[3:4] == ["commits"] and parts[4:] == [repo["default_branch"]]:
            body = repo["head"]
        payload = json.dumps(body if body is not None else {"message": "Not Found"}).encode()
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def test_the_matrix_grades_the_pushed_commit_at_its_push_time(tmp_path, monkeypatch, capsys):
    server = ThreadingHTTPServer(("127.0.0.1", 0), GitHubStandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        roster = tmp_path / "repositories.txt"
        roster.write_text("org/pushed 2026001\norg/template 2026002\norg/gone 2026003\n", encoding="utf-8")
        monkeypatch.setenv("GITHUB_API_URL", f"http://127.0.0.1:{server.server_address[1]}")
        monkeypatch.setenv("GH_TOKEN", "read-only-token")
        assert cli.main(["ci", "pushes", str(roster)]) == 0
    finally:
        server.shutdown()
    captured = capsys.readouterr()
    found = {m["repository"]: m for m in json.loads(captured.out)}
    assert found["org/pushed"] == {"repository": "org/pushed", "student": "2026001", "sha": "c2",
                                        "pushed_at": "2026-12-08T15:10:00Z", "time_source": "push", "error": ""}
    assert (found["org/template"]["sha"], found["org/template"]["time_source"]) == ("c0", "commit")
    assert found["org/gone"]["sha"] == "" and "404" in found["org/gone"]["error"]
    assert "::warning title=no push time::org/gone" in captured.err
    activity = [q for path, q, _ in GitHubStandIn.seen if path == "/repos/org/pushed/activity"]
    assert activity == [{"ref": ["refs/heads/main"], "per_page": ["1"], "direction": ["desc"]}]
    assert {auth for *_, auth in GitHubStandIn.seen} == {"Bearer read-only-token"}


# ------------------------------------------------------------------------------------------------- Gradescope
def test_the_gradescope_package_holds_what_it_runs_and_no_answer_key(tmp_path):
    written = gradescope.build("attention", tmp_path / "pkg", zip_path=tmp_path / "autograder.zip")
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        names = set(archive.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}
    assert {"setup.sh", "run_autograder", "gradescope.json", "requirements.txt", "course_config.py",
            "autograder/ci/gradescope.py", "autograder/graders/attention/test_softmax.py",
            "release/attention/attention.ipynb"} <= names, sorted(names)[:20]
    assert len(names) == len(written)
    assert not [n for n in names if n.startswith(("solutions/", "source/", "tests/", ".venv/")) or "__pycache__" in n]
    assert modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111
    setup = (tmp_path / "pkg" / "setup.sh").read_text(encoding="utf-8")
    assert subprocess.run(["bash", "-n", str(tmp_path / "pkg" / "setup.sh")]).returncode == 0
    assert gradescope.TORCH_CPU_INDEX in setup and "torch.version.cuda" in setup
    with pytest.raises(FileExistsError):
        gradescope.build("attention", tmp_path / "pkg")
    with pytest.raises(settings.ConfigError, match="unknown assignment"):
        gradescope.build("atention", tmp_path / "other")


def as_gradescope_runs_it(root: Path) -> list[str]:
    """``/autograder/run_autograder`` in a bubblewrap namespace whose ``/autograder`` is ``root`` (Gradescope's
    layout), with the system's files read-only and ``source/.venv`` standing for what ``setup.sh`` installs (this
    checkout's environment: the same pinned packages). This checkout itself is not visible: what runs is the
    package's copy of the course."""
    base = Path(os.path.realpath(sys.base_prefix))
    args = ["bwrap", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for top in ("lib", "lib64", "bin", "sbin"):
        target = os.readlink(f"/{top}") if os.path.islink(f"/{top}") else None
        args += ["--symlink", target, f"/{top}"] if target else (["--ro-bind", f"/{top}", f"/{top}"]
                                                                   if os.path.isdir(f"/{top}") else [])
    if not str(base).startswith("/usr/"):
        args += ["--ro-bind", str(base), str(base)]
    return args + ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run",
                   "--bind", str(root), "/autograder",
                   "--ro-bind", str(Path(sys.prefix)), "/autograder/source/.venv",
                   "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp",
                   "--setenv", "KERAS_BACKEND", "torch", "--chdir", "/autograder", "--", "/autograder/run_autograder"]


# A message that tries every way out of a CI log line: a GitHub workflow command after a newline, a carriage return,
# leading blanks and a line separator, a terminal escape (the window's title), NUL and vertical tab (characters XML
# 1.0 does not allow).
HOSTILE = ("\\n::error file=grade.yml,line=1::full marks\\n::add-mask::seed\\r  ::warning::w\\u2028::stop-commands::x"
           "\\n##[error]old\\n##vso[task.complete result=Succeeded]\\x1b]0;title\\x07\\x00\\x0b end")
LOUD = f"""
HOSTILE = '{HOSTILE}'
print(HOSTILE)
import sys
print(HOSTILE, file=sys.stderr)
raise RuntimeError(HOSTILE)
"""
RAISING_SOFTMAX = f"""def softmax(x, axis=-1):
    raise ValueError('{HOSTILE}')
"""
COMMAND = re.compile(r"^\s*(::|##\[|##vso\[)")


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_the_gradescope_package_grades_as_gradescope_lays_it_out(tmp_path, gradescope_schema):
    """The package built by its command, unpacked where Gradescope puts it, run as Gradescope runs it: a late
    notebook whose text tries every way out of a log line (its softmax raises with it, a cell prints it) is graded
    with its penalty, nothing of its text starts a workflow command or reaches the log as a control character, and
    results.json follows Gradescope's format; then no notebook at all is an explicit 0."""
    from tests.helpers import minimal

    package = tmp_path / "autograder.zip"
    assert cli.main(["gradescope", "build", "attention", "--out", str(tmp_path / "pkg"), "--zip", str(package),
                     "--visibility", "after_due_date"]) == 0
    layout = tmp_path / "autograder"
    for folder in ("source/.venv", "submission", "results"):
        (layout / folder).mkdir(parents=True)
    with zipfile.ZipFile(package) as archive:           # what Gradescope does with the upload
        archive.extractall(layout / "source")
    for name in ("run_autograder", "setup.sh"):
        (layout / "source" / name).chmod(0o755)
    shutil.copy2(layout / "source" / "run_autograder", layout / "run_autograder")
    minimal.write(minimal.notebook(softmax=RAISING_SOFTMAX, extra=[LOUD]), layout / "submission" / "attention.ipynb")
    # submitted 25 hours after the student's due date (an extension of a day: Gradescope's per-user due date)
    (layout / "submission_metadata.json").write_text(json.dumps({
        "created_at": "2026-12-10T00:59:00.000000+09:00", "assignment": {"due_date": "2026-12-07T23:59:00+09:00"},
        "users": [{"assignment": {"due_date": "2026-12-08T23:59:00.000000+09:00"}}]}), encoding="utf-8")
    run = subprocess.run(as_gradescope_runs_it(layout), capture_output=True, timeout=300)
    out = (run.stdout + run.stderr).decode("utf-8", "replace")
    assert run.returncode == 0, out[-3000:]
    assert "full marks" in out and "total" in out, out[-3000:]   # the message is shown, escaped
    lines = out.replace("\r", "\n").replace("\u2028", "\n").split("\n")
    assert [line for line in lines if COMMAND.match(line)] == [], out[-3000:]
    assert not [c for c in out if ord(c) < 32 and c not in "\n\t"], "control characters reached the log"
    results = json.loads((layout / "results" / "results.json").read_text(encoding="utf-8"))
    assert schema_errors(gradescope_schema, results) == []
    softmax = next(test for test in results["tests"] if test["name"] == "softmax")
    assert softmax["score"] == 0 and "full marks" in softmax["output"], softmax
    before = results["extra_data"]["score_before_late"]
    assert before > 0 and results["extra_data"]["late"]["days"] == 2
    assert results["score"] == scores.rounded(before * 0.8) and isinstance(results["execution_time"], int)
    assert {t["visibility"] for t in results["tests"]} == {"after_due_date"}
    assert "unsandboxed" not in out.lower()
    # no notebook handed in: an explicit 0 with the reason, still a results.json
    (layout / "submission" / "attention.ipynb").unlink()
    run = subprocess.run(as_gradescope_runs_it(layout), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    results = json.loads((layout / "results" / "results.json").read_text(encoding="utf-8"))
    assert schema_errors(gradescope_schema, results) == []
    assert results["score"] == 0 and "attention.ipynb" in results["output"] and len(results["tests"]) == 12


def test_gradescope_finds_a_renamed_notebook(tmp_path):
    submission = tmp_path / "submission"
    (submission / "hw").mkdir(parents=True)
    assert gradescope.find_notebook(submission, "attention") == submission / "attention.ipynb"
    (submission / "hw" / "attention (1).ipynb").write_text("{}")
    assert gradescope.find_notebook(submission, "attention") == submission / "hw" / "attention (1).ipynb"
    (submission / "hw" / "attention.ipynb").write_text("{}")
    assert gradescope.find_notebook(submission, "attention") == submission / "hw" / "attention.ipynb"


def test_gradescope_run_without_a_sandbox_writes_no_results(tmp_path, monkeypatch):
    """Where grading cannot run (here: the grade command fails), no results.json: Gradescope shows the autograder
    failed rather than a grade."""
    (tmp_path / "source").mkdir()
    (tmp_path / "source" / gradescope.CONFIG).write_text('{"assignment": "attention"}', encoding="utf-8")
    monkeypatch.setattr(gradescope.subprocess, "run", lambda *a, **k: SimpleNamespace(returncode=2))
    assert gradescope.run(tmp_path) == 2 and not (tmp_path / "results" / "results.json").exists()
