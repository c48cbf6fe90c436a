"""The student's process's policy is declared once (autograder/sandbox/policy.py) and the rules the graders apply
name only what the sandbox can report.

Fast checks, no student code: the forbidden-routine labels of every grader rule are labels the monitor in the
student's process can write (a label it can never write would be a rule that never fires), and both launchers build
the student's environment and limits from the same declarations.
"""
from __future__ import annotations

from autograder.graders import forbidden
from autograder.sandbox import policy
from autograder.sandbox.inside import monitor


def test_every_forbidden_label_is_one_the_monitor_can_report():
    for exercise, rule in forbidden.RULES.items():
        unreportable = sorted(set(rule["runtime"]) - monitor.LABELS)
        assert not unreportable, f"{exercise}: the monitor never reports {unreportable}"


def test_one_environment_and_one_set_of_limits():
    env = policy.environment("/h", "/t")
    assert env == {**policy.ENVIRONMENT, "HOME": "/h", "TMPDIR": "/t",
                   **{k: v for k, v in env.items() if k in policy.PASSED_THROUGH}}
    assert not any(k.startswith("PYTHON") for k in env)   # python -I would ignore them
    limits = policy.Limits.from_course()
    assert limits.rlimits()["RLIMIT_AS"] == limits.memory_mb << 20
    assert set(limits.rlimits()) == {"RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NPROC", "RLIMIT_CORE"}


def test_the_inside_package_is_copied_anew_over_what_a_student_left(tmp_path):
    """A fresh interpreter starts from a copy of ``autograder/sandbox/inside`` in the student's scratch folder: a link
    or a planted module left there under that name by the student's earlier process is removed, never followed."""
    from autograder.sandbox.bubblewrap import INSIDE, copy_inside

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("grader's")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / INSIDE.name).symlink_to(elsewhere)
    copy = copy_inside(scratch)
    assert not copy.is_symlink() and (elsewhere / "keep.txt").read_text() == "grader's"
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in INSIDE.glob("*.py"))
    (copy / "planted.py").write_text("x = 1")
    copy = copy_inside(scratch)
    assert not (copy / "planted.py").exists()
