"""The real nbgrader commands with the course's config: generate, autograde (links among the submitted files too),
feedback; release/solutions in sync."""
import csv
import datetime as dt
import html as html_lib
import json
import os
import re
import shutil
import subprocess
import sys

import nbformat
import pytest
from tests.helpers.notebooks import with_code
from tests.submission.test_submitted_files import SECRET   # what a root-only file holds

from autograder import course, scores
from autograder.graders import registry
from autograder.graders.registry import exercises_of
from autograder.grade import grade_notebook
from autograder.messages import Label, Reason

ASSIGNMENTS = [a for a in course.settings.course()["assignments"] if (course.ROOT / "source" / a).exists()]
SEED = 20261129


def normalised(path):
    """What must match between committed and regenerated notebooks: cells' type, source and nbgrader metadata."""
    nb = nbformat.read(str(path), as_version=4)
    return [(c.cell_type, c.source, json.dumps(c.metadata.get("nbgrader", {}), sort_keys=True)) for c in nb.cells]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """release/ and solutions/ made from source/ as `python -m autograder build` makes them, but for the solutions'
    outputs: what is compared with the committed notebooks (``normalised``) holds no outputs, and the answer keys
    run top to bottom where they are graded (the graders' test_solution_gets_full_marks, the autograde below), so
    generate_solution does not execute them here (48 s of kernels for the five assignments on an idle machine; its
    execution allows errors, nbgrader's ``Execute.allow_errors``, so an error in a key never failed this fixture)."""
    work = course.scratch_course(tmp_path_factory.mktemp("course") / "course", ASSIGNMENTS)
    for assignment in ASSIGNMENTS:
        course.generate(work, assignment, solution=False)
        course.nbgrader("generate_solution", assignment, "--force", "--Execute.enabled=False", cwd=work,
                        env=course.course_env(work))
    return work


@pytest.mark.slow
@pytest.mark.parametrize("folder", ["release", "solutions"])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_committed_notebooks_are_up_to_date(generated, root, assignment, folder):
    fresh = sorted(p.relative_to(generated / folder) for p in (generated / folder / assignment).rglob("*")
                   if p.is_file())
    kept = sorted(p.relative_to(root / folder) for p in (root / folder / assignment).rglob("*") if p.is_file())
    assert kept == fresh, f"{folder}/{assignment} is out of date: run `python -m autograder build`"
    for rel in fresh:
        if rel.suffix == ".ipynb":
            assert normalised(root / folder / rel) == normalised(generated / folder / rel), \
                f"{folder}/{rel} is out of date with source/: run `python -m autograder build`"


@pytest.mark.slow
def test_solutions_carry_outputs_and_no_hidden_material(root):
    for assignment in ASSIGNMENTS:
        nb = nbformat.read(str(root / "solutions" / assignment / f"{assignment}.ipynb"), as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert any(c.outputs for c in code), f"solutions/{assignment} was not executed"
        text = json.dumps(nb)
        assert "MARK SCHEME" not in text and "autograder.graders" not in text


# Catalogue mistakes whose exercises lose part of their points at SEED: 0.4167 of causal_mask's 2 (tests of 1/6 of
# a point), 0.4375 of additive_attention's, 0.7 of apply_rope's, 1.5 and 2.5: scores with more decimals than two.
PARTIAL = ("causal_top_left", "additive_mask_after_softmax", "softmax_no_max_subtraction", "sdpa_weights_unmasked",
           "rope_positions_from_first")


@pytest.fixture(scope="module")
def partial(generated):
    """The answer key with the PARTIAL mistakes in place of their exercises' solutions."""
    mistakes = {m.id: (name, m.source) for name in exercises_of("attention") for m in registry.RECORDS[name].mistakes}
    key = nbformat.read(str(generated / "solutions" / "attention" / "attention.ipynb"), as_version=4)
    path = generated / "partial.ipynb"
    nbformat.write(with_code(key, dict(mistakes[m] for m in PARTIAL)), str(path))
    return path


def submit_links(course_dir, root, secret_folder):
    """Students whose submitted files are links (run as root, as grading runs): ``honest`` (the answer key, a plain
    file of theirs and links to a root-only file and its folder), ``linker`` (their notebook a link to honest's) and
    ``hard`` (a hard link to another file, e.g. another student's on the server)."""
    secret = secret_folder / "shadow"
    secret.write_text(SECRET)
    secret.chmod(0o600)
    key = root / "solutions" / "attention" / "attention.ipynb"
    sub = course_dir / "submitted"
    honest = sub / "honest" / "attention"
    honest.mkdir(parents=True)
    shutil.copy(key, honest / "attention.ipynb")
    (honest / "timestamp.txt").write_text("2026-12-01 10:00:00.000000 UTC")
    (honest / "data.txt").write_text("a plain file of the student's")
    (honest / "shadow.html").symlink_to(secret)       # would be released as feedback HTML
    (honest / "shadow.txt").symlink_to(secret)
    (honest / "secrets").symlink_to(secret.parent)     # a linked folder
    linker = sub / "linker" / "attention"
    linker.mkdir(parents=True)
    (linker / "attention.ipynb").symlink_to(honest / "attention.ipynb")
    hard = sub / "hard" / "attention"
    hard.mkdir(parents=True)
    shutil.copy(key, hard / "original.ipynb")
    os.link(hard / "original.ipynb", hard / "attention.ipynb")


@pytest.fixture(scope="module")
def autograded(generated, partial, root, tmp_path_factory):
    """Plain ``nbgrader autograde`` and ``generate_feedback`` (as formgrader runs them) on one class: the answer key,
    the blank release and the partial notebook, the partial notebook twice: on time, and an hour past the due date
    (one started day: the course's late penalty); and the students of ``submit_links``."""
    from nbgrader.api import Gradebook

    assignment = "attention"
    due = dt.datetime.strptime(course.settings.course()["due_dates"][assignment], "%Y-%m-%d %H:%M:%S %z")
    with Gradebook(course.course_env(generated)["COURSE_DB_URL"], course.settings.course()["course_id"]) as gb:
        gb.update_or_create_assignment(assignment, duedate=due.astimezone(dt.timezone.utc).replace(tzinfo=None))
    late = generated / "submitted" / "partial_late" / assignment
    late.mkdir(parents=True)
    (late / "timestamp.txt").write_text((due + dt.timedelta(hours=1)).astimezone(dt.timezone.utc)
                                        .strftime("%Y-%m-%d %H:%M:%S UTC"))
    submit_links(generated, root, tmp_path_factory.mktemp("rootonly"))
    course.autograde(generated, assignment, {
        "answer_key": generated / "solutions" / assignment / f"{assignment}.ipynb",
        "blank": generated / "release" / assignment / f"{assignment}.ipynb",
        "partial": partial, "partial_late": partial,
    }, extra=[f"--HiddenGraders.seed={SEED}"])
    course.nbgrader("generate_feedback", assignment, "--force", cwd=generated, env=course.course_env(generated))
    return generated


def test_every_visible_check_lets_run_all_go_on(root):
    """A grade cell raises while its exercise is not done (the Korean verdict): each is tagged "raises-exception",
    so JupyterLab's Run All Cells goes on past it and a student sees every exercise's verdict, not only the first."""
    untagged = [f"{assignment}: {c.metadata.nbgrader.grade_id}" for assignment in ASSIGNMENTS
                for c in nbformat.read(str(root / "release" / assignment / f"{assignment}.ipynb"), as_version=4).cells
                if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
                and "raises-exception" not in c.metadata.get("tags", [])]
    assert not untagged, f"grade cells without the \"raises-exception\" tag (Run All stops there): {untagged}"


@pytest.mark.slow
def test_autograde_scores_equal_the_cli(autograded):
    scores = course.scores(autograded, "attention")
    key = autograded / "solutions" / "attention" / "attention.ipynb"
    cli = grade_notebook(nbformat.read(str(key), as_version=4), str(key), "attention", seed=SEED)
    assert scores["answer_key"] == (cli.score, cli.max_score) == (cli.max_score, cli.max_score)
    assert scores["blank"] == (0.0, cli.max_score)


@pytest.mark.slow
def test_blank_release_says_not_implemented_per_exercise(autograded):
    nb = nbformat.read(str(autograded / "autograded" / "blank" / "attention" / "attention.ipynb"), as_version=4)
    reports = {c.metadata.nbgrader["grade_id"]: "".join(o.get("text", "") for o in c.outputs)
               for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id", "").startswith("test_")}
    assert set(reports) == {f"test_{e}" for e in exercises_of("attention")}
    for grade_id, text in reports.items():
        assert Reason.NOT_IMPLEMENTED.korean() in text, grade_id


@pytest.mark.slow
def test_feedback_shows_report_not_hidden_source(autograded, root):
    html = html_lib.unescape((autograded / "feedback" / "answer_key" / "attention" / "attention.html").read_text())
    assert "비공개 채점기" in html and "✅" in html
    hidden = [p.read_text() for p in (root / "autograder" / "graders" / "attention").glob("test_*.py")]
    for source in hidden:
        for line in source.splitlines():
            line = line.strip()
            if len(line) > 40 and not line.startswith(('"""', "#", "@pytest", "import", "from")):
                assert line not in html, f"hidden grader source leaked into feedback: {line}"
    assert not re.search(r"expect_close|references\.", html)


@pytest.fixture(scope="module")
def cli_partial(root, partial):
    """``python -m autograder grade --json -`` of the partial notebook, with the gradebook's seed."""
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(partial), "--json", "-", "--seed",
                           str(SEED)], cwd=root, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def formgrader_submission(course_dir, student):
    """What formgrader's pages read of a submission (nbgrader's API with the course's config and patches: the
    total net of the late penalty), and the digits its pages show (``roundToPrecision`` at the course's decimals)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course_dir)).load_config()
    config.CourseDirectory.root = str(course_dir)
    config.CourseDirectory.db_url = course.course_env(course_dir)["COURSE_DB_URL"]
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    return round(api.get_submission("attention", student)["score"], scores.decimals())


@pytest.mark.slow
def test_one_score_wherever_a_person_reads_it(autograded, cli_partial):
    """A partially correct submission: the CLI's JSON, the gradebook's cells and totals, the grades CSV, formgrader
    and the feedback HTML give the same number, to the course's decimals (half up: 0.416667 -> 0.417); late, the
    same number less the penalty, itself to the course's decimals."""
    from nbgrader.api import Gradebook

    from autograder.feedback import instructor, lms

    cli = {e["name"]: e["score"] for e in cli_partial["exercises"]}
    assert cli["causal_mask"] == 0.417 and cli["additive_attention"] == 0.438, cli    # 0.4167 and 0.4375, half up
    assert all(scores.rounded(score) == score for score in cli.values()), cli
    assert [n for n, score in cli.items() if scores.rounded(score, 2) != score], "no score past two decimals"
    assert cli_partial["score"] == scores.rounded(sum(cli.values()))
    assert cli_partial["score"] < cli_partial["max_score"]

    url = course.course_env(autograded)["COURSE_DB_URL"]
    with Gradebook(url) as gb:
        for student in ("partial", "partial_late"):
            cells = {g.name.removeprefix("test_"): g.score
                     for g in gb.find_submission_notebook("attention", "attention", student).grades}
            assert cells == cli, student                                                      # the gradebook
            submission = gb.find_submission("attention", student)
            assert scores.rounded(submission.score) == cli_partial["score"], student
        penalties = {s: gb.find_submission("attention", s).late_submission_penalty for s in ("partial", "partial_late")}
    percent = course.settings.course()["late_penalty"]["percent_per_day"]
    assert penalties == {"partial": 0.0, "partial_late": scores.rounded(cli_partial["score"] * percent / 100)}
    net = {s: scores.rounded(cli_partial["score"] - penalties[s]) for s in penalties}
    assert net["partial"] == cli_partial["score"] and net["partial_late"] < net["partial"]

    data = instructor.collect_grades(url, ["attention"], autograded)                        # the grades CSV
    path = lms.write_grades_csv(data, autograded / "grades.csv")
    rows = {row[2]: row[5] for row in csv.reader(path.open(encoding="utf-8"))}
    assert {s: rows[s] for s in net} == {s: scores.text(v) for s, v in net.items()}
    assert {s: formgrader_submission(autograded, s) for s in net} == net                    # formgrader

    label = Label.SCORE.korean()                                                            # the feedback
    for student in net:
        page = html_lib.unescape((autograded / "feedback" / student / "attention" / "attention.html").read_text())
        for name, score in cli.items():
            points = scores.text(registry.RECORDS[name].points)
            assert f"[{name}] {scores.text(score)} / {points}점" in page, (student, name)     # the cell's report
            assert page.count(f"{label}: {scores.text(score)} / {points}") >= 2, (student, name)   # list and cell
        assert f"{label}: {scores.text(net[student])} / {scores.text(cli_partial['max_score'])})" in page   # total
    late_page = html_lib.unescape((autograded / "feedback" / "partial_late" / "attention" / "attention.html")
                                  .read_text())
    assert f"{label}: -{scores.text(penalties['partial_late'])}" in late_page


def everything_under(folder):
    return {p.relative_to(folder).as_posix(): p for p in folder.rglob("*")}


@pytest.mark.slow
def test_nbgrader_grades_a_linked_notebook_as_blank(autograded):
    scores = course.scores(autograded, "attention")
    assert scores["honest"][0] == scores["honest"][1] > 0, scores
    assert scores["linker"][0] == 0 and scores["hard"][0] == 0, scores
    for student, reason in (("linker", Reason.SYMBOLIC_LINK), ("hard", Reason.HARD_LINK)):
        html = (autograded / "feedback" / student / "attention" / "attention.html").read_text(encoding="utf-8")
        assert html_lib.unescape(reason.korean()) in html_lib.unescape(html), student


@pytest.mark.slow
def test_nbgrader_never_copies_what_a_link_points_to(autograded):
    graded = everything_under(autograded / "autograded" / "honest" / "attention")
    assert "data.txt" in graded                                      # plain files of the student: as before
    assert not {"shadow.html", "shadow.txt", "secrets"} & set(graded), sorted(graded)
    feedback = everything_under(autograded / "feedback" / "honest" / "attention")
    assert set(feedback) <= {"attention.html", "timestamp.txt", "submission_secret.txt"}, sorted(feedback)
    for folder in ("autograded", "feedback"):
        for path in (autograded / folder).rglob("*"):
            assert not path.is_symlink(), path
            if path.is_file():
                assert SECRET not in path.read_text(encoding="utf-8", errors="replace"), path
