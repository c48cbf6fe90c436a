"""The GitHub Actions example (examples/github-actions/grade.yml) keeps secrets and graders away from students
(issue 13, point 4): it runs in the instructors' repository, students' repositories are data."""
from __future__ import annotations

import re

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML (a dependency of jupyter_server) is not installed")

STUDENT_TRIGGERS = {"push", "pull_request", "pull_request_target", "pull_request_review", "pull_request_review_comment",
                    "issue_comment", "issues", "workflow_run", "fork", "watch", "discussion", "discussion_comment",
                    "create", "delete", "release", "check_run", "check_suite", "status", "label", "milestone",
                    "page_build", "gollum", "merge_group", "registry_package", "deployment", "deployment_status",
                    "branch_protection_rule", "public", "project", "project_card", "project_column"}


@pytest.fixture(scope="module")
def workflow(root):
    return yaml.safe_load((root / "examples" / "github-actions" / "grade.yml").read_text(encoding="utf-8"))


def triggers(workflow) -> set[str]:
    on = workflow.get("on", workflow.get(True))   # YAML 1.1 reads the key `on` as True
    return {on} if isinstance(on, str) else set(on)


def steps(workflow):
    for name, job in workflow["jobs"].items():
        for step in job.get("steps", []):
            yield name, job, step


def is_course_checkout(step) -> bool:
    return step.get("uses", "").startswith("actions/checkout") and "repository" not in step.get("with", {})


def test_nothing_a_student_does_starts_it(workflow):
    assert triggers(workflow) <= {"workflow_dispatch", "schedule", "repository_dispatch"}, triggers(workflow)
    assert not triggers(workflow) & STUDENT_TRIGGERS


def test_its_token_can_only_read(workflow):
    assert workflow.get("permissions") == {"contents": "read"}
    for name, job in workflow["jobs"].items():
        permissions = job.get("permissions", {})
        assert permissions in ({}, "read-all") or all(v in ("read", "none") for v in permissions.values()), name


def test_students_repositories_are_checked_out_as_data(workflow):
    student = [(name, job, step) for name, job, step in steps(workflow)
               if step.get("uses", "").startswith("actions/checkout") and "repository" in step.get("with", {})]
    assert student, "the students' repositories are checked out"
    for name, job, step in student:
        options = step["with"]
        assert "matrix." in options["repository"]                  # the roster's repositories, one per job
        assert options.get("persist-credentials") is False        # no token left in the student's .git
        assert options.get("submodules") in (None, False) and options.get("lfs") in (None, False)
        assert options["path"] != "course"
        ordered = job["steps"]
        index = ordered.index(step)
        # links and special files are refused before anything reads the student's files
        refuse = [s for s in ordered[index + 1:] if "-type l" in s.get("run", "")]
        grade = [s for s in ordered if "autograder grade" in s.get("run", "")]
        assert refuse and grade and ordered.index(refuse[0]) < ordered.index(grade[0]), name


def test_no_answer_key_and_no_secret_where_student_code_runs(workflow):
    for name, job, step in steps(workflow):
        if is_course_checkout(step) and "autograder grade" in str(job):
            sparse = step["with"].get("sparse-checkout", "")
            assert "!/solutions/" in sparse and "!/source/" in sparse, "the answer key is not checked out"
            assert step["with"].get("persist-credentials") is False
        text = yaml.safe_dump(step)
        if "secrets." in text:   # a secret only as a checkout's token, never in a script or its environment
            assert step.get("uses", "").startswith("actions/checkout") and "secrets." in step["with"]["token"], step
            assert "secrets." not in yaml.safe_dump({k: v for k, v in step["with"].items() if k != "token"})
        assert "secrets." not in yaml.safe_dump(step.get("env", {}))
        assert not re.search(r"\$\{\{\s*(matrix|github\.event|inputs)\.", step.get("run", "")), \
            f"{name}: an expression pasted into a script (use the environment)"
    assert "secrets." not in yaml.safe_dump({k: v for k, v in workflow.items() if k != "jobs"})
    for name, job in workflow["jobs"].items():
        assert "secrets." not in yaml.safe_dump(job.get("env", {})), name


def test_results_stay_with_the_instructors(workflow):
    for _name, _job, step in steps(workflow):
        uses = step.get("uses", "")
        assert not uses.startswith(("peter-evans/", "stefanzweifel/", "EndBug/")), "nothing is pushed anywhere"
        assert "git push" not in step.get("run", "")


def test_the_grade_step_names_the_assignment(workflow):
    """The notebook is graded as the assignment the run is for: one of another assignment, handed in under this
    one's name, is refused rather than graded against the other's graders and maximum."""
    grading = [step["run"] for _name, _job, step in steps(workflow) if "autograder grade" in step.get("run", "")]
    assert grading and all(re.search(r'--assignment "\$ASSIGNMENT"', run) for run in grading), grading
