"""Results of one graded notebook in the formats CI systems read: the CLI's JSON, JUnit XML and Gradescope's
results.json.

- ``write_junit``: JUnit XML as Jenkins' xunit plugin reads it (its ``junit-10.xsd`` as pytest's own tests use it:
  ``tests/helpers/schemas.py``): a ``<testsuite>`` per exercise with ``tests``, ``failures``, ``errors`` and
  ``time``, a ``<testcase>`` per hidden test with its time;
- ``write_gradescope``: Gradescope's ``results.json`` (its documented format: a test per exercise with
  ``visibility``, ``status`` and ``output``, the run's ``execution_time``; the instructor-only review list as a
  ``hidden`` test);
- ``write_json``: the CLI's own JSON (``GradeResult.to_json``);
- ``not_graded``: the result of a notebook that could not be graded at all (missing, not a notebook, another
  assignment's): every exercise 0 with the reason, so that each format still says 0 and why.

Each takes the late penalty (``autograder.ci.late.Late``) where one applies: the score written is net of it.
"""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from autograder import outputs, scores
from autograder.inert import json_safe, xml_text
from autograder.report import exercise_report

# Gradescope's visibility of a test or of the whole result (its documented values): shown at once, after the due
# date, once the instructor publishes the grades, never to the student
VISIBILITIES = ("visible", "after_due_date", "after_published", "hidden")


def _time(seconds: float) -> str:
    """Seconds as JUnit's ``time`` (the xsd's ``SUREFIRE_TIME``: digits and a decimal point, no exponent)."""
    return f"{max(0.0, float(seconds)):.3f}"


def _score(result, late) -> float:
    return late.net(result.score) if late is not None else result.score


def write_junit(result, path, late=None) -> None:
    """One ``<testsuite>`` per exercise, one ``<testcase>`` per hidden test (failures carry the Korean message, the
    test's time its setup and call). A notebook that was not graded is one suite with an ``<error>`` saying why.
    A late penalty is one more suite's properties. Well-formed XML whatever the messages hold (``xml_text``: a
    student's exception message may carry any character)."""
    tests = [t for e in result.exercises for t in e.tests]
    failed = sum(not t.passed for t in tests)
    errors = 1 if result.refused else 0
    suites = ET.Element("testsuites", name=xml_text(f"autograder {result.assignment}"),
                        tests=str(len(tests) + errors), failures=str(failed), errors=str(errors),
                        time=_time(result.seconds))
    if result.refused:
        suite = ET.SubElement(suites, "testsuite", name=xml_text(result.assignment), tests="1", failures="0",
                              errors="1", skipped="0", time=_time(0))
        _properties(suite, {"score": f"0/{scores.text(result.max_score)}"})
        case = ET.SubElement(suite, "testcase", classname=xml_text(result.assignment),
                             name=xml_text(result.notebook or "notebook"), time=_time(0))
        error = ET.SubElement(case, "error", type="not-graded", message=xml_text(result.refused))
        error.text = xml_text("\n".join(result.notebook_errors))
    for exercise in result.exercises:
        if not exercise.tests:
            continue
        suite = ET.SubElement(suites, "testsuite", name=xml_text(exercise.name), tests=str(len(exercise.tests)),
                              failures=str(sum(not t.passed for t in exercise.tests)), errors="0", skipped="0",
                              time=_time(sum(t.seconds for t in exercise.tests)))
        _properties(suite, {"score": f"{scores.text(exercise.score)}/{scores.text(exercise.max_score)}"})
        for test in exercise.tests:
            case = ET.SubElement(suite, "testcase", classname=xml_text(f"{result.assignment}.{exercise.name}"),
                                 name=xml_text(test.name), time=_time(test.seconds))
            if not test.passed:
                failure = ET.SubElement(case, "failure", message=xml_text(test.message or "failed"))
                failure.text = xml_text(test.description)
    if late is not None:
        suite = ET.SubElement(suites, "testsuite", name="late-penalty", tests="0", failures="0", errors="0",
                              skipped="0", time=_time(0))
        _properties(suite, {**{k: str(v) for k, v in late.to_json().items()},
                            "score": f"{scores.text(_score(result, late))}/{scores.text(result.max_score)}"})
    ET.indent(suites)
    with outputs.replacing_path(path) as temporary:   # replaced whole or not at all
        ET.ElementTree(suites).write(temporary, encoding="utf-8", xml_declaration=True)


def _properties(suite, values: dict) -> None:
    properties = ET.SubElement(suite, "properties")
    for name, value in values.items():
        ET.SubElement(properties, "property", name=name, value=xml_text(value))


def gradescope_results(result, late=None, visibility: str = "visible") -> dict:
    """Gradescope's ``results.json`` of ``result``: a test per exercise (its points, ``passed``/``failed``, the
    Korean report, ``visibility``; its time and checks in ``extra_data``), the score net of ``late``, the grading's
    ``execution_time`` (whole seconds), and the review list (what only the instructor should see: escape hatches
    the code names or used) as a ``hidden`` test worth nothing."""
    if visibility not in VISIBILITIES:
        raise ValueError(f"Gradescope's visibility is one of {', '.join(VISIBILITIES)}, not {visibility!r}")
    head = f"{result.notebook} ({result.assignment})" + ("" if result.refused else f", seed {result.seed}")
    notes = [head, *(result.notebook_errors if result.refused else [])]
    if late is not None:
        notes.append(late.korean())
    tests = []
    for number, exercise in enumerate(result.exercises, 1):
        output = exercise_report(exercise, result.notebook_errors)
        if result.refused:
            output += "\n" + "\n".join(result.notebook_errors)
        tests.append({"name": exercise.name, "number": str(number), "score": exercise.score,
                      "max_score": exercise.max_score,
                      "status": "passed" if exercise.score >= exercise.max_score else "failed",
                      "output": output, "output_format": "text", "tags": [result.assignment],
                      "visibility": visibility,
                      "extra_data": {"seconds": round(sum(t.seconds for t in exercise.tests), 3),
                                     "checks": len(exercise.tests),
                                     "passed": sum(t.passed for t in exercise.tests)}})
    if result.review:
        tests.append({"name": "review (instructor only)", "score": 0.0, "max_score": 0.0,
                      "output": "\n".join(f"- {item}" for item in result.review), "output_format": "text",
                      "visibility": "hidden"})
    data = {
        "score": _score(result, late),
        "execution_time": int(round(result.seconds)),
        "output": "\n".join(notes),
        "output_format": "text",
        "visibility": visibility,
        "stdout_visibility": "hidden",
        "extra_data": {"assignment": result.assignment, "seed": result.seed, "score_before_late": result.score,
                       "max_score": result.max_score, **({"late": late.to_json()} if late is not None else {}),
                       **({"refused": result.refused} if result.refused else {})},
        "tests": tests,
    }
    return json_safe(data)


def write_gradescope(result, path, late=None, visibility: str = "visible") -> None:
    """``gradescope_results`` written to ``path`` (JSON that any UTF-8 reader takes, whatever the messages hold)."""
    with outputs.replacing(path) as fh:   # replaced whole or not at all
        json.dump(gradescope_results(result, late, visibility), fh, ensure_ascii=False, indent=2)


def result_json(result, late=None) -> dict:
    """The CLI's JSON: ``GradeResult.to_json``, with the late penalty (``late``) and the score net of it."""
    data = result.to_json()
    if late is not None:
        data.update(score_before_late=data["score"], score=late.net(result.score), late=late.to_json())
    return json_safe(data)


def write_json(result, path, late=None) -> None:
    """``result_json`` to ``path`` ('-': stdout)."""
    text = json.dumps(result_json(result, late), ensure_ascii=False, indent=2)
    if path == "-":
        print(text)
    else:
        outputs.write_text(path, text + "\n")   # replaced whole or not at all


def not_graded(assignment: str, notebook: str, reason, seconds: float = 0.0):
    """The result of a notebook of ``assignment`` that could not be graded at all (``reason``: a ``Message`` of the
    catalogue, or text): every exercise of the assignment (its questions, for the quiz) at 0 of its points, the
    reason in English for the instructor (``refused``) and in Korean for the student (``notebook_errors``)."""
    from autograder.grade import ExerciseResult, GradeResult
    from autograder.graders import registry
    from autograder.messages import Notice

    english, korean = (reason.english, reason.korean) if hasattr(reason, "korean") else (str(reason), str(reason))
    parts = [(r.name, r.points) for r in registry.of_assignment(assignment)] or \
            [(q.name, q.points) for q in registry.questions_of(assignment)]
    order = {name: i for i, name in enumerate(registry.exercises_of(assignment))}
    parts.sort(key=lambda part: order.get(part[0], len(order)))
    exercises = [ExerciseResult(name, 0.0, scores.rounded(points), []) for name, points in parts]
    return GradeResult(assignment, notebook, 0, exercises,
                       [Notice.NOT_GRADED_CI.korean(notebook=notebook, reason=korean)], seconds,
                       refused=Notice.NOT_GRADED_CI.english(notebook=notebook, reason=english))


def write_requested(result, args, late=None) -> None:
    """Every file ``python -m autograder grade`` was asked for (``--json``, ``--junit``, ``--gradescope``)."""
    if args.json:
        write_json(result, args.json, late)
    if args.junit:
        write_junit(result, args.junit, late)
    if args.gradescope:
        write_gradescope(result, args.gradescope, late, args.visibility)
