"""The exercise registry fails closed (issue 24): every list is built from the records, and a record and its grader
come together or grading stops.

Cheap checks on ``registry.check`` with the course's own records and graders, changed one thing at a time;
tests/test_authoring_guide.py adds a whole exercise without its record and sees ``python -m autograder grade`` stop.
"""
from __future__ import annotations

import dataclasses

import pytest

from autograder.graders import forbidden, isolation, plugin, registry
from autograder.graders.exercises import Exercise, Mistake
from autograder.graders.forbidden import Rule, RuleError
from autograder.graders.questions import Question, QuestionError, Written
from autograder.graders.quiz import answer_key
from autograder.graders.registry import RegistryError
from autograder.sandbox.inside.routines import Routine


def graders() -> dict:
    return registry._graded()


def with_record(**changes) -> dict:
    """The course's records with ``softmax``'s record changed."""
    return {**registry.RECORDS, "softmax": dataclasses.replace(registry.RECORDS["softmax"], **changes)}


def test_the_course_fits_and_every_list_comes_from_the_records():
    registry.check(registry.RECORDS, graders())
    assert set(registry.RECORDS) == set(graders())
    assert registry.coded_assignments() == ["attention", "decoder", "kv_cache", "modern"]
    assert sum(r.points for r in registry.of_assignment("attention")) == 27
    assert sum(r.points for r in registry.of_assignment("modern")) == 18
    assert {m.id for m in registry.mistakes_of("decoder")} == {m.id for r in registry.of_assignment("decoder")
                                                                  for m in r.mistakes}
    assert isolation.CALLEES["self_attention"] == registry.record("self_attention").callees
    assert isolation.REFERENCES["softmax"] is registry.record("softmax").answer.compute


def test_a_grader_without_its_record_stops_the_registry(tmp_path):
    grader = tmp_path / "toy" / "test_l2_normalize.py"
    with pytest.raises(RegistryError, match=r"test_l2_normalize\.py has no exercise record: write .*exercises/"
                                            r"l2_normalize\.py"):
        registry.check(registry.RECORDS, {**graders(), "l2_normalize": grader})


def test_a_record_without_its_grader_stops_the_registry():
    toy = Exercise("l2_normalize", assignment="toy", points=1, forbidden=None)
    with pytest.raises(RegistryError, match=r"l2_normalize\.py is the record of an exercise without a grader: "
                                            r"write .*toy/test_l2_normalize\.py"):
        registry.check({**registry.RECORDS, "l2_normalize": toy}, graders())


@pytest.mark.parametrize("changes, error", [
    pytest.param({"assignment": "kv_cache"}, "assignment 'kv_cache', but its grader is", id="other-folder"),
    pytest.param({"points": 0}, "points must be positive", id="no-points"),
    pytest.param({"mistakes": (Mistake("x", "causal_mask", "t", "h", "def causal_mask(): pass"),)},
                 "mistake 'x' is of 'causal_mask'", id="other-exercise-mistake"),
    pytest.param({"callees": ("additive_attention",)}, "callee 'additive_attention' has no answer",
                 id="callee-without-answer"),
    pytest.param({"callees": ("no_such_exercise",)}, "'no_such_exercise' is not another exercise", id="no-record"),
    pytest.param({"callees": ("self_attention",)}, "its callees call it back", id="ladder-back"),
    pytest.param({"forbidden": {"runtime": {"torch:softmax"}, "names": {"softmax"}}},
                 "forbidden must be a Rule of forbidden.py or None", id="rule-as-a-dict"),
])
def test_a_record_that_does_not_fit_stops_the_registry(changes, error):
    records = with_record(**changes)
    if changes.get("callees") == ("self_attention",):   # self_attention asks for softmax: give it an answer
        records["self_attention"] = dataclasses.replace(records["self_attention"],
                                                        answer=records["softmax"].answer)
    with pytest.raises(RegistryError, match=error):
        registry.check(records, graders())


@pytest.mark.parametrize("fields, error", [
    pytest.param({"runtime": {"torch:_softmax"}}, r"rule 'toy': 'torch:_softmax' is not a Routine", id="plain-label"),
    pytest.param({"runtime": {Routine.TORCH_SOFTMAX, "torch:layer_norm"}},
                 r"rule 'toy': 'torch:layer_norm' is not a Routine", id="label-not-a-member"),
    pytest.param({"runtime": "torch:softmax"}, r"rule 'toy': runtime must be a set, not the string", id="runtime-str"),
    pytest.param({"names": "softmax"}, r"rule 'toy': names must be a set, not the string 'softmax'", id="names-str"),
    pytest.param({"names": {"softmax", "soft max"}}, r"rule 'toy': 'soft max' is not a name", id="not-a-name"),
    pytest.param({"name": "toy rule"}, r"rule 'toy rule': its name must be an identifier", id="bad-rule-name"),
])
def test_a_malformed_rule_is_refused_naming_it(fields, error):
    """A rule is checked where it is declared: a label the monitor never writes, a string given for a set or a name
    that is not one stops the module that declares it, naming the rule."""
    with pytest.raises(RuleError, match=error):
        Rule(**{"name": "toy", "runtime": {Routine.TORCH_SOFTMAX}, "names": {"softmax"}, **fields})


def test_the_rules_are_typed_records():
    """Every exercise's rule is a ``Rule`` whose run-time labels are ``Routine`` members, read as plain strings."""
    rules = {r.forbidden for r in registry.RECORDS.values() if r.forbidden is not None}
    assert rules == {forbidden.SOFTMAX, forbidden.ATTENTION, forbidden.CAUSAL, forbidden.ROPE, forbidden.NORM,
                     forbidden.BLOCK, forbidden.RMS_NORM, forbidden.SWIGLU, forbidden.QWEN3_ATTENTION,
                     forbidden.QWEN3_BLOCK}
    for rule in rules:
        assert all(isinstance(label, Routine) for label in rule.runtime)
        assert all(type(label) is str for label in rule.labels)
    assert forbidden.runtime_violations(forbidden.SOFTMAX, ["torch:softmax", "torch:layer_norm"]) == ["torch:softmax"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        forbidden.SOFTMAX.names = frozenset()


@pytest.mark.parametrize("assignment", registry.coded_assignments())
def test_each_catalogue_holds_its_minimums_and_each_grade_cell_its_records_points(assignment):
    """The one check of every coded assignment's catalogue and points: the catalogue holds the registry's minimums
    (``registry.short_catalogue``), its ids are unique, each mistake has a title and a hint and its source defines its
    exercise; the solution notebook's exercises are the records' and its grade cells carry the records' points. (The
    graders' own points are checked against the records by every grading's collection, ``plugin._check_points``.)"""
    from tests.helpers import notebooks

    mistakes = registry.mistakes_of(assignment)
    assert registry.short_catalogue(assignment) == []
    assert len({m.id for m in mistakes}) == len(mistakes)
    for m in mistakes:
        assert m.title and m.hint, m.id
        assert m.function().__name__ == m.exercise, m.id
    points = {e.name: float(e.points) for e in registry.of_assignment(assignment)}
    solution = notebooks.solution_notebook(assignment)
    assert set(notebooks.exercises(solution)) == set(points) == set(registry.exercises_of(assignment))
    assert notebooks.grade_points(solution) == points


def test_every_records_mistakes_are_its_correct_function_rewritten():
    """Mistakes are written one way (issue 51): each record with mistakes holds its correct function once
    (``_TEMPLATE``, the lines mistakes change marked ``# @NAME``) and each mistake's source is that template with some
    of its marked lines rewritten (``exercises.rewritten``), never a source written out again; the template defines
    the exercise and every mistake changes it."""
    import importlib
    import re
    from pathlib import Path

    import autograder.graders.exercises as exercises

    written_out = re.compile(r"\bsource=\s*(\'\'\'|\"\"\")")
    with_mistakes = [e for a in registry.coded_assignments() for e in registry.of_assignment(a) if e.mistakes]
    seen = 0
    for path in sorted(Path(exercises.__file__).parent.glob("*.py")):
        if path.name == "__init__.py":
            continue
        module = importlib.import_module(f"autograder.graders.exercises.{path.stem}")
        if not module.EXERCISE.mistakes:
            continue
        seen += 1
        assert not written_out.search(path.read_text(encoding="utf-8")), f"{path.name}: a mistake's source written out"
        correct = exercises.rewritten(module._TEMPLATE)                # the markers removed, nothing rewritten
        defined: dict = {}
        exec(compile(correct, path.name, "exec"), {}, defined)
        assert module.EXERCISE.name in defined, f"{path.name}: _TEMPLATE does not define {module.EXERCISE.name}"
        for m in module.EXERCISE.mistakes:
            assert m.source != correct, f"{m.id}: the correct function, unchanged"
    assert seen == len(with_mistakes), (seen, len(with_mistakes))


def test_a_short_catalogue_says_what_it_lacks(monkeypatch):
    monkeypatch.setitem(registry.MISTAKES_PER_EXERCISE, "attention", 99)
    monkeypatch.setitem(registry.MISTAKES_IN_ALL, "attention", 999)
    monkeypatch.setitem(registry.REQUIRED_MISTAKES, "attention", frozenset({"softmax_no_max_subtraction", "x_y"}))
    lacking = registry.short_catalogue("attention")
    assert len(lacking) == len(registry.of_assignment("attention")) + 2
    first = registry.of_assignment("attention")[0]
    assert lacking[0] == f"{first.name}: {len(first.mistakes)} mistake(s), at least 99"
    assert lacking[-2].endswith("mistakes in all, at least 999")
    assert lacking[-1] == "required mistakes missing: x_y"


def test_a_function_without_a_record_has_no_rule_to_be_graded_by():
    """The forbidden-routine rule is looked up by record: a name without one is an error, never a call without a
    rule (before, an exercise left out of ``ASSIGNMENTS`` was graded with the check silently off)."""
    assert plugin._rule("softmax") is registry.record("softmax").forbidden
    with pytest.raises(RegistryError, match="`l2_normalize` has no exercise record"):
        plugin._rule("l2_normalize")


def test_points_that_do_not_add_up_to_the_record_stop_the_collection():
    """The graders' points of an exercise must be its record's (its grade cell's): 2 for softmax."""
    plugin._check_points([plugin.TestResult("softmax", "a", "", 1.5), plugin.TestResult("softmax", "b", "", 0.5),
                          plugin.TestResult("q1", "q1", "", 1.0)])     # a quiz question has no record: not checked
    with pytest.raises(pytest.UsageError, match=r"the graders of softmax declare 1\.5 points and its exercise "
                                                r"record 2"):
        plugin._check_points([plugin.TestResult("softmax", "a", "", 1.5)])


# ----------------------------------------------------------------------------------------------- the quiz's key
QUESTION = {"name": "q1", "kind": "number", "answer": 64, "atol": 0.0, "points": 1.0, "topic_ko": "주제",
            "explanation_ko": "풀이"}


@pytest.mark.parametrize("fields, error", [
    pytest.param({"name": "question1"}, r"question 'question1': its name must be q1, q2", id="bad-name"),
    pytest.param({"kind": "text"}, r"question 'q1': kind must be one of", id="unknown-kind"),
    pytest.param({"kind": "choice", "answer": "E"}, r"question 'q1': a choice's answer must be one of", id="letter"),
    pytest.param({"answer": "576"}, r"question 'q1': a number's answer must be a finite int or float, not '576'",
                 id="number-as-text"),
    pytest.param({"answer": float("nan")}, r"question 'q1': a number's answer must be", id="nan"),
    pytest.param({"atol": -0.5}, r"question 'q1': atol must be a finite number >= 0", id="negative-atol"),
    pytest.param({"kind": "choice", "answer": "B", "atol": 0.5}, r"question 'q1': a choice has no tolerance",
                 id="choice-with-atol"),
    pytest.param({"points": 0}, r"question 'q1': points must be positive", id="no-points"),
    pytest.param({"explanation_ko": " "}, r"question 'q1': explanation_ko must be a non-empty string",
                 id="no-explanation"),
])
def test_a_malformed_question_is_refused_naming_it(fields, error):
    with pytest.raises(QuestionError, match=error):
        Question(**{**QUESTION, **fields})


def test_a_question_states_its_tolerance():
    """The tolerance is the record's (0.0 unless the question states one), never a default at the grader."""
    assert Question(**{**QUESTION, "kind": "choice", "answer": "B", "atol": 0.0}).atol == 0.0
    assert registry.question("q1").atol == 0.001 and registry.question("q3").atol == 0.0
    assert [q.name for q in registry.questions_of("quiz")] == [f"q{i}" for i in range(1, 20)]
    assert registry.questions_of("attention") == []
    with pytest.raises(QuestionError, match=r"written answer 'written_1': points must be positive"):
        Written("written_1", points=0, topic_ko="주제")


def test_an_unknown_question_has_no_record():
    with pytest.raises(RegistryError, match="quiz question `q20` has no record in an answer key"):
        registry.question("q20")


@pytest.mark.parametrize("change, error", [
    pytest.param(lambda qs: qs[:4] + qs[5:], r"quiz question 'q5' is missing", id="missing"),
    pytest.param(lambda qs: qs + qs[-1:], r"quiz question 'q19' is given twice", id="twice"),
    pytest.param(lambda qs: qs[1:2] + qs[:1] + qs[2:], r"the quiz questions are out of order: q2, q1", id="order"),
    pytest.param(lambda qs: qs[:-1] + ({"name": "q19"},), r"QUESTIONS must be a tuple of Question records",
                 id="a-dict"),
])
def test_a_key_that_does_not_fit_stops_the_registry(change, error):
    key = registry.KEY
    registry.check_key(key, tuple(registry.questions_of("quiz")), answer_key.WRITTEN)   # the course's key fits
    with pytest.raises(RegistryError, match=error):
        registry.check_key(key, change(tuple(registry.questions_of("quiz"))), answer_key.WRITTEN)


# ----------------------------------------------------------------------------------------------- graders' declarations
def test_every_grader_declares_what_it_is_compared_with():
    registry.check_graders(graders())
    softmax = registry.declared(graders()["softmax"])
    assert softmax["REFERENCES"] == ("float64 torch.softmax", "keras.ops.softmax")
    assert set(softmax["TOLERANCES"]) == {"STUDENT_VS_KERAS", "STABILITY", "FLOAT16", "WORKED_EXAMPLE", "STUDENT"}
    assert "against_gpu" in registry.declared(graders()["scaled_dot_product_attention"])["TOLERANCES"]


def softmax_grader_with(tmp_path, old: str, new: str):
    """The softmax grader's source with ``old`` (once) replaced by ``new``, as a file of its own."""
    source = graders()["softmax"].read_text(encoding="utf-8")
    assert source.count(old) == 1, old
    path = tmp_path / "attention" / "test_softmax.py"
    path.parent.mkdir()
    path.write_text(source.replace(old, new), encoding="utf-8")
    return path


@pytest.mark.parametrize("old, new, error", [
    pytest.param('REFERENCES = ("float64 torch.softmax", "keras.ops.softmax")\n', "",
                 r"test_softmax\.py: it must declare at its top REFERENCES = ", id="no-references"),
    pytest.param('REFERENCES = ("float64 torch.softmax", "keras.ops.softmax")',
                 'REFERENCES = ()', r"it must declare at its top REFERENCES", id="empty-references"),
    pytest.param("TOLERANCES = {", "_TOLERANCES = {", r"test_softmax\.py: it must declare at its top TOLERANCES = ",
                 id="no-tolerances"),
    pytest.param('"STABILITY": "large logits"', '"LOOSE": "large logits"',
                 r"TOLERANCES names LOOSE, which tolerances.py does not define", id="unknown-tolerance"),
    pytest.param('REFERENCES = ("float64 torch.softmax", "keras.ops.softmax")',
                 "REFERENCES = (references.softmax.__doc__,)", r"REFERENCES must be a literal", id="not-a-literal"),
    pytest.param('REFERENCE = references.softmax\n', 'REFERENCE = references.softmax\nGPU_CASES = "sdpa"\n',
                 r"stored GPU cases \(GPU_CASES\) but its TOLERANCES do not name against_gpu", id="gpu-without-tol"),
])
def test_a_grader_without_its_declarations_stops_the_registry(tmp_path, old, new, error):
    with pytest.raises(RegistryError, match=error):
        registry.check_graders({**graders(), "softmax": softmax_grader_with(tmp_path, old, new)})


def test_two_assignments_may_each_have_an_exercise_of_one_name():
    """`decoder` and `modern` each have a `generate` (the contract's name): the second record is
    exercises/modern_generate.py, every lookup by name takes the graded assignment, and a lookup that could mean
    either stops (fail closed) instead of grading with the wrong rule, callees or mistakes."""
    decoder, modern = registry.record("generate", "decoder"), registry.record("generate", "modern")
    assert (decoder.assignment, modern.assignment) == ("decoder", "modern")
    assert registry.RECORDS["generate"] is decoder and registry.RECORDS["modern_generate"] is modern
    assert "decoder_block" in decoder.callees and "qwen3_block" in modern.callees
    assert {m.id for m in registry.diagnosable_mistakes("generate", "modern")} <= {m.id for m in modern.mistakes}
    assert isolation.callees("generate", {"qwen3_block", "decoder_block"}, "modern") == ("qwen3_block",)
    assert registry.record("KVCache", "modern").assignment == "kv_cache"   # a name only one assignment has
    with pytest.raises(RegistryError, match="exercise of decoder, modern"):
        registry.record("generate")
    assert registry.key("modern", "generate", shared=True) == "modern_generate"
