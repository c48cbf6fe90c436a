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
        refuse = [s for s in ordered[index + 1:] if "autograder ci refuse ../submission" in s.get("run", "")]
        grade = [s for s in ordered if "autograder grade" in s.get("run", "")]
        assert refuse and grade and ordered.index(refuse[0]) < ordered.index(grade[0]), name


def runs_student_files(job) -> bool:
    """Whether a job checks out a student's repository or grades (where a student's files are read or run)."""
    return any(step.get("uses", "").startswith("actions/checkout") and "repository" in step.get("with", {})
               for step in job.get("steps", [])) or "autograder grade" in str(job)


def test_no_answer_key_and_no_secret_where_student_code_runs(workflow):
    for name, job, step in steps(workflow):
        if is_course_checkout(step) and "autograder grade" in str(job):
            sparse = step["with"].get("sparse-checkout", "")
            assert "!/solutions/" in sparse and "!/source/" in sparse, "the answer key is not checked out"
            assert step["with"].get("persist-credentials") is False
        text = yaml.safe_dump(step)
        if "secrets." in text and runs_student_files(job):
            # where a student's files are: a secret only as a checkout's token, never in a script or its environment
            assert step.get("uses", "").startswith("actions/checkout") and "secrets." in step["with"]["token"], step
            assert "secrets." not in yaml.safe_dump({k: v for k, v in step["with"].items() if k != "token"})
        if "secrets." in yaml.safe_dump(step.get("env", {})):
            # the roster job reads GitHub's activity log with it: no student file is there, nothing of one runs
            assert not runs_student_files(job) and "secrets." not in step.get("run", ""), (name, step)
        assert not re.search(r"\$\{\{\s*(matrix|github\.event|inputs)\.", step.get("run", "")), \
            f"{name}: an expression pasted into a script (use the environment)"
    assert "secrets." not in yaml.safe_dump({k: v for k, v in workflow.items() if k != "jobs"})
    for name, job in workflow["jobs"].items():
        assert "secrets." not in yaml.safe_dump(job.get("env", {})), name
    for name, job in workflow["jobs"].items():   # the jobs without student files hold no grader
        if not runs_student_files(job):
            for step in job["steps"]:
                if step.get("uses", "").startswith("actions/checkout"):
                    assert "!/autograder/graders/" in step["with"]["sparse-checkout"], name


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


# ------------------------------------------------------------------------------------------------- what a run grades
def test_a_scheduled_run_grades_the_assignment_due_last(workflow):
    """No assignment is written into the workflow: a manual run's input (checked against the course), else
    ``ci due`` (course_config.py's due dates); every job reads the roster job's choice."""
    (due,) = [s for s in workflow["jobs"]["roster"]["steps"] if s.get("id") == "due"]
    assert "autograder ci due --assignment" in due["run"] and "autograder ci due)" in due["run"]
    assert due["env"] == {"CHOSEN": "${{ inputs.assignment }}"}
    on = workflow.get("on", workflow.get(True))
    assert on["workflow_dispatch"]["inputs"]["assignment"]["default"] == ""
    for name in ("grade", "gather"):
        assert workflow["jobs"][name]["env"]["ASSIGNMENT"] == "${{ needs.roster.outputs.assignment }}", name
    assert "attention" not in yaml.safe_dump({k: v for k, v in workflow.items() if k not in ("on", True)})


def test_the_graded_commit_is_the_pushed_one_and_its_push_time_is_the_submission_time(workflow):
    grade = workflow["jobs"]["grade"]
    assert grade["strategy"]["matrix"] == {"include": "${{ fromJSON(needs.roster.outputs.matrix) }}"}
    (pushes,) = [s for s in workflow["jobs"]["roster"]["steps"] if s.get("id") == "pushes"]
    assert "autograder ci pushes roster/repositories.txt" in pushes["run"]
    (student,) = [s for _, job, s in steps(workflow) if "repository" in s.get("with", {})]
    assert student["with"]["ref"] == "${{ matrix.sha }}"
    (run,) = [s["run"] for s in grade["steps"] if "autograder grade" in s.get("run", "")]
    assert 'late=(--submitted-at "$PUSHED_AT")' in run and '"${late[@]}"' in run


def test_the_class_csv_is_gathered_from_every_job(workflow):
    gather = workflow["jobs"]["gather"]
    assert gather["needs"] == ["roster", "grade"] and gather["if"].startswith("always()")
    (download,) = [s for s in gather["steps"] if s.get("uses", "").startswith("actions/download-artifact")]
    grade_upload = [s for s in workflow["jobs"]["grade"]["steps"] if "upload-artifact" in s.get("uses", "")][0]
    assert download["with"]["pattern"] == "grade-${{ needs.roster.outputs.assignment }}-*"
    assert grade_upload["with"]["name"].startswith("grade-${{ env.ASSIGNMENT }}-")
    assert any("autograder ci gather artifacts" in s.get("run", "") and "--roster roster/repositories.txt" in s["run"]
               for s in gather["steps"])


def step_named(workflow, job: str, words: str) -> str:
    return next(s["run"] for s in workflow["jobs"][job]["steps"] if words in s.get("name", ""))


def test_the_grade_and_refuse_steps_run_as_written(workflow, root, tmp_path):
    """The grade job's own scripts, run by bash in a folder laid out as the job's (``course`` this checkout,
    ``submission`` the student's): links refused and annotated one by one, and a missing notebook graded as an
    explicit 0 with the reason, its repository and push time kept beside it."""
    import json
    import os
    import subprocess

    (tmp_path / "course").mkdir()   # a folder of its own (`cd course && ... ../submission`), holding this checkout
    for entry in root.iterdir():
        (tmp_path / "course" / entry.name).symlink_to(entry)
    submission = tmp_path / "submission"
    submission.mkdir()
    for name in ("a\n::error::x", "b%"):
        (submission / name).symlink_to(root / "solutions")
    env = {**os.environ, "ASSIGNMENT": "attention", "REPOSITORY": "org/attention-kim", "STUDENT": "2026001",
           "SHA": "c2", "PUSHED_AT": "2026-12-08T15:10:00Z", "TIME_SOURCE": "push",
           "PATH": f"{root / '.venv' / 'bin'}:{os.environ['PATH']}"}
    refuse = subprocess.run(["bash", "-euo", "pipefail", "-c", step_named(workflow, "grade", "Refuse links")],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert refuse.returncode == 0 and len(refuse.stdout.splitlines()) == 2, refuse.stdout + refuse.stderr
    assert not list(submission.iterdir())
    graded = subprocess.run(["bash", "-euo", "pipefail", "-c", step_named(workflow, "grade", "Grade")],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    results = tmp_path / "results"
    assert (results / "status.txt").read_text() == "exit status 2\n"
    assert (results / "repository.txt").read_text() == "org/attention-kim\n"
    result = json.loads((results / "result.json").read_text(encoding="utf-8"))
    assert result["score"] == 0 and result["max_score"] == 27 and "attention.ipynb" in result["refused"]
    assert json.loads((results / "submission.json").read_text())["pushed_at"] == "2026-12-08T15:10:00Z"
    assert (results / "junit.xml").is_file() and (results / "results.json").is_file()
