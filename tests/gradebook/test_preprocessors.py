"""The course's nbgrader preprocessors: one job each, configured in order, and what they hand on is checked."""
import re

import nbformat
import pytest
from traitlets.config.loader import PyFileConfigLoader

from autograder.gradebook import preprocessors
from autograder.gradebook.preprocessors.handoff import Graded, HandoffError, RanInSandbox
from autograder.grade import ExerciseResult, GradeResult
from autograder.graders import plugin

NBGRADER = {"nbgrader": {"assignment": "attention", "notebook": "attention", "student": "kim"}}


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@pytest.mark.parametrize("name", preprocessors.__all__)
def test_each_preprocessor_lives_in_a_module_named_after_it_and_explains_its_options(name):
    cls = getattr(preprocessors, name)
    assert cls.__module__ == f"autograder.gradebook.preprocessors.{snake(name)}"
    assert cls.__doc__
    for trait_name, trait in cls.class_traits(config=True).items():
        assert trait.help, f"{name}.{trait_name} has no help text"


def test_course_config_runs_each_giver_before_its_takers(root):
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    steps = [s.rsplit(".", 1)[-1] for s in config.Autograde.autograde_preprocessors]
    assert steps.index("SandboxedExecute") < steps.index("HiddenGraders") < steps.index("WriteGradeCells") \
        < steps.index("SaveAutoGrades")
    assert steps.index("HiddenGraders") < steps.index("SaveGradeResult")
    assert "autograder.gradebook.preprocessors.RestoreCellMetadata" in config.Autograde.sanitize_preprocessors


def test_a_missing_handoff_names_the_preprocessor_and_the_setting():
    with pytest.raises(HandoffError, match=r"HiddenGraders found nothing from SandboxedExecute .*"
                                           r"SandboxedExecute must come before HiddenGraders in "
                                           r"c\.Autograde\.autograde_preprocessors"):
        RanInSandbox.take({**NBGRADER}, "HiddenGraders")


def test_something_else_in_the_handoff_is_refused():
    resources = {**NBGRADER, RanInSandbox.KEY: ("submission", "process", [])}   # the unchecked tuple of before
    with pytest.raises(HandoffError, match="expected a RanInSandbox from SandboxedExecute .* found a tuple"):
        RanInSandbox.take(resources, "HiddenGraders")
    with pytest.raises(HandoffError, match="expected a Graded from HiddenGraders .* found a RanInSandbox"):
        Graded.find({Graded.KEY: RanInSandbox(None, None, [])}, "WriteGradeCells")


def _release():
    from autograder.submission.notebook import RELEASE

    return nbformat.read(str(RELEASE / "attention" / "attention.ipynb"), as_version=4)


def test_grade_cells_are_not_written_without_the_graders_result():
    """A grade cell left as it is would count as passed by nbgrader: no result is an error, never full marks."""
    with pytest.raises(HandoffError, match="WriteGradeCells found nothing from HiddenGraders"):
        preprocessors.WriteGradeCells().preprocess(_release(), {**NBGRADER})
    with pytest.raises(HandoffError, match="SaveGradeResult found nothing from HiddenGraders"):
        preprocessors.SaveGradeResult().preprocess(_release(), {**NBGRADER})


def test_grade_cells_get_the_report_and_the_clamped_score(tmp_path):
    tests = [plugin.TestResult("softmax", "rows", "행의 합", 1.0, passed=True),
             plugin.TestResult("softmax", "shape", "모양", 1.0, passed=False, message="모양이 다릅니다")]
    result = GradeResult("attention", "attention.ipynb", 7, [ExerciseResult("softmax", 1.0, 2.0, tests)])
    resources = {**NBGRADER}
    Graded(result).put(resources)
    nb, _ = preprocessors.WriteGradeCells().preprocess(_release(), resources)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_softmax")
    points = float(cell.metadata.nbgrader["points"])
    assert [o.output_type for o in cell.outputs] == ["stream", "execute_result"]
    assert "[softmax] 1 / 2점" in cell.outputs[0].text and "모양이 다릅니다" in cell.outputs[0].text
    assert cell.outputs[1].data["text/plain"] == f"{points / 2:g}"
    preprocessors.SaveGradeResult(results_dir=str(tmp_path)).preprocess(nb, resources)
    assert (tmp_path / "attention" / "kim" / "attention.json").exists()


def test_the_graders_never_run_the_notebook_themselves():
    """Without SandboxedExecute before it (nbgrader's own Execute, say), HiddenGraders stops: it does not run the
    submission a second time, outside the process whose outputs the notebook shows."""
    with pytest.raises(HandoffError, match="HiddenGraders found nothing from SandboxedExecute"):
        preprocessors.HiddenGraders(seed=1).preprocess(_release(), {**NBGRADER})


# ------------------------------------------------------------------------------------------------ the review list
HOSTILE_ITEM = "실행 중: `<script>document.title='x'</script>` — 채점 중 감시기가 보고했습니다"


def _reviewed(review):
    result = GradeResult("attention", "attention.ipynb", 7, [], review=list(review))
    resources = {**NBGRADER}
    Graded(result).put(resources)
    nb = _release()
    nb.metadata["autograder"] = {"review": []}   # what a submitted notebook may carry: replaced, never kept
    return preprocessors.RecordReview().preprocess(nb, resources)[0]


def formgrader_view(root, nb) -> str:
    """Formgrader's manual-grading page of ``nb``: the exporter formgrader makes with the course's config, given the
    resources formgrader gives it."""
    from nbconvert.exporters import HTMLExporter

    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    resources = {"assignment_id": "attention", "notebook_id": "attention", "submission_id": "x", "index": 0,
                 "total": 1, "base_url": "", "student": "kim", "last_name": "", "first_name": "",
                 "notebook_path": "/autograded/kim/attention/attention.ipynb"}
    return HTMLExporter(config=config).from_notebook_node(nb, resources=resources)[0]


def test_the_review_list_is_kept_in_the_autograded_notebook_and_shown_in_formgrader(root):
    """Formgrader's view of a flagged submission says so on top, every item escaped; an unflagged one has no note,
    whatever the submitted notebook carried under the course's key."""
    from autograder.gradebook.preprocessors.record_review import review_of

    item = "3번째 코드 셀: `_getframe` — 호출 스택의 프레임을 읽습니다"
    nb = _reviewed([item, HOSTILE_ITEM])
    assert review_of(nb) == [item, HOSTILE_ITEM]
    page = formgrader_view(root, nb)
    assert 'id="course-review"' in page and "검토 필요 (2건)" in page
    assert "`_getframe` — 호출 스택의 프레임을 읽습니다" in page
    assert "<script>document.title" not in page and "&lt;script&gt;document.title=" in page
    assert page.index("course-review") < page.index("test_softmax")   # on top of the notebook

    honest = _reviewed([])
    honest_page = formgrader_view(root, honest)
    assert review_of(honest) == [] and "course-review" not in honest_page


def test_the_report_lists_each_flagged_submission_and_the_csv_only_grades(tmp_path):
    """report.html has a section per flagged submission with what was seen (escaped), the table a mark; the grades CSV
    only the grades (an LMS reads any other column as an assignment); the scores are those of the gradebook,
    unchanged."""
    import csv

    from autograder.feedback import instructor, lms

    def row(student, name, score, review):
        return {"id": student, "name": name, "email": "", "assignments": {"attention": {
            "score": score, "raw": score, "max": 27, "late": 0.0, "needs_manual": False,
            "exercises": {"softmax": 2}, "review": review}}}

    data = {"assignments": ["attention"], "exercise_max": {"attention": {"softmax": 2}}, "diagnoses": {},
            "students": [row("2026001", "김하늘", 27, []), row("2026028", "허예린", 2, [HOSTILE_ITEM])]}
    report = instructor.write_report(data, tmp_path / "report.html").read_text(encoding="utf-8")
    section = report[report.index("검토할 제출물 (1명)"):]
    assert "2026028 허예린: 2 / 2점, 검토 1건" in section and "2026001" not in section.split("</ul>")[0]
    assert report.count("<script") == 1 and f"<script>{instructor.SORT_SCRIPT}</script>" in report   # its own only
    assert "&lt;script&gt;document.title=&#x27;x&#x27;" in section
    rows = list(csv.reader(open(lms.write_grades_csv(data, tmp_path / "grades.csv"), encoding="utf-8")))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "attention"]
    assert [r[-1] for r in rows[1:]] == ["2", "27", "2"] and "<script>" not in str(rows)
    assert "(검토 1건)" in [line for line in instructor.table(data).splitlines() if "2026028" in line][0]
