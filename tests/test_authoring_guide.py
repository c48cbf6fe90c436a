"""docs/authors/adding-an-exercise.md's steps cannot go stale: this test follows its steps for the toy exercise.

It copies the repository, writes the files and notebook cells exactly as the guide's marked blocks give them
(``<!-- guide: file PATH -->`` and ``<!-- guide: cell GRADE_ID [points=P] -->``: the grader file, the exercise record,
the notebook cells), makes the one registration the guide asks for in words (the new assignment in
``course_config.py``; the exercise itself is registered by its record), builds the assignment with the real
nbgrader (``python -m autograder build toy``) and grades it both ways with ``python -m autograder grade``: the
solution gets full marks; the guide's mistake in the solution cell loses the exercise's points and the feedback
names the mistake. Before the exercise record is written, grading stops with the registry's error.
"""
import json
import os
import re
import shutil
import subprocess
import sys

import nbformat
import pytest

pytestmark = pytest.mark.slow

BLOCK = re.compile(r"<!-- guide: (file|cell) (\S+)(?: points=(\d+))? -->\n```\w*\n(.*?)```", re.S)


def guide_blocks(root):
    text = (root / "docs" / "authors" / "adding-an-exercise.md").read_text(encoding="utf-8")
    blocks = BLOCK.findall(text)
    assert blocks, "docs/authors/adding-an-exercise.md has no marked blocks for the toy exercise"
    return blocks


def repository_copy(root, where):
    files = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        source = root / name
        if source.is_file() and not name.startswith(("release/", "solutions/", "tests/", "benchmarks/")):
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, where / name)
    for assignment in ("attention", "kv_cache", "decoder", "modern", "quiz"):   # detection reads every release
        shutil.copytree(root / "release" / assignment, where / "release" / assignment)
    return where


def replace_once(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path}: the guide's registration point {old!r} is gone"
    path.write_text(text.replace(old, new), encoding="utf-8")


RECORD = "autograder/graders/exercises/l2_normalize.py"


def write_file(repo, name, body):
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_text(body, encoding="utf-8")


def follow_the_guide(root, repo, leave_out=()):
    """Every step of the guide, but the files named in ``leave_out``."""
    cells = [nbformat.v4.new_markdown_cell("# 토이 과제: L2 정규화"), nbformat.v4.new_code_cell("import numpy as np")]
    for kind, name, points, body in guide_blocks(root):
        if kind == "file":
            if name not in leave_out:
                write_file(repo, name, body)
            continue
        grade = name.startswith("test_")
        meta = {"grade": grade, "grade_id": name, "locked": grade, "schema_version": 3, "solution": not grade}
        if grade:
            meta["points"] = int(points)
        cells.append(nbformat.v4.new_code_cell(body.rstrip("\n"), metadata={"nbgrader": meta}))
    (repo / "source" / "toy").mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                                       "language": "python"}})
    nbformat.write(nb, str(repo / "source" / "toy" / "toy.ipynb"))
    # Step 1: the new assignment, which the guide names in words.
    replace_once(repo / "course_config.py", '"assignments": ["attention", "kv_cache", "decoder", "modern", "quiz"],',
                 '"assignments": ["attention", "kv_cache", "decoder", "modern", "quiz", "toy"],')
    replace_once(repo / "course_config.py", '"due_dates": {',
                 '"due_dates": {\n        "toy": "2026-12-21 23:59:00 +0900",')


def autograder(repo, *args):
    env = {**os.environ, "PYTHONPATH": str(repo), "KERAS_BACKEND": "torch"}
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=600)


def autograder_python(repo, code):
    env = {**os.environ, "PYTHONPATH": str(repo), "KERAS_BACKEND": "torch"}
    return subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def graded(repo, notebook):
    proc = autograder(repo, "grade", str(notebook), "--json", "-", "--seed", "7")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout[proc.stdout.index("{"):])


def test_the_guide_adds_an_exercise_that_is_graded_both_ways(root, tmp_path):
    repo = repository_copy(root, tmp_path / "repo")
    follow_the_guide(root, repo, leave_out=[RECORD])

    built = autograder(repo, "build", "toy")
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    release = nbformat.read(str(repo / "release" / "toy" / "toy.ipynb"), as_version=4)
    stub = next(c.source for c in release.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == "solution_l2_normalize")
    assert "raise NotImplementedError" in stub and "np.sqrt" not in stub    # nbgrader cleared the solution

    solution = repo / "solutions" / "toy" / "toy.ipynb"
    # Without its exercise record the grader is refused, loudly, before anything is graded.
    refused = autograder(repo, "grade", str(solution), "--json", "-")
    assert refused.returncode != 0 and not refused.stdout.strip(), refused.stdout[-2000:]
    assert "RegistryError" in refused.stderr and "test_l2_normalize.py has no exercise record: write" in refused.stderr
    assert RECORD in refused.stderr, refused.stderr[-3000:]
    write_file(repo, RECORD, next(body for kind, name, _, body in guide_blocks(root) if name == RECORD))

    right = graded(repo, solution)
    assert right["assignment"] == "toy"
    assert (right["score"], right["max_score"]) == (1.0, 1.0), right

    record = autograder_python(repo, "from autograder.graders.exercises import l2_normalize as r\n"
                                     "print(r.MISTAKES[0].source, end='')")
    assert record.returncode == 0, record.stderr[-3000:]
    mistake_source = record.stdout
    assert "np.sqrt" not in mistake_source and "# @" not in mistake_source, mistake_source   # the template rewritten
    nb = nbformat.read(str(solution), as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "solution_l2_normalize")
    cell.source = mistake_source
    wrong_path = tmp_path / "wrong.ipynb"
    nbformat.write(nb, str(wrong_path))
    wrong = graded(repo, wrong_path)
    exercise = next(e for e in wrong["exercises"] if e["name"] == "l2_normalize")
    assert wrong["score"] < 1.0 and exercise["score"] < exercise["max_score"], wrong
    assert "제곱합의 제곱근을 구하지 않고" in json.dumps(wrong, ensure_ascii=False), wrong
