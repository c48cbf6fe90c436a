"""Results of one graded notebook in the formats CI systems read: JUnit XML and Gradescope's results.json."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from autograder.feedback.inert import json_safe, xml_text
from autograder.report import exercise_report


def write_junit(result, path) -> None:
    """One <testsuite> per exercise, one <testcase> per hidden test (failures carry the Korean message). Well-formed
    XML whatever the messages hold (``xml_text``: a student's exception message may carry any character)."""
    suites = ET.Element("testsuites", name=xml_text(f"autograder {result.assignment}"),
                        tests=str(sum(len(e.tests) for e in result.exercises)),
                        failures=str(sum(not t.passed for e in result.exercises for t in e.tests)))
    for exercise in result.exercises:
        suite = ET.SubElement(suites, "testsuite", name=xml_text(exercise.name), tests=str(len(exercise.tests)),
                              failures=str(sum(not t.passed for t in exercise.tests)))
        ET.SubElement(ET.SubElement(suite, "properties"), "property", name="score",
                      value=f"{exercise.score:g}/{exercise.max_score:g}")
        for test in exercise.tests:
            case = ET.SubElement(suite, "testcase", classname=xml_text(f"{result.assignment}.{exercise.name}"),
                                 name=xml_text(test.name))
            if not test.passed:
                failure = ET.SubElement(case, "failure", message=xml_text(test.message or "failed"))
                failure.text = xml_text(test.description)
    ET.indent(suites)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)


def write_gradescope(result, path) -> None:
    """Gradescope's autograder results format: a score, one test per exercise with its Korean report (JSON that any
    UTF-8 reader takes, whatever the messages hold: ``json_safe``)."""
    data = {
        "score": result.score,
        "output": f"{result.notebook} ({result.assignment}), seed {result.seed}",
        "visibility": "visible",
        "tests": [{"name": exercise.name, "score": exercise.score, "max_score": exercise.max_score,
                   "output": exercise_report(exercise, result.notebook_errors)} for exercise in result.exercises],
    }
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(json_safe(data), fh, ensure_ascii=False, indent=2)
