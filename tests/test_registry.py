"""The exercise registry fails closed (issue 24): every list is built from the records, and a record and its grader
come together or grading stops.

Cheap checks on ``registry.check`` with the course's own records and graders, changed one thing at a time;
tests/test_authoring_guide.py adds a whole exercise without its record and sees ``python -m autograder grade`` stop.
"""
from __future__ import annotations

import dataclasses

import pytest

from autograder.graders import forbidden, isolation, mistakes, plugin, registry
from autograder.graders.exercises import Exercise, Mistake
from autograder.graders.forbidden import Rule, RuleError
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
    assert registry.coded_assignments() == ["attention", "decoder", "kv_cache"]
    assert sum(r.points for r in registry.of_assignment("attention")) == 27
    assert {m.id for m in mistakes.of_assignment("decoder")} == {m.id for r in registry.of_assignment("decoder")
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
                     forbidden.BLOCK}
    for rule in rules:
        assert all(isinstance(label, Routine) for label in rule.runtime)
        assert all(type(label) is str for label in rule.labels)
    assert forbidden.runtime_violations(forbidden.SOFTMAX, ["torch:softmax", "torch:layer_norm"]) == ["torch:softmax"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        forbidden.SOFTMAX.names = frozenset()


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
