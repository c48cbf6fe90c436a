"""The instructor's similarity report (issue 21, item 4: ``autograder/feedback/similarity/``), measured on the
demo class: the planted copy (2026029 handed in 2026004's notebook with renamed variables) and the planted paste
(2026005 built two exercises on Keras's ``Attention._calculate_scores``/``_apply_scores``) are found, and nothing
else; the independent implementations (the solution, torch, loops, keras.ops, numpy) stay far below the thresholds.

The class's notebooks are built as the demo builds them (``submissions.class_code``), not graded: similarity reads
code only. The report page of a graded demo class is checked in tests/demo/test_classroom.py (its graded fixture)."""
from __future__ import annotations

import os
import subprocess
import sys
from itertools import combinations

import pytest
from tests.feedback.test_student_html import active

from autograder.demo import roster, submissions
from autograder.feedback import similarity
from autograder.feedback.similarity import fingerprints, routines
from autograder.feedback.instructor import similarity_html
from autograder.graders import forbidden, registry

CODED = tuple(registry.coded_assignments())   # attention, decoder, kv_cache (the quiz's answers are not code)


def independent(assignment: str) -> set[str]:
    """One student of the demo class for each independently written complete answer of ``assignment``: the
    solution and the differently written implementations (tests/implementations/)."""
    first = {}
    for s in roster.ROSTER:
        if s.plans[assignment] == "solution" or s.plans[assignment].startswith("impl:"):
            first.setdefault(s.plans[assignment], s.id)
    return set(first.values())


def planted_pairs(assignment: str) -> set[tuple[str, str]]:
    """(original, copier) of every ``copy:`` plan of the roster."""
    return {tuple(sorted((s.plans[assignment].split(":", 1)[1], s.id))) for s in roster.ROSTER
            if s.plans[assignment].startswith("copy:")}


def planted_pastes(assignment: str) -> set[tuple[str, str]]:
    """(student, library label) of every ``paste:`` plan of the roster."""
    return {(s.id, submissions.PASTED_FROM[s.plans[assignment].split(":", 1)[1]]) for s in roster.ROSTER
            if s.plans[assignment].startswith("paste:")}


def release_cells(assignment: str, root) -> list[str]:
    import nbformat

    nb = nbformat.read(str(root / "release" / assignment / f"{assignment}.ipynb"), as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code"]


@pytest.fixture(scope="module")
def demo_class(root):
    """{assignment: (its code per student, its report)} of the whole demo class, with the course's thresholds."""
    import nbformat

    found = {}
    for assignment in CODED:
        code = submissions.class_code(assignment)
        source = nbformat.read(str(root / "source" / assignment / f"{assignment}.ipynb"), as_version=4)
        report = similarity.compare_class(
            assignment, code, release_cells(assignment, root), registry.exercises_of(assignment),
            [c.source for c in source.cells if c.cell_type == "code"],
            [(m.id, m.source) for m in registry.mistakes_of(assignment)], similarity.Options.from_course())
        print(f"\n[similarity] {assignment}: {similarity.summary(report)}")
        found[assignment] = (code, report)
    return found


def test_the_demo_class_has_planted_copies():
    assert planted_pairs("attention") == {("2026004", "2026029")}
    assert planted_pastes("attention") == {("2026005", "keras:layers.Attention")}
    assert "2026004" in independent("attention") and not {"2026005", "2026029"} & independent("attention")


@pytest.mark.parametrize("assignment", CODED)
def test_the_report_finds_exactly_the_planted_copies(demo_class, assignment):
    report = demo_class[assignment][1]
    assert {(m.left.owner, m.right.owner) for m in report.pairs} == planted_pairs(assignment)
    assert {(m.left.owner, m.right.owner) for m in report.library} == planted_pastes(assignment)


def test_the_renamed_copy_matches_on_every_long_exercise(demo_class):
    code, report = demo_class["attention"]
    matched = {m.exercise: m for m in report.pairs}
    # every exercise of the kerasops implementation with more than min_match filtered characters, and its helpers
    assert {"scaled_dot_product_attention", "multi_head_attention_layer", "apply_rope",
            similarity.OTHER} <= set(matched), sorted(matched)
    assert all(m.similarity == 1.0 for m in matched.values())
    rope = matched["apply_rope"]
    assert (rope.left.owner, rope.right.owner) == ("2026004", "2026029")
    assert rope.left.code != rope.right.code and "theta" in rope.right.code   # the copier renamed the variables


def test_the_paste_is_found_in_spite_of_the_edits(demo_class):
    (match,) = demo_class["attention"][1].library
    assert match.exercise == similarity.OTHER and match.similarity >= 0.6, match.similarity
    student_code, library_code = match.codes()
    assert "Attention._calculate_scores" in library_code and "Attention._apply_scores" in library_code
    assert "<mark>" in student_code and "self." not in student_code   # pasted as functions: self. removed


@pytest.mark.parametrize("assignment", CODED)
def test_independent_implementations_stay_below_the_thresholds(demo_class, assignment, root):
    """Measured without thresholds: the most any two independent implementations share on one exercise (with
    at least min_match characters matched), and the most any of them shares with a library routine."""
    code, report = demo_class[assignment]
    options = similarity.Options.from_course()
    lax = similarity.Options(0.0, 0.0, options.min_match)
    template = release_cells(assignment, root)
    pair = similarity.compare_class(assignment, {s: code[s] for s in independent(assignment)}, template,
                                    registry.exercises_of(assignment), options=lax)
    worst_library = max((m.similarity for m in pair.library), default=0.0)
    worst_pair = max((m.similarity for m in pair.pairs), default=0.0)
    half = similarity.compare_class(assignment, {s: code[s] for s in independent(assignment)}, template,
                                    registry.exercises_of(assignment), options=similarity.Options(0, 0, 60))
    print(f"\n[similarity] {assignment}: independent implementations {sorted(independent(assignment))}: worst pair "
          f"{worst_pair:.2f}, worst library {worst_library:.2f} with >= {options.min_match} characters matched; "
          f"with >= 60: {max((m.similarity for m in half.pairs), default=0):.2f}, "
          f"{max((m.similarity for m in half.library), default=0):.2f}")
    assert worst_pair < options.pair_threshold - 0.15
    assert worst_library < options.library_threshold - 0.15
    assert len(independent(assignment)) >= 4
    assert not {m.left.owner for m in report.answer_key} & (independent(assignment) - solution_students(assignment))


def solution_students(assignment: str) -> set[str]:
    return {s.id for s in roster.ROSTER if s.plans[assignment] == "solution"}


def test_answer_key_code_is_listed_under_the_answer_key(demo_class):
    report = demo_class["kv_cache"][1]
    on_key = {m.left.owner for m in report.answer_key}
    assert solution_students("kv_cache") <= on_key
    assert report.explained > 0   # the solutions' pairs: counted, not listed


def test_template_code_is_nobodys(root):
    """Two students who hand in the release unchanged plus the visible checks copied into cells of their own."""
    release = release_cells("attention", root)
    checks = [c for c in release if "assert" in c][:3]
    report = similarity.compare_class("attention", {"a": release + checks, "b": release + checks}, release,
                                      registry.exercises_of("attention"), release, options=similarity.Options(0, 0, 0))
    assert not report.pairs and not report.library and not report.answer_key
    assert similarity.units_of(release + checks, registry.exercises_of("attention"),
                               similarity.Template.of(release)).keys() <= set(registry.exercises_of("attention"))


def test_every_library_routine_of_the_rules_is_read():
    rules = {label for exercise in registry.RECORDS.values()
             if exercise.forbidden for label in exercise.forbidden.labels}
    # every label is some rule's (all the module's rules, so a rule added later is counted: the causal one was not)
    assert rules <= frozenset().union(*(value.labels for value in vars(forbidden).values()
                                        if isinstance(value, forbidden.Rule)))
    # the guard's own label (a library changed under the watch) names no routine whose source could be copied
    assert {label for label, *_ in similarity.LIBRARY} == rules - {forbidden.TAMPERED} - routines.TOO_SHORT
    lib = similarity.library()
    not_installed = {label for label, package, *_ in similarity.LIBRARY if routines.package_dir(package) is None}
    assert {label for label, _ in lib.missing} == not_installed, lib.missing   # every named routine was found
    assert {p.owner for p in lib.pieces} == rules - not_installed - {forbidden.TAMPERED} - routines.TOO_SHORT
    assert all(p.size() > 200 for p in lib.pieces), [(p.owner, p.size()) for p in lib.pieces]


def test_the_report_is_the_same_in_every_process():
    """copydetect hashes with Python's salted ``hash``; the report's fingerprints must not depend on the process."""
    code = submissions.PASTED["keras_attention"]["additive_attention"]
    here = sorted(int(h) for h in fingerprints.fingerprint(code).hashes)
    script = ("import sys; from autograder.demo import submissions; "
              "from autograder.feedback.similarity import fingerprints; "
              "code = submissions.PASTED['keras_attention']['additive_attention']; "
              "print(sorted(int(h) for h in fingerprints.fingerprint(code).hashes))")
    other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": "12345"}).stdout
    assert here and other.strip() == str(here)


def test_student_code_and_names_are_escaped_in_the_report():
    hostile = ("def softmax(x, axis=-1):\n    s = '</pre><script>document.title=\"x\"</script>'\n"
               "    e = x - x.max(axis=axis, keepdims=True)  # <img src=x onerror=alert(1)>\n"
               "    e = e.exp()\n    total = e.sum(axis=axis, keepdims=True)\n    w = e / total\n"
               "    return w if s else w * 1.0 + 0.0 * total.mean(axis=axis, keepdims=True)\n")
    report = similarity.compare_class("attention", {"<b>a</b>": [hostile], "b": [hostile]}, [],
                                      registry.exercises_of("attention"), options=similarity.Options(0.5, 0.5, 20))
    assert report.pairs
    page = similarity_html(report, {"<b>a</b>": "<script>alert(1)</script>", "b": "<svg onload=alert(1)>"})
    assert not active(page), active(page)
    assert "&lt;/pre&gt;&lt;script&gt;" in page and "&lt;b&gt;a&lt;/b&gt;" in page


def test_a_copy_renames_locals_and_keeps_parameters():
    source = "def f(q, k):\n    # mine\n    scores = q @ k  # (T, T)\n    return [scores for _ in (1,)]\n"
    copied = submissions.renamed(source)
    assert copied == "def f(q, k):\n    logits = q @ k  # (T, T)\n    return [logits for _ in (1,)]\n"
    compile(copied, "<copy>", "exec")


def test_pairs_compare_each_exercise_once():
    a = "def softmax(x, axis=-1):\n" + "".join(f"    x{i} = x.max(axis=axis, keepdims=True) + {i}\n"
                                               for i in range(8)) + "    return x\n"
    report = similarity.compare_class("attention", {"a": [a], "b": [a], "c": [a]}, [],
                                      registry.exercises_of("attention"), options=similarity.Options(0.8, 0.8, 50))
    assert [(m.left.owner, m.right.owner) for m in report.pairs] == list(combinations("abc", 2))
    assert {m.exercise for m in report.pairs} == {"softmax"}


def test_a_huge_cell_is_compared_on_its_beginning():
    """A cell of pasted data does not make the report slow: it is cut, and the report says so."""
    huge = "data = [" + ", ".join(str(i) for i in range(40_000)) + "]\n"
    report = similarity.compare_class("attention", {"a": [huge], "b": [huge]}, [], registry.exercises_of("attention"))
    assert [(s, ex) for s, ex, _ in report.cut] == [("a", similarity.OTHER), ("b", similarity.OTHER)]
    assert report.seconds < 30
    assert "앞의 20,000자만 비교한 코드" in similarity_html(report, {})
