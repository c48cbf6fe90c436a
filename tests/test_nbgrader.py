"""The real nbgrader commands with the course's config: generate, autograde, feedback; release/solutions in sync."""
import html as html_lib
import json
import re

import nbformat
import pytest

from autograder import course
from autograder.graders.registry import exercises_of
from autograder.grade import grade_notebook
from autograder.messages import Reason

ASSIGNMENTS = [a for a in course.settings.course()["assignments"] if (course.ROOT / "source" / a).exists()]
SEED = 20261129


def normalised(path):
    """What must match between committed and regenerated notebooks: cells' type, source and nbgrader metadata."""
    nb = nbformat.read(str(path), as_version=4)
    return [(c.cell_type, c.source, json.dumps(c.metadata.get("nbgrader", {}), sort_keys=True)) for c in nb.cells]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    work = course.scratch_course(tmp_path_factory.mktemp("course") / "course", ASSIGNMENTS)
    for assignment in ASSIGNMENTS:
        course.generate(work, assignment)
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


@pytest.fixture(scope="module")
def autograded(generated):
    assignment = "attention"
    course.autograde(generated, assignment, {
        "answer_key": generated / "solutions" / assignment / f"{assignment}.ipynb",
        "blank": generated / "release" / assignment / f"{assignment}.ipynb",
    }, extra=[f"--HiddenGraders.seed={SEED}"])
    course.nbgrader("generate_feedback", assignment, "--force", cwd=generated, env=course.course_env(generated))
    return generated


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
